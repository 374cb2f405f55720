"""What every pass receives: the source, the diagnostics sink and the options. What the passes
make (the validated bindings, the chip, the topology) travels in `passes.pipeline.Unit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, get_args

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.source import Source

if TYPE_CHECKING:
    from shardc.hardware import Chip

Model = Literal["exact", "book"]
Optimizer = Literal["adam", "adam-8bit", "adam-no-master", "sgd", "none"]
Remat = Literal["none", "gathered", "selective", "matmuls", "block"]
"""What the backward pass keeps (`passes.memory.kept_activations`): `none` keeps every value it
reads, a sequence-parallel input sharded (Megatron-LM's storage); `gathered` keeps the gathered
copies instead; `selective`, `matmuls`, `block` recompute more."""
Attention = Literal["materialized", "flash"]
MatmulPrecision = Literal["default", "high", "highest"]
"""`--matmul-precision`: JAX's `jax.lax.Precision` for f32 products (`Chip.matmul_rate`)."""
Objective = Literal["t_lower", "t_upper", "step", "statement"]
"""`--objective`: what the plans of a program are chosen to minimize (`statement`: each
contraction's own time, no search: the plans of a planner without `passes.objective`)."""
PipelineSchedule = Literal["gpipe", "1f1b", "interleaved"]
"""How `plan` runs microbatches through pipeline stages (GPipe, 1F1B, interleaved 1F1B)."""


On = Literal["roofline", "expected"]
"""`--on`: the rates the report's conditions are stated on (`Report.conditions`)."""


def option(
    default: Any = None,
    *,
    help: str,
    flags: tuple[str, ...] = (),
    choices: tuple[str, ...] = (),
    alias: str | None = None,
    factory: Any = None,
) -> Any:
    """One compile option, declared once: its default, its doc (`help`), the command-line
    `flags` that set it (none: API only), its `choices`, and the keyword `alias` by which
    `compile` also takes it. The CLI (`shardc.cli.inputs.add_option_flags`), `compile`'s
    keywords and their checks (`shardc.driver.options`) are built from these declarations."""
    meta = MappingProxyType({"help": help, "flags": flags, "choices": choices, "alias": alias})
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """What the user chose for one compile: every option of `shardc.compile`, of the CLI's
    compile flags and of the language server, declared here once (`option`)."""

    hw: str | Chip | None = option(
        None, flags=("--hw",), help="chip name (see `shardc hw list`) or path to a chip TOML"
    )
    """A chip name, a path to a chip TOML, or a Chip; None: the program's `hardware` line."""
    model: Model = option(
        "exact",
        flags=("--cost-model", "--model"),
        choices=get_args(Model),
        help="collective cost model: exact ring or the book's formulas (default %(default)s; "
        "--model is the same flag)",
    )
    optimizer: Optimizer = option(
        "adam",
        flags=("--optimizer",),
        choices=get_args(Optimizer),
        help="optimizer state counted in a training step's memory: adam (default; mixed "
        "precision, an fp32 master copy and two fp32 moments: 16 bytes per bf16 parameter "
        "with its gradient), adam-8bit (8-bit moments), adam-no-master (the book's two "
        "moments, no master copy), sgd (the master copy only) or none",
    )
    remat: Remat = option(
        "none",
        flags=("--remat",),
        choices=get_args(Remat),
        help="activations kept for the backward pass (default: keep all)",
    )
    bindings: Mapping[str, float | Decimal] = option(
        flags=("--set",),
        alias="set",
        factory=lambda: MappingProxyType({}),
        help="bind a dim, mesh axis or hardware symbol",
    )
    """Values bound from the command line (`--set B=4096`; `set=` in `compile`): dims, mesh
    axes or hardware symbols, as given (the CLI gives exact Decimals); read-only. `validate`
    checks them and hands on the good ones (`passes.pipeline.Unit.bindings`)."""
    free: frozenset[str] = option(
        frozenset(),
        help="declared dims or mesh axes to leave symbolic (`shardc sweep` varies them)",
    )
    attention: Attention = option(
        "materialized",
        flags=("--attention",),
        choices=get_args(Attention),
        help="materialized (default): the attention scores and probabilities are written to "
        "HBM and kept for the backward pass; flash: they stay on chip and the backward pass "
        "recomputes them (FlashAttention)",
    )
    """`flash`: the attention core (`passes.memory.attention_core`) stays on chip, as
    FlashAttention tiles it (Dao et al. 2022): it is neither written to HBM nor kept for the
    backward pass, which recomputes it from the queries and keys and a row statistic."""
    explain: bool = option(
        True, help="build what only a printed report shows (decision records, crossover sizes)"
    )
    """The `explain` parameter of the `insert-collectives` and `derive-cost` passes
    (`passes.pipeline.InsertCollectives.explain`), declared here for `compile`'s keyword; the
    passes receive it as their own field (`passes.pipeline.configure`), never read it here."""
    idle_axes: bool = option(
        True, help="let a contraction split its product over a mesh axis it does not use"
    )
    """The `idle_axes` parameter of the `insert-collectives` pass
    (`passes.pipeline.InsertCollectives.idle_axes`), declared here as `explain` is."""
    matmul_precision: MatmulPrecision = option(
        "default",
        flags=("--matmul-precision",),
        choices=get_args(MatmulPrecision),
        help="f32 products as jax.lax.Precision runs them: on NVIDIA GPUs default and high use "
        "TF32 tensor cores and highest full f32; on TPUs default is one bf16 pass, high three, "
        "highest six (default: default)",
    )
    """The precision of products of f32 operands, with JAX's meaning on the chip's backend:
    on an NVIDIA GPU DEFAULT and HIGH run TF32 on the tensor cores and HIGHEST full f32 on the
    CUDA cores; on a TPU DEFAULT is one bf16 pass, HIGH three, HIGHEST six
    (https://docs.jax.dev/en/latest/_autosummary/jax.lax.Precision.html)."""
    on: On = option(
        "roofline",
        flags=("--on",),
        choices=get_args(On),
        help="state the conditions on the roofline's rates (default) or on the calibrated "
        "expectation's (C*eta_mxu, W_hbm*eta_hbm)",
    )
    """The report's, not the passes': `on="expected"` states the conditions on the calibrated
    rates (`Report.conditions`)."""

    objective: Objective | None = option(
        None,
        flags=("--objective",),
        choices=get_args(Objective),
        help="choose the contractions' plans together for the whole program's T_lower, T_upper "
        "or scheduled step time (default: step for a training step, t_lower otherwise), or each "
        "for itself (statement); see docs/cost-model.md",
    )
    """`--objective`: what the plans minimize for the whole program (`passes.objective`;
    None: the default for the program)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "bindings", MappingProxyType(dict(self.bindings)))
        object.__setattr__(self, "free", frozenset(self.free))


OPTIONS: Mapping[str, Field[Any]] = MappingProxyType({f.name: f for f in fields(Options)})
"""Every compile option's declaration, by name (`option`)."""


@dataclass(frozen=True, slots=True)
class Context:
    source: Source
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    options: Options = field(default_factory=Options)

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
