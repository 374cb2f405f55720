"""What every pass receives: the source, the diagnostics sink, the options, and the chip and
topology once the passes resolving them have run (the runner hands them on; no pass writes here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.source import Source

if TYPE_CHECKING:
    from shardc.hardware import Chip
    from shardc.passes.ir import Topology

Model = Literal["exact", "book"]
Optimizer = Literal["adam", "adam-8bit", "adam-no-master", "sgd", "none"]
Remat = Literal["none", "gathered", "selective", "matmuls", "block"]
"""What the backward pass keeps (`passes.memory.kept_activations`): `none` keeps every value it
reads, a sequence-parallel input sharded (Megatron-LM's storage); `gathered` keeps the gathered
copies instead; `selective`, `matmuls`, `block` recompute more."""
Attention = Literal["materialized", "flash"]
MatmulPrecision = Literal["default", "high", "highest"]
"""`--matmul-precision`: JAX's `jax.lax.Precision` for f32 products (`Chip.matmul_rate`)."""
PipelineSchedule = Literal["gpipe", "1f1b", "interleaved"]
"""How `plan` runs microbatches through pipeline stages (GPipe, 1F1B, interleaved 1F1B)."""


@dataclass(frozen=True, slots=True)
class Options:
    """What the user chose for one compile (`--hw`, `--model`, `--optimizer`, `--remat`,
    `--set`)."""

    hw: str | Chip | None = None
    """A chip name, a path to a chip TOML, or a Chip; None: the program's `hardware` line."""
    model: Model = "exact"
    optimizer: Optimizer = "adam"
    remat: Remat = "none"
    bindings: Mapping[str, float | Decimal] = field(default_factory=lambda: MappingProxyType({}))
    """Values bound from the command line (`--set B=4096`): dims, mesh axes or hardware symbols,
    as given (the CLI gives exact Decimals); read-only."""
    free: frozenset[str] = frozenset()
    """Declared dims or mesh axes to leave symbolic (`shardc sweep` varies them)."""
    attention: Attention = "materialized"
    """`flash`: the attention core (`passes.memory.attention_core`) stays on chip, as
    FlashAttention tiles it (Dao et al. 2022): it is neither written to HBM nor kept for the
    backward pass, which recomputes it from the queries and keys and a row statistic."""
    explain: bool = True
    """Build what only a printed report shows: each contraction's decision record (its
    alternatives' costs as formulas) and each collective's crossover size. False for a caller
    that reads only numbers (the planner): they are the same, and a sixth of the time less."""
    idle_axes: bool = True
    """Under the exact model, let a contraction split its product over a mesh axis neither
    operand nor its request uses (`passes.einsum_plan._idle_axes`). False leaves such axes idle:
    the planner, whose generated programs give every axis a role, where the wider search cost
    15% of its time and changed no ranking."""

    matmul_precision: MatmulPrecision = "default"
    """The precision of products of f32 operands, with JAX's meaning on the chip's backend:
    on an NVIDIA GPU DEFAULT and HIGH run TF32 on the tensor cores and HIGHEST full f32 on the
    CUDA cores; on a TPU DEFAULT is one bf16 pass, HIGH three, HIGHEST six
    (https://docs.jax.dev/en/latest/_autosummary/jax.lax.Precision.html)."""

    objective: str | None = None
    """`--objective`: what the plans minimize for the whole program (`passes.objective`;
    None: the default for the program)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "bindings", MappingProxyType(dict(self.bindings)))
        object.__setattr__(self, "free", frozenset(self.free))


@dataclass(frozen=True, slots=True)
class Context:
    source: Source
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    options: Options = field(default_factory=Options)
    chip: Chip | None = None
    """The chip, once `resolve-hardware` has run."""
    topology: Topology | None = None
    """Where each mesh axis lives, once `resolve-topology` has run."""
    bindings: dict[str, float | Decimal] = None  # type: ignore[assignment]
    """The options' bindings as `validate` leaves them: it checks each against its name's
    domain (N016), drops the bad ones and leaves ints and floats. A copy made per compile."""

    def __post_init__(self) -> None:
        if self.bindings is None:
            object.__setattr__(self, "bindings", dict(self.options.bindings))

    def validated_bindings(self) -> dict[str, float]:
        """The bindings once `validate` has run: ints and floats only (exact Decimals from the
        command line are checked and converted there)."""
        out: dict[str, float] = {}
        for name, value in self.bindings.items():
            assert not isinstance(value, Decimal), f"{name} was not validated"
            out[name] = value
        return out

    @property
    def model(self) -> Model:
        return self.options.model

    @property
    def optimizer(self) -> Optimizer:
        return self.options.optimizer

    @property
    def remat(self) -> Remat:
        return self.options.remat

    @property
    def attention(self) -> Attention:
        return self.options.attention

    @property
    def explain(self) -> bool:
        return self.options.explain

    @property
    def idle_axes(self) -> bool:
        return self.options.idle_axes
