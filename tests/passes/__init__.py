"""Tests of `shardc.passes`: validation, lowering, collectives, costs, schedule."""
