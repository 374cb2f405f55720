"""The `validate` pass's checks of a point-to-point `Send` (dsl/lang/send.py): its axes, coordinates
and shifts. Called from the pass's expression checks (`passes.validate_expr`) for every
`Send_{...}(A)`; reports, never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from shardc.lang.send import format_send
from shardc.lang.syntax import CollectiveCall
from shardc.passes.context import Context

_FORMS = (
    "a Send is either a point-to-point copy (`Send_{X: 0->3, Y: 0->3}`) or a shift that "
    "every device applies (`Send_{P: +1}`), not both"
)


def check_send(
    expr: CollectiveCall,
    size: Callable[[str], int | None],
    mesh: Mapping[str, int | None],
    ctx: Context,
) -> bool:
    """Check a Send's entries against the mesh; False after reporting a problem.

    The rules: every axis is a mesh axis (S001) named once (C010); the entries are all points
    or all shifts (C012); a point needs the axis's size (C014) and coordinates inside it
    (C013); and the Send moves something: a shift is not a multiple of the axis's size, and a
    point's source is not its destination (C015).
    """
    d = ctx.diagnostics
    written = format_send(expr.send)
    seen: set[str] = set()
    for m in expr.send:
        if m.axis not in mesh:
            d.error(
                "S001",
                f"unknown mesh axis {m.axis!r} in {written}",
                m.span,
                notes=("mesh axes: " + ", ".join(mesh) if mesh else "the mesh declares no axes",),
            )
            return False
        if m.axis in seen:
            d.error(
                "C010",
                f"mesh axis {m.axis!r} appears twice in {written}",
                m.span,
                f"second use of {m.axis!r}",
                ("name each mesh axis of a Send once",),
            )
            return False
        seen.add(m.axis)
    shifts = [m for m in expr.send if m.is_shift]
    if shifts and len(shifts) != len(expr.send):
        other = next(m for m in expr.send if not m.is_shift)
        d.error(
            "C012",
            f"{written} mixes a shift and a point-to-point copy",
            other.span,
            f"{other.text()!r} names two devices, {shifts[0].text()!r} a shift",
            (_FORMS,),
        )
        return False
    for m in expr.send:
        n = size(m.axis)
        if m.is_shift:
            assert m.shift is not None
            if m.shift == 0 or (n is not None and m.shift % n == 0):
                what = "0" if m.shift == 0 else f"{m.shift:+d} (a multiple of |{m.axis}| = {n})"
                steps = f"1 to {n - 1}" if n is not None else f"1 to {m.axis}-1"
                d.error(
                    "C015",
                    f"{written} moves nothing: a shift by {what} sends every block "
                    "to the device that holds it",
                    m.span,
                    f"shift by {steps} steps, either way",
                    ("a Send must move data; leave it out, or write `B = A`",),
                )
                return False
            continue
        if n is None:
            d.error(
                "C014",
                f"{written} names coordinates on {m.axis!r}, whose size is symbolic",
                m.span,
                f"the size of {m.axis} is needed",
                (
                    f"coordinates need the axis's size (for the range and the distance round "
                    f"a ring): declare `mesh {m.axis}=4`, bind it with `--set {m.axis}=4`, or "
                    f"write a shift such as `Send_{{{m.axis}: +1}}`",
                ),
            )
            return False
        assert m.src is not None and m.dst is not None
        bad = [c for c in (m.src, m.dst) if c >= n]
        if bad:
            d.error(
                "C013",
                f"coordinate {bad[0]} is outside mesh axis {m.axis!r} of size {n}",
                m.span,
                f"{m.axis} runs from 0 to {n - 1}",
                ("device coordinates count from 0 along each mesh axis",),
            )
            return False
    if not shifts and all(m.src == m.dst for m in expr.send):
        d.error(
            "C015",
            f"{written} moves nothing: the source is the destination",
            expr.sub_span,
            "the same coordinates on both ends",
            ("a Send must move data; leave it out, or write `B = A`",),
        )
        return False
    return True
