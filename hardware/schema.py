"""The chip TOML schema: which fields a chip file holds, their types, and the checks between them.

`read_chip_toml` turns the text of one file into validated values keyed by `Chip` field name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from shardc.hardware.levels import FAST_LINKS

DTYPES = ("f32", "bf16", "f16", "fp8", "int8", "int4")
"""The dtypes of the .shard language; a `[flops]` table rates each of them."""

RATES = ("f32", "tf32", "bf16", "f16", "fp8", "int8", "int4")
"""Keys a `[flops]` table may hold: the dtypes, and `tf32`, the rate of an f32 product on an
NVIDIA GPU's tensor cores (TensorFloat-32), which is not a storage dtype. `f32` is the rate of
f32 arithmetic on the vector units (CUDA cores on a GPU, the VPU on a TPU)."""

PRECISIONS = ("default", "high", "highest")
"""`--matmul-precision`: JAX's `jax.lax.Precision` for products of f32 operands
(https://docs.jax.dev/en/latest/_autosummary/jax.lax.Precision.html)."""

FAMILIES = ("tpu", "gpu")
LINK_KINDS = FAST_LINKS
WRAPAROUND_RULES = ("full-axis-16", "cube-multiple-4", "switched")
"""Rule ids for when a mesh axis gets a wraparound link (see `Chip.wraps`)."""

Kind = Literal["str", "number", "int"]

FIGURE_RANGE = (1e-150, 1e150)
"""The range of a chip figure (FLOP/s, bytes, bytes/s, seconds) and of a `--set` hardware
figure: two figures multiply or divide to a finite, normal float (`C / W_hbm`, `W_uni * t_hop`),
and no chip is within a hundred orders of magnitude of either end. A subnormal bandwidth made
`hw show` print `inf`. `shardc.lang.numeric.figure` checks `--set` figures against it too."""
MAX_WHOLE = 2**63 - 1
"""The largest count a chip file holds (links, chips per host, axes): the size limit."""
QUOTE_WIDTH = 120
"""The most characters of a value a message quotes; equals
`shardc.lang.diagnostics.QUOTE_WIDTH` (hardware/ imports nothing above it, so the few lines of
`quoted` are repeated here; tests/lang/test_boundaries.py checks they agree)."""

POD_SHAPE = re.compile(r"[1-9][0-9]{0,4}(x[1-9][0-9]{0,4}){0,7}")
"""A TPU pod's shape: at most eight axes of at most 99999 chips (v5p: 16x20x28)."""


class HardwareError(Exception):
    """A chip name or chip file the user gave is wrong; the message is meant for the user.

    `path` and `field` repeat the file and the TOML field (`[memory].hbm_bw`) the message names,
    for callers that turn the error into a diagnostic.
    """

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None):
        super().__init__(message)
        self.path = path
        self.field = field


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One scalar field of a chip file and the `Chip` attribute it fills."""

    attr: str
    table: str  # "" for a top-level key
    key: str
    kind: Kind
    required: bool = True
    choices: tuple[str, ...] = ()
    doc: str = ""
    """What the field means, in a few words with its unit (shown by editors, from the chip
    file's JSON Schema)."""

    @property
    def where(self) -> str:
        return f"[{self.table}].{self.key}" if self.table else self.key


FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("name", "", "name", "str", doc="the chip's name; equals the file name without .toml"),
    FieldSpec("display_name", "", "display_name", "str", doc="the name reports print"),
    FieldSpec("vendor", "", "vendor", "str", doc="who makes the chip"),
    FieldSpec(
        "family",
        "",
        "family",
        "str",
        choices=FAMILIES,
        doc="tpu (a torus of ICI links) or gpu (NVLink behind a switch)",
    ),
    FieldSpec("hbm_bytes", "memory", "hbm_bytes", "number", doc="HBM capacity, bytes"),
    FieldSpec("hbm_bw", "memory", "hbm_bw", "number", doc="HBM bandwidth W_hbm, bytes/s"),
    FieldSpec(
        "link_kind",
        "ici",
        "kind",
        "str",
        choices=LINK_KINDS,
        doc="the chip's fast link: ici (TPU) or nvlink (GPU)",
    ),
    FieldSpec(
        "link_bw_uni", "ici", "link_bw_uni", "number", doc="one link, one direction, bytes/s"
    ),
    FieldSpec(
        "link_bw_bidi",
        "ici",
        "link_bw_bidi",
        "number",
        doc="one link, both directions, bytes/s; twice link_bw_uni",
    ),
    FieldSpec(
        "links_per_axis",
        "ici",
        "links_per_axis",
        "int",
        doc="links one chip drives along one mesh axis",
    ),
    FieldSpec(
        "axis_bw",
        "ici",
        "axis_bw",
        "number",
        doc="W_ici: bytes/s per chip that one collective over one mesh axis gets",
    ),
    FieldSpec(
        "hop_latency_s",
        "ici",
        "hop_latency_s",
        "number",
        doc="fixed cost of one hop, seconds (the book's T_min)",
    ),
    FieldSpec(
        "ici_axes",
        "ici",
        "axes",
        "int",
        doc="physical torus axes (2 or 3); 1 for a switched GPU domain",
    ),
    FieldSpec(
        "wraparound",
        "ici",
        "wraparound",
        "str",
        choices=WRAPAROUND_RULES,
        doc="the rule for which mesh axes get a wraparound link (Chip.wraps)",
    ),
    FieldSpec(
        "wraparound_note",
        "ici",
        "wraparound_note",
        "str",
        doc="the source's words for the wraparound rule",
    ),
    FieldSpec(
        "dcn_bw_per_chip",
        "dcn",
        "bw_per_chip",
        "number",
        required=False,
        doc="data-centre network egress per chip, one way, bytes/s",
    ),
    FieldSpec(
        "chips_per_host", "dcn", "chips_per_host", "int", required=False, doc="chips per host"
    ),
    FieldSpec(
        "dcn_latency_s",
        "dcn",
        "latency_s",
        "number",
        required=False,
        doc="latency of one DCN transfer, seconds",
    ),
    FieldSpec(
        "ib_bw_per_gpu",
        "ib",
        "bw_per_gpu",
        "number",
        required=False,
        doc="InfiniBand between NVLink domains, one way per GPU, bytes/s",
    ),
    FieldSpec(
        "ib_latency_s",
        "ib",
        "latency_s",
        "number",
        required=False,
        doc="latency of one InfiniBand transfer, seconds",
    ),
    FieldSpec(
        "nvlink_domain",
        "ib",
        "domain_size",
        "int",
        required=False,
        doc="GPUs in one NVLink domain (required for GPUs)",
    ),
    FieldSpec(
        "pod_shape",
        "pod",
        "shape",
        "str",
        required=False,
        doc="TPU: the largest ICI pod, chips per axis joined by x (16x20x28); "
        "GPU: the node, in words",
    ),
    FieldSpec(
        "pcie_bw", "pod", "pcie_bw", "number", required=False, doc="host PCIe, one way, bytes/s"
    ),
)

FAMILY_NEEDS: dict[str, dict[str, str]] = {
    "gpu": {"link_kind": "nvlink", "wraparound": "switched"},
    "tpu": {"link_kind": "ici"},
}
"""Values a family fixes, by `Chip` attribute: a GPU's fast link is NVLink behind a switch."""

# Tables whose keys are not fixed: [flops] is keyed by dtype, [sources] by whatever the author
# cites. `aliases` is the one top-level list.
FREE_TABLES = ("flops", "sources")
REQUIRED_TABLES = ("flops", "memory", "ici")
TOP_LEVEL_EXTRAS = ("aliases",)


def _allowed_keys() -> dict[str, tuple[str, ...]]:
    keys: dict[str, list[str]] = {"": list(TOP_LEVEL_EXTRAS)}
    for spec in FIELDS:
        keys.setdefault(spec.table, []).append(spec.key)
    for table in FREE_TABLES:
        keys.setdefault(table, [])
    return {table: tuple(names) for table, names in keys.items()}


def read_chip_toml(text: str, path: str, stem: str | None) -> dict[str, Any]:
    """Parse and validate one chip file; values keyed by `Chip` field name (`path` excluded).

    `stem` is the file name without `.toml`; the file's `name` must equal it. Raises
    `HardwareError` naming `path` and the offending field.

    >>> from importlib.resources import files
    >>> text = files("shardc.hardware").joinpath("tpu-v5e.toml").read_text(encoding="utf-8")
    >>> read_chip_toml(text, "tpu-v5e.toml", "tpu-v5e")["axis_bw"]
    90000000000.0
    """
    import tomllib  # here, not at the top: a compile that loads no chip file skips it

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HardwareError(f"{path}: not valid TOML: {exc}", path=path) from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise HardwareError(
            f"{path}: not valid TOML: arrays or tables nested too deeply", path=path
        ) from None
    _check_layout(doc, path)
    values: dict[str, Any] = {spec.attr: _scalar(doc, spec, path) for spec in FIELDS}
    values["flops"] = _flops(doc["flops"], path)
    values["aliases"] = _aliases(doc.get("aliases", []), path)
    values["sources"] = _sources(doc.get("sources", {}), path)
    _check_consistency(values, path, stem)
    return values


def quoted(value: Any) -> str:
    """`repr(value)` cut to `QUOTE_WIDTH` characters, as `shardc.lang.quoting.quoted` cuts it.

    >>> quoted("x" * 1_000_000).endswith("xx... (1,000,000 characters in all)")
    True
    """
    if isinstance(value, str) and len(value) > QUOTE_WIDTH:
        return repr(value[:QUOTE_WIDTH]).rstrip("'\"") + f"... ({len(value):,} characters in all)"
    text = repr(value)
    if len(text) <= QUOTE_WIDTH:
        return text
    return text[:QUOTE_WIDTH] + f"... ({len(text):,} characters in all)"


def _clip(name: str) -> str:
    """A key of the file as a message names it, bare (`hbm_bw`), cut as `quoted` cuts."""
    return name if len(name) <= QUOTE_WIDTH else quoted(name)


def _fail(path: str, where: str, message: str) -> HardwareError:
    return HardwareError(f"{path}: {message}", path=path, field=where)


def _check_layout(doc: dict[str, Any], path: str) -> None:
    # Unknown keys are errors, not ignored: a misspelt `hbm_bandwith` would otherwise read as
    # "missing" at best, or silently keep a default at worst.
    allowed = _allowed_keys()
    tables = [t for t in allowed if t]
    for key, value in doc.items():
        if key in allowed[""] or any(spec.key == key and not spec.table for spec in FIELDS):
            continue
        if key not in tables:
            if isinstance(value, dict):
                hint = did_you_mean(key, tables)
                raise _fail(path, f"[{_clip(key)}]", f"unknown table [{_clip(key)}]{hint}")
            hint = did_you_mean(key, [*allowed[""], *(s.key for s in FIELDS if not s.table)])
            raise _fail(path, _clip(key), f"unknown field {quoted(key)}{hint}")
        if not isinstance(value, dict):
            raise _fail(path, f"[{key}]", f"[{key}] must be a table, got {describe_value(value)}")
        if key in FREE_TABLES:
            continue
        for inner in value:
            if inner not in allowed[key]:
                hint = did_you_mean(inner, allowed[key])
                where = f"[{key}].{_clip(inner)}"
                raise _fail(path, where, f"unknown field {where}{hint}")
    for table in REQUIRED_TABLES:
        if table not in doc:
            raise _fail(path, f"[{table}]", f"missing table [{table}]")


def _scalar(doc: dict[str, Any], spec: FieldSpec, path: str) -> Any:
    table = doc.get(spec.table, {}) if spec.table else doc
    if spec.key not in table:
        if spec.required:
            raise _fail(path, spec.where, f"missing field {spec.where}")
        return None
    return _typed(table[spec.key], spec.kind, spec.where, path, spec.choices)


def _typed(value: Any, kind: Kind, where: str, path: str, choices: tuple[str, ...] = ()) -> Any:
    if kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise _fail(
                path,
                where,
                f"field {where} must be a non-empty string, got {describe_value(value)}",
            )
        if choices and value not in choices:
            raise _fail(
                path,
                where,
                f"field {where} is {quoted(value)}; expected one of {', '.join(choices)}",
            )
        return value
    # bool is an int subclass in Python; `links_per_axis = true` is a typo, not the number 1.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        noun = "an integer" if kind == "int" else "a number"
        raise _fail(path, where, f"field {where} must be {noun}, got {describe_value(value)}")
    if kind == "int" and not isinstance(value, int):
        raise _fail(path, where, f"field {where} must be an integer, got {quoted(value)}")
    if kind == "int":
        if value <= 0 or value > MAX_WHOLE:
            raise _fail(
                path,
                where,
                f"field {where} must be a whole number from 1 to 2**63 - 1, got {quoted(value)}",
            )
        return value
    try:
        out = float(value)
    except OverflowError:  # a TOML integer past a float's range
        out = math.inf
    if not math.isfinite(out) or out <= 0:
        raise _fail(path, where, f"field {where} must be positive and finite, got {quoted(value)}")
    low, high = FIGURE_RANGE
    if not low <= out <= high:
        raise _fail(
            path,
            where,
            f"field {where} = {out:g} is outside a chip figure's range, "
            f"{low:g} to {high:g} (SI units; past it, ratios of two figures such as "
            "C / W_hbm overflow or underflow a float)",
        )
    return out


def _flops(table: dict[str, Any], path: str) -> tuple[tuple[str, float], ...]:
    for dtype in table:
        if dtype not in RATES:
            hint = did_you_mean(dtype, RATES)
            raise _fail(
                path,
                f"[flops].{_clip(dtype)}",
                f"unknown dtype [flops].{_clip(dtype)}{hint}; expected some of {', '.join(RATES)}",
            )
    if "bf16" not in table:
        raise _fail(
            path,
            "[flops].bf16",
            "missing field [flops].bf16 (other dtypes fall back to the bf16 rate)",
        )
    # Kept in RATES order so two files that list the same rates compare equal.
    return tuple((d, _typed(table[d], "number", f"[flops].{d}", path)) for d in RATES if d in table)


def _aliases(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value):
        raise _fail(
            path, "aliases", f"field aliases must be a list of strings, got {describe_value(value)}"
        )
    return tuple(value)


def _sources(table: dict[str, Any], path: str) -> tuple[tuple[str, str], ...]:
    for key, value in table.items():
        if not isinstance(value, str):
            raise _fail(
                path,
                f"[sources].{_clip(key)}",
                f"field [sources].{_clip(key)} must be a string, got {describe_value(value)}",
            )
    return tuple(table.items())


def _check_consistency(values: dict[str, Any], path: str, stem: str | None) -> None:
    if stem is not None and values["name"] != stem:
        raise _fail(
            path,
            "name",
            f"field name is {quoted(values['name'])} but the file is "
            f"{stem}.toml; the name must equal the file name",
        )
    uni, bidi = values["link_bw_uni"], values["link_bw_bidi"]
    if not math.isclose(bidi, 2 * uni, rel_tol=1e-6):
        raise _fail(
            path,
            "[ici].link_bw_bidi",
            f"field [ici].link_bw_bidi = {bidi:g} must be twice [ici].link_bw_uni = "
            f"{uni:g} (one link, both directions)",
        )
    switched = values["wraparound"] == "switched"
    if values["family"] == "tpu" and switched:
        raise _fail(
            path,
            "[ici].wraparound",
            "field [ici].wraparound is 'switched' but family is 'tpu'; TPUs use a torus rule",
        )
    wheres = {spec.attr: spec.where for spec in FIELDS}
    for attr, want in FAMILY_NEEDS[values["family"]].items():
        where = wheres[attr]
        if values[attr] != want:
            raise _fail(
                path,
                where,
                f"field {where} is {quoted(values[attr])}; a {values['family']} chip needs "
                f"{want!r}",
            )
    if switched and values["ici_axes"] != 1:
        raise _fail(
            path,
            "[ici].axes",
            f"field [ici].axes is {values['ici_axes']}; a switched interconnect has 1 axis",
        )
    shape = values["pod_shape"]
    if values["family"] == "tpu" and shape is not None and not POD_SHAPE.fullmatch(shape):
        raise _fail(
            path,
            "[pod].shape",
            f"field [pod].shape is {quoted(shape)}; a TPU pod is chips per ICI axis joined by 'x', "
            'each a whole number from 1 to 99999 ("16x20x28")',
        )
    if values["family"] == "gpu" and values["nvlink_domain"] is None:
        raise _fail(
            path, "[ib].domain_size", "missing field [ib].domain_size (GPUs in one NVLink domain)"
        )


def describe_value(value: Any) -> str:
    names = {
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        list: "array",
        dict: "table",
    }
    return f"{names.get(type(value), type(value).__name__)} {quoted(value)}"


def did_you_mean(word: str, candidates: tuple[str, ...] | list[str]) -> str:
    import difflib

    if len(word) > 2 * QUOTE_WIDTH:  # no field name is this long; and difflib is quadratic
        return ""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
