"""The JSON writer over the one document model (`shardc.driver.render.json`), the detail rows
and sections only it prints (`shardc.driver.detail_sections`) and the regions' members
(`shardc.driver.render.json_regions`)."""

from __future__ import annotations

import json

import pytest

import shardc
from shardc.driver.detail_sections import DETAIL, Link, MemoryDetail, Numbers, links
from shardc.driver.document import OP_FIELDS, SECTIONS
from shardc.driver.render import WRITERS, write
from shardc.driver.render.json import KEYS, JsonWriter
from shardc.driver.render.json_regions import region, regions
from shardc.driver.render.text import TextWriter
from shardc.driver.sections import sections
from tests.driver.test_regions import FSDP
from tests.paths import ROOT

TRAIN = (ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard").read_text()


@pytest.fixture(scope="module")
def train():
    return shardc.compile(TRAIN)


def test_json_is_a_writer_of_the_same_document(train):
    assert WRITERS["json"] == ("shardc.driver.render.json", "JsonWriter")
    assert write(train, "json") == train.to_json()
    d = json.loads(train.to_json())
    assert tuple(d)[: len(KEYS)] == KEYS
    # the indent is the writer's option; any indent gives the same object
    assert json.loads(write(train, "json", indent=None)) == d == json.loads(train.to_json(4))


def test_every_formula_is_the_reports_own_number(train):
    """The writer reads values from the document (`Numbers`), never from the report: each op's
    quantity is what `Report.q` (the report's one route to a number) gives."""
    d = JsonWriter().document(sections(train, {*SECTIONS, *DETAIL}))
    for c, op in zip(train.ops, d["ops"], strict=True):
        for key, field in OP_FIELDS:
            assert op[key] == train.q(getattr(c, field))
        assert op["runs"] == train.q(c.count)
    for key in ("flops", "t_lower_s", "memory_per_device_bytes"):
        assert d["totals"][key] == train.q(train.totals[key])
    assert d["memory"]["saved_activations"] == list(train.memory.saved)


def test_the_detail_is_built_only_for_a_writer_that_prints_it(train):
    assert not {s.name for s in sections(train)} & set(DETAIL)
    assert {"step", "arrays"} <= {s.name for s in sections(train, {*SECTIONS, *DETAIL})}
    assert TextWriter.detail == () and JsonWriter.detail == DETAIL
    # rows only JSON reads sit in shared sections; the text writer skips them
    doc = sections(train)
    rows = [row for s in doc for row in s.rows]
    assert any(type(x) is Numbers for x in rows) and any(type(x) is MemoryDetail for x in rows)
    assert TextWriter().write(doc) == train.to_text()
    assert "Numbers" not in train.to_text() and "MemoryDetail" not in train.to_markdown()


def test_topology_dict_is_the_json_topology_member():
    r = shardc.compile(
        "mesh X=8, Y=4\ndim B=64, D=32\nA: bf16[B_X, D_Y]\nC[B, D] = A\n", hw="tpu-v5e"
    )
    assert r.topology_dict() == json.loads(r.to_json())["topology"]
    assert all(type(x) is Link for x in links(r)) and len(links(r)) == 2
    assert r.topology_dict()[0]["physical"]


def test_regions_members_come_from_the_regions_rows():
    r = shardc.compile(FSDP, set={"X": 16}, objective="statement")
    d = json.loads(r.to_json())
    assert len(d["regions"]) == 2 and "Piecewise" in d["totals_piecewise"]["t_comms_s"]
    doc = sections(r, {*SECTIONS, *DETAIL})
    (found,) = [s for s in doc if s.name == "regions"]
    (detail,) = [s.rows[0] for s in doc if s.name == "region_detail"]
    assert regions(detail, found.rows)["regions"] == d["regions"]
    for v, row in zip(r.regions(), found.rows, strict=True):
        t = region(row)["totals"]["t_comms_s"]
        assert t["value"] == v.result.value(v.result.totals["t_comms_s"])
    # the dict form leaves the regions' members out, as it always has
    assert "regions" not in r.to_dict() and "_mesh_order" in r.to_dict()
