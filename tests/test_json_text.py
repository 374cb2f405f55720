"""The report's JSON writer (`shardc.driver.json_text.dumps`) against `json.dumps(indent=2)`,
byte for byte, on arbitrary JSON data."""

from __future__ import annotations

import json

from hypothesis import given, settings

from shardc.driver.json_text import dumps
from tests.strategies import json_values


@settings(max_examples=300, deadline=None)
@given(json_values())
def test_dumps_is_json_dumps(value: object) -> None:
    assert dumps(value) == json.dumps(value, indent=2)


@given(json_values())
def test_dumps_nested_under_a_shared_dict(value: object) -> None:
    shared = {"expr": "B*D", "value": 1.0}
    doc = {"a": [shared, {"b": shared, "c": value}], "d": shared}
    assert dumps(doc) == json.dumps(doc, indent=2)
