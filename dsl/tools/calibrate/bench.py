"""Micro-benchmarks with JAX on the local accelerator: products across shapes, elementwise ops
across sizes, each dtype and matmul precision, and the dispatch floor of an empty call.

Timing follows the measured single-op table of docs/validation.md: each sample is a loop of
calls lasting at least `loop_s` (5 ms), ended by `block_until_ready`, after warm-up calls;
a case reports the median, minimum and 90th percentile of its samples, per call. Inputs are
random normal values made on the device. JAX is imported only when a benchmark runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from shardc.hardware.calibration import Row

WIDTH = {"bf16": 2, "f16": 2, "f32": 4}


@dataclass(frozen=True, slots=True)
class Case:
    """One micro-benchmark: a product [M, K] x [K, N], an elementwise op over two [R, C]
    arrays, or the empty call."""

    name: str
    kind: str  # "matmul" | "elementwise" | "dispatch"
    dtype: str = "bf16"
    shape: tuple[int, ...] = ()
    op: str = ""  # elementwise: "add" | "mul"; matmul: the precision (default, high, highest)
    role: str = "fit"
    note: str = ""

    @property
    def flops(self) -> float:
        if self.kind != "matmul":
            return 0.0
        m, k, n = self.shape
        return 2.0 * m * k * n

    @property
    def bytes(self) -> float:
        w = WIDTH[self.dtype]
        if self.kind == "matmul":
            m, k, n = self.shape
            return float(w * (m * k + k * n + m * n))
        if self.kind == "elementwise":
            r, c = self.shape
            return 3.0 * w * r * c  # two reads, one write
        return 0.0


@dataclass(frozen=True, slots=True)
class Plan:
    """The cases of one run and how each is timed."""

    cases: tuple[Case, ...]
    samples: int
    warmup: int
    loop_s: float


F32_NOTE = "an f32 product at this jax.lax.Precision: the chip's rate for it (Chip.matmul_rate)"


def plan(quick: bool, cpu: bool) -> Plan:
    """The cases: full (minutes on a GPU), quick (under a minute) or on the CPU (tiny sizes,
    the same code path, for CI).

    >>> p = plan(quick=True, cpu=True)
    >>> p.cases[0].name, len(p.cases) > 5
    ('dispatch', True)
    """
    squares: tuple[int, ...]
    batches: tuple[int, ...]
    sizes: tuple[int, ...]
    if cpu:
        squares, k, batches, sizes = (64, 128), 128, (8, 32, 128), (1, 4)
        samples, warmup, loop_s = (5, 1, 0.002) if quick else (10, 2, 0.005)
    elif quick:
        squares, k, batches, sizes = (4096,), 8192, (16, 128, 512, 2048), (64, 256)
        samples, warmup, loop_s = 10, 2, 0.005
    else:
        squares, k = (2048, 4096, 8192), 8192
        batches, sizes = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192), (64, 256, 1024)
        samples, warmup, loop_s = 30, 3, 0.005
    cases = [Case("dispatch", "dispatch")]
    for i, n in enumerate(squares):
        cases.append(
            Case(
                f"square_{n}",
                "matmul",
                "bf16",
                (n, n, n),
                "default",
                "held-out" if i % 2 else "fit",
            )
        )
    for i, b in enumerate(batches):
        cases.append(
            Case(
                f"sweep_B{b}",
                "matmul",
                "bf16",
                (b, k, k),
                "default",
                "held-out" if i % 2 else "fit",
            )
        )
    n = squares[-1]
    cases.append(Case(f"f16_{n}", "matmul", "f16", (n, n, n), "default", "held-out"))
    for precision in ("default", "high", "highest"):
        cases.append(
            Case(
                f"f32_{n}_{precision}", "matmul", "f32", (n, n, n), precision, "held-out", F32_NOTE
            )
        )
    for i, mib in enumerate(sizes):
        cols = mib * 2**20 // 2 // 1024
        for j, op in enumerate(("add", "mul")):
            cases.append(
                Case(
                    f"ew_{op}_{mib}MiB",
                    "elementwise",
                    "bf16",
                    (1024, cols),
                    op,
                    "held-out" if (i + j) % 2 else "fit",
                )
            )
    return Plan(tuple(cases), samples, warmup, loop_s)


def _function(case: Case, jax, jnp) -> tuple[Callable, tuple]:
    key = jax.random.PRNGKey(0)
    dtype = {"bf16": jnp.bfloat16, "f16": jnp.float16, "f32": jnp.float32}[case.dtype]
    if case.kind == "dispatch":
        x = jnp.zeros((1,), jnp.float32)
        return jax.jit(lambda a: a), (x,)
    if case.kind == "matmul":
        m, k, n = case.shape
        a = jax.random.normal(key, (m, k), dtype)
        b = jax.random.normal(jax.random.fold_in(key, 1), (k, n), dtype)
        precision = {
            "default": jax.lax.Precision.DEFAULT,
            "high": jax.lax.Precision.HIGH,
            "highest": jax.lax.Precision.HIGHEST,
        }[case.op]
        return jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision)), (a, b)
    a = jax.random.normal(key, case.shape, dtype)
    b = jax.random.normal(jax.random.fold_in(key, 1), case.shape, dtype)
    fn = (lambda x, y: x + y) if case.op == "add" else (lambda x, y: x * y)
    return jax.jit(fn), (a, b)


def time_case(case: Case, p: Plan) -> tuple[float, float, float]:
    """(median, minimum, p90) seconds per call of one case."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    fn, args = _function(case, jax, jnp)
    for _ in range(p.warmup + 1):  # the first call compiles
        jax.block_until_ready(fn(*args))
    calls = 1
    while True:  # calls per sample: enough for a loop of at least loop_s
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        elapsed = time.perf_counter() - start
        if elapsed >= p.loop_s or calls >= 1 << 20:
            break
        calls = max(calls * 2, int(calls * p.loop_s / max(elapsed, 1e-9)) + 1)
    per_call = []
    for _ in range(p.samples):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        per_call.append((time.perf_counter() - start) / calls)
    t = np.array(per_call)
    return float(np.median(t)), float(t.min()), float(np.percentile(t, 90))


def run(p: Plan, progress: Callable[[int, int, str], None] | None = None) -> list[Row]:
    """Time every case; `progress(done, total, case)` is called before each."""
    rows = []
    for i, case in enumerate(p.cases):
        if progress is not None:
            progress(i, len(p.cases), case.name)
        median, low, p90 = time_case(case, p)
        rows.append(
            Row(
                case.name,
                case.kind,
                case.dtype,
                case.flops,
                case.bytes,
                median,
                low,
                p90,
                case.role,
                None,
                case.note,
                case.op if case.kind == "matmul" else "default",
            )
        )
    if progress is not None:
        progress(len(p.cases), len(p.cases), "")
    return rows


def environment() -> dict[str, str]:
    """What measured: the device's name and the JAX and jaxlib versions."""
    import jax
    import jaxlib

    device = jax.devices()[0]
    return {
        "device": f"{getattr(device, 'device_kind', device.platform)} ({device.platform})",
        "software": f"jax {jax.__version__}, jaxlib {jaxlib.__version__}",
    }
