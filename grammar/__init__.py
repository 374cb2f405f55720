"""The .shard grammar, shipped as package data: `grammar/shard.lark` is the language's syntax
spec."""

from __future__ import annotations

import pkgutil


def grammar_text(name: str = "shard.lark") -> str:
    """Return the text of a grammar file: shard.lark (programs), expr.lark (formulas on the
    command line) or expect.lark (`# expect:` lines)."""
    # Through the package's loader, which reads a zipped package too; `importlib.resources`
    # does the same but imports `zipfile` and its readers on every start of the compiler.
    data = pkgutil.get_data(__package__, name)
    assert data is not None  # a package with a file-reading loader, as every installer makes
    return data.decode("utf-8")
