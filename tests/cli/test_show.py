"""`shardc show`: the picture of which devices hold which block (`shardc.driver.show`), its
golden for programs/case4.shard, the property that every device holds exactly one block of
every array, symbolic sizes, higher ranks, the Markdown/HTML/rich writers and hostile options."""

from __future__ import annotations

import io
import itertools
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardc
from shardc.cli.app import main
from shardc.driver import show, show_blocks, show_writers
from tests.paths import ROOT

GOLDEN = ROOT / "tests" / "golden" / "show"
CASE4 = (ROOT / "programs" / "case4.shard").read_text(encoding="utf-8")


def _run(capsys, args: list[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name,args", [("case4", []), ("case4-ops", ["--ops"])])
def test_golden(name: str, args: list[str], capsys, in_repo_root) -> None:
    code, out, err = _run(capsys, ["show", "programs/case4.shard", *args])
    assert code == 0, err
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("SHARDC_UPDATE_GOLDENS"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")
    assert out.isascii()


def test_case4_blocks() -> None:
    """A[I_X, J]: eight rows, device X=k holds rows k*2048..; B[J, K_X] eight columns; the
    AllGather's value is one block on every device (a replica)."""
    r = shardc.compile(CASE4)
    a, b, *_ = show.array_pictures(r)
    assert a.rows[0] == "I[0:2048]" and a.rows[-1] == "I[14336:16384]" and a.cols == ("J[0:4096]",)
    assert [c for (c,) in a.cells] == [f"X={k}" for k in range(8)]
    assert b.rows == ("J[0:4096]",) and len(b.cols) == 8 and b.cells[0][3] == "X=3"
    gathered = show.op_pictures(r)[0]
    assert gathered.name == "#2" and gathered.cells == (("X=*",),)
    assert "8 copies" in gathered.notes[-1]


def test_symbolic_sizes() -> None:
    """Sizes left symbolic: the first and last block, their bounds as formulas."""
    r = shardc.compile("mesh X, Y\ndim B, D\nA: bf16[B_XY, D]\n")
    (p,) = show.array_pictures(r)
    assert p.rows == ("B[0:B/(X*Y)]", show_blocks.ELIDED, "B[B*(X*Y-1)/(X*Y):B]")
    assert p.cells == (("X=0 Y=0",), (show_blocks.ELIDED,), ("X=X-1 Y=Y-1",))
    assert p.notes[0] == "X*Y blocks of B/(X*Y) x D"


def test_higher_rank_rows_combine_sharded_dims() -> None:
    r = shardc.compile(
        "mesh X=2, Y=2, Z=2\ndim L=4, B=4, D=4, F=4\n"
        "E: f32[L_Z, B_X, D, F_Y]\nG: f32[B_X, D, F]{U_Y}\n"
    )
    e, g = show.array_pictures(r)
    assert e.row_dims == ("L", "B") and e.col_dims == ("F",)
    assert e.rows[1] == "L[0:2], B[2:4]" and e.cells[1][0] == "X=1 Y=0 Z=0"
    assert "D: not sharded, whole in every block" in e.notes
    assert g.cols == ("D[0:4], F[0:4]",) and g.cells[0] == ("X=0 Y=+ Z=*",)
    assert any("partial sum" in n for n in g.notes)


def test_elision_and_max_blocks() -> None:
    r = shardc.compile("mesh X=64\ndim I=128\nA: f32[I_X]\n")
    (p,) = show.array_pictures(r, max_blocks=4)
    assert p.cols == ("I[0:2]", "I[2:4]", "I[4:6]", show_blocks.ELIDED, "I[126:128]")
    assert p.cells[0][-1] == "X=63" and p.group[0][3] == -1


@st.composite
def _arrays(draw) -> tuple[str, dict[str, int], tuple[str, ...]]:
    """A program of one array on a mesh of up to three axes (sizes 1 to 3), each axis
    sharding one dimension, holding partial sums, or replicating it."""
    axes = {a: draw(st.integers(1, 3)) for a in ("X", "Y", "Z")[: draw(st.integers(1, 3))]}
    dims = ("I", "J", "K", "L")[: draw(st.integers(0, 4))]
    by_dim: dict[str, list[str]] = {d: [] for d in dims}
    unreduced = []
    for a in axes:
        where = draw(st.sampled_from([*dims, None, "U"]))
        if where == "U":
            unreduced.append(a)
        elif where is not None:
            by_dim[where].append(a)
    sizes = {d: 2 * _prod(axes[a] for a in by_dim[d]) for d in dims}
    inner = ", ".join(d + ("_" + "".join(by_dim[d]) if by_dim[d] else "") for d in dims)
    text = (
        f"mesh {', '.join(f'{a}={n}' for a, n in axes.items())}\n"
        + (f"dim {', '.join(f'{d}={n}' for d, n in sizes.items())}\n" if dims else "")
        + f"A: f32[{inner}]"
        + ("{U_" + "".join(unreduced) + "}" if unreduced else "")
        + "\n"
    )
    return text, axes, tuple(unreduced)


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@settings(max_examples=60, deadline=None)
@given(_arrays())
def test_every_device_holds_one_block(case) -> None:
    """Drawn in full, each device of the mesh matches exactly one cell (a `*` or `+` matches
    every coordinate), and the cells are as many as the blocks."""
    text, axes, _ = case
    (p,) = show.array_pictures(shardc.compile(text), max_blocks=64)
    cells = [dict(part.split("=") for part in c.split()) for row in p.cells for c in row]
    for device in itertools.product(*(range(n) for n in axes.values())):
        coords = dict(zip(axes, (str(k) for k in device), strict=True))
        matches = [c for c in cells if all(c[a] in (coords[a], "*", "+") for a in axes)]
        assert len(matches) == 1, (text, device, p.cells)
    assert len({tuple(sorted(c.items())) for c in cells}) == len(cells)


def test_markdown_and_html() -> None:
    r = shardc.compile(CASE4)
    (b,) = show.array_pictures(r, ["B"])
    md = show_writers.to_markdown(b)
    assert md.startswith("**B: bf16[J, K\\_X]**") or md.startswith("**B: bf16[J, K_X]**")
    assert "| `J[0:4096]` | X=0 | X=1 |" in md
    html = show_writers.to_html(b)
    assert html.count("<td") == 8 and "background:" in html and "<script" not in html


def test_report_repr_html_has_pictures_and_ops_columns() -> None:
    html = shardc.compile(CASE4)._repr_html_()
    assert "shardc-picture" in html and "A: bf16[I_X, J]" in html
    # the ops table: axes, bytes and why
    assert "<th>axes</th>" in html and "<th>bytes</th>" in html and "<th>why</th>" in html
    assert "Case 4" in html


def test_rich_tables_on_a_terminal(monkeypatch) -> None:
    """On a (forced) terminal a rich table with box lines; colour unless NO_COLOR."""
    from shardc.cli.show import draw

    pictures = show.array_pictures(shardc.compile(CASE4), ["B"], max_blocks=4)
    out = io.StringIO()
    draw(pictures, out, colour=True, width=120, color_system="standard")
    coloured = out.getvalue()
    assert "┌" in coloured and "\x1b[" in coloured and "X=7" in coloured
    out = io.StringIO()
    draw(pictures, out, colour=False, width=120)
    plain = out.getvalue()
    assert "┌" in plain and "X=2" in plain and not re.search(r"\x1b\[[0-9;]*[34]\d?m", plain)


def test_options_and_names(capsys, in_repo_root) -> None:
    code, _, err = _run(capsys, ["show", "programs/case4.shard", "Cc"])
    assert code == 2 and "no array 'Cc'" in err and "did you mean 'C'?" in err
    assert "Traceback" not in err
    code, _, err = _run(capsys, ["show", "programs/case4.shard", "A\x1b[31m"])
    assert code == 2 and "\x1b" not in err and "no array" in err
    for bad in ("1", "65", "x", "-3", "1e3", ""):
        with pytest.raises(SystemExit) as exc:
            main(["show", "programs/case4.shard", "--max-blocks", bad])
        assert exc.value.code == 2
        assert "--max-blocks" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["show", "programs/case4.shard", "--format", "svg"])
    assert "--format" in capsys.readouterr().err
    # positionals among the options
    code, out, _ = _run(
        capsys, ["show", "programs/case4.shard", "--ops", "C2", "--max-blocks", "2"]
    )
    assert code == 0 and out.startswith("C2: bf16[I, K_X]") and "AllToAll_X" in out
    code, out, _ = _run(capsys, ["show", "programs/case4.shard", "A", "--format", "md"])
    assert code == 0 and out.startswith("**A: bf16[I\\_X, J]**") or "| `I[0:2048]` |" in out
    code, out, _ = _run(capsys, ["show", "programs/case4.shard", "A", "--format", "html"])
    assert code == 0 and out.startswith("<div class='shardc-picture'>")
    code, out, err = _run(capsys, ["show", "programs/case4.shard", "A", "--ops"])
    assert code == 0 and "no collective makes a value of A" in err
    code, _, err = _run(capsys, ["show", "programs/case4.shard", "--set", "X=3"])
    assert code == 1 and "S004" in err


def test_help_default_matches_the_driver() -> None:
    from shardc.cli import show as cli_show

    assert cli_show.MAX_BLOCKS == show.MAX_BLOCKS


@pytest.mark.parametrize("offered,at", [(None, 10), (["utf-8"], 11)])
def test_hover_over_an_array_shows_its_picture(offered, at) -> None:
    """The language server: over an array's name, its picture as Markdown (with the line's ops
    where it has some); the range is the name's on a line without ops; columns in the
    negotiated units (`B` after a `·`: code point 10, UTF-8 byte 11)."""
    from tests.tools.test_lsp import URI, Client

    client = Client()
    try:
        client.initialize(offered)
        client.open(
            "mesh X=2\ndim I=8, J=4, K=2\nhardware tpu-v5e\nA: f32[I_X, J]\n"
            "B: f32[J, K]\nC = A ·_J B\n"
        )
        assert client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"] == []

        def hover(line: int, character: int) -> dict | None:
            return client.request(
                2,
                "textDocument/hover",
                {"textDocument": {"uri": URI}, "position": {"line": line, "character": character}},
            )["result"]

        declared = hover(3, 0)
        assert (
            "**A: f32[I\\_X, J]**" in declared["contents"]["value"]
            or "**A: f32[I_X, J]**" in declared["contents"]["value"]
        )
        assert "| `I[0:4]` | X=0 |" in declared["contents"]["value"]
        assert declared["range"] == {
            "start": {"line": 3, "character": 0},
            "end": {"line": 3, "character": 1},
        }
        used = hover(5, at)["contents"]["value"]
        assert "**B: f32[J, K]**" in used and "X=*" in used and "`einsum`" in used
        assert hover(3, 3) is None  # `f32`: no array
        assert hover(3, 1000) is None
        assert client.finish() == 0
    finally:
        client.kill()


def test_report_sharding_api() -> None:
    """`Report.sharding`: the same pictures from Python; names and sizes checked."""
    from shardc.cli import show as cli_show

    r = shardc.compile(CASE4)
    pictures = r.sharding("B", ops=True, max_blocks=3)
    assert [p.name for p in pictures] == ["B", "#2"]
    assert str(pictures).startswith("B: bf16[J, K_X]\n+") and str(pictures[0]) in str(pictures)
    assert "<table" in pictures._repr_html_() and "| `J[0:4096]` |" in pictures._repr_markdown_()
    assert str(r.sharding()) == show_writers.pictures_text(show.array_pictures(r))
    with pytest.raises(ValueError, match="no array 'Q'.*its arrays: A, B, C, C2"):
        r.sharding("Q")
    for bad, error in ((1, ValueError), (65, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="max_blocks"):
            r.sharding(max_blocks=bad)
    with pytest.raises(TypeError, match="arrays"):
        r.sharding(3)
    assert cli_show.MAX_BLOCKS_LIMIT == show.MAX_BLOCKS_LIMIT


def test_combined_rows_stay_within_max_blocks() -> None:
    r = shardc.compile("mesh X=8, Y=8, Z=8\ndim I=8, J=8, K=8\nA: f32[I_X, J_Y, K_Z]\n")
    (p,) = show.array_pictures(r, max_blocks=4)
    assert len(p.rows) <= 5 and p.rows[-1] == "I[7:8], J[7:8]" and show_blocks.ELIDED in p.rows
    assert p.cells[-1][-1] == "X=7 Y=7 Z=7"
    (full,) = show.array_pictures(r, max_blocks=64)
    assert len(full.rows) == 64 and len(full.cols) == 8
