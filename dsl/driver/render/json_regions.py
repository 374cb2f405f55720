"""The regions' members of the JSON report (`shardc.driver.render.json.JsonWriter`): each region
of the symbolic sizes with its totals, the totals as piecewise formulas, the region shown; or a
note that there are too many.
"""

from __future__ import annotations

from typing import Any

from shardc.driver.detail_sections import RegionDetail
from shardc.driver.document import Region, RegionsPast
from shardc.driver.formulas import latex, text
from shardc.driver.render.writer import past_text


def regions(d: RegionDetail, rows: tuple[Any, ...]) -> dict[str, Any]:
    """The regions' members: each region and its totals, the totals as piecewise formulas,
    the region shown; or a note that there are too many."""
    shown = (
        {"shown_region": {"condition": d.shown[0], "share_of_sample": round(d.shown[1], 4)}}
        if d.shown is not None
        else {}
    )
    if rows and type(rows[0]) is RegionsPast:
        where = f"the plan where {d.shown[0]} is shown" if d.shown else "default plans kept"
        return {
            "regions": None,
            "note": f"{past_text(rows[0].past)}: {where}",
            "regions_limit": rows[0].past,
            **shown,
        }
    out: dict[str, Any] = {"regions": [region(v) for v in rows if type(v) is Region]}
    if d.piecewise:  # kept within shardc.report/1: `totals` are these formulas now
        out["totals_piecewise"] = dict(d.piecewise)
    return {**out, **shown}


def region(v: Region) -> dict[str, Any]:
    return {
        "condition": v.condition,
        "relation": v.relation,
        "boundaries": [b.as_json() for b in v.solved],
        "share_of_sample": round(v.share, 4),
        "collectives": v.collectives,
        "totals": {
            t.key: {"expr": text(t.formula), "latex": latex(t.formula), "value": x}
            for t, x in zip(v.totals, v.values, strict=True)
        },
    }


__all__ = ["region", "regions"]
