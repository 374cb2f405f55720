"""Tests of `shardc.cli`: commands, streams, exit codes, error output, hostile input."""
