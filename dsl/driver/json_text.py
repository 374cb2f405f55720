"""`json.dumps(obj, indent=2)`, byte for byte, faster.

With `indent`, the standard library encodes in pure Python through nested generators; a report
of a 2,000-einsum program is 8 MB of JSON and took longer to encode than to compile. This
encoder writes the same text with one recursive function, strings through the C escaper, and
each leaf object (a formula's `expr`/`latex`/`value`, repeated thousands of times) encoded once
per depth.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any


class NonFiniteError(ValueError):
    """A NaN or an infinity reached a JSON writer. JSON has neither (RFC 8259, section 6), and
    every number shardc prints went through `shardc.lang.numeric` first, so this is a bug in
    shardc: the CLI reports it as an internal error, never as a file a parser would refuse."""


def _float(x: float) -> str:
    if x != x or x in (math.inf, -math.inf):
        raise NonFiniteError(f"{x!r} is not a JSON number")
    return float.__repr__(x)


def _where_unfinite(obj: Any, path: str = "$") -> str | None:
    """The JSON path of the first NaN or infinity in `obj` (`$.training.six_n`), or None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, float) and not math.isfinite(k):
                return f"{path} (a key)"
            if (hit := _where_unfinite(v, f"{path}.{k}")) is not None:
                return hit
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            if (hit := _where_unfinite(v, f"{path}[{i}]")) is not None:
                return hit
    return None


def _refused(obj: Any) -> NonFiniteError:
    where = _where_unfinite(obj) or "$"
    return NonFiniteError(
        f"a NaN or infinite number at {where} cannot be written as JSON "
        "(JSON has neither; this value should have been refused with a "
        "diagnostic before it was computed)"
    )


def strict_dumps(obj: Any, indent: int | None = None, **kw: Any) -> str:
    """`json.dumps(obj, indent=indent, allow_nan=False)`, the one call every JSON writer of
    shardc makes: a NaN or an infinity is a `NonFiniteError` naming where it is.

    >>> strict_dumps({"a": [1.5]})
    '{"a": [1.5]}'
    >>> strict_dumps({"a": [float("inf")]})
    Traceback (most recent call last):
    ...
    shardc.driver.json_text.NonFiniteError: a NaN or infinite number at $.a[0] cannot be written
    as JSON (JSON has neither; this value should have been refused with a diagnostic before it
    was computed)
    """
    try:
        return json.dumps(obj, indent=indent, allow_nan=False, **kw)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        raise _refused(obj) from None


def _scalar(x: Any) -> str | None:
    """A string, number, boolean or null as JSON; None for anything else."""
    if isinstance(x, str):
        return encode_basestring_ascii(x)
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, int):
        return int.__repr__(x)
    if isinstance(x, float):
        return _float(x)
    return None


def _key(k: Any) -> str:
    """A dict key as json.dumps writes it: strings as they are, other scalars as text."""
    if isinstance(k, str):
        return encode_basestring_ascii(k)
    s = _scalar(k)
    if s is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")
    return f'"{s}"'


def dumps(obj: Any, indent: int = 2) -> str:
    """The text `json.dumps(obj, indent=indent, allow_nan=False)` gives (default separators,
    ASCII, keys in insertion order); a NaN or an infinity is a `NonFiniteError`.

    >>> x = {"a": [1, 2.5, None, True, {"b": "é", "c": []}], "d": {}, 3: 1e308}
    >>> dumps(x) == json.dumps(x, indent=2)
    True
    """
    try:
        return _dumps(obj, indent)
    except NonFiniteError:
        raise _refused(obj) from None


def _dumps(obj: Any, indent: int) -> str:
    out: list[str] = []
    leaves: dict[tuple, str] = {}
    shared: dict[tuple[int, int], tuple[dict, str]] = {}
    pad = [" " * (indent * k) for k in range(64)]
    key_text: list[dict[str, tuple[str, str]]] = [{} for _ in range(64)]

    scalar, esc = _scalar, encode_basestring_ascii

    def leaf_key(d: dict) -> tuple | None:
        """A dict of scalars only, as a hashable key (None otherwise)."""
        items = []
        for k, v in d.items():
            if isinstance(v, (dict, list, tuple)):
                return None
            items.append((k, type(v), v))
        return tuple(items)

    def enc(x: Any, depth: int) -> None:
        # Exact types first (a report is made of them); subclasses and the other scalars go
        # through `scalar`, as json.dumps treats them.
        t = type(x)
        if t is str:
            out.append(esc(x))
            return
        if t is not dict and t is not list and t is not tuple:
            s = scalar(x)
            if s is not None:
                out.append(s)
                return
        if depth + 1 >= len(pad):
            pad.append(" " * (indent * len(pad)))
        inner, here = pad[depth + 1], pad[depth]
        if isinstance(x, dict):
            if not x:
                out.append("{}")
                return
            same = shared.get((id(x), depth))  # the very dict again (`Report.q` shares them)
            if same is not None and same[0] is x:
                out.append(same[1])
                return
            key = leaf_key(x)
            if key is not None:
                hit = leaves.get((key, depth))
                if hit is None:
                    hit = (
                        "{\n"
                        + ",\n".join(f"{inner}{_key(k)}: {scalar(v)}" for k, v in x.items())
                        + f"\n{here}}}"
                    )
                    leaves[(key, depth)] = hit
                shared[(id(x), depth)] = (x, hit)
                out.append(hit)
                return
            written = key_text[depth] if depth < len(key_text) else {}
            first = True
            for k, v in x.items():
                # A key's text as the first member and after a comma, made once per depth.
                pair = written.get(k) if type(k) is str else None
                if pair is None:
                    name = inner + (esc(k) if type(k) is str else _key(k)) + ": "
                    pair = ("{\n" + name, ",\n" + name)
                    if type(k) is str:
                        written[k] = pair
                out.append(pair[0] if first else pair[1])
                first = False
                # The commonest values without a call: strings, nulls, dicts met before.
                t = type(v)
                if t is str:
                    out.append(esc(v))
                elif v is None:
                    out.append("null")
                elif (
                    t is dict
                    and (same := shared.get((id(v), depth + 1))) is not None
                    and same[0] is v
                ):
                    out.append(same[1])
                else:
                    enc(v, depth + 1)
            out.append("\n" + here + "}")
            return
        if isinstance(x, (list, tuple)):
            if not x:
                out.append("[]")
                return
            sep = "[\n" + inner
            for v in x:
                out.append(sep)
                sep = ",\n" + inner
                enc(v, depth + 1)
            out.append("\n" + here + "]")
            return
        raise TypeError(f"Object of type {type(x).__name__} is not JSON serializable")

    enc(obj, 0)
    return "".join(out)


__all__ = ["NonFiniteError", "dumps", "strict_dumps"]
