"""`shardc calibrate`: micro-benchmarks on the local accelerator (`bench`), the calibration fitted
from them (`fit`), and the file written with its provenance (`hardware.calibration`)."""
