"""`shardc derive`: a program's compute-bound conditions (the book's accounting or the whole step
as compiled) solved for a variable, and the optimum of a free mesh size. Imports only argparse
until the command runs."""

from __future__ import annotations

import argparse
import sys

from shardc.cli.style import print_diagnostics
from shardc.lang.units import fmt_sig
from shardc.lang.visible import visible_lines


def add_parser(sub) -> None:
    from shardc.cli.inputs import add_cost_model_flag, add_objective_flag, add_option_flags

    p = sub.add_parser("derive", help="solve compute-bound conditions; optimal mesh sizes")
    p.add_argument("program")
    p.add_argument(
        "--solve-for",
        dest="var",
        metavar="VAR",
        help="solve every condition for this variable or monomial (B, F, Y; B/X: "
        "the per-device batch)",
    )
    p.add_argument(
        "--optimize", metavar="AXIS", help="the mesh axis whose size minimizes communication"
    )
    p.add_argument(
        "--with",
        dest="partner",
        metavar="AXIS",
        help="the axis it trades devices with (AXIS * partner = --devices)",
    )
    p.add_argument(
        "--devices",
        metavar="N",
        help="devices shared by the two axes (a number or a name to keep symbolic; default N)",
    )
    p.add_argument(
        "--overlap",
        choices=["sum", "max", "both"],
        default="both",
        help="communication over several axis groups: summed (the book), overlapped "
        "(max, the revised training chapter), or both (default)",
    )
    add_option_flags(p, "hw")
    add_cost_model_flag(
        p,
        default="book",
        help="book: the training chapter's accounting (the "
        "pass with the most communication per FLOP, full rings; default); exact: "
        "the whole step as compiled (--model is the same flag)",
    )
    add_option_flags(p, "bindings")
    p.add_argument("--format", choices=["text", "json", "latex"], default="text")
    add_option_flags(p, "on")
    add_objective_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shardc.cli.inputs import options_from, read_program
    from shardc.cli.termwrap import write_result
    from shardc.driver.api import run_pipeline
    from shardc.driver.json_text import strict_dumps
    from shardc.tools.derive import derive

    source = read_program(args.program)
    options = options_from(args)
    result = run_pipeline(source, options)
    if result.diagnostics.items:
        print_diagnostics(result.rendered())
    if result.report is None:
        return 1
    if args.optimize and not args.partner:
        print(
            "shardc: error: --optimize needs --with AXIS (the axis it trades devices with)",
            file=sys.stderr,
        )
        return 2
    try:
        devices = check_options(args, result.report)
    except UsageError as exc:
        print_diagnostics(f"shardc: error: {visible_lines(str(exc))}")
        return 2
    overlaps = ("sum", "max") if args.overlap == "both" else (args.overlap,)
    try:
        d = derive(
            result.report,
            result.report.program.backward_line,
            overlaps=overlaps,
            optimize=args.optimize,
            partner=args.partner,
            devices=devices,
        )
    except ValueError as exc:
        print_diagnostics(f"shardc: error: {visible_lines(str(exc))}")
        return 2
    target = None
    if args.var is not None:
        from shardc.driver.user_expr import ExprError

        try:
            target = solve_target(args.var, d)
        except ExprError as exc:
            print(exc.render("--solve-for", args.var), file=sys.stderr)
            return 2
    out = to_dict(d, target)
    if isinstance(target, str):
        from shardc.tools.derive_by_region import solve_by_region

        by_region = solve_by_region(result.report, target, overlaps, d)
        if by_region is not None:
            out["solve_for"] = target
            if len(by_region["regions"]) > 1:
                out["by_region"] = by_region
            from shardc.tools.derive_by_region import union

            for c in out["conditions"]:
                if c["name"] not in by_region["holds"]:
                    continue
                # where the condition holds over every region, sorted and joined
                holds = [
                    list(p) for p in union([p["interval"] for p in by_region["holds"][c["name"]]])
                ]
                c["intervals"] = holds
                if c["solved"] is not None:
                    c["solved"]["intervals"] = holds
    if args.optimize and isinstance(devices, int):
        from shardc.tools.derive_splits import scan

        bound = dict(args.bindings)
        checked = (
            None
            if {args.optimize, args.partner} & bound.keys()
            else scan(
                lambda split: run_pipeline(
                    source, options, on="roofline", objective=None, set={**bound, **split}
                ),
                args.optimize,
                args.partner,
                devices,
            )
        )
        if checked is not None:
            out["splits"] = checked.to_dict()
    if args.format == "json":
        sys.stdout.write(strict_dumps(out, indent=2) + "\n")
    elif args.format == "latex":
        sys.stdout.write(to_latex(out) + "\n")
    else:
        write_result(to_text(out) + "\n")
    return 0


class UsageError(ValueError):
    """A derive option that does not fit the program; the message names the flag."""


def check_options(args: argparse.Namespace, report) -> int | str | None:
    """--optimize and --with must be two different mesh axes of the program; --devices a
    positive whole number or a name. Returns the devices as an int, a name, or None."""
    from shardc.driver.user_expr import ExprError, Name, parse
    from shardc.lang.numeric import NumberError, parse_decimal, whole

    axes = list(report.program.mesh_axes)
    for flag, axis in (("--optimize", args.optimize), ("--with", args.partner)):
        if axis is not None and axis not in axes:
            raise UsageError(
                f"{flag} {axis[:80]!r} is not a mesh axis of {report.name} "
                f"(mesh axes: {', '.join(axes) or 'none'})"
            )
    if args.optimize is not None and args.optimize == args.partner:
        raise UsageError(
            f"--with {args.partner!r} is the axis --optimize varies; give the "
            "other mesh axis it trades devices with"
        )
    if args.devices is None:
        return None
    text = args.devices.strip()
    if not text or text[0].isdigit() or text[0] in "+-.":
        try:
            return whole(parse_decimal(text), "--devices")
        except NumberError as exc:
            message = str(exc)
            raise UsageError(
                message if "--devices" in message else f"--devices: {message}"
            ) from None
    try:
        node = parse(text)
    except ExprError as exc:
        raise UsageError(exc.render("--devices", text).removeprefix("shardc: error: ")) from None
    if not isinstance(node, Name):
        raise UsageError(f"--devices {text[:80]!r} must be a positive whole number or a name")
    from shardc.tools.derive import NOT_NUMBERS

    if node.name.lower() in NOT_NUMBERS:
        raise UsageError(
            f"--devices {node.name!r} is not a number of devices: give a positive "
            "whole number (8960) or a name for the count (N)"
        )
    taken = [n for n, _ in (*report.program.dims, *report.program.mesh)]
    if node.name in taken:
        raise UsageError(
            f"--devices {node.name!r} is already a dimension or mesh axis of "
            f"{report.name}; pick another name (default N)"
        )
    return node.name


def solve_target(text: str, d):
    """The --solve-for formula over the names the derivation knows (its conditions' symbols,
    the program's sizes, the chip's figures); `ExprError` for anything else."""
    import sympy as sp

    from shardc.driver.user_expr import ExprError, known_names_resolver, number_formula
    from shardc.passes.symbols import size_symbol

    r = d.report
    known: dict[str, sp.Expr] = {n: size_symbol(n) for n, _ in (*r.program.dims, *r.program.mesh)}
    known.update(
        {s.name: s for s in r.cost.symbols.all_for({"bf16", "f32", "f16", "fp8", "int8", "int4"})}
    )
    for c in d.conditions:
        known.update({s.name: s for s in c.relation.free_symbols})
    for o in d.optima:
        known.update({s.name: s for s in o.devices.free_symbols})
    target = number_formula(text, known_names_resolver(known))
    if not target.free_symbols:
        raise ExprError("nothing to solve for: give a name or a monomial such as B/X", 0)
    if isinstance(target, sp.Symbol):
        return target.name
    return target


def to_dict(d, var=None) -> dict:
    """The derivation as the issue's JSON: conditions (text, expr, latex, solved) and optima
    (var, expr, value, rounded), with numbers where the chip and bindings give them."""
    from shardc.driver.formulas import latex
    from shardc.tools.derive import SCHEMA, value
    from shardc.tools.derive_solve import partner_power_of_two, round_power_of_two, solve_for

    r = d.report
    conditions = []
    for c in d.conditions:
        lhs, rhs = value(d, c.relation.lhs), value(d, c.relation.rhs)
        entry = {
            "name": c.name,
            "text": c.text,
            "expr": str(c.relation),
            "latex": latex(c.relation),
            "values": {"lhs": lhs, "rhs": rhs},
            "holds": None if lhs is None or rhs is None else bool(lhs > rhs),
            "solved": None,
        }
        if var is not None:
            s = solve_for(c.relation, var)
            if s is None:
                entry["unsolved"] = _unsolved(c.relation, var)
            else:
                entry["solved"] = {
                    "var": s.var,
                    "rel": s.rel,
                    "expr": str(s.expr),
                    "latex": latex(s.expr),
                    "value": value(d, s.expr),
                }
        conditions.append(entry)
    optima = []
    for o in d.optima:
        v = value(d, o.expr)
        rounded = round_power_of_two(v, d.devices_value) if v is not None else None
        optima.append(
            {
                "var": o.var,
                "expr": str(o.expr),
                "latex": latex(o.expr),
                "overlap": o.overlap,
                "with": f"{o.var} * {o.partner} = {o.devices}",
                "devices": d.devices_value,
                "value": v,
                "rounded": rounded,
                "partner": o.partner,
                "partner_rounded": (
                    partner_power_of_two(rounded, d.devices_value) if rounded is not None else None
                ),
            }
        )
    return {
        "schema": SCHEMA,
        "program": r.name,
        "hardware": r.hardware_name,
        "model": r.model,
        "accounting": d.accounting.name,
        "notes": list(d.notes),
        "conditions": conditions,
        "optima": optima,
    }


def _unsolved(rel, var) -> str | None:
    """ "no closed form" when the condition holds every name of `var` but none was found (or
    SymPy ran past its time budget); None when the condition does not involve `var`."""
    names = {s.name for s in rel.free_symbols}
    wanted = {var} if isinstance(var, str) else {s.name for s in var.free_symbols}
    return "no closed form" if wanted <= names else None


def to_text(out: dict) -> str:
    lines = [
        f"shardc derive: {out['program']}   chip: {out['hardware'] or 'none'}   "
        f"model: {out['model']}"
    ]
    lines += [f"  note: {n}" for n in out["notes"]]
    for c in out["conditions"]:
        lines.append(f"  {c['text']}:")
        vals = c["values"]
        tail = (
            ""
            if c["holds"] is None
            else (
                f"   [{'holds' if c['holds'] else 'does not hold'}: "
                f"{fmt_sig(vals['lhs'], 4, '?')} vs {fmt_sig(vals['rhs'], 4, '?')}]"
            )
        )
        if c["holds"] is None and vals["rhs"] is not None:
            tail = f"   [right side {fmt_sig(vals['rhs'], 4, '?')}]"
        lines.append(f"    {c['expr']}{tail}")
        s = c["solved"]
        if s:
            v = "" if s["value"] is None else f"   (= {s['value']:.4g})"
            lines.append(f"    solved: {s['var']} {s['rel']} {s['expr']}{v}")
        elif c.get("unsolved"):
            lines.append(f"    solved: {c['unsolved']}")
        if "intervals" in c:
            lines.append(f"    holds: {_where(out, c['intervals'])}")
    lines += _region_lines(out.get("by_region"))
    seen: dict[str, list[str]] = {}
    for o in out["optima"]:
        seen.setdefault(o["expr"], []).append(o["overlap"])
    done = set()
    for o in out["optima"]:
        if o["expr"] in done:
            continue
        done.add(o["expr"])
        how = " and ".join(
            {"sum": "summed (the book)", "max": "overlapped (the revised training chapter)"}[x]
            for x in seen[o["expr"]]
        )
        v = "" if o["value"] is None else f" = {o['value']:.4g}, rounded {o['rounded']}"
        if o["partner_rounded"] is not None:
            v += f" ({o['partner']} = {o['partner_rounded']})"
        lines.append(f"  optimum ({o['with']}; communication {how}): {o['var']} = {o['expr']}{v}")
    if out.get("splits"):
        lines += _split_lines(out["splits"], out["optima"][0]["rounded"] if out["optima"] else None)
    return "\n".join(lines)


def _split_lines(d: dict, rounded: int | None) -> list[str]:
    """`derive_splits.text_lines` from the JSON form."""
    from shardc.tools.derive_splits import Split, SplitScan, text_lines

    var, partner = d["var"], d["partner"]
    splits = tuple(
        Split(x[var], x[partner], x["t_comms_s"], x["t_lower_s"], x["plan"]) for x in d["splits"]
    )
    s = SplitScan(
        var,
        partner,
        d["devices"],
        d["devices_used"],
        splits,
        tuple(p["collectives"] for p in d["plans"]),
        d["complete"],
        tuple((x[var], x[partner], x["why"]) for x in d["skipped"]),
    )
    return text_lines(s, rounded)


def _where(out: dict, pieces: list) -> str:
    """Intervals of the size solved for as text: `B < 5736.14 or B > 40800`."""
    from shardc.tools.derive_by_region import interval_text

    var = out["solve_for"]
    return " or ".join(interval_text(var, lo, hi) for lo, hi in pieces) or f"for no {var}"


def _region_lines(by: dict | None) -> list[str]:
    """Each region of the plans (the program a compile at those sizes runs), each condition
    solved there, and where it holds."""
    if not by:
        return []
    from shardc.tools.derive_by_region import interval_text

    var = by["var"]
    out = [
        f"  by region of the plans ({var} solved in each; the program a compile with {var} "
        "bound runs there):"
    ]
    for reg in by["regions"]:
        out.append(f"    where {reg['condition']}   ({reg['share_of_sample']:.0%} of the sample)")
        for c in reg["conditions"]:
            s = c["solved"]
            how = (
                (
                    f"{s['var']} {s['rel']} {s['expr']}"
                    + ("" if s["value"] is None else f" (= {s['value']:.4g})")
                )
                if s
                else c["expr"]
            )
            where = (
                " or ".join(interval_text(var, lo, hi) for lo, hi in c["intervals"]) or "none here"
            )
            out.append(f"      {c['name']}: {how}: holds: {where}")
    return out


def to_latex(out: dict) -> str:
    from shardc.driver.escape import latex_text

    lines = ["\\begin{align*}"]
    for c in out["conditions"]:
        s = c["solved"]
        lines.append(
            f"  \\text{{{latex_text(c['name'])}}}:\\ & {c['latex']}"
            + (f" \\iff {s['var']} {s['rel']} {s['latex']}" if s else "")
            + " \\\\"
        )
    for o in out["optima"]:
        lines.append(
            f"  {o['var']}_{{opt}} &= {o['latex']} && \\text{{({latex_text(o['overlap'])})}} \\\\"
        )
    lines.append("\\end{align*}")
    return "\n".join(lines)
