"""What every pass receives: the source, the diagnostics sink, the chip and the options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.source import Source

if TYPE_CHECKING:
    from decimal import Decimal

    from shardc.hardware import Chip
    from shardc.passes.ir import Topology


@dataclass(slots=True)
class Context:
    source: Source
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    model: Literal["exact", "book"] = "exact"
    chip: Chip | None = None
    bindings: dict[str, float | Decimal] = field(default_factory=dict)
    """Values bound from the command line (`--set B=4096`): dims, mesh axes or hardware symbols.
    The CLI gives exact Decimals; `validate` checks each against its name's domain (N016) and
    leaves ints and floats."""
    topology: Topology | None = None
    """Where each mesh axis lives; set by the `resolve-topology` pass."""
    backward_line: int | None = None
    """The line of the `backward` statement, if any; set by `derive-backward`."""
    optimizer: str = "adam"
    remat: str = "none"
