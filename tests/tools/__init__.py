"""Tests of `shardc.tools`: derive, sweep, simulate, plan, limits, xla-check, lsp."""
