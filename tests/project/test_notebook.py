"""Where users work: the notebook views of the decisions and of a plan (`_repr_html_`, a short
`repr`), and docs/example.ipynb, executed in a fresh kernel: no cell may fail, the report shows
as HTML, and the outputs stored in the notebook (so that it renders on GitHub) are the ones a run
gives now. After a change that moves an output, store the new ones with
`python -m tests.project.test_notebook` (it executes the notebook and writes it back).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any

import pytest

import shardc
from shardc.driver.decisions import Decisions
from tests.paths import ROOT

NOTEBOOK = ROOT / "docs" / "example.ipynb"
CASE3 = ROOT / "programs" / "case3.shard"


# ---- the decisions ---------------------------------------------------------------------------


def test_decisions_are_the_records_with_their_cases():
    r = shardc.compile(CASE3)
    ds = r.decisions
    assert isinstance(ds, Decisions) and ds == r.program.decisions and len(ds) == 2
    assert ds.cases == ("Case 3", "Case 3")
    assert repr(ds) == "<shardc.Decisions: 2 contractions decided (lines 10, 11)>"
    assert repr(Decisions()) == "<shardc.Decisions: none>"
    many = repr(Decisions([ds[0]] * 500))
    assert len(many) < 500 and many.endswith("10, ...)>") and "\n" not in many
    assert "none" in Decisions()._repr_html_()


def test_decisions_html_shows_case_chosen_plan_runner_up_and_costs():
    h = shardc.compile(CASE3).decisions._repr_html_()
    assert "<th>case</th>" in h and "<td>Case 3</td>" in h
    assert "<code>C = A ·_J B</code>" in h and "<td>numbers</td>" in h
    # line 10: the chosen AllReduce, the runner-up gathering both operands, each with its cost
    assert "<td>local einsum, AllReduce_X(C)<br>[1.67 ms comms + compute]<br>comms " in h
    assert "<td>AllGather_X(A), AllGather_X(B), local einsum<br>[8.02 ms comms + compute]" in h
    assert (
        "\\(\\frac{8 I K \\left(X - 1\\right)}{W_{\\mathrm{ici}} X} + 2 t_{\\mathrm{hop}} "
        "\\left(X - 1\\right)\\)"
    ) in h
    assert "never at these sizes: 4.81&times; the chosen plan's cost" in h
    # line 11 had three plans: the third is collapsed
    assert (
        "<details><summary>1 more</summary>AllGather_X(A), AllGather_X(B), local einsum, "
        "slice C2 over X" in h
    )


def test_decisions_html_gives_the_condition_in_latex_where_sizes_are_symbolic():
    h = shardc.compile(CASE3, free=["I", "J", "K"]).decisions._repr_html_()
    assert "<td>region of the sizes</td>" in h and "comms at typical sizes" in h
    assert "<td>\\(I J + J K &lt; 2 I K\\)</td>" in h  # `<` escaped inside the formula too


def test_decisions_html_escapes_names():
    d = shardc.compile(CASE3).decisions[0]
    h = Decisions([dataclasses.replace(d, target="<T>")], ["Case <3>"])._repr_html_()
    assert "&lt;T&gt; = A" in h and "Case &lt;3&gt;" in h
    assert "<T>" not in h and "<3>" not in h


# ---- a plan ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_plan():
    """LLaMA 2 13B on 16 TPU v5p (about a second): three strategies evaluated, two fit."""
    from shardc.tools.plan import plan

    return plan("llama2-13b", "tpu-v5p", chips=16, batch_tokens=64 * 1024)


def test_plan_repr_is_one_short_line(small_plan):
    from shardc.tools.plan import notebook

    text = repr(small_plan)
    assert text == "<shardc.Plan llama2-13b on 16 tpu-v5p: 8 candidates, best fsdp (X=16) 0.930 s>"
    assert notebook.short_repr(small_plan) == text  # the notebook module is where it is written
    assert notebook.render_html(small_plan) == small_plan._repr_html_()


def test_plan_html_ranks_the_candidates_and_collapses_the_explanation(small_plan):
    h = small_plan._repr_html_()
    assert (
        "<tr><th>rank</th><th>strategy</th><th>mesh</th><th>step time</th><th>bound</th>"
        "<th>memory/device</th><th>fits</th><th>MFU</th><th>HFU</th></tr>"
    ) in h
    assert (
        "<tr><td>1</td><td>fsdp (X=16)</td><td><code>X1=2 @ici(x), X2=2 @ici(y), "
        "X3=4 @ici(z)</code></td><td>0.930 s</td><td>compute</td><td>90.4 GB</td>"
        "<td>yes</td><td>84%</td><td>84%</td></tr>"
    ) in h
    assert "<td>-</td><td>dp (X=16)</td>" in h and "<td>285.6 GB</td><td>no</td>" in h
    assert "<td>tp (Y=16)</td><td>not evaluated: the 40 heads" in h
    assert "<details><summary>best: fsdp (X=16), 0.930 s per step" in h
    assert "the book&#x27;s conditions for this setting:" in h and "</pre></details></div>" in h


def test_plan_html_escapes_the_card(small_plan):
    card = dataclasses.replace(small_plan.card, display_name="<i>13B</i>")
    h = dataclasses.replace(small_plan, card=card)._repr_html_()
    assert "&lt;i&gt;13B&lt;/i&gt;" in h and "<i>" not in h


# ---- docs/example.ipynb ----------------------------------------------------------------------


def execute(nb: Any) -> Any:
    """Run every cell in a fresh `python3` kernel (this interpreter's ipykernel), from docs/, as
    a user opening the notebook would; raises on the first cell that fails."""
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as mp:
        mp.setenv("IPYTHONDIR", home)  # no profile or start-up files of the user's
        mp.setenv("JUPYTER_RUNTIME_DIR", home)  # the connection file, wherever HOME is
        NotebookClient(
            nb,
            kernel_name="python3",
            timeout=120,
            record_timing=False,
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        ).execute()
    return nb


def shown(nb: Any) -> list[list[tuple[str, str]]]:
    """Per code cell, what it shows: printed text, and each result's text/plain and text/html
    (not execution counts, metadata, or stderr)."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        seen = []
        for o in cell.outputs:
            if o.output_type == "stream" and o.name == "stdout":
                seen.append(("stdout", o.text))
            elif o.output_type in ("execute_result", "display_data"):
                seen += [(m, o.data[m]) for m in ("text/plain", "text/html") if m in o.data]
            elif o.output_type == "error":
                seen.append(("error", o.ename))
        out.append(seen)
    return out


@pytest.fixture(scope="module")
def notebooks():
    """(stored, fresh): the notebook as stored, and executed again now."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("pandas")
    stored = nbformat.read(NOTEBOOK, as_version=4)
    fresh = execute(nbformat.read(NOTEBOOK, as_version=4))
    return stored, fresh


def test_the_example_notebook_runs_and_shows_the_report_as_html(notebooks):
    _, fresh = notebooks
    html = [text for cell in shown(fresh) for mime, text in cell if mime == "text/html"]
    assert any("<div class='shardc-report'>" in h and "<th>quantity</th>" in h for h in html)
    assert any("<div class='shardc-decisions'>" in h for h in html)
    assert any("<div class='shardc-plan'>" in h for h in html)


def test_the_stored_outputs_are_a_fresh_runs(notebooks):
    stored, fresh = notebooks
    assert all(cell.outputs for cell in stored.cells if cell.cell_type == "code"), (
        "docs/example.ipynb is stored without outputs: run `python -m tests.project.test_notebook`"
    )
    for k, (old, new) in enumerate(zip(shown(stored), shown(fresh), strict=True)):
        assert old == new, (
            f"code cell {k} of docs/example.ipynb shows something else now; "
            "store the new outputs with `python -m tests.project.test_notebook`"
        )


def write() -> None:
    """Execute docs/example.ipynb and store it with its outputs (no stderr, and no Python
    version in its metadata)."""
    import nbformat

    nb = execute(nbformat.read(NOTEBOOK, as_version=4))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")
            ]
    nb.metadata.get("language_info", {}).pop("version", None)
    nbformat.write(nb, NOTEBOOK)


if __name__ == "__main__":
    os.chdir(ROOT)
    write()
