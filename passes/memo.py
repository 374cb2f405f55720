"""Process-wide memos of pure functions over SymPy expressions.

Building and simplifying SymPy formulas is most of a compile's time, and the same formulas come
back: a program repeats statement shapes, `Report.at` and the regions lower one program again
per choice of plans, a sweep or a derive compiles it once per point, and a notebook or the
language server compiles a small edit of the same program again. The functions memoized here
are pure: their result depends only on the key (expressions, sizes, the topology, the chip's
figures as numbers or symbols, the cost model), and results are immutable (SymPy expressions,
frozen dataclasses), so a hit returns the very object a call would build.

What is cached (docs/benchmarks.md, "What is cached"):
- `passes.cost_model.collective_time`: a collective's time per level, keyed by the op, its
  bytes, its axes and their sizes, the model, the topology and the link figures;
- `passes.conditions.separate` and `less_than`: conditions and relations between formulas;
- `shardc.driver.formulas`: each formula's text and LaTeX (its own caches);
- `shardc.driver.report`: each formula's value under an environment of bound symbols.

Invalidation: nothing a key leaves out can change a result, so entries never go stale; each
memo is emptied when it reaches `MAX_ENTRIES` (bounded memory in a long-lived process), and
`clear()` empties them all (benchmarks measure cold runs with it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

MAX_ENTRIES = 50_000
"""Entries per memo before it is emptied."""

F = TypeVar("F", bound=Callable[..., Any])

_MEMOS: dict[str, dict[Hashable, Any]] = {}
_MISSING = object()


def typed(x: Any) -> tuple[type, Any]:
    """A key part that keeps `2`, `2.0` and `Integer(2)` apart (equal, but they print and
    combine differently)."""
    return (type(x), x)


def memoized(name: str, key: Callable[..., Hashable]) -> Callable[[F], F]:
    """Memoize a pure function under `key(*args, **kwargs)`.

    >>> calls = []
    >>> @memoized("doc-square", lambda x: typed(x))
    ... def square(x):
    ...     calls.append(x)
    ...     return x * x
    >>> square(3), square(3), square(3.0), calls
    (9, 9, 9.0, [3, 3.0])
    """
    cache: dict[Hashable, Any] = _MEMOS.setdefault(name, {})

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            k = key(*args, **kwargs)
            hit = cache.get(k, _MISSING)
            if hit is _MISSING:
                if len(cache) >= MAX_ENTRIES:
                    cache.clear()
                hit = cache[k] = fn(*args, **kwargs)
            return hit
        return wrapper  # type: ignore[return-value]
    return decorate


def clear() -> None:
    """Empty every memo (and the printers' caches): the next compile runs cold."""
    for cache in _MEMOS.values():
        cache.clear()


def sizes() -> dict[str, int]:
    """Entries per memo, by name."""
    return {name: len(cache) for name, cache in _MEMOS.items()}


def register(name: str) -> dict[Any, Any]:
    """A cache dict of a module's own, emptied by `clear()` with the others."""
    return _MEMOS.setdefault(name, {})


__all__ = ["MAX_ENTRIES", "clear", "memoized", "register", "sizes", "typed"]
