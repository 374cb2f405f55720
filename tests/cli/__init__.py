"""Tests of `shardc.cli`: commands, streams and exit codes, goldens, hostile input."""
