"""Every JSON the CLI writes names its schema first (`"schema": "shardc.<name>/<version>"`) and
follows the JSON Schema shipped as `shardc/driver/schemas/<name>.schema.json` (docs/schemas.md);
each schema also refuses a broken document, so these tests can fail. The report's own tests are in
tests/driver/test_schemas.py."""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import io
import json
import tomllib
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest

from shardc.cli.app import main
from tests.paths import ROOT

PROGRAMS = ROOT / "programs"
NAMES = ("report", "plan", "derive", "sweep", "limits", "model-show", "xla-check")
"""Every schema a command's `--format json` output names."""
VERSIONS = {"xla-check": 2}
"""Schemas past version 1 (docs/schemas.md, "Versions"); the others are at 1."""


def title(name: str) -> str:
    """`shardc.<name>/<version>`: the schema's title and the `schema` value of its documents."""
    return f"shardc.{name}/{VERSIONS.get(name, 1)}"


@cache
def schema(name: str) -> dict[str, Any]:
    return json.loads(files("shardc.driver").joinpath(f"schemas/{name}.schema.json").read_text())


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


def cli_json(*args: str) -> Any:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


FSDP = (
    "mesh X\ndim B, D=8192, F=32768\nhardware tpu-v5p\nIn: bf16[B_X, D]\n"
    "param W_in: bf16[D_X, F]\nparam W_out: bf16[F, D_X]\nTmp[B_X, F] = In ·_D W_in\n"
    "Out[B_X, D] = Tmp ·_F W_out\nbackward\n"
)
"""FSDP with B free: its plans change with B (tests/driver/test_regions.py), so derive gives
`by_region`."""
FSDP_TP = (
    "mesh X @ici(x, y), Y @ici(z)\ndim B, D=8192, F\nhardware tpu-v5p\n"
    "In: bf16[B_X, D_Y]\nparam W_in: bf16[D_X, F_Y]\nparam W_out: bf16[F_Y, D_X]\n"
    "Tmp = In[B_X, D] ·_D W_in\nOut[B_X, D_Y] = gelu(Tmp) ·_F W_out\nbackward\n"
)
"""FSDP + TP (tests/tools/test_derive.py): `--optimize X --with Y --devices 64` scans the splits."""

CASES: dict[str, tuple[str, Callable[[Path], list[str]]]] = {
    # A plan whose best candidate fits, and one where none fits (best is null).
    "plan": (
        "plan",
        lambda _: [
            "plan",
            "--card",
            "llama3-8b",
            "--hw",
            "tpu-v5p",
            "--chips",
            "64",
            "--batch",
            "256Ki",
            "--remat",
            "block",
            "--format",
            "json",
        ],
    ),
    "plan-none-fits": (
        "plan",
        lambda _: [
            "plan",
            "--card",
            "llama3-8b",
            "--hw",
            "tpu-v5e",
            "--chips",
            "16",
            "--batch",
            "64Ki",
            "--format",
            "json",
        ],
    ),
    **{
        f"derive-{p}": (
            "derive",
            lambda _, p=p: ["derive", str(PROGRAMS / f"{p}.shard"), "--format", "json"],
        )
        for p in ("mlp-dp-train", "mlp-fsdp-tp-train", "case1")
    },
    "derive-solve-for": (
        "derive",
        lambda _: [
            "derive",
            str(PROGRAMS / "mlp-tp-train.shard"),
            "--model",
            "exact",
            "--solve-for",
            "F",
            "--format",
            "json",
        ],
    ),
    "derive-by-region": (
        "derive",
        lambda tmp: [
            "derive",
            str(tmp / "fsdp.shard"),
            "--solve-for",
            "B",
            "--set",
            "X=16",
            "--format",
            "json",
        ],
    ),
    "derive-splits": (
        "derive",
        lambda tmp: [
            "derive",
            str(tmp / "fsdp-tp.shard"),
            "--optimize",
            "X",
            "--with",
            "Y",
            "--devices",
            "64",
            "--set",
            "B=65536",
            "--set",
            "F=28672",
            "--format",
            "json",
        ],
    ),
    "sweep": (
        "sweep",
        lambda _: [
            "sweep",
            str(PROGRAMS / "mlp-dp-train.shard"),
            "--set",
            "B=1e3:1e7:log6",
            "--set",
            "F=4k:32k:lin3",
            "--y",
            "t_math_s",
            "--y",
            "t_math_s/t_comms_s",
            "--y",
            "bound",
            "--format",
            "json",
        ],
    ),
    "sweep-several": (
        "sweep",
        lambda _: [
            "sweep",
            str(PROGRAMS / "mlp-dp-train.shard"),
            str(PROGRAMS / "mlp-fsdp-train.shard"),
            "--set",
            "B=1e3:1e7:log4",
            "--format",
            "json",
        ],
    ),
    "limits": ("limits", lambda _: ["limits", "--format", "json"]),
    "model-show-moe": (
        "model-show",
        lambda _: ["model", "show", "deepseek-v3", "--format", "json"],
    ),
    "model-show-dense": (
        "model-show",
        lambda _: ["model", "show", "llama3-8b", "--kv-dtype", "fp8", "--format", "json"],
    ),
    "xla-check": (
        "xla-check",
        lambda _: ["xla-check", str(PROGRAMS / "q9-reducescatter.shard"), "--format", "json"],
    ),
    "xla-check-several": (
        "xla-check",
        lambda _: [
            "xla-check",
            str(PROGRAMS / "q9-reducescatter.shard"),
            str(PROGRAMS / "case3.shard"),
            "--format",
            "json",
        ],
    ),
}
"""Each case: the schema its output follows, and its command line (given a folder holding
fsdp.shard and fsdp-tp.shard)."""


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """The parsed JSON of a case, run once per module (limits and plan take a few seconds)."""
    tmp = tmp_path_factory.mktemp("programs")
    (tmp / "fsdp.shard").write_text(FSDP, encoding="utf-8")
    (tmp / "fsdp-tp.shard").write_text(FSDP_TP, encoding="utf-8")
    done: dict[str, Any] = {}

    def get(case: str) -> Any:
        if case.startswith("xla-check"):
            pytest.importorskip("jax")
        if case not in done:
            done[case] = cli_json(*CASES[case][1](tmp))
        return copy.deepcopy(done[case])

    return get


# ---- the schemas themselves ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["title"] == title(name) and s["description"]
    assert s["$id"] == f"https://shardc.dev/schemas/shardc.{name}-{VERSIONS.get(name, 1)}.json"


def _schema_const(name: str) -> str:
    """The `schema` value a schema allows: its top-level property, or its `$defs`' one."""
    s = schema(name)
    props = s.get("properties") or next(
        d["properties"] for d in s["$defs"].values() if "schema" in d.get("properties", {})
    )
    return props["schema"]["const"]


def test_each_output_constant_is_its_schemas_title() -> None:
    """One constant per output, in the module that builds its JSON, names the shipped file."""
    from shardc.driver import report
    from shardc.tools import derive, sweep_render
    from shardc.tools.epoch import results as limits
    from shardc.tools.models import render as model_show
    from shardc.tools.plan import render as plan
    from shardc.tools.xla import render as xla

    constants = {
        "report": report.SCHEMA,
        "plan": plan.SCHEMA,
        "derive": derive.SCHEMA,
        "sweep": sweep_render.SCHEMA,
        "limits": limits.SCHEMA,
        "model-show": model_show.SCHEMA,
        "xla-check": xla.SCHEMA,
    }
    assert constants.keys() == set(NAMES)
    for name, value in constants.items():
        assert value == schema(name)["title"] == _schema_const(name), name


def _at(name: str, pointer: str) -> Any:
    node: Any = schema(name)
    for part in pointer.strip("/").split("/"):
        node = node[part]
    return node


def test_enums_are_the_codes_own_values() -> None:
    """An enum in a schema lists what the code can write, read from the code's own tuples."""
    from shardc.hardware.levels import LEVELS
    from shardc.passes.context import Attention, Model, Optimizer, Remat
    from shardc.tools import models
    from shardc.tools.derive import OVERLAPS
    from shardc.tools.xla.compare import VERDICTS

    cases = [
        ("plan", "properties/options/properties/optimizer/enum", get_args(Optimizer)),
        ("plan", "properties/options/properties/remat/enum", get_args(Remat)),
        ("plan", "properties/options/properties/attention/enum", get_args(Attention)),
        ("plan", "properties/options/properties/cost_model/enum", get_args(Model)),
        ("plan", "$defs/candidate/properties/bound_level/enum", (*LEVELS, None)),
        ("plan", "$defs/candidate/properties/t_comms_by_level_s/propertyNames/enum", LEVELS),
        ("derive", "properties/model/enum", get_args(Model)),
        ("derive", "$defs/optimum/properties/overlap/enum", OVERLAPS),
        ("sweep", "$defs/sweep/properties/model/enum", get_args(Model)),
        ("model-show", "properties/architecture/properties/activation/enum", models.ACTIVATIONS),
        ("xla-check", "$defs/verdict/enum", VERDICTS),
        ("xla-check", "$defs/program/properties/model/enum", get_args(Model)),
    ]
    for name, pointer, values in cases:
        assert sorted(map(str, _at(name, pointer))) == sorted(map(str, values)), (name, pointer)
    assert set(VERDICTS) <= set(_at("xla-check", "$defs/summary/required"))


def test_every_schema_file_ships_and_is_documented() -> None:
    """The package-data globs in pyproject.toml take every schema file; docs/schemas.md names
    each one."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = data["tool"]["setuptools"]["package-data"]
    dirs = data["tool"]["setuptools"]["package-dir"]
    shipped = {
        "shardc.driver": sorted((ROOT / "dsl/driver/schemas").glob("*.schema.json")),
        "shardc.hardware": [ROOT / "hardware/chip.schema.json"],
    }
    assert {p.name for p in shipped["shardc.driver"]} == {f"{n}.schema.json" for n in NAMES}
    docs = (ROOT / "docs/schemas.md").read_text(encoding="utf-8")
    for package, paths in shipped.items():
        base = ROOT / dirs.get(package, "dsl/" + package.split(".", 1)[1].replace(".", "/"))
        for path in paths:
            rel = path.relative_to(base).as_posix()
            assert any(fnmatch.fnmatch(rel, g) for g in globs[package]), rel
            assert f"shardc/{package.split('.', 1)[1].replace('.', '/')}/{rel}" in docs, rel


# ---- real outputs -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_real_output_follows_its_schema(case: str, output: Callable[[str], Any]) -> None:
    name = CASES[case][0]
    doc = output(case)
    validator(name).validate(doc)
    for item in doc if isinstance(doc, list) else [doc]:
        assert next(iter(item)) == "schema" and item["schema"] == title(name)


def test_the_cases_reach_the_optional_parts(output: Callable[[str], Any]) -> None:
    """The cases cover what is there only sometimes: a null best, by_region, splits."""
    assert output("plan")["best"]["why"] and output("plan-none-fits")["best"] is None
    assert len(output("derive-by-region")["by_region"]["regions"]) > 1
    assert output("derive-splits")["splits"]["skipped"]
    assert any(c["solved"] for c in output("derive-solve-for")["conditions"])
    assert output("sweep")["plan"] is not None and isinstance(output("sweep-several"), list)
    assert any(r["t_crit_flop"] is None for r in output("limits")["closed_form"])
    assert output("model-show-moe")["architecture"]["mla"] is not None
    assert output("model-show-dense")["architecture"]["moe"] is None


# ---- each schema refuses a broken document ------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        *head, last = path.split("/")
        for part in head:
            doc = doc[int(part) if part.isdigit() else part]
        doc[int(last) if last.isdigit() else last] = value

    return change


def _delete(path: str) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        *head, last = path.split("/")
        for part in head:
            doc = doc[int(part) if part.isdigit() else part]
        del doc[last]

    return change


BROKEN = [
    ("plan", "no candidates", _delete("candidates")),
    ("plan", "a candidate without its step time", _delete("candidates/0/t_step_s")),
    ("plan", "chips as text", _set("chips", "64")),
    ("plan", "an unknown bound", _set("candidates/0/bound", "network")),
    ("plan", "a negative time", _set("candidates/0/t_math_s", -1.0)),
    ("plan", "an unknown field", _set("slice/racks", 2)),
    ("plan", "best without why", _delete("best/why")),
    ("plan", "another version", _set("schema", "shardc.plan/2")),
    ("derive-mlp-fsdp-tp-train", "a condition without its formula", _delete("conditions/0/expr")),
    ("derive-mlp-fsdp-tp-train", "holds as text", _set("conditions/0/holds", "yes")),
    ("derive-mlp-fsdp-tp-train", "an unknown accounting", _set("accounting", "both")),
    ("derive-splits", "a split without its plan", _delete("splits/splits/0/plan")),
    ("derive-by-region", "a share above 1", _set("by_region/regions/0/share_of_sample", 1.5)),
    ("sweep", "no points", _delete("points")),
    ("sweep", "an unknown scale", _set("axes/B/scale", "exp")),
    ("sweep", "an unknown bound", _set("quantities/bound/0", "latency")),
    ("sweep-several", "another schema in the array", _set("1/schema", "shardc.report/1")),
    ("limits", "no paper rows", _delete("paper/simulated")),
    ("limits", "a negative d'", _set("closed_form/0/d_prime", -1.0)),
    ("model-show-moe", "no KV dtype", _delete("kv_cache/dtype")),
    ("model-show-moe", "zero layers", _set("architecture/n_layers", 0)),
    ("model-show-moe", "parameters as text", _set("params", "671B")),
    ("xla-check", "a statement without its verdict", _delete("statements/0/verdict")),
    ("xla-check", "an unknown verdict", _set("statements/0/verdict", "maybe")),
    ("xla-check-several", "ok as text", _set("ok", "true")),
]


@pytest.mark.parametrize(
    ("case", "what", "change"), BROKEN, ids=[f"{c}: {w}" for c, w, _ in BROKEN]
)
def test_each_schema_refuses_a_broken_document(case: str, what: str, change, output) -> None:
    doc = output(case)
    validator(CASES[case][0]).validate(doc)  # whole, it passes
    change(doc)
    with pytest.raises(jsonschema.ValidationError):
        validator(CASES[case][0]).validate(doc)
