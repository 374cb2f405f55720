"""The terminal (rich): colour on diagnostics and headers only on a terminal and never under
`NO_COLOR`; progress bars with an ETA for `plan`, `limits`, `sweep` and `calibrate`; pipes get
the text byte for byte (the goldens are the rest of the proof)."""

from __future__ import annotations

import io
import re

import pytest

from shardc.cli import style
from shardc.cli.app import main
from shardc.cli.progress import Progress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DIAGNOSTIC = (
    "programs/bad.shard:3:14: error[S002]: mesh axis 'X' shards two dimensions of 'A'\n"
    "  A: bf16[I_X, J_X]\n"
    "               ^^^ second use of 'X'\n"
    "note: a mesh axis may shard at most one dimension of an array"
)


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_diagnostics_are_coloured_on_a_terminal(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = Terminal()
    style.print_diagnostics(DIAGNOSTIC, out)
    text = out.getvalue()
    assert "\x1b[1;31merror[S002]:" in text and "\x1b[1;36mnote:" in text
    assert "\x1b[1;31m^^^" in text.replace("               ", "")  # the carets, red
    assert ANSI.sub("", text) == DIAGNOSTIC + "\n"  # the same characters, with colour


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_dumb_terminals_get_plain_text(monkeypatch, env) -> None:
    monkeypatch.setenv("TERM", "xterm")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    out = Terminal()
    style.print_diagnostics(DIAGNOSTIC, out)
    assert out.getvalue() == DIAGNOSTIC + "\n"
    assert not style.wants_colour(out)


def test_pipes_get_plain_text(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    style.print_diagnostics(DIAGNOSTIC, out)
    assert out.getvalue() == DIAGNOSTIC + "\n" and not style.wants_colour(out)


def test_headers_of_a_text_result_on_a_terminal(monkeypatch, capsys, in_repo_root) -> None:
    """`compile` on a terminal: headers bold, the text otherwise as the printers wrote it
    (wrapped to the terminal); with NO_COLOR, no escape at all."""
    assert main(["compile", "programs/case4.shard"]) == 0
    piped = capsys.readouterr().out
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setattr("sys.stdout", Terminal())
    from shardc.cli.termwrap import write_result

    write_result(piped)
    import sys

    coloured = sys.stdout.getvalue()
    assert "\x1b[1;36mshardc report: programs/case4.shard" in coloured
    assert ANSI.sub("", coloured) == piped
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr("sys.stdout", Terminal())
    write_result(piped)
    assert sys.stdout.getvalue() == piped


def test_progress_bar_with_eta() -> None:
    """A message ending `K of N` moves the bar (the K-th under way, or done when the message
    says so in the past tense); the bar shows M/N, the elapsed time and an ETA, and is
    removed at the end."""
    out = io.StringIO()
    bar = Progress(True, delay=0.0, console=style.console(out, width=120, no_color=True))
    bar("compiling fsdp-tp (X=8 Y=2): 3 of 8")
    assert bar._state == (2.0, 8.0, "compiling fsdp-tp (X=8 Y=2)")
    bar("compiled dp (X=16): 5 of 8")
    assert bar._state[0] == 5.0
    bar.done()
    text = ANSI.sub("", out.getvalue())
    assert "compiling fsdp-tp (X=8 Y=2)" in text and "2/8" in text and "ETA" in text
    assert "━" in text


def test_progress_counts_stages_where_messages_have_no_count() -> None:
    """`limits`: each new head (`h100 dense`) is a stage of `stages`."""
    out = io.StringIO()
    bar = Progress(True, delay=0.0, stages=4, console=style.console(out, width=120))
    for m in ("h100 dense: 1 GPUs", "h100 dense: 2 GPUs", "h100 sparse: 1 GPUs"):
        bar(m)
    assert bar._state == (1.0, 4, "h100 sparse: 1 GPUs")
    bar.update(3, 14, "matmul bf16 4096")  # calibrate's (done, total, case)
    assert bar._state == (3.0, 14.0, "matmul bf16 4096")
    bar.done()


def test_progress_off_a_terminal_is_a_line_per_stage(capsys) -> None:
    bar = Progress(False, delay=0.0)
    for m in ("h100 dense: 1 GPUs", "h100 dense: 2 GPUs", "h100 sparse: 1 GPUs"):
        bar(m)
    bar.done()
    lines = capsys.readouterr().err.splitlines()
    assert [re.sub(r"^\[\s*[\d.]+s\] ", "", line) for line in lines] == [
        "h100 dense",
        "h100 sparse",
    ]


def test_sweep_progress_off_a_terminal(capsys, in_repo_root) -> None:
    """`sweep --progress`: a line per program's compile and sweep on stderr; stdout the same
    table as without."""
    args = ["sweep", "programs/case4.shard", "--set", "I=1e3:1e5:log3"]
    assert main([*args, "--progress"]) == 0
    out, err = capsys.readouterr()
    heads = [re.sub(r"^\[\s*[\d.]+s\] ", "", line) for line in err.splitlines()]
    assert heads == ["compiling programs/case4.shard", "sweeping programs/case4.shard"]
    assert main(args) == 0

    def untimed(text: str) -> str:
        return re.sub(r"points in [\d.]+ \w?s", "points in (time)", text)

    assert untimed(capsys.readouterr().out) == untimed(out)


def test_limits_tables_keep_their_columns(capsys) -> None:
    """Every row of the closed-form and simulated tables starts each column where its header
    does (the columns used to drift under values longer than the header)."""
    assert main(["limits", "--preset", "h100", "h100-inf-ll"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    heads = [k for k, line in enumerate(lines) if line.startswith("  preset ")]
    assert len(heads) == 2
    labels = (
        "d_prime ours / paper",
        "b_prime ours / paper",
        "T_crit FLOP ours / paper",
        "T_latency (Eq. 15)",
        "T_wall (Eq. 18)",
        "scenario",
        "dense FLOP ours / paper",
        "sparse FLOP ours / paper",
    )
    for k in heads:
        head, rows = lines[k], lines[k + 1 : k + 3]
        assert all(r.startswith("  h100") for r in rows)
        starts = [head.index(label) for label in labels if label in head]
        for row in rows:  # each text column's cells start under its header
            assert all(row[c - 2 : c] == "  " and row[c] != " " for c in starts), (head, row)
