"""A parsed TOML document written back as TOML, for tests that edit a shipped chip file or model
card and hand the result to its loader (tests/hardware/test_chip_schema.py,
tests/tools/test_card_schema.py)."""

from __future__ import annotations

import json
from typing import Any


def to_toml(doc: dict[str, Any]) -> str:
    """Top-level values, then one table each; a table inside a table (a card's reference) is
    written inline. Enough for the flat chip and card formats.

    >>> to_toml({"name": "x", "t": {"a": 1, "r": {"value": 2.0}}})
    'name = "x"\\n\\n[t]\\n"a" = 1\\n"r" = {"value" = 2.0}\\n'
    """

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        return repr(v)

    top = [f"{k} = {value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [
        f"[{k}]\n" + "".join(f"{json.dumps(i)} = {value(x)}\n" for i, x in v.items())
        for k, v in doc.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n\n" + "\n".join(tables)
