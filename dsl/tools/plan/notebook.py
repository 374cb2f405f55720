"""A plan in a notebook: a one-line `repr` and an HTML view (the candidates ranked in a table,
the explanation and the book's conditions collapsed); `Plan.__repr__` and `Plan._repr_html_`
call these. The table's columns and numbers are those of the text plan (`render`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.driver.escape import html_text
from shardc.driver.notebook import table_html
from shardc.tools.plan.render import ordered, pct_of, time_text

if TYPE_CHECKING:
    from shardc.tools.plan.candidates import Plan


def short_repr(p: Plan) -> str:
    """`<shardc.Plan llama3-8b on 16 tpu-v5e: 7 candidates, best fsdp (X=16) 1.23 s>`."""
    best = p.best
    win = f"best {best.label()} {time_text(best.t_step)}" if best is not None else "none fits"
    return (
        f"<shardc.Plan {p.card.name} on {p.slice.chips + p.slice.idle} {p.chip.name}: "
        f"{len(p.candidates)} candidates, {win}>"
    )


def render_html(p: Plan) -> str:
    """The setting, the ranking (strategy, mesh, step time, bound, memory, fits, MFU, HFU; the
    candidates not evaluated with their reason), and why the best wins, collapsed."""
    from shardc.tools.plan.explanation import book_figures, explain

    e = html_text
    sl = p.slice
    idle = f", {sl.idle} idle" if sl.idle else ""
    pods = f" ({sl.pods} pods of {sl.chips_per_pod})" if sl.pods > 1 else ""
    out = [
        f"<div class='shardc-plan'><b>shardc plan</b> {e(p.card.display_name)} on "
        f"{sl.chips + sl.idle} <b>{e(p.chip.name)}</b> chips{e(pods + idle)}, batch "
        f"{p.batch_tokens:,} tokens ({p.sequences} sequences &times; {p.seq}); optimizer "
        f"{e(p.options.optimizer)}, remat {e(p.options.remat)}, attention "
        f"{e(p.options.attention)}, collectives {e(p.options.model)}"
    ]
    rank = {id(c): k for k, c in enumerate((c for c in p.ranked() if c.fits), 1)}
    rows = []
    for c in ordered(p):
        if not c.evaluated:
            rows.append(("-", e(c.label()), e(c.reason or ""), "", "", "", "", "", ""))
            continue
        f = c.figures
        bound = f["bound"] + (f" ({f['bound_level']})" if f.get("bound_level") else "")
        rows.append(
            (
                str(rank.get(id(c), "-")),
                e(c.label()),
                f"<code>{e(c.layout.mesh_text())}</code>" if c.layout else "",
                e(time_text(f["t_step_s"])),
                e(bound),
                f"{f['memory_per_device_bytes'] / 1e9:.1f} GB",
                "yes" if c.fits else "no",
                pct_of(f["mfu"]),
                pct_of(f["hfu"]),
            )
        )
    out.append(
        table_html(
            (
                "rank",
                "strategy",
                "mesh",
                "step time",
                "bound",
                "memory/device",
                "fits",
                "MFU",
                "HFU",
            ),
            rows,
        )
    )
    why = explain(p) or ["why"]
    book = book_figures(p)
    lines = [line.removeprefix("  ") for line in why[1:]]
    if book:
        lines += [
            *([""] if lines else []),
            "the book's conditions for this setting:",
            *book["lines"],
        ]
    text = e("\n".join(lines))
    out.append(f"<details><summary>{e(why[0])}</summary><pre>{text}</pre></details></div>")
    return "\n".join(out)


__all__ = ["render_html", "short_repr"]
