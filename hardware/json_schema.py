"""The chip TOML format as a JSON Schema, generated from the field table in `schema.py`, so that
editors which read JSON Schemas (taplo, Even Better TOML) can check a chip file as it is typed.
`chip.schema.json` beside the chip files is this module's output: `shardc hw schema` prints it.
"""

from __future__ import annotations

import json
from typing import Any

from shardc.hardware.schema import (
    FAMILY_NEEDS,
    FIELDS,
    FREE_TABLES,
    POD_SHAPE,
    RATES,
    REQUIRED_TABLES,
    TOP_LEVEL_EXTRAS,
    FieldSpec,
)

SHIPPED = "chip.schema.json"
"""The generated schema's file name in the `shardc.hardware` package."""

_TABLE_DOCS = {
    "flops": "dense peak FLOP/s (OP/s for integers) per dtype; a dtype left out takes "
    "another's rate, ending at bf16's (Chip.flops_for)",
    "memory": "high-bandwidth memory",
    "ici": "the chip's own fast link: a TPU's ICI torus, or a GPU's NVLink behind a switch",
    "dcn": "TPU: the data-centre network between pods",
    "ib": "GPU: InfiniBand between NVLink domains",
    "pod": "the largest pod (TPU) or the node (GPU)",
    "sources": "id = description or URL of each source the file's comments cite",
}
_EXTRA_DOCS = {"aliases": "other names a program's `hardware` line and --hw accept"}


def chip_json_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12, using only keywords draft-07 has too) of a parsed chip
    file. It holds the field table's names, types, choices and required fields, and the rules
    between fields that a schema can state; `shardc hw show FILE` checks the rest.

    >>> s = chip_json_schema()
    >>> s["required"][:4], s["properties"]["flops"]["required"]
    (['name', 'display_name', 'vendor', 'family'], ['bf16'])
    """
    top: dict[str, Any] = {}
    tables: dict[str, dict[str, Any]] = {
        "flops": {
            **_table("flops"),
            "required": ["bf16"],
            "properties": {d: _positive("number") for d in RATES},
        }
    }
    for spec in FIELDS:
        if spec.table:
            table = tables.setdefault(spec.table, _table(spec.table))
            table["properties"][spec.key] = _field(spec)
            if spec.required:
                table["required"].append(spec.key)
        else:
            top[spec.key] = _field(spec)
    for name in TOP_LEVEL_EXTRAS:
        top[name] = {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "description": _EXTRA_DOCS[name],
        }
    tables["sources"] = {
        "type": "object",
        "description": _TABLE_DOCS["sources"],
        "additionalProperties": {"type": "string"},
    }
    assert set(FREE_TABLES) == {"flops", "sources"}, "a new free table needs a schema here"
    for table in tables.values():
        if table.get("required") == []:
            del table["required"]
    required = [s.key for s in FIELDS if not s.table and s.required]
    required += [t for t in tables if t in REQUIRED_TABLES or tables[t].get("required")]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://shardc.dev/schemas/shardc.chip-1.json",
        "title": "shardc chip file",
        "description": "A chip TOML file (hardware/*.toml, or one of your own) after TOML "
        "parsing. Generated from shardc.hardware.schema.FIELDS; print it with "
        "`shardc hw schema`. A schema cannot say that `name` equals the file "
        "name, that [ici].link_bw_bidi is twice [ici].link_bw_uni or that "
        "numbers are finite: `shardc hw show FILE` checks those too.",
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": {**top, **tables},
        "allOf": _rules(),
    }


def chip_json_schema_text() -> str:
    """`chip_json_schema()` as the shipped file holds it."""
    return json.dumps(chip_json_schema(), indent=2, allow_nan=False) + "\n"


def _table(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": _TABLE_DOCS[name],
        "required": [],
        "additionalProperties": False,
        "properties": {},
    }


def _positive(kind: str) -> dict[str, Any]:
    return {"type": "integer" if kind == "int" else "number", "exclusiveMinimum": 0}


def _field(spec: FieldSpec) -> dict[str, Any]:
    if spec.choices:
        out: dict[str, Any] = {"type": "string", "enum": list(spec.choices)}
    elif spec.kind == "str":
        out = {"type": "string", "pattern": r"\S"}  # not empty, not only blanks
    else:
        out = _positive(spec.kind)
    return {**out, "description": spec.doc} if spec.doc else out


def _at(attr: str, value: dict[str, Any]) -> dict[str, Any]:
    """A schema asking the field of `Chip` attribute `attr`, where present, to match `value`."""
    spec = next(s for s in FIELDS if s.attr == attr)
    inner = {"properties": {spec.key: value}}
    return {"properties": {spec.table: inner}} if spec.table else inner


def _when(attr: str, value: str) -> dict[str, Any]:
    """`if` the field of `attr` (in its table) equals `value`."""
    spec = next(s for s in FIELDS if s.attr == attr)
    cond = {"properties": {spec.key: {"const": value}}, "required": [spec.key]}
    return {"properties": {spec.table: cond}, "required": [spec.table]} if spec.table else cond


def _rules() -> list[dict[str, Any]]:
    """The checks between fields of `schema._check_consistency` that JSON Schema can state."""
    rules = []
    for family, needs in FAMILY_NEEDS.items():
        then: dict[str, Any] = {"allOf": [_at(a, {"const": v}) for a, v in needs.items()]}
        rules.append({"if": _when("family", family), "then": then})
    tpu = rules[[*FAMILY_NEEDS].index("tpu")]["then"]["allOf"]
    tpu.append(_at("wraparound", {"not": {"const": "switched"}}))
    tpu.append(_at("pod_shape", {"pattern": f"^(?:{POD_SHAPE.pattern})$"}))
    domain = next(s for s in FIELDS if s.attr == "nvlink_domain")
    gpu = rules[[*FAMILY_NEEDS].index("gpu")]["then"]["allOf"]
    gpu.append(
        {"required": [domain.table], "properties": {domain.table: {"required": [domain.key]}}}
    )
    rules.append({"if": _when("wraparound", "switched"), "then": _at("ici_axes", {"const": 1})})
    return rules


if __name__ == "__main__":
    print(chip_json_schema_text(), end="")
