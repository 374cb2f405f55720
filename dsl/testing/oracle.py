"""The optimality oracle: hand-written plans of one contraction that the language can express,
each compiled, against the compiler's own plan under the same model and objective.

A hand plan of `C[out] = A ·_J B` reshards each operand to a layout of its own choosing (a
reshard statement `A2[...] = A`, or a slice onto some axes then an explicit AllGather over any
subset of them, multi-axis included: `A2[...] = A; A3 = AllGather_XY(A2)`), multiplies
(leaving partial sums unreduced where both operands shard the contracted dim), and reshards
the result to `out` (reduce, gather, AllToAll or permute, as the reshard statement plans it).
The objective is the planner's (`passes.regions.plan_key`): communication plus compute at the
chip's peak, `T_comms + T_math`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shardc.driver import api
from shardc.lang.diagnostics import CompileError


def layouts(dims: Sequence[str], axes: Sequence[str]) -> Iterator[dict[str, tuple[str, ...]]]:
    """Every layout of `dims` over `axes`: each axis on one dim or none, in each order.

    >>> len(list(layouts(("I", "J"), ("X",))))
    3
    """
    for where in itertools.product((*dims, None), repeat=len(axes)):
        per = {d: [a for a, w in zip(axes, where, strict=True) if w == d] for d in dims}
        for orders in itertools.product(*[itertools.permutations(per[d]) for d in dims]):
            yield dict(zip(dims, orders, strict=True))


def text_of(name: str, layout: dict[str, tuple[str, ...]]) -> str:
    return name + "[" + ", ".join(d + ("_" + "".join(a) if a else "")
                                  for d, a in layout.items()) + "]"


@dataclass(frozen=True)
class Problem:
    """One contraction: the program's head (mesh, dims, hardware, the operands' declarations),
    the operands' dims, the contracted dim and the requested result."""

    head: str
    axes: tuple[str, ...]
    a_dims: tuple[str, ...]
    b_dims: tuple[str, ...]
    contract: str
    out: dict[str, tuple[str, ...]]

    def statement(self, a: str = "A", b: str = "B") -> str:
        return f"{text_of('C', self.out)} = {a} ·_{self.contract} {b}\n"

    def ours(self) -> str:
        return self.head + self.statement()

    def hands(self, gathers: bool = True) -> Iterator[str]:
        """Hand-written programs: each operand resharded to any layout (the reshard statement's
        own plan), and, with `gathers`, sliced onto any layout then gathered explicitly over
        the axes it added (one collective over several axes)."""
        for la in self._routes("A", self.a_dims, gathers):
            for lb in self._routes("B", self.b_dims, gathers):
                yield self.head + la[0] + lb[0] + self.statement(la[1], lb[1])

    def _routes(self, name: str, dims: tuple[str, ...], gathers: bool
                ) -> Iterator[tuple[str, str]]:
        yield "", name
        for k, lay in enumerate(layouts(dims, self.axes)):
            yield f"{text_of(f'{name}{k}', lay)} = {name}\n", f"{name}{k}"
            if not gathers:
                continue
            for d, run in lay.items():
                # Gather the innermost axes of one dim, several at once.
                for n in range(1, len(run) + 1):
                    kept = {**lay, d: run[:-n]}
                    g = f"{name}{k}g{d}{n}"
                    yield (f"{text_of(f'{name}{k}', lay)} = {name}\n"
                           f"{text_of(g, kept)} = AllGather_{''.join(run[-n:])}({name}{k})\n", g)


def objective(r) -> float | None:
    """The planner's objective of a compiled program: communication plus compute."""
    c, m = r.value("t_comms_s"), r.value("t_math_s")
    return None if c is None or m is None else c + m


def cheaper_hand(problem: Problem, hands: Sequence[str] | None = None,
                 gathers: bool = True) -> tuple[str, float, float] | None:
    """The first hand plan (of `hands`, default every one of `problem.hands`) that costs less
    than the compiler's own under the objective, as (program, hand cost, our cost); None when
    there is none."""
    ours = objective(api.compile(problem.ours()))
    assert ours is not None
    for text in problem.hands(gathers) if hands is None else hands:
        try:
            hand = objective(api.compile(text))
        except CompileError:
            continue  # a layout that does not divide, or a collective the layout cannot take
        if hand is not None and hand < ours * (1 - 1e-9):
            return text, hand, ours
    return None


__all__ = ["Problem", "cheaper_hand", "layouts", "objective", "text_of"]
