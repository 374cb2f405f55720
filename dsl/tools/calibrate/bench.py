"""Micro-benchmarks with JAX on the local accelerator: products across shapes, elementwise ops
across sizes, each dtype and matmul precision, and the dispatch floor of an empty call.

Timing follows the measured single-op table of docs/validation.md: each sample is a loop of
calls lasting at least `loop_s` (5 ms), ended by `block_until_ready`, after warm-up calls;
a case reports the median, minimum and 90th percentile of its samples, per call. Inputs are
random normal values made on the device. JAX is imported only when a benchmark runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shardc.hardware.calibration import ClockFit, Row

WIDTH = {"bf16": 2, "f16": 2, "f32": 4}


@dataclass(frozen=True, slots=True)
class Case:
    """One micro-benchmark: a product [M, K] x [K, N], an elementwise op over two [R, C]
    arrays, or the empty call."""

    name: str
    kind: str  # "matmul" | "elementwise" | "dispatch"
    dtype: str = "bf16"
    shape: tuple[int, ...] = ()
    op: str = ""  # elementwise: "add" | "mul" | "silu_mul"; matmul: the precision
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

    def row(self, median: float, low: float, p90: float) -> Row:
        """The calibration row of this case timed at these seconds per call."""
        precision = self.op if self.kind == "matmul" else "default"
        return Row(
            self.name,
            self.kind,
            self.dtype,
            self.flops,
            self.bytes,
            median,
            low,
            p90,
            self.role,
            None,
            self.note,
            precision,
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """The cases of one run and how each is timed."""

    cases: tuple[Case, ...]
    samples: int
    warmup: int
    loop_s: float


F32_NOTE = "an f32 product at this jax.lax.Precision: the chip's rate for it (Chip.matmul_rate)"
SILU_NOTE = (
    "silu(A) * B, which XLA fuses into one kernel: 3 array passes, as the fusion pass prices it"
)


def plan(quick: bool, cpu: bool) -> Plan:
    """The cases: full (minutes on a GPU: the cases of the H200 table of docs/validation.md),
    quick (under a minute) or on the CPU (tiny sizes, the same code path, for CI). Every other
    size of each sweep is held out, the largest square fitted; so are the f16 and f32 products
    and every fused `silu(A) * B`.

    >>> p = plan(quick=True, cpu=True)
    >>> p.cases[0].name, len(p.cases) > 5
    ('dispatch', True)
    >>> [c.name for c in plan(quick=False, cpu=False).cases if c.role == "fit"][:4]
    ['dispatch', 'square_16384', 'sweep_B16', 'sweep_B64']
    """
    squares: tuple[int, ...]
    batches: tuple[int, ...]
    sizes: tuple[int, ...]
    if cpu:
        squares, k, batches, sizes, n = (64, 128), 128, (8, 32, 128), (1, 4), 128
        samples, warmup, loop_s = (5, 1, 0.002) if quick else (10, 2, 0.005)
    elif quick:
        squares, k, batches, sizes, n = (4096,), 8192, (16, 128, 512, 2048), (64, 256), 4096
        samples, warmup, loop_s = 10, 2, 0.005
    else:
        squares, k, n = (8192, 16384), 8192, 8192
        batches = tuple(2**i for i in range(4, 15))  # 16 to 16,384
        sizes = (256, 512, 1024, 2048)
        samples, warmup, loop_s = 30, 3, 0.005
    cases = [Case("dispatch", "dispatch")]
    for i, size in enumerate(squares):
        role = "held-out" if (len(squares) - 1 - i) % 2 else "fit"
        cases.append(Case(f"square_{size}", "matmul", "bf16", (size,) * 3, "default", role))
    for i, b in enumerate(batches):
        role = "held-out" if i % 2 else "fit"
        cases.append(Case(f"sweep_B{b}", "matmul", "bf16", (b, k, k), "default", role))
    cases.append(Case(f"f16_{n}", "matmul", "f16", (n, n, n), "default", "held-out"))
    for precision in ("default", "high", "highest"):
        cases.append(
            Case(
                f"f32_{n}_{precision}", "matmul", "f32", (n, n, n), precision, "held-out", F32_NOTE
            )
        )
    for i, mib in enumerate(sizes):
        cols = mib * 2**20 // 2 // 1024
        for j, op in enumerate(("add", "mul", "silu_mul")):
            role = "held-out" if op == "silu_mul" or (i + j) % 2 else "fit"
            note = SILU_NOTE if op == "silu_mul" else ""
            cases.append(
                Case(f"ew_{op}_{mib}MiB", "elementwise", "bf16", (1024, cols), op, role, note)
            )
    return Plan(tuple(cases), samples, warmup, loop_s)


def case(name: str) -> Case:
    """The case of a full run with this name (the names of the H200 table of
    docs/validation.md).

    >>> case("sweep_B16").shape, case("ew_silu_mul_256MiB").role
    ((16, 8192, 8192), 'held-out')
    """
    for c in plan(quick=False, cpu=False).cases:
        if c.name == name:
            return c
    raise ValueError(f"unknown case {name!r}")


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
    fn = {
        "add": lambda x, y: x + y,
        "mul": lambda x, y: x * y,
        "silu_mul": lambda x, y: jax.nn.silu(x) * y,
    }[case.op]
    return jax.jit(fn), (a, b)


def time_case(
    case: Case, p: Plan, timed: Callable[[str], None] | None = None
) -> tuple[float, float, float]:
    """(median, minimum, p90) seconds per call of one case; `timed(name)` is called as its
    timed samples start (after the compile and the warm-up)."""
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
    if timed is not None:
        timed(case.name)
    per_call = []
    for _ in range(p.samples):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        per_call.append((time.perf_counter() - start) / calls)
    t = np.array(per_call)
    return float(np.median(t)), float(t.min()), float(np.percentile(t, 90))


def run(
    p: Plan,
    progress: Callable[[int, int, str], None] | None = None,
    clocks: Clocks | None = None,
) -> list[Row]:
    """Time every case; `progress(done, total, case)` is called before each; `clocks`, where
    given, samples the SM clock and power beside the timed samples."""
    rows = []
    for i, case in enumerate(p.cases):
        if progress is not None:
            progress(i, len(p.cases), case.name)
        median, low, p90 = time_case(case, p, clocks.mark if clocks is not None else None)
        if clocks is not None:
            clocks.mark("")
        rows.append(case.row(median, low, p90))
    if progress is not None:
        progress(len(p.cases), len(p.cases), "")
    return rows


@dataclass(frozen=True, slots=True)
class Sample:
    """One reading of the GPU's SM clock (MHz) and power draw (W) while `case` was timed."""

    case: str
    mhz: float
    watts: float


class Clocks:
    """The SM clock and power draw, read through NVML (the `nvidia-ml-py` package, module
    `pynvml`) every `interval` seconds on a thread beside the runs, each reading labelled with
    the case being timed. Where NVML is missing (a CPU, another vendor) nothing is read.
    """

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.samples: list[Sample] = []
        self.power_limit_w: float | None = None
        self._case = ""
        self._stop = False
        self._thread: threading.Thread | None = None
        self._nvml: Any = None

    def start(self) -> bool:
        """Start reading; False (and nothing read) where NVML cannot be loaded."""
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.power_limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        except Exception:  # no NVML library, no NVIDIA device: no clocks
            return False
        self._nvml = pynvml

        def read() -> None:
            while not self._stop:
                if self._case:
                    mhz = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
                    watts = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
                    self.samples.append(Sample(self._case, float(mhz), watts))
                time.sleep(self.interval)

        self._thread = threading.Thread(target=read, daemon=True)
        self._thread.start()
        return True

    def mark(self, case: str) -> None:
        """Label the readings from now on with `case` ("" reads nothing)."""
        self._case = case

    def stop(self) -> None:
        self._stop = True
        if self._thread is not None:
            self._thread.join()
        if self._nvml is not None:
            self._nvml.nvmlShutdown()


def clock_fit(samples: list[Sample], cases: tuple[Case, ...]) -> ClockFit | None:
    """The power cap's clocks from the readings: `boost_mhz` the highest SM clock read during
    any product, `sustained_mhz` the median clock while the largest bf16 product was timed,
    `power_w` the median draw then. None with fewer than 3 readings of that product.

    >>> cases = plan(quick=True, cpu=True).cases
    >>> big = max((c for c in cases if c.kind == "matmul" and c.dtype == "bf16"),
    ...           key=lambda c: c.flops).name
    >>> s = [Sample("sweep_B8", 1980.0, 300.0)]
    >>> s += [Sample(big, f, 690.0) for f in (1700.0, 1750.0, 1720.0)]
    >>> clock_fit(s, cases)
    ClockFit(boost_mhz=1980.0, sustained_mhz=1720.0, power_w=690.0)
    """
    import statistics

    products = {c.name for c in cases if c.kind == "matmul"}
    bf16 = [c for c in cases if c.kind == "matmul" and c.dtype == "bf16"]
    if not bf16:
        return None
    big = max(bf16, key=lambda c: c.flops).name
    during = [s for s in samples if s.case == big]
    if len(during) < 3:
        return None
    boost = max(s.mhz for s in samples if s.case in products)
    sustained = statistics.median(s.mhz for s in during)
    return ClockFit(boost, sustained, statistics.median(s.watts for s in during))


def environment() -> dict[str, str]:
    """What measured: the device's name and the JAX and jaxlib versions."""
    import jax
    import jaxlib

    device = jax.devices()[0]
    try:  # the runtime under XLA, e.g. "cuda 13000" (absent on some backends)
        runtime = str(device.client.platform_version).strip()
    except Exception:
        runtime = ""
    return {
        "device": f"{getattr(device, 'device_kind', device.platform)} ({device.platform})",
        "software": f"jax {jax.__version__}, jaxlib {jaxlib.__version__}"
        + (f", {runtime}" if runtime else ""),
    }
