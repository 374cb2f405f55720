"""The report as a document: `sections(report)` lists titled sections of typed rows, built once;
one writer per format (`shardc.driver.render`) prints them, dispatching on the row's type as
SymPy's printers do (`_print_Total`, `_print_Op`, ...). The rows hold numbers and formulas,
never text in a format; `TOTALS` is the one list of the report's totals.
`shardc.driver.sections` builds the document of a report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.passes.ir import Decision


@dataclass(frozen=True, slots=True)
class TotalName:
    """A total of every report: its key in `Report.totals`, label, unit, and group (the JSON
    `totals` object lists the counts, then the times, then memory; the summary the times
    first). `short` is its label in the totals by region (None: not listed there)."""

    label: str
    key: str
    unit: str
    group: str
    short: str | None = None


TOTALS = (
    TotalName("T_math", "t_math_s", "s", "time", "T_math"),
    TotalName("T_hbm", "t_hbm_s", "s", "time"),
    TotalName("T_comms", "t_comms_s", "s", "time", "T_comms"),
    TotalName("T_lower", "t_lower_s", "s", "time", "T_lower"),
    TotalName("T_upper", "t_upper_s", "s", "time"),
    TotalName("T_expected", "t_expected_s", "s", "time", "T_expected"),
    TotalName("FLOPs", "flops", "flop", "count"),
    TotalName("FLOPs/device", "flops_per_device", "flop", "count"),
    TotalName("HBM bytes/device", "hbm_bytes", "B", "count"),
    TotalName("comm bytes/device", "comm_bytes", "B", "count", "comm bytes"),
    TotalName("memory/device", "memory_per_device_bytes", "B", "memory"),
)
"""The one list of the report's totals, in the summary's order: a new total is a line here (and
its formula in `passes/derive_cost.py`); every writer prints it through its `_print_Total`."""

REGION_TOTALS = tuple(
    t
    for k in ("t_lower_s", "t_expected_s", "t_comms_s", "t_math_s", "comm_bytes")
    for t in TOTALS
    if t.key == k
)
"""The totals the regions list, in their order (the step bounds first)."""

BLOCK_TOTALS = (
    ("T_math", "t_math_s", "s"),
    ("T_hbm", "t_hbm_s", "s"),
    ("T_comms", "t_comms_s", "s"),
    ("T_compute", "t_compute_s", "s"),
    ("FLOPs/device", "flops_per_device", "flop"),
    ("comm bytes/device", "comm_bytes", "B"),
)
"""The figures of a `repeat` block, per iteration and for all of them."""

OP_FIELDS = (
    ("flops", "flops"),
    ("flops_per_device", "flops_per_device"),
    ("hbm_bytes", "hbm_bytes"),
    ("bytes", "comm_bytes"),
    ("time_s", "time"),
    ("t_math_s", "t_math"),
    ("t_hbm_s", "t_hbm"),
    ("t_expected_s", "t_expected"),
)
"""Each op's quantities: (its JSON key, its `passes.derive_cost.OpCost` field)."""

SECTIONS = {
    "summary": "summary",
    "repeats": "repeat blocks",
    "memory": "memory per device",
    "topology": "topology",
    "conditions": "conditions",
    "decisions": "decisions",
    "ops": "ops",
    "why": "why each collective",
    "regions": "totals by region",
}
"""The sections `--only` selects, by name, with their titles; the header and the warnings are
always written."""


# ---- rows --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Header:
    """The program, chip, model, mesh, dims, `--set` bindings and the plans' note."""

    program: str
    chip: str | None
    model: str
    precision: str
    mesh: tuple[tuple[str, int | None], ...]
    dims: tuple[tuple[str, int | None], ...]
    bindings: tuple[tuple[str, float], ...]
    plans: str | None


@dataclass(frozen=True, slots=True)
class Total:
    """A named quantity with its number and formula."""

    label: str
    value: float | None
    unit: str
    formula: Any
    key: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """A figure of the step beside the totals: a number, its formula if it has one, a note."""

    label: str
    value: float | None
    formula: Any = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Calibration:
    """Where T_expected's figures come from."""

    text: str


@dataclass(frozen=True, slots=True)
class Utilization:
    """MFU and HFU of the scheduled step (`expected`: of the expected schedule, MFU only)."""

    mfu: float
    hfu: float
    expected: bool = False


@dataclass(frozen=True, slots=True)
class Bound:
    """What bounds the step: compute, hbm, comms, or None (undecided)."""

    value: str | None


@dataclass(frozen=True, slots=True)
class Block:
    """A `repeat` block: its line, count text, runs, and `BLOCK_TOTALS` per iteration and all."""

    line: int
    text: str
    runs: float | None
    rows: tuple[tuple[str, str, float | None, float | None, Any], ...]
    """(label, unit, per iteration, all iterations, the formula per iteration)."""
    count: Any = None
    per_iteration: tuple[tuple[str, Any], ...] = ()
    total: tuple[tuple[str, Any], ...] = ()
    """The runs' formula and every figure's formula by key, per iteration and for all."""


@dataclass(frozen=True, slots=True)
class Line:
    """A line of prose (a topology link, the memory's saved activations, a note)."""

    text: str


@dataclass(frozen=True, slots=True)
class Condition:
    """A compute-bound condition: its name, text, relation, whether it holds, both sides."""

    name: str
    text: str
    relation: Any
    holds: bool | None
    lhs: float | None
    rhs: float | None


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """A decision record (`passes.ir.Decision`), written with `shardc.driver.decisions` words."""

    decision: Decision


@dataclass(frozen=True, slots=True)
class Op:
    """One op of the program with its numbers and formulas."""

    index: int
    line: int
    count: Any
    kind: str
    op: str
    axes: tuple[str, ...]
    src: str
    dst: str
    flops: float | None
    moved: Any
    bytes: float | None
    time_formula: Any
    time: float | None
    expected_formula: Any
    expected: float | None
    bound: str | None
    crossover: float | None
    has_crossover: bool
    reason: str
    array: str | None = None
    formulas: tuple[Any, ...] = ()
    """The `OP_FIELDS` quantities' formulas, in that order."""
    crossover_formula: Any = None
    levels: tuple[tuple[str, Any], ...] = ()
    overlap: str = ""
    fused_into: int | None = None
    fusion: str = ""
    times: tuple[int, ...] = ()
    """The lines of the `repeat` blocks the op runs in."""


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a collective was inserted, and whether it runs off the critical path."""

    index: int
    text: str
    overlap: str | None


@dataclass(frozen=True, slots=True)
class Warning:
    text: str


@dataclass(frozen=True, slots=True)
class Region:
    """The whole program in one region of its symbolic sizes (`Report.regions`)."""

    condition: str
    share: float
    collectives: str
    totals: tuple[Total, ...]
    boundaries: tuple[str, ...] = ()
    """Each bound solved for a size (`shardc.driver.boundaries.Boundary.text`)."""
    relation: str = ""
    solved: tuple[Any, ...] = ()
    """The region's condition as a relation, and every `Boundary` (`boundaries` has the
    ones with words)."""
    values: tuple[float | None, ...] = ()
    """The `totals`' numbers under the region's own report (its plans at the region's sizes)."""


@dataclass(frozen=True, slots=True)
class RegionsPast:
    """Too many regions to list, and the plan the report shows instead (None: the defaults)."""

    shown: str | None
    past: str | None = None  # the limit hit: "regions", "statements" or "seconds" (`past_text`)


@dataclass(frozen=True, slots=True)
class Section:
    """A titled run of rows; `name` is what `--only` selects (`SECTIONS`), `detail` a
    parenthesis after the title."""

    name: str
    title: str
    rows: tuple[Any, ...]
    detail: str = ""


__all__ = [
    "BLOCK_TOTALS",
    "OP_FIELDS",
    "REGION_TOTALS",
    "SECTIONS",
    "TOTALS",
    "Block",
    "Bound",
    "Calibration",
    "Condition",
    "DecisionRow",
    "Header",
    "Line",
    "Op",
    "Reason",
    "Region",
    "RegionsPast",
    "Section",
    "Step",
    "Total",
    "TotalName",
    "Utilization",
    "Warning",
]
