"""Tests of `shardc.lang`: the parser, numbers and the limits on input."""
