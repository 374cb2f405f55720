"""Chip specs as dataclasses: load a shipped chip by name or a user's chip TOML by path.

Shipped chips are the `hardware/*.toml` files, found with importlib.resources so that a
non-editable install works. Figures are SI: FLOP/s, bytes, bytes/s, seconds.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from shardc.hardware.calibration import Calibration, read_calibration_toml
from shardc.hardware.files import read_chip_file
from shardc.hardware.levels import PER_HOP
from shardc.hardware.schema import PRECISIONS, RATES, HardwareError, quoted, read_chip_toml
from shardc.hardware.text import describe, summary_line

__all__ = [
    "FALLBACKS",
    "PRECISIONS",
    "Chip",
    "FlopsTable",
    "HardwareError",
    "Rate",
    "available",
    "describe",
    "load",
    "load_calibration",
    "summary_line",
]

FALLBACKS: dict[str, tuple[str, ...]] = {
    "bf16": (),
    "f32": ("bf16",),
    "tf32": ("bf16",),
    "f16": ("bf16",),
    "fp8": ("bf16",),
    "int8": ("fp8", "bf16"),
    "int4": ("int8", "fp8", "bf16"),
}
"""Where `Chip.flops_for` looks, in order, when a chip file has no rate for a dtype."""


TPU_PASSES = {"default": 1, "high": 3, "highest": 6}
"""bf16 passes of the MXU per f32 product on a TPU at each precision: DEFAULT one bf16 pass,
HIGH `bfloat16_3x`, HIGHEST `bfloat16_6x` (jax.lax.Precision's documentation above)."""


@dataclass(frozen=True, slots=True)
class Rate:
    """The peak rate a product of one dtype runs at on a chip, and where it comes from.

    `basis` names the `[flops]` entry used (`tf32`, `bf16 / 3`); `assumption` is set when the
    chip file has no figure of its own for what the product needs, and says what was used."""

    value: float
    basis: str
    assumption: str | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FlopsTable(Mapping[str, float]):
    """Peak dense FLOP/s (OP/s for ints) per dtype: a read-only mapping that is also hashable.

    >>> table = FlopsTable((("bf16", 1.97e14), ("int8", 3.94e14)))
    >>> table["int8"], "fp8" in table, dict(table) == {"bf16": 1.97e14, "int8": 3.94e14}
    (394000000000000.0, False, True)
    """

    pairs: tuple[tuple[str, float], ...]

    @staticmethod
    def of(rates: Mapping[str, float]) -> FlopsTable:
        """A table from any mapping, keys in the order of `hardware.schema.DTYPES`."""
        order = {d: i for i, d in enumerate(RATES)}
        return FlopsTable(
            tuple(
                sorted(
                    ((k, float(v)) for k, v in rates.items()),
                    key=lambda kv: order.get(kv[0], len(order)),
                )
            )
        )

    def __getitem__(self, dtype: str) -> float:
        for key, value in self.pairs:
            if key == dtype:
                return value
        raise KeyError(dtype)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(frozenset(self.pairs))

    def __repr__(self) -> str:
        return f"FlopsTable({dict(self.pairs)!r})"


@dataclass(frozen=True, slots=True)
class Chip:
    """One accelerator's peak figures, as the book's cost model uses them.

    - `flops`: dense peak per dtype (keys among f32 bf16 f16 fp8 int8 int4; bf16 always there).
    - `hbm_bytes`, `hbm_bw`: HBM capacity (bytes) and bandwidth (bytes/s, W_hbm).
    - `link_kind`: "ici" (TPU torus links) or "nvlink" (GPU NVLink through NVSwitch).
    - `link_bw_uni`, `link_bw_bidi`: one link, one direction / both directions (bidi = 2 uni).
      For GPUs the "link" is the GPU's whole NVLink port (all its NVLink lanes to the switches).
    - `links_per_axis`: links one chip drives along one mesh axis (2 on a TPU torus, one each
      way; 1 on a GPU, whose port reaches every peer through the switch).
    - `axis_bw`: W_ici of the book, what one collective over ONE mesh axis gets per chip =
      links_per_axis * link_bw_uni. TPUs: the bidirectional link figure (valid when the axis
      wraps around; see `wraps`). GPUs: per-GPU NVLink egress one way.
    - `hop_latency_s`: fixed cost of one hop of a ring collective (T_min of the book).
    - `ici_axes`: physical torus axes (2 or 3); 1 for a switched GPU domain.
    - `wraparound`: rule id, see `wraps`; `wraparound_note` quotes the source.
    - `dcn_bw_per_chip`, `chips_per_host`: data-centre network egress per chip, chips per host.
    - `ib_bw_per_gpu` (one way), `ib_latency_s`, `nvlink_domain`: GPUs only; the InfiniBand
      network between NVLink domains of `nvlink_domain` GPUs.
    - `pod_shape`: the largest ICI pod (TPU) or a description of the node (GPU).
    - `path`: the file it was loaded from (not compared).
    """

    name: str
    display_name: str
    vendor: str
    family: str
    flops: Mapping[str, float]
    hbm_bytes: float
    hbm_bw: float
    link_kind: str
    link_bw_uni: float
    link_bw_bidi: float
    links_per_axis: int
    axis_bw: float
    hop_latency_s: float
    ici_axes: int
    wraparound: str
    wraparound_note: str
    dcn_bw_per_chip: float | None
    chips_per_host: int | None
    ib_bw_per_gpu: float | None
    ib_latency_s: float | None
    nvlink_domain: int | None
    pod_shape: str | None
    path: str = field(compare=False)
    pcie_bw: float | None = None
    dcn_latency_s: float | None = None
    aliases: tuple[str, ...] = ()
    sources: tuple[tuple[str, str], ...] = ()
    calibration: Calibration | None = None
    """How close real runs come to the peaks (`hardware.calibration`); None: no calibration,
    and the expected time is the roofline's."""

    def __post_init__(self) -> None:
        # A plain dict would make the frozen Chip unhashable; accept one and convert it.
        if not isinstance(self.flops, FlopsTable):
            object.__setattr__(self, "flops", FlopsTable.of(self.flops))

    def flops_for(self, dtype: str) -> tuple[float, str]:
        """Peak dense rate for `dtype`, and the dtype whose rate was used.

        A chip file lists only the rates its sources give. A missing dtype falls back along
        int4 -> int8 -> fp8 -> bf16, int8 -> fp8 -> bf16, fp8 -> bf16, f16 -> bf16 and
        f32 -> bf16 (`FALLBACKS`); every chip has bf16. The fallback can be optimistic, which
        is why the second item is returned: a report says which rate it used (H030). A
        product's rate, f32 at a precision included, is `matmul_rate`.

        >>> chip = load("tpu-v5e")
        >>> chip.flops_for("int4")
        (394000000000000.0, 'int8')
        >>> chip.flops_for("fp8")
        (197000000000000.0, 'bf16')
        """
        if dtype not in FALLBACKS:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(RATES)}")
        for candidate in (dtype, *FALLBACKS[dtype]):
            if candidate in self.flops:
                return self.flops[candidate], candidate
        raise AssertionError(f"{self.path}: no bf16 rate")  # the loader requires bf16

    def matmul_rate(self, dtype: str, precision: str = "default") -> Rate:
        """The peak rate of a product whose operands are `dtype`, at JAX's `precision`.

        f32 products follow `jax.lax.Precision`: on an NVIDIA GPU DEFAULT and HIGH run on the
        tensor cores in TF32 and HIGHEST in full f32 on the CUDA cores; on a TPU DEFAULT is one
        bf16 pass of the MXU, HIGH three (`bfloat16_3x`) and HIGHEST six (`bfloat16_6x`).
        Other dtypes run at their own rate. A figure the chip file lacks falls back along
        `FALLBACKS`, and the result says so (`assumption`): never silently.

        >>> load("h200").matmul_rate("f32").basis, load("h200").matmul_rate("f32", "highest").value
        ('tf32', 67000000000000.0)
        >>> r = load("tpu-v5e").matmul_rate("f32", "high")
        >>> r.value == 1.97e14 / 3, r.basis
        (True, 'bf16 / 3')
        >>> load("tpu-v5e").matmul_rate("int4").assumption
        'tpu-v5e has no int4 rate; using its int8 rate'
        """
        if precision not in PRECISIONS:
            raise ValueError(
                f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}"
            )
        if dtype == "f32" and self.family == "tpu":
            passes = TPU_PASSES[precision]
            bf16 = self.flops["bf16"]
            return Rate(bf16 / passes, "bf16" if passes == 1 else f"bf16 / {passes}")
        want = ("f32" if precision == "highest" else "tf32") if dtype == "f32" else dtype
        value, used = self.flops_for(want)
        if used == want:
            return Rate(value, used)
        return Rate(value, used, f"{self.name} has no {want} rate; using its {used} rate")

    @property
    def vector_rate(self) -> Rate:
        """Peak f32 rate of the vector units (CUDA cores, a TPU's VPU): where elementwise
        arithmetic runs. Falls back like `matmul_rate`, saying so."""
        value, used = self.flops_for("f32")
        return Rate(
            value,
            used,
            None if used == "f32" else f"{self.name} has no f32 vector rate; using its {used} rate",
        )

    def hbm_intensity(self, dtype: str = "bf16") -> float:
        """Critical intensity C / W_hbm (FLOP/byte) above which a product of `dtype` is
        compute-bound; C is the product's rate (`matmul_rate`, default precision).

        >>> round(load("tpu-v5e").hbm_intensity())
        243
        """
        return self.matmul_rate(dtype).value / self.hbm_bw

    def ici_intensity(self, dtype: str = "bf16") -> float:
        """Critical intensity C / W_ici (FLOP/byte) for a collective over one mesh axis.

        >>> round(load("tpu-v5p").ici_intensity())
        2550
        """
        return self.matmul_rate(dtype).value / self.axis_bw

    def dcn_intensity(self, dtype: str = "bf16") -> float | None:
        """Critical intensity C / W_dcn (FLOP/byte) over the scale-out network; None if unknown.

        >>> round(load("tpu-v5e").dcn_intensity())
        63040
        """
        bw = self.scaleout_bw
        return None if bw is None else self.matmul_rate(dtype).value / bw

    @property
    def pod_dims(self) -> tuple[int, ...] | None:
        """The ICI pod's physical axes (v5p: (16, 20, 28)); None for a GPU.

        >>> load("tpu-v5p").pod_dims, load("h100").pod_dims
        ((16, 20, 28), None)
        """
        if self.link_kind != "ici" or not self.pod_shape:
            return None
        return tuple(int(x) for x in self.pod_shape.lower().split("x"))

    @property
    def scaleout_bw(self) -> float | None:
        """Per-chip bandwidth of the network above the fast domain: DCN (TPU) or IB (GPU)."""
        return self.dcn_bw_per_chip if self.dcn_bw_per_chip is not None else self.ib_bw_per_gpu

    @property
    def latency_bound_bytes(self) -> float:
        """Message size below which one hop is latency-bound: W_uni * t_hop (the sharding chapter).

        >>> load("tpu-v5e").latency_bound_bytes  # 4.5e10 * 1e-6 = 45kB
        45000.0
        """
        return self.link_bw_uni * self.hop_latency_s

    def bandwidth(self, level: str) -> float | None:
        """Per-chip bandwidth on a network level (`hardware.levels.LEVELS`); None if no figure.

        The fast link's figure is `axis_bw`, on the level the chip's `link_kind` names.

        >>> chip = load("h100")
        >>> chip.bandwidth("nvlink"), chip.bandwidth("ici"), chip.bandwidth("ib")
        (450000000000.0, None, 50000000000.0)
        """
        return {
            "ici": self.axis_bw if self.link_kind == "ici" else None,
            "nvlink": self.axis_bw if self.link_kind == "nvlink" else None,
            "pcie": self.pcie_bw,
            "ib": self.ib_bw_per_gpu,
            "dcn": self.dcn_bw_per_chip,
        }[level]

    def latency(self, level: str) -> float | None:
        """Latency on a network level: per hop on ICI, NVLink and PCIe, per step on IB and DCN.

        >>> load("tpu-v5e").latency("ici"), load("tpu-v5e").latency("ib")
        (1e-06, None)
        """
        if level in PER_HOP:
            return self.hop_latency_s
        return {"ib": self.ib_latency_s, "dcn": self.dcn_latency_s}[level]

    def has_level(self, level: str) -> bool:
        """Whether the chip has a bandwidth figure for a network level.

        >>> from shardc.hardware.levels import LEVELS
        >>> [lv for lv in LEVELS if load("tpu-v5e").has_level(lv)]
        ['ici', 'pcie', 'dcn']
        """
        return self.bandwidth(level) is not None

    def wraps(self, shape: Sequence[int]) -> tuple[bool, ...]:
        """Which axes of a physical slice of this shape have a wraparound link (form a ring).

        - "full-axis-16" (v5e, v6e): an axis wraps iff it has the full pod length 16 (the TPU
          chapter).
        - "cube-multiple-4" (v4p, v5p): wraparounds come from the optical switches of whole
          4x4x4 cubes, so every axis wraps iff every axis is a multiple of 4 (the TPU chapter: a
          2x2x4 has none).
        - "switched" (GPU NVLink): every axis behaves like a full ring.

        A shape with fewer axes than the torus (`ici_axes`) lies in a plane or a line of it:
        the missing axes have length 1 (so a 4x4 on a v5p is no whole cube). An axis without
        wraparound is a line: a bidirectional ring collective on it runs up to 2x slower than
        `axis_bw` suggests (the TPU chapter).

        >>> load("tpu-v5e").wraps((8, 16)), load("tpu-v5p").wraps((2, 2, 4))
        ((False, True), (False, False, False))
        >>> load("tpu-v5p").wraps((4, 4))
        (False, False)
        """
        sizes = tuple(shape)
        if any(not isinstance(n, int) or n < 1 for n in sizes):
            raise ValueError(f"slice shape must be positive integers, got {shape!r}")
        if self.wraparound == "full-axis-16":
            return tuple(n == 16 for n in sizes)
        if self.wraparound == "cube-multiple-4":
            return (all(n % 4 == 0 for n in self._whole_slice(sizes)),) * len(sizes)
        return (True,) * len(sizes)

    def wraps_why(self, shape: Sequence[int]) -> str:
        """The rule `wraps` applied to a slice of this shape, in words, for a report.

        >>> load("tpu-v5p").wraps_why((16, 8)), load("tpu-v5e").wraps_why((8, 16))
        ('tpu-v5p: wraps when the slice 16x8x1 is a multiple of 4x4x4', \
'tpu-v5e: wraps only on an axis of 16')
        """
        if self.wraparound == "full-axis-16":
            return f"{self.name}: wraps only on an axis of 16"
        if self.wraparound == "cube-multiple-4":
            whole = "x".join(map(str, self._whole_slice(tuple(shape))))
            return f"{self.name}: wraps when the slice {whole} is a multiple of 4x4x4"
        return f"{self.name}: switched"

    def _whole_slice(self, sizes: tuple[int, ...]) -> tuple[int, ...]:
        return sizes + (1,) * max(0, self.ici_axes - len(sizes))


def load(
    name_or_path: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None
) -> Chip:
    """Load a shipped chip by name, or a chip TOML file by path.

    Names are case-insensitive, `_` and spaces read as `-`, and each file's `aliases` count too
    ("v5e", "TPU v5e", "tpu_v5e", "H100"). A string ending in `.toml` or holding a path
    separator is a path; a relative one is taken from `base` (the program's folder, say) when
    given. Raises `HardwareError` naming the file and field for anything wrong.

    >>> load("TPU_v5e").name, load("H100").axis_bw
    ('tpu-v5e', 450000000000.0)
    >>> load("tpu-v9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardc.hardware.schema.HardwareError: unknown chip 'tpu-v9'; known: a100, b200, ...
    """
    text = os.fspath(name_or_path)
    if _is_path(text):
        path = Path(text)
        if base is not None and not path.is_absolute():
            path = Path(base) / path
        stem = path.name.removesuffix(".toml")
        body = read_chip_file(str(path))
        return _build(body, str(path), stem)
    shipped = _shipped()
    stem = _resolve(text, shipped)
    resource = shipped[stem]
    chip = _build(resource.read_text(encoding="utf-8"), str(resource), stem)
    cal = shipped_calibration(stem)
    return chip if cal is None else _with(chip, cal)


def _with(chip: Chip, cal: Calibration) -> Chip:
    import dataclasses

    return dataclasses.replace(chip, calibration=cal)


def load_calibration(path: str | os.PathLike[str], chip: Chip) -> Chip:
    """`chip` with the calibration file at `path` (`--calibration`), validated for that chip.

    >>> load_calibration("/dev/null", load("h200"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardc.hardware.schema.HardwareError: /dev/null: not a regular file ...
    """
    import dataclasses

    text = read_chip_file(os.fspath(path))
    cal = read_calibration_toml(text, os.fspath(path), chip.name)
    return dataclasses.replace(chip, calibration=cal)


def shipped_calibration(stem: str) -> Calibration | None:
    """The calibration shipped beside a chip file (`hardware/calibration/<stem>.toml`)."""
    resource = files("shardc.hardware").joinpath("calibration", f"{stem}.toml")
    if not resource.is_file():
        return None
    return read_calibration_toml(resource.read_text(encoding="utf-8"), str(resource), stem)


def available() -> list[str]:
    """Sorted names of the chips shipped in the package.

    >>> available()[:3]
    ['a100', 'b200', 'gb200-nvl72']
    """
    return sorted(_shipped())


def _build(text: str, path: str, stem: str) -> Chip:
    values = read_chip_toml(text, path, stem)
    return Chip(path=path, **{**values, "flops": FlopsTable(values["flops"])})


def _is_path(text: str) -> bool:
    separators = [s for s in (os.sep, os.altsep, "/") if s]
    return text.endswith(".toml") or any(s in text for s in separators)


def _normalize(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").split())


def _shipped() -> dict[str, Traversable]:
    return {
        res.name.removesuffix(".toml"): res
        for res in files(__package__).iterdir()
        if res.name.endswith(".toml")
    }


def _resolve(name: str, shipped: dict[str, Traversable]) -> str:
    wanted = _normalize(name)
    if wanted in shipped:
        return wanted
    # Aliases live in the TOML files, so adding a chip needs no code change; reading the eight
    # small files on a miss costs about a millisecond.
    by_alias: dict[str, str] = {}
    for stem, resource in shipped.items():
        try:
            aliases = tomllib.loads(resource.read_text(encoding="utf-8")).get("aliases", [])
        except tomllib.TOMLDecodeError:
            continue  # a broken shipped file reports itself when loaded by its own name
        by_alias.update({_normalize(a): stem for a in aliases if isinstance(a, str)})
    if wanted in by_alias:
        return by_alias[wanted]
    # A high cutoff: "tpu-v6" should suggest tpu-v6e, but "tpu-v9" nothing (not tpu-v4).
    close = (
        difflib.get_close_matches(wanted, [*shipped, *by_alias], n=1, cutoff=0.85)
        if len(wanted) < 200
        else []
    )
    hint = f" (did you mean {by_alias.get(close[0], close[0])!r}?)" if close else ""
    known = ", ".join(sorted(shipped))
    raise HardwareError(
        f"unknown chip {quoted(name)}{hint}; known: {known}; or give a path to a .toml file"
    )
