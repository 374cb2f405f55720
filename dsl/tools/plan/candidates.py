"""What a plan holds: the chips it uses, its options, and one candidate per strategy."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from shardc.hardware import Chip
from shardc.passes.context import Attention, Model, Optimizer, Remat
from shardc.tools.models import ModelCard
from shardc.tools.models.sharding import Layout


class PlanError(Exception):
    """A request the planner cannot serve (a chip count that makes no slice, an MoE model)."""


@dataclass(frozen=True, slots=True)
class Slice:
    """The chips a plan uses: `pods` pods (over DCN) of `chips_per_pod` chips each; `shape` is
    one pod's physical ICI axes (empty for GPUs); `idle` counts chips asked for but unused."""

    pods: int
    chips_per_pod: int
    shape: tuple[int, ...]
    idle: int

    @property
    def chips(self) -> int:
        return self.pods * self.chips_per_pod


@dataclass(frozen=True, slots=True)
class Options:
    optimizer: Optimizer = "adam"
    remat: Remat = "none"
    model: Model = "exact"
    attention: Attention = "materialized"


@dataclass
class Candidate:
    """One strategy: its layout and, once evaluated, its figures for a whole training step."""

    strategy: str
    layout: Layout | None
    tp: int = 1
    reason: str | None = None
    """Why it was not evaluated (None when it was)."""
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def evaluated(self) -> bool:
        return self.reason is None and bool(self.figures)

    @property
    def t_step(self) -> float:
        return self.figures.get("t_step_s", math.inf)

    @property
    def fits(self) -> bool:
        return bool(self.figures.get("fits"))

    @property
    def data_degree(self) -> int:
        """The FSDP (or DP) degree inside a pod: batch and sequence axes together."""
        return self.layout.degree("data", "seq") if self.layout else 0

    def label(self) -> str:
        if self.layout is None or not self.layout.axes:
            return f"{self.strategy} (Y={self.tp})" if self.tp > 1 else self.strategy
        roles = {"data": "X", "tp": "Y", "pod": "P"}
        deg = [f"{roles[r]}={self.layout.degree(*rs)}"
               for r, rs in (("pod", ("pod",)), ("data", ("data", "seq")), ("tp", ("tp",)))
               if self.layout.of(*rs)]
        return f"{self.strategy} ({' '.join(deg)})"


@dataclass(repr=False)
class Plan:
    """What `plan` returns: the setting and every candidate; `ranked`, `best` and `runner_up`
    order them. `render` prints it as text or JSON; a notebook shows it as a table."""

    card: ModelCard
    chip: Chip
    slice: Slice
    batch_tokens: int
    seq: int
    options: Options
    candidates: list[Candidate]

    @property
    def sequences(self) -> int:
        return self.batch_tokens // self.seq

    def ranked(self) -> list[Candidate]:
        """Evaluated candidates that fit, fastest first, then those that do not fit."""
        done = [c for c in self.candidates if c.evaluated]
        return sorted(done, key=lambda c: (not c.fits, c.t_step))

    @property
    def best(self) -> Candidate | None:
        r = self.ranked()
        return r[0] if r and r[0].fits else None

    @property
    def runner_up(self) -> Candidate | None:
        r = [c for c in self.ranked() if c.fits]
        return r[1] if len(r) > 1 else None

    def __repr__(self) -> str:
        from shardc.tools.plan.notebook import short_repr

        return short_repr(self)

    def _repr_html_(self) -> str:
        from shardc.tools.plan.notebook import render_html

        return render_html(self)
