"""Whole-project checks: goldens, layers, lint, citations, packaging, docs, the book corpus."""
