"""Text results wrapped to the terminal's width (shardc.cli.termwrap): only on a terminal, never
losing or reordering a word, formulas continued under themselves, table rows left whole."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardc.cli.app import main
from shardc.cli.termwrap import MIN_WIDTH, wrap, wrap_line

WORDS = st.sampled_from(
    [
        "+",
        "-",
        "->",
        "=",
        "T_math",
        "2*B*D*F/(C*X)",
        "(X",
        "- 1)",
        "Max(a,",
        "b)",
        "[holds:",
        "3.5",
        "vs",
        "2550]",
        "x" * 70,
        "·_D",
    ]
)
LINES = st.builds(
    lambda lead, words, gaps: (
        " " * lead + "".join(w + " " * g for w, g in zip(words, gaps, strict=False)).rstrip(" ")
    ),
    st.integers(0, 6),
    st.lists(WORDS, max_size=40),
    st.lists(st.integers(1, 3), min_size=40, max_size=40),
)
TEXTS = st.lists(LINES, max_size=8).map("\n".join)


@given(TEXTS, st.integers(1, 200))
def test_wrapping_keeps_every_word_in_order(text, width):
    assert wrap(text, width).split() == text.split()


@given(TEXTS, st.integers(1, 200))
def test_a_wrapped_line_fits_or_holds_one_word_or_is_a_table_row_left_whole(text, width):
    room = max(width, MIN_WIDTH)
    originals = set(text.split("\n"))
    for line in wrap(text, width).split("\n"):
        assert len(line) <= room or len(line.split()) == 1 or line in originals, line


@given(TEXTS, st.integers(1, 200))
def test_continuations_are_indented_and_never_blank(text, width):
    for line in text.split("\n"):
        first, *rest = wrap_line(line, width)  # at least one line, even for blanks
        assert line.startswith(first.rstrip(" ")) or not line.strip()
        assert all(piece.startswith(" ") and piece.strip() for piece in rest)


@given(st.integers(0, 300), st.integers(1, 200))
def test_a_blank_line_stays(spaces, width):
    assert wrap_line(" " * spaces, width) == [" " * spaces]


@given(TEXTS)
def test_text_that_fits_is_unchanged(text):
    width = max([MIN_WIDTH, *map(len, text.split("\n"))])
    assert wrap(text, width) == text


def test_a_formula_continues_under_itself_and_a_plus_opens_the_next_line():
    line = (
        "  T_comms               5.66 ms   = 16*B*D*T*(Y - 1)/(W_ici*X*Y) "
        "+ 8*B*H*K*S*(Y - 1)/(W_ici*X*Y) + 16*D*G*H*K*(X - 1)/(W_ici*X*Y)"
    )
    pieces = wrap_line(line, 80)
    assert pieces[1].startswith(" " * 36 + "+ ")
    assert all("(Y -" not in p or "(Y - 1)" in p for p in pieces)  # no break inside (Y - 1)


def test_a_table_row_with_a_long_middle_cell_stays_whole():
    table = (
        "  #  line  op      from -> to" + " " * 60 + "FLOPs\n"
        "  2  10    einsum  Xa[B, D_X] ·_D Y[D_X, F] -> Z[B, F]{U_X}" + " " * 30 + "8.59e+09"
    )
    assert wrap(table, 60) == table


def _compile_on_a_terminal(capsys, monkeypatch, columns, *args):
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("NO_COLOR", "1")  # the wrapping only (colour: tests/cli/test_terminal.py)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["compile", "programs/attention-gqa-train.shard", *args]) == 0
    return capsys.readouterr().out


def test_compile_wraps_on_a_terminal_only(capsys, monkeypatch, in_repo_root):
    piped = main(["compile", "programs/attention-gqa-train.shard"])
    plain = capsys.readouterr().out
    assert piped == 0 and max(map(len, plain.splitlines())) > 300
    shown = _compile_on_a_terminal(capsys, monkeypatch, 100)
    summary = shown.split("\n\n")[1]  # the summary block: formulas, all wrapped
    assert max(map(len, summary.splitlines())) <= 100
    assert shown.split() == plain.split()


@pytest.mark.parametrize("fmt", ["json", "md", "latex"])
def test_machine_formats_are_never_wrapped(capsys, monkeypatch, in_repo_root, fmt):
    shown = _compile_on_a_terminal(capsys, monkeypatch, 60, "--format", fmt)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert main(["compile", "programs/attention-gqa-train.shard", "--format", fmt]) == 0
    assert capsys.readouterr().out == shown
