"""The hostile-input corpus: every way a realistic but hostile user has broken shardc, pinned.

`cases.py` is the table (argv, files, the exit codes and diagnostic codes allowed), `harness.py`
runs one case in a subprocess under a time and memory limit and judges it. Run the whole corpus
with a table of results: `python -m tests.hostile` (add `-k NAME` to pick cases).
"""
