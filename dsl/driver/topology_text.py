"""The mesh's topology in words: one line per mesh axis, its link level, physical axes, ring or
line, and why (the text report's `topology` section)."""

from __future__ import annotations

from typing import Any


def topology_lines(topo: Any) -> list[str]:
    """One line per mesh axis of `topo` (a `passes.topology.Topology`, or None: no lines)."""
    if topo is None:
        return []
    lines = []
    for link in topo.links:
        if link.level == "ici":
            phys = []
            for p in link.physical:
                pa = topo.phys(p)
                shape = "ring" if pa.wrap and (pa.length is None or pa.length >= 3) else "line"
                length = "?" if pa.length is None else str(pa.length)
                extra = ", one neighbour" if pa.wrap and pa.length == 2 else ""
                named = "" if link.physical == (link.axis,) else f"{p}: "
                phys.append(f"{named}{shape} of {length} ({pa.why}{extra})")
            stride = f", stride {link.stride}" if link.stride != 1 else ""
            pa = topo.phys(link.physical[0]) if len(link.physical) == 1 else None
            if (
                pa is not None
                and pa.wrap
                and pa.length is not None
                and link.size is not None
                and link.size * link.stride < pa.length
            ):
                stride += f"; alone, its {link.size} chips are a segment of the ring: a line"
            lines.append(f"{link.axis}: ICI " + "; ".join(phys) + stride)
        elif link.level == "nvlink" and link.inner is not None:
            lines.append(
                f"{link.axis}: NVLink inside a domain ({link.inner} devices), "
                "InfiniBand across domains"
            )
        else:
            lines.append(f"{link.axis}: {link.level}")
    return lines
