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
TOTALS = {totals}
"""shardc's whole-program times in seconds (T_lower, T_expected, T_upper; empty without a
chip)."""
'''

MAIN = '''

def make(shape, dtype, sharding):
    """An array of `shape` created directly in its layout (never materialized on the host):
    normal random values for floating dtypes (a product's power draw, and so its clock,
    depends on its data), ones otherwise."""
    global KEY
    KEY += 1
    if jnp.issubdtype(dtype, jnp.floating):
        key = jax.random.PRNGKey(KEY)
        return jax.jit(lambda: jax.random.normal(key, shape, jnp.float32).astype(dtype),
                       out_shardings=sharding)()
    return jax.jit(lambda: jnp.full(shape, 1, dtype), out_shardings=sharding)()


KEY = 0
LOOP_S = 0.005


def measure(fn, xs, samples, label):
    """(median, minimum) seconds per call, as `shardc calibrate` times: 3 warm-up calls, then
    `samples` loops of calls lasting at least LOOP_S each, ended by block_until_ready."""
    for _ in range(3):
        jax.block_until_ready(fn(*xs))
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            out = fn(*xs)
        jax.block_until_ready(out)
        elapsed = time.perf_counter() - t0
        if elapsed >= LOOP_S or calls >= 1 << 20:
            break
        calls = max(calls * 2, int(calls * LOOP_S / max(elapsed, 1e-9)) + 1)
    times = []
    for _ in range(samples):
        with jax.profiler.TraceAnnotation(label):
            t0 = time.perf_counter()
            for _ in range(calls):
                out = fn(*xs)
            jax.block_until_ready(out)
            times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace(
        "PROGRAM", PROGRAM))
    ap.add_argument("--repeat", type=int, default=10, help="timed samples per statement")
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
    given = dict(env)
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
            env[target] = jax.block_until_ready(compiled(*xs))  # compile
            median, fastest = measure(compiled, xs, args.repeat, f"line {{line}}: {{text}}")
            rows.append((str(line), text, median, fastest, PREDICTED.get(line)))
        whole = program(given)
        if whole is not None:
            median, fastest = measure(whole, list(given.values()), args.repeat, "program")
            rows.append(("all", "the program as one jit", median, fastest,
                         TOTALS.get("t_lower_s")))
    finally:
        if trace:
            trace.__exit__(None, None, None)
    print(f"{{'line':>5}}  {{'median':>12}}  {{'fastest':>12}}  {{'shardc':>12}}  statement")
    for line, text, measured, fastest, predicted in rows:
        pred = "-" if predicted is None else f"{{predicted * 1e3:9.3f}} ms"
        print(f"{{line:>5}}  {{measured * 1e3:9.3f}} ms  {{fastest * 1e3:9.3f}} ms  {{pred:>12}}"
              f"  {{text}}")
    for key, value in TOTALS.items():
        print(f"shardc {{key}}: {{value * 1e3:.3f}} ms")


def program(given):
    """Every statement in one jitted function of the program's inputs, each result held to
    its statement's layout; it returns what no later statement reads. None when no statement
    was exported."""
    if not STATEMENTS:
        return None
    names = list(given)
    read = {{name for _, _, _, inputs, _, _ in STATEMENTS for name, _ in inputs}}

    def run(*xs):
        local = dict(zip(names, xs))
        for i, (_, fn, target, inputs, out, _) in enumerate(STATEMENTS):
            value = fn(*[local[name] for name, _ in inputs])
            if isinstance(out, list):
                value = tuple(constrain(v, *o) for v, o in zip(value, out))
            elif out is not None:
                value = constrain(value, *out)
            local[target] = value
        later = [t for _, _, t, _, _, _ in STATEMENTS if t not in read]
        return [local[t] for t in later]

    return jax.jit(run)


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


def _totals(prepared: Prepared) -> dict[str, float]:
    """The report's whole-program times that have a value (seconds)."""
    report: Report | None = prepared.compilation.report
    out: dict[str, float] = {}
    if report is None:
        return out
    for key in ("t_lower_s", "t_expected_s", "t_upper_s"):
        if key in report.totals:
            v = report.value(report.totals[key])
            if v is not None and math.isfinite(v):
                out[key] = float(v)
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
            totals=repr(_totals(prepared)),
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
