"""The published JSON Schema of `shardc.report/1` (shipped in the package,
`shardc/driver/schemas/report.schema.json`) holds for every golden JSON report and for reports
of generated programs."""

from __future__ import annotations

import json
from importlib.resources import files

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings

import shardc
from shardc.testing.strategies import programs
from tests.paths import ROOT

SCHEMA = json.loads(files("shardc.driver").joinpath("schemas/report.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_the_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "tests" / "golden").glob("*.json")), ids=lambda p: p.stem
)
def test_every_golden_report_follows_the_schema(path):
    VALIDATOR.validate(json.loads(path.read_text(encoding="utf-8")))


def test_a_report_with_regions_follows_the_schema():
    r = shardc.compile(ROOT / "programs" / "mlp-fsdp-train.shard", free=["B"])
    VALIDATOR.validate(json.loads(r.to_json(regions=True)))


def test_the_schema_catches_a_missing_field():
    report = json.loads((ROOT / "tests" / "golden" / "case1.json").read_text(encoding="utf-8"))
    del report["totals"]["t_comms_s"]
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(report)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(symbolic=True))
def test_generated_programs_report_per_the_schema(case):
    text, _ = case
    try:
        r = shardc.compile(text, hw="tpu-v5p")
    except shardc.CompileError:
        return
    VALIDATOR.validate(json.loads(r.to_json()))
