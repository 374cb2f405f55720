"""The JSON Schema of chip files (`hardware/chip.schema.json`, `shardc hw schema`): generated
from the loader's field table, shipped equal to what the generator gives, followed by every
shipped chip, and in agreement with the loader on what a chip file may not be."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import jsonschema
import pytest

from shardc import hardware
from shardc.cli.app import main
from shardc.hardware.json_schema import SHIPPED, chip_json_schema, chip_json_schema_text
from shardc.hardware.schema import HardwareError, read_chip_toml
from tests.toml_text import to_toml

SCHEMA = chip_json_schema()
VALIDATORS = (jsonschema.Draft202012Validator(SCHEMA), jsonschema.Draft7Validator(SCHEMA))
"""Draft 2020-12 as declared, and draft-07, which taplo's validator may fall back to."""


def chip(name: str) -> dict[str, Any]:
    return tomllib.loads(files("shardc.hardware").joinpath(f"{name}.toml").read_text("utf-8"))


def test_the_shipped_file_is_the_generated_schema() -> None:
    shipped = files("shardc.hardware").joinpath(SHIPPED).read_text(encoding="utf-8")
    assert shipped == chip_json_schema_text(), (
        "hardware/chip.schema.json is stale: regenerate it with "
        "`shardc hw schema > hardware/chip.schema.json`"
    )


def test_it_is_a_valid_schema_with_only_draft_07_keywords() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    used: set[str] = set()

    def walk(node: Any, under_properties: bool = False) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if not under_properties:
                    used.add(key)
                walk(value, key == "properties" and not under_properties)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(SCHEMA)
    draft_07 = {
        "$schema",
        "$id",
        "title",
        "description",
        "type",
        "required",
        "properties",
        "additionalProperties",
        "allOf",
        "if",
        "then",
        "not",
        "const",
        "enum",
        "pattern",
        "exclusiveMinimum",
        "items",
        "minLength",
    }
    assert used <= draft_07, used - draft_07


def test_shardc_hw_schema_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hw", "schema"]) == 0
    out = capsys.readouterr()
    assert out.out == chip_json_schema_text() and out.err == ""


def test_every_field_of_the_table_is_in_the_schema() -> None:
    from shardc.hardware.schema import FIELDS

    for spec in FIELDS:
        props = (
            SCHEMA["properties"][spec.table]["properties"] if spec.table else SCHEMA["properties"]
        )
        assert props[spec.key]["description"] == spec.doc and spec.doc, spec.where


@pytest.mark.parametrize("name", hardware.available())
def test_every_shipped_chip_follows_the_schema(name: str) -> None:
    for v in VALIDATORS:
        v.validate(chip(name))


# ---- the schema and the loader agree ------------------------------------------------------------


def _set(table: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        (doc.setdefault(table, {}) if table else doc)[key] = value

    return change


def _drop(table: str, key: str | None = None) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        if key is None:
            del doc[table]
        else:
            del (doc[table] if table else doc)[key]

    return change


# Each chip file with one change: (base chip, what, change, valid). The loader and the schema
# must agree on every one.
MUTATIONS: list[tuple[str, str, Callable[[dict[str, Any]], None], bool]] = [
    ("tpu-v5e", "as shipped", lambda d: None, True),
    ("h100", "as shipped", lambda d: None, True),
    ("tpu-v5e", "no [pod] table", _drop("pod"), True),
    ("tpu-v5e", "an f32 rate", _set("flops", "f32", 5e13), True),
    ("h100", "no [dcn] table", _drop("dcn"), True),
    ("tpu-v5e", "no name", _drop("", "name"), False),
    ("tpu-v5e", "a blank display name", _set("", "display_name", "  "), False),
    ("tpu-v5e", "an unknown family", _set("", "family", "fpga"), False),
    ("tpu-v5e", "an unknown top-level field", _set("", "hbm", 16e9), False),
    ("tpu-v5e", "an unknown table", _set("network", "bw", 1e9), False),
    ("tpu-v5e", "an unknown field in [ici]", _set("ici", "speed", 1e9), False),
    ("tpu-v5e", "no [ici] table", _drop("ici"), False),
    ("tpu-v5e", "no HBM bandwidth", _drop("memory", "hbm_bw"), False),
    ("tpu-v5e", "a zero HBM bandwidth", _set("memory", "hbm_bw", 0), False),
    ("tpu-v5e", "a bandwidth as text", _set("memory", "hbm_bw", "fast"), False),
    ("tpu-v5e", "a fractional link count", _set("ici", "links_per_axis", 1.5), False),
    ("tpu-v5e", "a boolean axis count", _set("ici", "axes", True), False),
    ("tpu-v5e", "no bf16 rate", _drop("flops", "bf16"), False),
    ("tpu-v5e", "an unknown dtype", _set("flops", "fp4", 1e15), False),
    ("tpu-v5e", "aliases as one string", _set("", "aliases", "v5e"), False),
    ("tpu-v5e", "an empty alias", _set("", "aliases", ["", "v5e"]), False),
    ("tpu-v5e", "a source as a number", _set("sources", "x", 3), False),
    ("tpu-v5e", "a TPU on NVLink", _set("ici", "kind", "nvlink"), False),
    (
        "tpu-v5e",
        "a switched TPU",
        lambda d: (_set("ici", "wraparound", "switched")(d), _set("ici", "axes", 1)(d)),
        False,
    ),
    ("tpu-v5e", "a TPU pod shape in words", _set("pod", "shape", "16 by 16"), False),
    ("tpu-v5e", "a TPU pod shape of nine axes", _set("pod", "shape", "x".join(["2"] * 9)), False),
    ("h100", "a GPU on ICI", _set("ici", "kind", "ici"), False),
    ("h100", "a GPU on a torus rule", _set("ici", "wraparound", "full-axis-16"), False),
    ("h100", "a GPU without its NVLink domain", _drop("ib", "domain_size"), False),
    ("h100", "a GPU without [ib]", _drop("ib"), False),
    ("h100", "a switched domain of three axes", _set("ici", "axes", 3), False),
]


@pytest.mark.parametrize(
    ("base", "what", "change", "valid"), MUTATIONS, ids=[f"{b}: {w}" for b, w, _, _ in MUTATIONS]
)
def test_the_schema_and_the_loader_agree(base: str, what: str, change, valid: bool) -> None:
    doc = copy.deepcopy(chip(base))
    change(doc)
    try:
        read_chip_toml(to_toml(doc), f"{base}.toml", base)
        loads = True
    except HardwareError:
        loads = False
    assert loads == valid, what
    for v in VALIDATORS:
        assert v.is_valid(doc) == valid, (what, [e.message for e in v.iter_errors(doc)])


# What only the loader can check; the schema lets these through (docs/schemas.md says so).
ONLY_THE_LOADER = [
    ("a name that is not the file's", _set("", "name", "tpu-v5x")),
    ("bidi not twice uni", _set("ici", "link_bw_bidi", 1e11)),
    ("an infinite bandwidth", _set("memory", "hbm_bw", float("inf"))),
]


@pytest.mark.parametrize(("what", "change"), ONLY_THE_LOADER, ids=[w for w, _ in ONLY_THE_LOADER])
def test_what_only_the_loader_checks(what: str, change) -> None:
    doc = copy.deepcopy(chip("tpu-v5e"))
    change(doc)
    with pytest.raises(HardwareError):
        read_chip_toml(to_toml(doc), "tpu-v5e.toml", "tpu-v5e")
    assert all(v.is_valid(doc) for v in VALIDATORS)
