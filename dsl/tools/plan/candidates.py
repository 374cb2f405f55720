"""What a plan holds: the chips it uses, its options, and one candidate per strategy."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from shardc.hardware import Chip
from shardc.passes.context import (
    Attention,
    MatmulPrecision,
    Model,
    Optimizer,
    PipelineSchedule,
    Remat,
)
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
    zero: int = 0
    """ZeRO stage of the layouts that replicate the weights over the data axes (dp, dp-tp and
    their pipelined forms): 1 shards the optimizer state over the data axes, 2 the gradients
    too (Rajbhandari et al. 2020, "ZeRO"; Megatron-LM's distributed optimizer is stage 1). The
    traffic is the AllReduce's, as a ReduceScatter and an AllGather. FSDP is stage 3."""
    schedule: PipelineSchedule = "1f1b"
    """The pipeline schedule of pipelined candidates."""
    virtual_stages: int = 2
    """Model chunks per pipeline stage under the interleaved schedule."""
    microbatch_sequences: int = 1
    """Sequences per data-parallel replica in one microbatch of a pipelined candidate."""
    sequence_parallel: bool = True
    """Tensor-parallel layouts keep the residual stream sharded over the tensor axes (Megatron-LM's
    sequence parallelism, Korthikanti et al. 2022); False replicates it, each block then left
    by an AllReduce (Shoeybi et al. 2019)."""
    matmul_precision: MatmulPrecision = "default"
    """`--matmul-precision` of the compiled parts (`passes.context.Options.matmul_precision`)."""
    dropout: float = 0.0
    """The dropout rate of the residual additions and of materialised attention's
    probabilities; above 0 the calibrated step pays their masks' passes
    (`shardc.tools.plan.framework`)."""


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Pipeline parallelism: `stages` stages of consecutive layers, each on its own chips with
    the candidate's layout; `microbatches` per step, run in `schedule` (`virtual` chunks per
    stage when interleaved)."""

    stages: int
    microbatches: int
    schedule: PipelineSchedule = "1f1b"
    virtual: int = 1
    micro_sequences: int = 1
    """Sequences per data replica in one microbatch."""

    def text(self) -> str:
        v = f" x {self.virtual} chunks" if self.schedule == "interleaved" else ""
        return f"{self.stages} stages{v}, {self.microbatches} microbatches, {self.schedule}"

    def tags(self) -> list[str]:
        """What sets the pipeline apart beyond its stages, for a label: `v=2` (interleaved
        chunks), `mb=2` (sequences per replica in a microbatch)."""
        return ([f"v={self.virtual}"] if self.schedule == "interleaved" else []) + (
            [f"mb={self.micro_sequences}"] if self.micro_sequences > 1 else []
        )


@dataclass
class Candidate:
    """One strategy: its layout and, once evaluated, its figures for a whole training step."""

    strategy: str
    layout: Layout | None
    tp: int = 1
    reason: str | None = None
    """Why it was not evaluated (None when it was)."""
    figures: dict[str, Any] = field(default_factory=dict)
    pipeline: Pipeline | None = None
    """The stages and microbatches of a pipelined candidate; `layout` is then one stage's."""
    zero: int | None = None
    """The ZeRO stage the search chose for this candidate where it differs from the options'
    (`stages.pipeline_candidates`: a stage count that fits only with the optimizer state
    sharded); None: the options'."""

    @property
    def evaluated(self) -> bool:
        return self.reason is None and bool(self.figures)

    @property
    def t_step(self) -> float:
        return self.figures.get("t_step_s", math.inf)

    @property
    def t_expected(self) -> float:
        """The calibrated step (`t_step_expected_s`), which ranks the candidates; the roofline
        step where the chip has no calibration (the figures give it as the same number)."""
        return self.figures.get("t_step_expected_s", self.t_step)

    @property
    def fits(self) -> bool:
        return bool(self.figures.get("fits"))

    @property
    def data_degree(self) -> int:
        """The FSDP (or DP) degree inside a pod: batch and sequence axes together."""
        return self.layout.degree("data", "seq") if self.layout else 0

    @property
    def chips(self) -> int:
        """Chips the candidate runs on: one stage's times the stages."""
        n = self.layout.degree("data", "seq", "tp", "pod") if self.layout else 1
        return n * (self.pipeline.stages if self.pipeline else 1)

    def label(self) -> str:
        pp = [f"PP={self.pipeline.stages}", *self.pipeline.tags()] if self.pipeline else []
        pp += [f"ZeRO-{self.zero}"] if self.zero is not None else []
        if self.layout is None or not self.layout.axes:
            deg = pp + ([f"Y={self.tp}"] if self.tp > 1 else [])
            return f"{self.strategy} ({' '.join(deg)})" if deg else self.strategy
        roles = {"data": "X", "tp": "Y", "pod": "P"}
        deg = [
            f"{roles[r]}={self.layout.degree(*rs)}"
            for r, rs in (("pod", ("pod",)), ("data", ("data", "seq")), ("tp", ("tp",)))
            if self.layout.of(*rs)
        ]
        return f"{self.strategy} ({' '.join(pp + deg)})"

    def mesh_text(self) -> str:
        """The mesh: the stage axis (PP) first, then one stage's axes."""
        inner = self.layout.mesh_text() if self.layout else ""
        if self.pipeline is None:
            return inner
        return f"PP={self.pipeline.stages}" + (f", {inner}" if inner else "")


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
        """Evaluated candidates that fit, fastest calibrated step first (the roofline's step
        breaks a tie, and is the step where the chip has no calibration), then those that do
        not fit."""
        done = [c for c in self.candidates if c.evaluated]
        return sorted(done, key=lambda c: (not c.fits, c.t_expected, c.t_step))

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
