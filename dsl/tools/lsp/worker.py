"""The compiler behind `shardc lsp`, in a child process: it reads one document a line (JSON) on
standard input, compiles it and writes its diagnostics and hover rows as one line of JSON.

A child process, so that the server can end a compile that runs past its budget by ending
the process (a thread cannot be stopped), while the server itself keeps answering. The child
limits its own CPU time per compile (`RLIMIT_CPU`: the kernel stops it past the budget, however
loaded the machine is); the server adds a wall-clock cap for anything else. A warm child keeps
the compiler's caches between compiles, as an editor session wants.

Run as `python -m shardc.tools.lsp.worker`; it ends at the end of its input (when the server
goes, so does the child).
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any

from shardc.lang.input_limits import LSP_COMPILE_BYTES
from shardc.lang.source import Source


def compile_document(uri: str, text: str) -> dict[str, Any]:
    """The compile of one document as plain data: each diagnostic's code, severity, message,
    label, notes and span (1-based line, column, end line, end column, in code points), and
    for each source line that compiled to ops the Markdown of its hover, and for each array the
    Markdown of its picture (hovered over its name); `restart` when the
    worker should not compile again (it ran out of memory).

    >>> out = compile_document("file:///t.shard",
    ...                        "mesh X=2\\ndim I=8\\nA: f32[I_X]\\nB = gelo(A)\\n")
    >>> [(d["code"], d["span"]) for d in out["diagnostics"]]
    [('N012', [4, 5, 4, 9])]
    """
    from shardc.driver.api import run_pipeline

    try:
        result = run_pipeline(Source(uri, text))
    except MemoryError:  # the worker's address space (`LSP_COMPILE_BYTES`): start a fresh one
        return {
            "diagnostics": [
                {
                    "severity": "error",
                    "code": "",
                    "span": [0, 0, 0, 0],
                    "label": "",
                    "notes": [],
                    "message": f"the compile needed more than {LSP_COMPILE_BYTES // 2**30} GiB of "
                    "memory and was stopped",
                }
            ],
            "hover": {},
            "restart": True,
        }
    except Exception as exc:  # a compiler bug: said in the editor, as the CLI says it
        return {
            "diagnostics": [
                {
                    "severity": "error",
                    "code": "",
                    "span": [0, 0, 0, 0],
                    "label": "",
                    "notes": [],
                    "message": f"internal error (this is a bug in shardc): {type(exc).__name__}: "
                    f"{str(exc)[:120]}",
                }
            ],
            "hover": {},
        }
    diagnostics = [
        {
            "severity": d.severity,
            "code": d.code,
            "message": d.message,
            "label": d.label,
            "notes": list(d.notes),
            "span": [d.span.line, d.span.col, d.span.end_line, d.span.end_col],
        }
        for d in result.diagnostics.items
    ]
    report = result.report
    return {
        "diagnostics": diagnostics,
        "hover": _hovers(report) if report is not None else {},
        "pictures": _pictures(report) if report is not None else {},
    }


MAX_PICTURES = 2000
"""Arrays whose pictures a compile sends at most (in program order): hovering a later one
shows only its line's ops."""


def _pictures(report: Any) -> dict[str, str]:
    """Per array name, the Markdown of its picture (`shardc.driver.show`): which mesh devices
    hold which of its blocks, shown on hover over the name."""
    from shardc.driver.show import array_pictures
    from shardc.driver.show_writers import to_markdown

    names = [v.array for v in report.program.arrays][:MAX_PICTURES]
    return {p.name: to_markdown(p) for p in array_pictures(report, names)}


def _hovers(report: Any) -> dict[str, str]:
    """Per source line (1-based, as a string: JSON keys), the Markdown shown on hover: each op
    the line compiled to, its time and bytes on the program's chip, and for an inserted
    collective why it is there."""
    from shardc.lang.units import fmt_value

    rows: dict[int, list[str]] = {}
    for c in report.ops:
        if c.line <= 0:
            continue
        moved = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
        row = (
            f"- `{c.op}` {c.src} → {c.dst}: {fmt_value(report.value(c.time), 's')}, "
            f"{fmt_value(report.value(moved), 'B')}"
        )
        if c.kind == "collective" and c.reason:
            row += f"  \n  why: {c.reason}"
        rows.setdefault(c.line, []).append(row)
    chip = report.hardware_name or "no chip (hardware symbols stay symbolic)"
    if report.shown_region is not None:  # plans by region of the symbolic sizes
        from shardc.driver.render.writer import past_text

        where, share, past = report.shown_region
        # past the regions' cap: the limit hit, worded as the report words it
        limit = "" if past is None else f"{past_text(past)}: "
        for r in rows.values():
            r.append(f"\n({limit}the plan where {where}: {share:.0%} of the sizes sampled)")
    return {str(line): f"**line {line}** on {chip}\n\n" + "\n".join(r) for line, r in rows.items()}


def _limit_cpu(seconds: float) -> None:
    """Let this process run `seconds` more of CPU time (whole seconds, rounded up), then be
    stopped by the kernel (SIGXCPU, which ends the process)."""
    try:
        import resource
    except ImportError:  # not a Unix: the server's wall-clock cap is the only limit
        return
    if seconds <= 0 or not math.isfinite(seconds):
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(used.ru_utime + used.ru_stime + seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def main() -> int:
    """The worker's loop: a line `{"ready": true}` once imported, then `{"uri", "text",
    "budget"}` in, `compile_document`'s answer out."""
    # Answers go to the original standard output; anything else the compiler might print goes
    # to standard error, so it cannot break a line of the protocol.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    try:  # the end of a budget ends the process and writes no core file
        import resource
        import signal

        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_AS, (LSP_COMPILE_BYTES, LSP_COMPILE_BYTES))
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # not a Unix: the server's wall-clock cap is the only limit
    # The imports and the compiler's first-use work, once, before any budget starts.
    compile_document(
        "warm-up", "mesh X=2\ndim I=8\nhardware tpu-v5e\nA: bf16[I_X]\nB[I] = gelu(A)\n"
    )

    answers.write('{"ready": true}\n')  # the server's wall-clock cap starts after the imports
    answers.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            uri, text, budget = request["uri"], request["text"], float(request["budget"])
        except (ValueError, KeyError, TypeError):
            return 2
        _limit_cpu(budget)
        answers.write(json.dumps(compile_document(uri, text)) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
