"""Whole-project checks: layers, lint, citations, packaging, docs, the book corpus."""
