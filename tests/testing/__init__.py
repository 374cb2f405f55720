"""Tests of `shardc.testing`: strategies, checkers, the oracle, `# expect:` lines."""
