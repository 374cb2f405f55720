"""The compile options as `compile(source, options=None, **overrides)` takes them: each keyword
checked against its declaration in `passes.context.Options` (the one place an option is
declared), so a typo or a wrong type is an error naming it, never a silent default.
"""

from __future__ import annotations

import dataclasses
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from shardc.passes.context import OPTIONS, Options

__all__ = [
    "Options",
    "checked_bindings",
    "checked_hw",
    "checked_names",
    "described",
    "options_with",
]

ALIASES: Mapping[str, str] = {
    f.metadata["alias"]: name for name, f in OPTIONS.items() if f.metadata["alias"] is not None
}
"""The keywords `compile` takes for an option besides its name (`set` for `bindings`)."""


def options_with(
    options: Options | None = None, overrides: Mapping[str, Any] | None = None
) -> Options:
    """`options` (None: the defaults) with `overrides` (option names or their aliases), each
    value checked against its option's declaration.

    >>> options_with(None, {"set": {"B": 8}, "remat": "block"}).remat
    'block'
    >>> options_with(None, {"remat": "blocks"})
    Traceback (most recent call last):
    ...
    ValueError: remat='blocks': expected one of 'none', 'gathered', 'selective', 'matmuls', 'block'
    >>> options_with(None, {"hardware": "tpu-v5e"})
    Traceback (most recent call last):
    ...
    TypeError: no compile option named 'hardware' (options: hw, model, optimizer, remat, set,
    free, attention, explain, idle_axes, matmul_precision, on, objective)
    """
    if options is None:
        options = Options()
    elif not isinstance(options, Options):
        raise TypeError(
            "options must be a shardc.Options (give single options by keyword: "
            f"hw='tpu-v5e'), got {described(options)}"
        )
    changes: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        name = ALIASES.get(key, key)
        if name not in OPTIONS:
            names = ", ".join(OPTIONS[n].metadata["alias"] or n for n in OPTIONS)
            raise TypeError(f"no compile option named {key!r} (options: {names})")
        changes[name] = checked(name, value)
    return dataclasses.replace(options, **changes) if changes else options


def checked(name: str, value: Any) -> Any:
    """One option's value as its declaration allows, or `TypeError`/`ValueError` naming it."""
    special = _CHECKS.get(name)
    if special is not None:
        return special(value)
    declared = OPTIONS[name]
    choices = declared.metadata["choices"]
    if choices:
        if value not in choices and not (value is None and declared.default is None):
            raise ValueError(
                f"{name}={value!r}: expected one of "
                f"{', '.join(map(repr, choices))}"
                + (" (or None: the default)" if declared.default is None else "")
            )
    elif isinstance(declared.default, bool) and not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {described(value)}")
    return value


def described(value: Any) -> str:
    from shardc.lang.quoting import quoted

    return f"{type(value).__name__} {quoted(value)}"


def checked_hw(hw: Any) -> Any:
    """`hw` as `compile` takes it: None, a chip name or TOML path (str or Path), or a `Chip`;
    `TypeError` naming the parameter otherwise."""
    from shardc.hardware.chip import Chip

    if hw is None or isinstance(hw, str | Chip):
        return hw
    if isinstance(hw, Path):
        return str(hw)
    raise TypeError(
        f"hw must be a chip name ('tpu-v5e'), a path to a chip TOML or a "
        f"shardc.hardware.Chip, got {described(hw)}"
    )


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def checked_bindings(bindings: Any) -> dict[str, float | Decimal]:
    """`set` as `compile` takes it: a mapping of names to numbers (`{"B": 4096}`, `{"B": "4M"}`,
    numpy numbers too). A key that is not a name, or a value that is not a number, raises
    `TypeError` or `ValueError` naming it; whether a number suits its name (a whole size, a
    positive figure) is the compiler's check (N016), as for `--set`.

    >>> checked_bindings({"B": "4Ki", "C": 1.97e14})
    {'B': Decimal('4096'), 'C': 197000000000000.0}
    >>> checked_bindings({"B": "x"})
    Traceback (most recent call last):
    ...
    shardc.lang.numeric.NumberError: set['B']: 'x' is not a number (try 4096, 4_096, 1e6,
    4M = 4*10^6 or 4Mi = 4*2^20)
    """
    from shardc.lang.numeric import real
    from shardc.lang.quoting import quoted

    if bindings is None:
        return {}
    if not isinstance(bindings, Mapping):
        raise TypeError(
            f"set must be a mapping of names to numbers ({{'B': 4096}}), got {described(bindings)}"
        )
    out: dict[str, float | Decimal] = {}
    for key, value in bindings.items():
        if not isinstance(key, str):
            raise TypeError(f"set: a key must be a name such as 'B', got {described(key)}")
        if not _NAME.fullmatch(key):
            raise ValueError(
                f"set: {quoted(key)} is not a name (a letter, then letters, digits or '_')"
            )
        if isinstance(value, str):  # read as --set reads it: "4M", "1e6"
            out[key] = real(value, f"set[{key!r}]")  # NumberError (a ValueError) for "x"
        elif isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
            raise TypeError(f"set[{key!r}] must be a number, got {described(value)}")
        else:
            # exact for whole numbers (a huge int is N016's to refuse, not an OverflowError)
            out[key] = (
                value
                if isinstance(value, Decimal)
                else Decimal(int(value))
                if isinstance(value, numbers.Integral)
                else float(value)
            )
    return out


def checked_names(names: Any, what: str) -> frozenset[str]:
    """A collection of names (`free=["B"]`); a bare string is refused, since `free="BD"` would
    read as the names B and D."""
    from shardc.lang.quoting import quoted

    if isinstance(names, str) or not isinstance(names, Iterable):
        raise TypeError(f"{what} must be a list of names (['B']), got {described(names)}")
    out = []
    for n in names:
        if not isinstance(n, str) or not _NAME.fullmatch(n):
            raise (TypeError if not isinstance(n, str) else ValueError)(
                f"{what}: {quoted(n)} is not a name"
            )
        out.append(n)
    return frozenset(out)


_CHECKS: Mapping[str, Callable[[Any], Any]] = {
    "hw": checked_hw,
    "bindings": checked_bindings,
    "free": lambda names: checked_names(names, "free"),
}
"""The options whose values need more than their declaration's choices or type."""
