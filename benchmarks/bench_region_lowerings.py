"""What finding a program's regions costs per statement lowered (the unit of
`REGIONS_STATEMENTS`): each lowering the regions make (`driver.region_totals.lowered`) timed
alone inside one process, CPU time.

Usage: python benchmarks/bench_region_lowerings.py FILE.shard|gen:N [...]
`gen:N` is `benchmarks.gen.program(N)` with `dim B, D, F` symbolic (as bench_regions.py).
Prints a Markdown table for docs/benchmarks.md; programs whose regions need no lowering (their
plans depend on no symbolic size) are left out.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(files: list[str]) -> None:
    import shardc
    from benchmarks.gen import program
    from shardc.driver import region_totals
    from shardc.driver.render.writer import past_text

    real = region_totals.lowered
    spent: list[float] = []

    def lowered(r, chooser, memory=False):
        start = time.process_time()
        out = real(r, chooser, memory)
        spent.append(time.process_time() - start)
        return out

    region_totals.lowered = lowered
    print("| program | statements lowered | lowerings | CPU ms per statement | label |")
    print("|---|---|---|---|---|")
    for f in files:
        spent.clear()
        if f.startswith("gen:"):
            text = program(int(f[4:])).replace("dim B=65536, D=8192, F=32768", "dim B, D, F")
        else:
            text = Path(f).read_text()
        r = shardc.compile(text)
        if not spent or r.recipe is None:
            continue
        n = region_totals.statements(r)
        regions = r.regions()
        label = (
            past_text(r.shown_region.past)
            if regions is None and r.shown_region is not None
            else f"{len(regions or ())} regions"
        )
        per = 1000 * sum(spent) / (n * len(spent))
        print(f"| {f} | {n} | {len(spent)} | {per:.1f} | {label} |")


if __name__ == "__main__":
    main(sys.argv[1:])
