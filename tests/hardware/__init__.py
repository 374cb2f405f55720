"""Tests of `shardc.hardware`: chip files, their schema, rates and calibrations."""
