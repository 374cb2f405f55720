"""Tests of `shardc.driver`: compile(), the report as a value and its writers."""
