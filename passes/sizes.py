"""The size of a dim or mesh axis: what the program declares, unless `--set` binds the name.

Every pass and report that needs a size as a number asks here, so that a binding wins the same
way everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

Bindings = Mapping[str, "float | int | Decimal"]


def size_of(name: str, declared: Mapping[str, int | None], bindings: Bindings) -> int | None:
    """The size of `name`: its `--set` binding if any, else its declared size; None when it is
    symbolic, unknown, or bound to a value that is not a whole number.

    >>> size_of("B", {"B": None, "X": 4}, {"B": 4096.0}), size_of("X", {"X": 4}, {})
    (4096, 4)
    >>> size_of("B", {"B": 8}, {"B": 0.5}), size_of("B", {"B": None}, {})
    (None, None)
    """
    if name in bindings:
        v = bindings[name]
        return int(v) if float(v).is_integer() else None
    return declared.get(name)


def known_sizes(declared: Iterable[tuple[str, int | None]], bindings: Bindings) -> dict[str, int]:
    """Every declared name whose size is a number, `--set` applied; declaration order.

    >>> known_sizes([("B", None), ("D", 512), ("X", 4)], {"B": 4096, "X": 8})
    {'B': 4096, 'D': 512, 'X': 8}
    """
    sizes = dict(declared)
    return {n: v for n in sizes if (v := size_of(n, sizes, bindings)) is not None}
