"""The language: source text and spans, diagnostics, the syntax tree, layouts, the parser, and the
numbers and limits of user input. No SymPy here."""
