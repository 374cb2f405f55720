"""The report as a value and its one document model: `sections(report)` built once, a writer per
format dispatching on the row's type, `--only` choosing sections before anything is written."""

from __future__ import annotations

import dataclasses
import json

import pytest
import sympy as sp

import shardc
from shardc.driver.document import SECTIONS, TOTALS, Section, Total
from shardc.driver.render import WRITERS, write, writer_for
from shardc.driver.sections import sections
from shardc.driver.summary_section import expected_note, summary
from tests.paths import ROOT

TRAIN = ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard"


@pytest.fixture(scope="module")
def report():
    return shardc.compile(TRAIN)


def test_the_report_is_a_frozen_value(report):
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.bindings = {}  # type: ignore[misc]
    assert report.at(B=4096).bindings["B"] == 4096 and "B" not in report.bindings


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_total_is_written_in_every_format(report, fmt):
    out = write(report, fmt)
    for t in TOTALS:
        label = t.label.replace("_", "\\_") if fmt == "latex" else t.label
        label = f'"{t.key}"' if fmt == "json" else label  # JSON names a total by its key
        assert label in out, f"{t.key} missing from the {fmt} report"


def test_every_total_is_in_the_json_totals(report):
    assert {t.key for t in TOTALS} <= json.loads(report.to_json())["totals"].keys()


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_new_total_row_reaches_every_writer_by_its_type(report, fmt):
    """What adding a total to `TOTALS` does: one more `Total` row, and each writer's generic
    `_print_Total` writes it with no other change (JSON: a member of `totals`, by its key).
    Each writer is given the document with the detail it prints (`Writer.detail`)."""
    w = writer_for(fmt)
    doc = sections(report, {*SECTIONS, *w.detail})
    summary = next(i for i, s in enumerate(doc) if s.name == "summary")
    extra = Total("T_foo", 0.5, "s", sp.Symbol("B") / 7, "t_foo_s")
    doc[summary] = dataclasses.replace(doc[summary], rows=(*doc[summary].rows, extra))
    label = {"latex": "T\\_foo", "json": '"t_foo_s"'}.get(fmt, "T_foo")
    assert label in writer_for(fmt).write(doc)
    assert label not in writer_for(fmt).write(sections(report, {*SECTIONS, *w.detail}))


def test_the_summary_section_is_the_documents(report):
    """`sections` places the summary builder's section as it is; T_expected's note says where
    its figures come from, here the roofline (the chip has no calibration)."""
    doc = sections(report, only={"summary"})
    assert doc[1] == summary(report)
    note = expected_note(shardc.compile("mesh X=2\ndim B=8\nA: bf16[B_X]\n", hw="tpu-v5e"))
    assert note == "equals T_lower: tpu-v5e has no calibration"


def test_a_row_type_a_writer_does_not_know_is_left_out():
    @dataclasses.dataclass(frozen=True)
    class Unknown:
        text: str

    doc = [Section("summary", "summary", (Unknown("never shown"),))]
    assert "never shown" not in writer_for("text").write(doc)


def test_only_chooses_sections_before_writing(report):
    names = [s.name for s in sections(report, only={"ops"})]
    assert names[0] == "header" and set(names) <= {"header", "ops", "warnings"}
    text = report.to_text(only=["memory"])
    assert "memory per device" in text and "\nops\n" not in text
    assert set(SECTIONS) >= {"summary", "memory", "ops", "regions"}
    with pytest.raises(KeyError, match="unknown section"):
        write(report, "text", only=["nope"])


def test_the_warnings_are_kept_with_any_section(capsys):
    from shardc.cli.app import main

    program = ROOT / "tests" / "book" / "llama3-70b-min-chips-memory.shard"
    assert main(["compile", str(program), "--only", "summary"]) == 0
    out = capsys.readouterr().out
    assert "warning:" in out and "\nops\n" not in out


def test_text_sections_are_the_document_sections(report):
    """Each section of the text report is one block between blank lines, in the document's
    order, under its title."""
    text = report.to_text()
    doc = [s for s in sections(report) if s.name not in ("header", "warnings")]
    blocks = text.rstrip("\n").split("\n\n")[1:]
    assert len(blocks) == len(doc)
    for block, s in zip(blocks, doc, strict=True):
        assert block.startswith(s.title)
