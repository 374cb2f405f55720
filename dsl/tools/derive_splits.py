"""`derive --optimize` checked by compiling: the communication time of the whole step at every
whole split of the devices between two mesh axes, each split compiled with the plans a compile
with those sizes bound chooses (`Report.at`).

The closed-form optimum (`derive_solve.optimize_axis`) minimizes one formula, the T_comms of the
plans chosen at symbolic sizes on full rings. Where the cheapest plan of a statement depends on
the axis sizes the objective is piecewise: each split can run other collectives, and with the
sizes known the topology is the slice's own (wraparound, size-1 axes that move nothing). The
scan compiles the program at the splits a mesh can have (powers of two whose product is the
largest power of two within the device count, as the rounded optimum is), so each is exactly
what `shardc compile --set` gives, and says where the plan changes along the way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.driver.api import Compilation

SCAN_SECONDS = 60.0
"""CPU time for the scan (one lowering per split); past it the scan stops with a note."""


@dataclass(frozen=True, slots=True)
class Split:
    """One split: `size` devices on the optimized axis, `partner_size` on the other."""

    size: int
    partner_size: int
    t_comms: float
    t_lower: float
    plan: str
    """The letter of its plan in `SplitScan.plans`."""


@dataclass(frozen=True, slots=True)
class SplitScan:
    var: str
    partner: str
    devices: int
    used: int
    """The devices every split uses: the largest power of two within `devices`."""
    splits: tuple[Split, ...]
    plans: tuple[str, ...]
    """Each plan's collectives, in the order the scan meets them (letters A, B, ...)."""
    complete: bool
    skipped: tuple[tuple[int, int, str], ...] = ()
    """Splits the compile refused: the two sizes and the first diagnostic."""

    @property
    def best(self) -> Split:
        return min(self.splits, key=lambda s: (s.t_comms, s.t_lower, s.size))

    def at(self, size: int) -> Split | None:
        return next((s for s in self.splits if s.size == size), None)

    def changes(self) -> list[tuple[Split, Split]]:
        """Neighbouring splits with different plans."""
        return [
            (a, b) for a, b in zip(self.splits, self.splits[1:], strict=False) if a.plan != b.plan
        ]

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {
            "var": self.var,
            "partner": self.partner,
            "devices": self.devices,
            "devices_used": self.used,
            "objective": "t_comms_s",
            "complete": self.complete,
            "splits": [
                {
                    self.var: s.size,
                    self.partner: s.partner_size,
                    "t_comms_s": s.t_comms,
                    "t_lower_s": s.t_lower,
                    "plan": s.plan,
                }
                for s in self.splits
            ],
            "plans": [{"plan": letter(k), "collectives": c} for k, c in enumerate(self.plans)],
            "best": {
                self.var: best.size,
                self.partner: best.partner_size,
                "t_comms_s": best.t_comms,
                "plan": best.plan,
            },
            "skipped": [{self.var: a, self.partner: b, "why": why} for a, b, why in self.skipped],
        }


def letter(k: int) -> str:
    return chr(ord("A") + k) if k < 26 else f"P{k}"


def scan(
    compile_at: Callable[[dict[str, int]], Compilation],
    var: str,
    partner: str,
    devices: int,
    seconds: float = SCAN_SECONDS,
) -> SplitScan | None:
    """T_comms of the whole step at each split `var * partner = used` (powers of two), each a
    compile of the program with the split bound (`compile_at`, given the split's two sizes):
    its own plans and its own topology. A split the compile refuses (a size its axis does not
    divide, a mesh the slice cannot hold) is listed in `skipped` with the diagnostic. None where
    a time is not a number (another size still symbolic, or no chip).

    >>> from shardc.driver.api import as_source, run_pipeline
    >>> src = as_source("mesh X, Y\\ndim B=4096, D=8192\\nhardware tpu-v5e\\n"
    ...                 "A: bf16[B_X, D_Y]\\nC[B, D] = A\\n")
    >>> s = scan(lambda split: run_pipeline(src, bindings=split), "X", "Y", 8)
    >>> [(x.size, x.partner_size) for x in s.splits], s.plans
    ([(1, 8), (2, 4), (4, 2), (8, 1)], ('AllGather_XY(A)',))
    """
    from shardc.driver.region_totals import collectives

    if devices < 1:
        return None
    used = 1 << (devices.bit_length() - 1)
    start = time.process_time()
    plans: dict[str, int] = {}
    splits: list[Split] = []
    skipped: list[tuple[int, int, str]] = []
    complete = True
    size = 1
    while size <= used:
        if (splits or skipped) and time.process_time() - start > seconds:
            complete = False
            break
        result = compile_at({var: size, partner: used // size})
        if result.report is None:
            first = result.diagnostics.errors()[0]
            skipped.append((size, used // size, f"{first.code}: {first.message}"))
            size *= 2
            continue
        r = result.report
        t_comms, t_lower = r.value("t_comms_s"), r.value("t_lower_s")
        if t_comms is None or t_lower is None:
            return None
        plan = plans.setdefault(collectives(r), len(plans))
        splits.append(Split(size, used // size, float(t_comms), float(t_lower), letter(plan)))
        size *= 2
    if not splits:
        return None
    return SplitScan(
        var, partner, devices, used, tuple(splits), tuple(plans), complete, tuple(skipped)
    )


def text_lines(s: SplitScan, rounded: int | None = None) -> list[str]:
    """The scan's summary for `derive`'s text output."""
    from shardc.lang.units import fmt_value

    best = s.best
    within = "" if s.used == s.devices else f" of the {s.devices:,}"
    out = [
        f"  checked by compiling every split {s.var} * {s.partner} = {s.used:,}{within} "
        f"(powers of two, each with the plans a compile there chooses): T_comms is least "
        f"at {s.var} = {best.size:,}, {s.partner} = {best.partner_size:,} "
        f"({fmt_value(best.t_comms, 's')})"
    ]
    r = s.at(rounded) if rounded is not None else None
    if r is not None and r.size != best.size:
        out[-1] += f"; {fmt_value(r.t_comms, 's')} at the rounded optimum {s.var} = {r.size:,}"
    refused = next((why for a, _, why in s.skipped if a == rounded), None)
    if refused is not None:
        out[-1] += f"; the rounded optimum {s.var} = {rounded:,} does not compile ({refused})"
    if len(s.plans) > 1:
        for k, c in enumerate(s.plans):
            sizes = [x.size for x in s.splits if x.plan == letter(k)]
            span = (
                f"{s.var} = {sizes[0]:,}"
                if len(sizes) == 1
                else f"{s.var} = {sizes[0]:,} .. {sizes[-1]:,}"
            )
            out.append(f"    plan {letter(k)} ({span}): {c}")
        out.append(
            "    the plan changes between "
            + ", ".join(f"{s.var} = {a.size:,} and {b.size:,}" for a, b in s.changes())
        )
    by_code: dict[str, list[tuple[int, str]]] = {}
    for a, _, why in s.skipped:
        by_code.setdefault(why.split(":")[0], []).append((a, why))
    for items in by_code.values():
        listed = ", ".join(f"{a:,}" for a, _ in items)
        out.append(
            f"    does not compile at {s.var} = {listed} ({items[0][1]}"
            + (", ..." if len(items) > 1 else "")
            + ")"
        )
    if not s.complete:
        out.append(f"    (stopped after {len(s.splits)} splits: more than {SCAN_SECONDS:g} s)")
    return out


__all__ = ["SCAN_SECONDS", "Split", "SplitScan", "letter", "scan", "text_lines"]
