"""Calibration files: how close one chip's real runs come to its peak figures, with provenance.

A calibration lives beside the chip file (`hardware/calibration/<chip>.toml`, or a file the user
names with `--calibration`); the chip file keeps the peaks, the calibration only the measured
fractions of them, so each fact has one home. Its figures are the values of the cost model's
efficiency symbols (`passes/symbols.py`):

- `[matmul].efficiency` (eta_mxu): the sustained fraction of the chip's peak FLOP/s a product
  reaches; `[matmul].exposed` (c_expose, optional, 0 to 1): the share of a memory-bound
  product's math its pipeline leaves exposed beside the traffic;
- `[attention].efficiency` (eta_attn, optional): the sustained fraction of the peak FLOP/s the
  products inside a flash-attention kernel reach, with its `source` (a published kernel
  measurement); the calibrated step prices the attention core's products with it under
  `--attention flash`, and a chip without the table prices them at eta_mxu;
- `[hbm].efficiency` (eta_hbm): the achievable fraction of the HBM bandwidth;
- `[call].launch_s` (t_call): a fixed cost per op (a kernel launch);
- `[call].dispatch_s` (t_dispatch): the floor of one program call (an empty jitted call);
- `[clock]` (optional; k_boost = boost_mhz / sustained_mhz): the SM clock a short or
  memory-bound kernel runs at and the one a long product sustains at the chip's power limit
  (docs/cost-model.md, "Expected time": the power cap);
- `[network.<level>]` (one table per network level: nvlink, ib, ici, pcie, dcn), the achievable
  bus bandwidth of a collective on that level as a function of the bytes per rank n,
  `efficiency * n / (n + half_bytes)` of the link's peak (eta_<level>, n_half_<level>), and
  optionally its per-step latency `latency_s` (alpha_<level>), each with its own `source`
  (docs/cost-model.md, "Calibrated collectives").

Stdlib only, like the chip schema (`hardware.schema`), and validated the same way: unknown keys,
an efficiency outside (0, 1], a negative or non-finite floor, a network level that does not
exist, a negative or absurd half-bandwidth size, or a table past its limit raise `HardwareError`
naming the file, the line and the field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from shardc.hardware.levels import LEVELS
from shardc.hardware.schema import HardwareError, describe_value, did_you_mean

MAX_ROWS = 1000
"""Measured rows a calibration may keep (`[[rows]]`): enough for any micro-benchmark sweep."""
MAX_TEXT = 2000
"""Characters in one provenance string."""
PROVENANCE_KINDS = ("measured", "published")
ROLES = ("fit", "held-out", "excluded")
"""A row fitted the figures, was predicted by them, or was left out (with the reason in its
`note`: a dtype whose rate the chip file lacks, a fused kernel the cost model prices apart)."""

_TABLES: dict[str, tuple[str, ...]] = {
    "": ("chip", "note"),
    "matmul": ("efficiency", "exposed"),
    "hbm": ("efficiency",),
    "call": ("launch_s", "dispatch_s"),
    "clock": ("boost_mhz", "sustained_mhz", "power_w"),
    "provenance": ("kind", "command", "date", "software", "device", "source", "fit"),
    "overlap": ("prefetch_elements", "contention", "source"),
    "attention": ("efficiency", "source"),
}
_NETWORK_KEYS = ("efficiency", "half_bytes", "half_ranks", "latency_s", "source", "note")
NETWORK_LEVELS = LEVELS
"""The levels a `[network.<level>]` table may name."""
MAX_HALF_BYTES = 1e15
"""The largest half-bandwidth message size a calibration may give (1 PB: past any buffer)."""
MAX_MHZ = 1e5
"""The highest clock a `[clock]` table may give (100 GHz: past any chip)."""
MAX_HALF_RANKS = 2**32
"""The largest group a half size may be measured at (the device count's limit)."""
_ROW_KEYS = (
    "case",
    "kind",
    "dtype",
    "precision",
    "flops",
    "bytes",
    "median_s",
    "min_s",
    "p90_s",
    "fitted_s",
    "role",
    "note",
)
PRECISIONS = ("default", "high", "highest")
"""A product's `jax.lax.Precision` (what an f32 product's rate depends on)."""
_REQUIRED = {"measured": ("command", "date", "software", "device", "fit"), "published": ("source",)}


@dataclass(frozen=True, slots=True)
class Row:
    """One micro-benchmark: the work it does, its measured times, and its role in the fit."""

    case: str
    kind: str  # "matmul" | "elementwise" | "dispatch"
    dtype: str
    flops: float
    bytes: float
    median_s: float
    min_s: float
    p90_s: float
    role: str = "fit"
    fitted_s: float | None = None
    note: str = ""
    precision: str = "default"


@dataclass(frozen=True, slots=True)
class NetworkFit:
    """One network level's collective efficiency: the bus bandwidth a collective reaches with n
    bytes per rank is `efficiency * n / (n + half_bytes)` of the link's peak; `latency_s`, when
    given, is the per-step latency (per hop on ICI and NVLink) the expected time uses (never
    below the chip file's figure); `source` names the published table it was fitted to."""

    level: str
    efficiency: float
    half_bytes: float
    source: str
    latency_s: float | None = None
    note: str = ""
    half_ranks: float | None = None
    """The group size the half size was measured at: a ring of more ranks takes more steps,
    each with its latency, so above it the half size grows with the group (None: it does
    not)."""

    def bus_efficiency(self, n: float) -> float:
        """The fraction of peak bus bandwidth reached with `n` bytes per rank.

        >>> NetworkFit("ib", 0.8, 8e6, "s").bus_efficiency(8e6)
        0.4
        """
        return self.efficiency * n / (n + self.half_bytes) if n > 0 else 0.0


@dataclass(frozen=True, slots=True)
class OverlapFit:
    """The calibrated step's overlap figures where a file gives its own (docs/cost-model.md,
    "Overlap in the calibrated step"): how many parameter elements a weight's gather may run
    ahead of its use, and how much slower compute runs beside a collective; None keeps the
    default (`passes.schedule.PREFETCH_ELEMENTS`, `CONTENTION`)."""

    source: str
    prefetch_elements: float | None = None
    contention: float | None = None


@dataclass(frozen=True, slots=True)
class AttentionFit:
    """eta_attn: the sustained fraction of the peak FLOP/s a flash-attention kernel's products
    reach (the kernel's forward and backward FLOPs over its measured time), and its source."""

    efficiency: float
    source: str


@dataclass(frozen=True, slots=True)
class ClockFit:
    """The SM clocks behind the expected time's power cap (docs/cost-model.md, "Expected
    time"): a kernel starts at `boost_mhz`; a long product at the chip's power limit
    (`power_w`, for the record) sustains `sustained_mhz`. Both are measured, not fitted.

    >>> ClockFit(1980.0, 1725.0, 566.0).k_boost
    1.1478260869565218
    """

    boost_mhz: float
    sustained_mhz: float
    power_w: float | None = None

    @property
    def k_boost(self) -> float:
        """How much faster the boost clock is than the sustained one (at least 1)."""
        return self.boost_mhz / self.sustained_mhz


@dataclass(frozen=True, slots=True)
class Calibration:
    """One chip's efficiency figures and where they come from.

    >>> c = Calibration("h200", 0.7, 0.85, 1e-5, 3.8e-5, "published",
    ...                 (("kind", "published"), ("source", "x")))
    >>> c.values()["eta_mxu"], c.describe_source()
    (0.7, 'published (x)')
    """

    chip: str
    eta_mxu: float
    eta_hbm: float
    t_call: float
    t_dispatch: float
    kind: str
    provenance: tuple[tuple[str, str], ...]
    rows: tuple[Row, ...] = ()
    note: str = ""
    path: str = field(default="", compare=False)
    network: tuple[NetworkFit, ...] = ()
    """Calibrated network levels, in `NETWORK_LEVELS` order; a level not here keeps the
    roofline's peak bandwidth and latency in the expected time."""

    overlap: OverlapFit | None = None
    """The overlap figures of the calibrated step, where the file gives them."""

    clock: ClockFit | None = None
    """The boost and power-limited clocks, where the file gives them (else no power cap:
    k_boost is 1)."""

    exposed: float | None = None
    """c_expose: the share of a memory-bound product's math left exposed beside its HBM
    traffic, where the file gives it (else none: the max of the two)."""

    attention: AttentionFit | None = None
    """eta_attn: the flash-attention kernel's products' efficiency, where the file gives it
    (else they run at eta_mxu)."""

    @property
    def k_boost(self) -> float:
        return self.clock.k_boost if self.clock is not None else 1.0

    def network_fit(self, level: str) -> NetworkFit | None:
        return next((f for f in self.network if f.level == level), None)

    def values(self) -> dict[str, float]:
        """The efficiency symbols' values, by symbol name."""
        return {
            "eta_mxu": self.eta_mxu,
            "eta_hbm": self.eta_hbm,
            "t_call": self.t_call,
            "t_dispatch": self.t_dispatch,
        }

    def describe_source(self) -> str:
        p = dict(self.provenance)
        if self.kind == "published":
            return f"published ({', '.join(p['source'].split(', ')[:2])})"
        return f"measured {p['date']} ({p['software']})"


def read_calibration_toml(text: str, path: str, chip: str | None = None) -> Calibration:
    """Parse and validate one calibration file; `chip`, when given, must be its `chip`.

    >>> text = ('chip = "x"\\n[matmul]\\nefficiency = 0\\n[hbm]\\nefficiency = 1\\n[call]\\n'
    ...         'launch_s = 0\\ndispatch_s = 0\\n[provenance]\\nkind = "published"\\n'
    ...         'source = "s"\\n')
    >>> read_calibration_toml(text, "x.toml")
    Traceback (most recent call last):
    shardc.hardware.schema.HardwareError: x.toml:3: field [matmul].efficiency must be in (0, 1],
    got 0
    """
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HardwareError(f"{path}: not valid TOML: {exc}", path=path) from None
    except RecursionError:
        raise HardwareError(f"{path}: not valid TOML: nested too deeply", path=path) from None
    where = _Locator(text, path)
    for key, value in doc.items():
        if key in ("rows", "network"):
            continue
        if key in _TABLES[""]:
            continue
        if key not in _TABLES:
            hint = did_you_mean(key, [*_TABLES, *_TABLES[""], "rows"])
            raise where.fail(key, "", f"unknown field {key!r}{hint}")
        if not isinstance(value, dict):
            raise where.fail(key, "", f"[{key}] must be a table, got {describe_value(value)}")
        for inner in value:
            if inner not in _TABLES[key]:
                hint = did_you_mean(inner, _TABLES[key])
                raise where.fail(inner, key, f"unknown field [{key}].{inner}{hint}")
    for table in ("matmul", "hbm", "call", "provenance"):
        if table not in doc:
            raise where.fail(table, "", f"missing table [{table}]")
    name = _text(doc, "", "chip", where)
    if chip is not None and name != chip:
        raise where.fail("chip", "", f"field chip is {name!r} but this calibration is for {chip!r}")
    eta_mxu = _fraction(doc, "matmul", "efficiency", where)
    eta_hbm = _fraction(doc, "hbm", "efficiency", where)
    launch = _floor(doc, "call", "launch_s", where)
    dispatch = _floor(doc, "call", "dispatch_s", where)
    kind = _text(doc, "provenance", "kind", where)
    if kind not in PROVENANCE_KINDS:
        raise where.fail(
            "kind",
            "provenance",
            f"field [provenance].kind is {kind!r}; expected one of {', '.join(PROVENANCE_KINDS)}",
        )
    prov = doc["provenance"]
    for key in _REQUIRED[kind]:
        if key not in prov:
            raise where.fail(
                "kind",
                "provenance",
                f"missing field [provenance].{key} (a "
                f"{kind} calibration says {', '.join(_REQUIRED[kind])})",
            )
    provenance = tuple(
        (k, _text(doc, "provenance", k, where)) for k in _TABLES["provenance"] if k in prov
    )
    rows = _rows(doc.get("rows", []), where)
    note = _text(doc, "", "note", where) if "note" in doc else ""
    network = _network(doc.get("network", {}), where)
    overlap = _overlap(doc, where) if "overlap" in doc else None
    clock = _clock(doc, where) if "clock" in doc else None
    exposed = None
    if "exposed" in doc["matmul"]:
        exposed = _number(doc["matmul"]["exposed"], "[matmul].exposed", "exposed", "matmul", where)
        if not 0 <= exposed <= 1:
            raise where.fail(
                "exposed",
                "matmul",
                f"field [matmul].exposed must be from 0 to 1, got {doc['matmul']['exposed']!r}",
            )
    attention = None
    if "attention" in doc:
        for key in ("efficiency", "source"):
            if key not in doc["attention"]:
                raise where.fail("attention", "", f"missing field [attention].{key}")
        attention = AttentionFit(
            _fraction(doc, "attention", "efficiency", where),
            _text(doc, "attention", "source", where),
        )
    return Calibration(
        name,
        eta_mxu,
        eta_hbm,
        launch,
        dispatch,
        kind,
        provenance,
        rows,
        note,
        path,
        network,
        overlap,
        clock,
        exposed,
        attention,
    )


def _clock(doc: dict, where: _Locator) -> ClockFit:
    """The `[clock]` table: two clocks above 0 and at most `MAX_MHZ`, the boost one at least
    the sustained one, and optionally the power limit they were measured at."""
    table = doc["clock"]
    got = {}
    for key in ("boost_mhz", "sustained_mhz", "power_w"):
        if key not in table:
            if key == "power_w":
                continue
            raise where.fail("clock", "", f"missing field [clock].{key}")
        x = _number(table[key], f"[clock].{key}", key, "clock", where)
        if not 0 < x <= MAX_MHZ:
            raise where.fail(
                key,
                "clock",
                f"field [clock].{key} must be above 0 and at most {MAX_MHZ:g}, got {table[key]!r}",
            )
        got[key] = x
    if got["boost_mhz"] < got["sustained_mhz"]:
        raise where.fail(
            "boost_mhz",
            "clock",
            "field [clock].boost_mhz must be at least "
            f"[clock].sustained_mhz ({got['sustained_mhz']:g}), got "
            f"{table['boost_mhz']!r}",
        )
    return ClockFit(got["boost_mhz"], got["sustained_mhz"], got.get("power_w"))


def _overlap(doc: dict, where: _Locator) -> OverlapFit:
    """The `[overlap]` table: a prefetch buffer from 0 to 1e15 elements, a slowdown from 0 to
    1, each optional, and the source of the figures."""
    table = doc["overlap"]
    source = _text(doc, "overlap", "source", where)
    elements = contention = None
    if "prefetch_elements" in table:
        elements = _number(
            table["prefetch_elements"],
            "[overlap].prefetch_elements",
            "prefetch_elements",
            "overlap",
            where,
        )
        if not 0 <= elements <= MAX_HALF_BYTES:
            raise where.fail(
                "prefetch_elements",
                "overlap",
                "field [overlap].prefetch_elements "
                f"must be from 0 to {MAX_HALF_BYTES:g}, got "
                f"{table['prefetch_elements']!r}",
            )
    if "contention" in table:
        contention = _number(
            table["contention"], "[overlap].contention", "contention", "overlap", where
        )
        if not 0 <= contention <= 1:
            raise where.fail(
                "contention",
                "overlap",
                f"field [overlap].contention must be from 0 to 1, got {table['contention']!r}",
            )
    return OverlapFit(source, elements, contention)


def _network(value: Any, where: _Locator) -> tuple[NetworkFit, ...]:
    """The `[network.<level>]` tables: each level's efficiency curve, latency and source."""
    if not isinstance(value, dict):
        raise where.fail(
            "network",
            "",
            f"[network] must be a table of levels "
            f"([network.ib], ...), got {describe_value(value)[:80]}",
        )
    fits: dict[str, NetworkFit] = {}
    for level, table in value.items():
        name = f"network.{level}"
        if level not in NETWORK_LEVELS:
            raise where.fail(
                name,
                "",
                f"unknown network level [network.{level}]"
                f"{did_you_mean(level, NETWORK_LEVELS)}; expected one of "
                f"{', '.join(NETWORK_LEVELS)}",
            )
        if not isinstance(table, dict):
            raise where.fail(
                name, "", f"[network.{level}] must be a table, got {describe_value(table)[:80]}"
            )
        for key in table:
            if key not in _NETWORK_KEYS:
                raise where.fail(
                    key, name, f"unknown field [{name}].{key}{did_you_mean(key, _NETWORK_KEYS)}"
                )
        sub = {name: table}
        for key in ("efficiency", "half_bytes", "source"):
            if key not in table:
                raise where.fail(name, "", f"missing field [{name}].{key}")
        eta = _fraction(sub, name, "efficiency", where)
        half = _number(table["half_bytes"], f"[{name}].half_bytes", "half_bytes", name, where)
        if not 0 <= half <= MAX_HALF_BYTES:
            raise where.fail(
                "half_bytes",
                name,
                f"field [{name}].half_bytes must be from 0 to "
                f"{MAX_HALF_BYTES:g} bytes, got {table['half_bytes']!r}",
            )
        latency = _floor(sub, name, "latency_s", where) if "latency_s" in table else None
        ranks = None
        if "half_ranks" in table:
            ranks = _number(table["half_ranks"], f"[{name}].half_ranks", "half_ranks", name, where)
            if not 2 <= ranks <= MAX_HALF_RANKS or not float(ranks).is_integer():
                raise where.fail(
                    "half_ranks",
                    name,
                    f"field [{name}].half_ranks must be a "
                    f"whole number from 2 to {MAX_HALF_RANKS:g}, got "
                    f"{table['half_ranks']!r}",
                )
        source = _text(sub, name, "source", where)
        note = _text(sub, name, "note", where) if "note" in table else ""
        fits[level] = NetworkFit(
            level, eta, half, source, latency, note, None if ranks is None else float(ranks)
        )
    return tuple(fits[lv] for lv in NETWORK_LEVELS if lv in fits)


class _Locator:
    """Finds the line of a key in the file's text, for messages that say `file:line`."""

    def __init__(self, text: str, path: str):
        self.lines = text.splitlines()
        self.path = path

    def line(self, key: str, table: str, index: int | None = None) -> int | None:
        current, seen = "", -1
        for n, raw in enumerate(self.lines, 1):
            s = raw.strip()
            if s.startswith("[[") and s.endswith("]]"):
                current = s[2:-2].strip()
                seen += 1 if current == table else 0
                continue
            if s.startswith("[") and "]" in s:
                current = s[1 : s.index("]")].strip()
                if not table and current == key:
                    return n
                continue
            if (
                current == table
                and (index is None or seen == index)
                and re.match(rf"\"?{re.escape(key)}\"?\s*=", s)
            ):
                return n
        return None

    def fail(self, key: str, table: str, message: str, index: int | None = None) -> HardwareError:
        n = self.line(key, table, index)
        at = f"{self.path}:{n}" if n is not None else self.path
        field = f"[{table}].{key}" if table else key
        return HardwareError(f"{at}: {message}", path=self.path, field=field)


def _text(doc: dict, table: str, key: str, where: _Locator) -> str:
    value = (doc.get(table, {}) if table else doc).get(key)
    field = f"[{table}].{key}" if table else key
    if value is None:
        raise where.fail(key, table, f"missing field {field}")
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise where.fail(
            key,
            table,
            f"field {field} must be a non-empty string of at most "
            f"{MAX_TEXT} characters, got {describe_value(value)[:80]}",
        )
    return value


def _number(
    value: Any, field: str, key: str, table: str, where: _Locator, index: int | None = None
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.fail(
            key, table, f"field {field} must be a number, got {describe_value(value)[:80]}", index
        )
    if not math.isfinite(value):
        raise where.fail(key, table, f"field {field} must be finite, got {value!r}", index)
    return float(value)


def _fraction(doc: dict, table: str, key: str, where: _Locator) -> float:
    field = f"[{table}].{key}"
    if key not in doc[table]:
        raise where.fail(table, "", f"missing field {field}")
    x = _number(doc[table][key], field, key, table, where)
    if not 0 < x <= 1:
        raise where.fail(key, table, f"field {field} must be in (0, 1], got {doc[table][key]!r}")
    return x


def _floor(doc: dict, table: str, key: str, where: _Locator) -> float:
    field = f"[{table}].{key}"
    if key not in doc[table]:
        raise where.fail(table, "", f"missing field {field}")
    x = _number(doc[table][key], field, key, table, where)
    if x < 0 or x > 1:
        raise where.fail(
            key, table, f"field {field} must be from 0 to 1 second, got {doc[table][key]!r}"
        )
    return x


def _rows(value: Any, where: _Locator) -> tuple[Row, ...]:
    if not isinstance(value, list):
        raise where.fail(
            "rows",
            "",
            f"rows must be an array of tables ([[rows]]), got {describe_value(value)[:80]}",
        )
    if len(value) > MAX_ROWS:
        raise where.fail("rows", "", f"{len(value)} [[rows]]: more than the limit of {MAX_ROWS}")
    out = []
    for i, row in enumerate(value):
        if not isinstance(row, dict):
            raise where.fail(
                "rows", "", f"rows[{i}] must be a table, got {describe_value(row)[:80]}"
            )
        for key in row:
            if key not in _ROW_KEYS:
                raise where.fail(
                    key,
                    "rows",
                    f"unknown field {key!r} in [[rows]] number "
                    f"{i + 1}{did_you_mean(key, _ROW_KEYS)}",
                    i,
                )
        fields: dict[str, Any] = {}
        for key in ("case", "kind", "dtype"):
            if not isinstance(row.get(key), str) or not row[key] or len(row[key]) > MAX_TEXT:
                raise where.fail(key, "rows", f"[[rows]] number {i + 1} needs a string {key}", i)
            fields[key] = row[key]
        for key in ("flops", "bytes", "median_s", "min_s", "p90_s", "fitted_s"):
            if key not in row:
                if key == "fitted_s":
                    continue
                raise where.fail("case", "rows", f"[[rows]] number {i + 1} needs {key}", i)
            x = _number(row[key], f"rows[{i}].{key}", key, "rows", where, i)
            if x < 0 or (key.endswith("_s") and x <= 0):
                raise where.fail(
                    key,
                    "rows",
                    f"field rows[{i}].{key} must be "
                    f"{'positive' if key.endswith('_s') else 'at least 0'}, got "
                    f"{row[key]!r}",
                    i,
                )
            fields[key] = x
        role = row.get("role", "fit")
        if role not in ROLES:
            raise where.fail(
                "role",
                "rows",
                f"field rows[{i}].role is {role!r}; expected one of {', '.join(ROLES)}",
                i,
            )
        note = row.get("note", "")
        if not isinstance(note, str) or len(note) > MAX_TEXT:
            raise where.fail("note", "rows", f"field rows[{i}].note must be a string", i)
        precision = row.get("precision", "default")
        if precision not in PRECISIONS:
            raise where.fail(
                "precision",
                "rows",
                f"field rows[{i}].precision is "
                f"{str(precision)[:40]!r}; expected one of {', '.join(PRECISIONS)}",
                i,
            )
        out.append(Row(role=role, note=note, precision=precision, **fields))
    return tuple(out)


def _num(x: float) -> str:
    """A figure as TOML, to 6 significant digits (a fit is not more precise than that)."""
    return f"{x:.6g}" if "." in f"{x:.6g}" or "e" in f"{x:.6g}" else f"{x:.6g}.0"


def _toml_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def calibration_toml(c: Calibration, header: str = "") -> str:
    """The text of a calibration file (what `shardc calibrate` writes); reads back equal.

    >>> c = Calibration("h200", 0.7, 0.85, 1e-5, 3.8e-5, "published",
    ...                 (("kind", "published"), ("source", "x")))
    >>> read_calibration_toml(calibration_toml(c), "h200.toml", "h200") == c
    True
    """
    out = [f"# {line}" for line in header.splitlines()]
    out.append(f"chip = {_toml_string(c.chip)}")
    if c.note:
        out.append(f"note = {_toml_string(c.note)}")
    out += [
        "",
        "[matmul]",
        f"efficiency = {_num(c.eta_mxu)}   # eta_mxu",
        *([f"exposed = {_num(c.exposed)}   # c_expose"] if c.exposed is not None else []),
        "",
        "[hbm]",
        f"efficiency = {_num(c.eta_hbm)}   # eta_hbm",
        "",
        "[call]",
        f"launch_s = {_num(c.t_call)}   # t_call, per op",
        f"dispatch_s = {_num(c.t_dispatch)}   # t_dispatch, per program call",
        "",
        "[provenance]",
    ]
    out += [f"{k} = {_toml_string(v)}" for k, v in c.provenance]
    if c.clock is not None:
        out += [
            "",
            "[clock]",
            f"boost_mhz = {_num(c.clock.boost_mhz)}",
            f"sustained_mhz = {_num(c.clock.sustained_mhz)}",
        ]
        if c.clock.power_w is not None:
            out.append(f"power_w = {_num(c.clock.power_w)}")
    if c.attention is not None:
        out += [
            "",
            "[attention]",
            f"efficiency = {_num(c.attention.efficiency)}   # eta_attn",
            f"source = {_toml_string(c.attention.source)}",
        ]
    for f in c.network:
        out += [
            "",
            f"[network.{f.level}]",
            f"efficiency = {_num(f.efficiency)}   # eta_{f.level}",
            f"half_bytes = {_num(f.half_bytes)}   # n_half_{f.level}",
        ]
        if f.half_ranks is not None:
            out.append(f"half_ranks = {_num(f.half_ranks)}   # ranks_{f.level}")
        if f.latency_s is not None:
            out.append(f"latency_s = {_num(f.latency_s)}   # alpha_{f.level}, per step")
        out.append(f"source = {_toml_string(f.source)}")
        if f.note:
            out.append(f"note = {_toml_string(f.note)}")
    if c.overlap is not None:
        o = c.overlap
        out += ["", "[overlap]"]
        if o.prefetch_elements is not None:
            out.append(f"prefetch_elements = {_num(o.prefetch_elements)}")
        if o.contention is not None:
            out.append(f"contention = {_num(o.contention)}")
        out.append(f"source = {_toml_string(o.source)}")
    for r in c.rows:
        out += [
            "",
            "[[rows]]",
            f"case = {_toml_string(r.case)}",
            f"kind = {_toml_string(r.kind)}",
            f"dtype = {_toml_string(r.dtype)}",
            *([f"precision = {_toml_string(r.precision)}"] if r.precision != "default" else []),
            f"flops = {_num(r.flops)}",
            f"bytes = {_num(r.bytes)}",
            f"median_s = {_num(r.median_s)}",
            f"min_s = {_num(r.min_s)}",
            f"p90_s = {_num(r.p90_s)}",
        ]
        if r.fitted_s is not None:
            out.append(f"fitted_s = {_num(r.fitted_s)}")
        out.append(f"role = {_toml_string(r.role)}")
        if r.note:
            out.append(f"note = {_toml_string(r.note)}")
    return "\n".join(out) + "\n"
