"""The report's JSON writer (`shardc.driver.json_text.dumps`) against
`json.dumps(indent=2, allow_nan=False)`, byte for byte, on arbitrary JSON data: the same text,
or, for a NaN or an infinity anywhere, the same refusal."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from shardc.driver.json_text import NonFiniteError, dumps, strict_dumps
from shardc.testing.strategies import json_values


def _same_as_json_dumps(value: object) -> None:
    try:
        want = json.dumps(value, indent=2, allow_nan=False)
    except ValueError:
        with pytest.raises(NonFiniteError, match="cannot be written as JSON"):
            dumps(value)
        with pytest.raises(NonFiniteError, match="cannot be written as JSON"):
            strict_dumps(value, indent=2)
        return
    assert dumps(value) == want
    assert strict_dumps(value, indent=2) == want


@settings(max_examples=300, deadline=None)
@given(json_values())
def test_dumps_is_json_dumps(value: object) -> None:
    _same_as_json_dumps(value)


@given(json_values())
def test_dumps_nested_under_a_shared_dict(value: object) -> None:
    shared = {"expr": "B*D", "value": 1.0}
    doc = {"a": [shared, {"b": shared, "c": value}], "d": shared}
    _same_as_json_dumps(doc)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_nan_or_infinity_is_refused_with_its_path(bad: float) -> None:
    doc = {"training": {"tokens": 1e308, "six_n": bad}}
    for write in (dumps, strict_dumps):
        with pytest.raises(NonFiniteError, match=r"\$\.training\.six_n"):
            write(doc)
