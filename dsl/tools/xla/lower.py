"""Lower source statements to JAX and compile them with XLA's SPMD partitioner on fake devices.

Each statement becomes one `jax.jit` function whose inputs carry the layouts shardc gave them
and whose output is pinned where the program requests a layout; XLA chooses everything else.
Imports JAX lazily: call `configure_devices` before anything touches a JAX backend.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shardc.lang.layout import DimSharding, Layout
from shardc.tools.xla.codegen import PRELUDE, CodegenError, function_name, statement_source
from shardc.tools.xla.statements import Statement

JAX_DTYPES = {
    "f32": "float32",
    "bf16": "bfloat16",
    "f16": "float16",
    "fp8": "float8_e4m3fn",
    "int8": "int8",
    "int4": "int4",
}
"""The jax.numpy dtype each shardc dtype lowers to."""


class LoweringError(Exception):
    """A statement JAX or XLA could not handle (reported per statement, never fatal)."""


def configure_devices(n: int) -> None:
    """Ask XLA's CPU client for `n` fake devices; a no-op once JAX has started a backend."""
    flag = f"--xla_force_host_platform_device_count={n}"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")


def make_mesh(mesh: Mapping[str, int]) -> Any:
    """A JAX mesh over the first prod(sizes) CPU devices, row-major as shardc numbers devices."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    n = math.prod(mesh.values())
    devices = jax.devices()
    if len(devices) < n:
        raise LoweringError(
            f"the mesh needs {n} devices but JAX has {len(devices)}; set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} before JAX "
            "starts"
        )
    grid = np.array(devices[:n]).reshape(tuple(mesh.values()))
    try:  # Auto axes: GSPMD propagates shardings (the only kind before JAX 0.5)
        from jax.sharding import AxisType
    except ImportError:
        return Mesh(grid, tuple(mesh))
    return Mesh(grid, tuple(mesh), axis_types=(AxisType.Auto,) * len(mesh))


def spec(layout: Layout) -> Any:
    """The PartitionSpec of a layout: `A[I_XY, J]` is `P(("X", "Y"), None)`."""
    from jax.sharding import PartitionSpec

    return PartitionSpec(
        *[None if not d.axes else d.axes[0] if len(d.axes) == 1 else d.axes for d in layout.dims]
    )


def build_function(st: Statement, mesh: Any) -> Callable[..., Any]:
    """The statement as a Python function of its inputs, from the text `export-jax` writes."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    scope: dict[str, Any] = {
        "jax": jax,
        "jnp": jnp,
        "mesh": mesh,
        "NamedSharding": NamedSharding,
        "P": PartitionSpec,
    }
    try:
        forward = [statement_source(f) for f in st.forward]  # the backward pass calls them
        code = "\n\n".join([PRELUDE, *forward, statement_source(st)])
        exec(code, scope)  # generated-code: shardc's own text; names pass codegen.identifier
    except CodegenError as exc:
        raise LoweringError(str(exc)) from None
    return scope[function_name(st)]


@dataclass(frozen=True, slots=True)
class XlaResult:
    """What XLA made of one statement: optimized HLO, cost analysis, the output sharding."""

    hlo: str
    flops: float | None
    bytes_accessed: float | None
    out_spec: str


def compile_statement(st: Statement, mesh: Any, sizes: Mapping[str, int]) -> XlaResult:
    """Lower and compile one statement (nothing is executed or allocated)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    args = [
        jax.ShapeDtypeStruct(tuple(sizes[d] for d in x.dims), getattr(jnp, JAX_DTYPES[x.dtype]))
        for x in st.inputs
    ]
    kwargs: dict[str, Any] = {
        "in_shardings": tuple(NamedSharding(mesh, spec(x.layout)) for x in st.inputs)
    }
    if st.is_backward:  # the gradients, each in its requested layout
        kwargs["out_shardings"] = tuple(NamedSharding(mesh, spec(g.layout)) for g in st.grads)
    elif st.out_layout is not None:
        kwargs["out_shardings"] = NamedSharding(
            mesh, spec(st.out_layout.reordered(st.ours_layout.dim_names))
        )
    try:
        compiled = jax.jit(build_function(st, mesh), **kwargs).lower(*args).compile()
    except LoweringError:
        raise
    except Exception as exc:  # XLA rejects some dtypes or shapes on CPU: report, go on
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LoweringError(f"JAX/XLA failed: {first[:200]}") from None
    cost = compiled.cost_analysis()
    if isinstance(cost, list):  # older JAX: one dict per module
        cost = cost[0] if cost else {}
    cost = cost or {}
    out = "" if st.is_backward else _layout_text(compiled.output_shardings, st)
    return XlaResult(compiled.as_text() or "", cost.get("flops"), cost.get("bytes accessed"), out)


def _layout_text(sharding: Any, st: Statement) -> str:
    """XLA's output sharding in shardc's notation (`C[I_X, K]`), or as JAX prints it."""
    entries = getattr(sharding, "spec", None)
    dims = st.ours_layout.dim_names
    if entries is None or len(entries) > len(dims):
        return str(sharding)
    axes = []
    for e in (*entries, *([None] * (len(dims) - len(entries)))):
        axes.append(() if e is None else (e,) if isinstance(e, str) else tuple(e))
    layout = Layout(tuple(DimSharding(d, a) for d, a in zip(dims, axes, strict=True)))
    return layout.format(st.target, tuple(getattr(sharding.mesh, "axis_names", ())))
