"""`export-jax`: write a program as a runnable JAX script that times each statement.

The script builds the mesh, creates every input in its layout on the devices, runs each
statement as its own `jax.jit` (the functions `xla-check` compiles), and prints measured times
beside shardc's prediction; `--trace DIR` records a profiler trace with one annotation per line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from shardc.driver.report import Report
from shardc.lang.layout import Layout
from shardc.tools.xla.check import Prepared
from shardc.tools.xla.codegen import (
    PRELUDE,
    comment,
    function_name,
    identifier,
    spec_args,
    statement_source,
)
from shardc.tools.xla.lower import JAX_DTYPES
from shardc.tools.xla.statements import Statement

HEADER = '''\
#!/usr/bin/env python3
"""Exported by `shardc export-jax`: times every statement of PROGRAM on {devices} devices.

    python SCRIPT [--repeat 10] [--trace DIR] [--cpu]

--cpu runs on {devices} fake CPU devices (to try the script; times are not the chip's).
"""

import argparse
import os
import statistics
import sys
import time

PROGRAM = {name}
"""The program this script was exported from."""
SCRIPT = {script}
MESH = {mesh}
DIMS = {dims}
PREDICTED = {predicted}
"""shardc's time per statement line (ops in sequence, no overlap; None without a chip)."""
'''

MAIN = '''

def make(shape, dtype, sharding):
    """An array of `shape` created directly in its layout (never materialized on the host)."""
    return jax.jit(lambda: jnp.full(shape, 1, dtype), out_shardings=sharding)()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace(
        "PROGRAM", PROGRAM))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--trace", help="write a jax.profiler trace to this folder")
    ap.add_argument("--cpu", action="store_true", help="use fake CPU devices")
    args = ap.parse_args()
    global jax, jnp, mesh, NamedSharding, P
    n = 1
    for size in MESH.values():
        n *= size
    if args.cpu:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={{n}}")
        os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    if len(jax.devices()) < n:
        sys.exit(f"this program needs {{n}} devices, JAX sees {{len(jax.devices())}} (try --cpu)")
    auto = {{}}
    if hasattr(jax.sharding, "AxisType"):  # Auto axes: GSPMD propagates the shardings
        auto = {{"axis_types": (jax.sharding.AxisType.Auto,) * max(len(MESH), 1)}}
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(tuple(MESH.values()) or (1,)),
                tuple(MESH) or ("_",), **auto)
    env = {{}}
{inputs}
    rows = []
    trace = jax.profiler.trace(args.trace) if args.trace else None
    if trace:
        trace.__enter__()
    try:
        for line, fn, target, inputs, out, text in STATEMENTS:
            if isinstance(out, list):  # the backward pass: one layout per gradient
                out = tuple(spec(*o) for o in out)
            elif out is not None:
                out = spec(*out)
            compiled = jax.jit(fn, in_shardings=tuple(spec(*s) for _, s in inputs),
                               out_shardings=out)
            xs = [jax.device_put(env[name], spec(*s)) for name, s in inputs]
            env[target] = jax.block_until_ready(compiled(*xs))  # compile and warm up
            times = []
            for _ in range(args.repeat):
                with jax.profiler.TraceAnnotation(f"line {{line}}: {{text}}"):
                    t0 = time.perf_counter()
                    jax.block_until_ready(compiled(*xs))
                    times.append(time.perf_counter() - t0)
            rows.append((line, text, statistics.median(times), PREDICTED.get(line)))
    finally:
        if trace:
            trace.__exit__(None, None, None)
    print(f"{{'line':>5}}  {{'measured':>12}}  {{'shardc':>12}}  statement")
    for line, text, measured, predicted in rows:
        pred = "-" if predicted is None else f"{{predicted * 1e3:9.3f}} ms"
        print(f"{{line:>5}}  {{measured * 1e3:9.3f}} ms  {{pred:>12}}  {{text}}")


if __name__ == "__main__":
    main()
'''


def _predicted(prepared: Prepared) -> dict[int, float | None]:
    """shardc's time per statement: the sum of its ops' times in the report."""
    comp = prepared.compilation
    report: Report | None = comp.report
    out: dict[int, float | None] = {}
    if report is None or comp.compiled is None:
        return out
    index = {id(op): i for i, op in enumerate(comp.compiled.ops)}
    by_index = {c.index: c for c in report.ops}
    for st in prepared.statements:
        total: float | None = 0.0
        for op in st.ops:
            c = by_index.get(index.get(id(op), -1))
            if c is None:
                continue
            v = report.value(c.time)
            total = None if v is None or total is None else total + v
        out[st.line] = total
    return out


def _inputs(prepared: Prepared, stmts: list[Statement]) -> list[str]:
    lines = []
    seen: set[str] = set()
    for st in stmts:
        for x in st.inputs:
            if x.name in seen or any(x.name == s.target for s in stmts if s.line < st.line):
                continue
            seen.add(x.name)
            shape = tuple(prepared.sizes[d] for d in x.dims)
            lines.append(
                f"    env[{x.name!r}] = make({shape!r}, jnp.{JAX_DTYPES[x.dtype]}, "
                f"spec({spec_args(x.layout)}))  # {comment(x.layout.format(x.name))}"
            )
    return lines


def _tuple(layout: Layout) -> str:
    args = spec_args(layout)
    return f"({args},)" if args else "()"


def script(prepared: Prepared, file_name: str = "prog.py") -> str:
    """The text of the exported JAX script."""
    stmts = [st for st in prepared.statements if not st.skip]
    skipped = [st for st in prepared.statements if st.skip]
    name = prepared.compilation.source.name
    mesh: Mapping[str, int] = prepared.mesh
    # User text (file names, array names, statements) enters the script only through repr()
    # or as a comment made safe by `comment`: a file named `a"""+...` is data, not code.
    parts = [
        HEADER.format(
            name=repr(str(name)),
            script=repr(str(file_name)),
            devices=int(math.prod(mesh.values())),
            mesh=repr({str(k): int(v) for k, v in mesh.items()}),
            dims=repr({str(k): int(v) for k, v in prepared.sizes.items()}),
            predicted=repr(_predicted(prepared)),
        ),
        "",
        PRELUDE,
    ]
    for st in skipped:
        parts.append(
            f"# line {int(st.line)} not exported: {comment(st.text)}\n#   {comment(st.skip)}\n"
        )
    for st in stmts:
        parts.append("\n" + statement_source(st))
    rows = []
    for st in stmts:
        ins = ", ".join(f"({x.name!r}, {_tuple(x.layout)})" for x in st.inputs)
        if st.is_backward:
            out = "[" + ", ".join(_tuple(g.layout) for g in st.grads) + "]"
        else:
            out = (
                "None"
                if st.out_layout is None
                else _tuple(st.out_layout.reordered(st.ours_layout.dim_names))
            )
        rows.append(
            f"    ({int(st.line)}, {function_name(st)}, {st.target!r}, [{ins}], {out}, "
            f"{st.text!r}),"
        )
    parts.append("\nSTATEMENTS = [\n" + "\n".join(rows) + "\n]\n")
    parts.append(MAIN.format(inputs="\n".join(_inputs(prepared, stmts)) or "    pass"))
    text = "\n".join(parts)
    return text.replace("\n\n\n\n", "\n\n\n")


__all__ = ["identifier", "script"]
