"""The second hardening round's bounded mesh layout and safe outputs, as properties: the slice
search answers any device count within a bounded number of steps and, where a pod holds the
count, as the exhaustive search did; every escaping function leaves no markup, TeX or control
character of its input live; every write is whole and refuses FIFOs, devices and inputs; no
flag or card text reaches a generated program except as values.
"""

from __future__ import annotations

import html
import math
import os
import re
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardc
from shardc.driver.escape import html_text, latex_comment, latex_text, md_code, md_text
from shardc.driver.files import CliIOError, atomic_path, check_writable, write_text
from shardc.lang.diagnostics import CompileError, Diagnostic
from shardc.lang.input_limits import MAX_MESH_DEVICES, MAX_SLICE_STEPS
from shardc.lang.quoting import quoted
from shardc.lang.source import Source, Span
from shardc.lang.visible import visible
from shardc.passes import topology

RULES = (
    ("cube-multiple-4", (16, 20, 28)),
    ("cube-multiple-4", (16, 16, 16)),
    ("full-axis-16", (16, 16)),
)
"""The slice rules and pods of the shipped TPUs (v5p, v4p, v5e and v6e)."""


# ---- the slice search --------------------------------------------------------------------------


def _exhaustive_slice(n: int, rule: str, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """The slice search as it was: every factor of every count tried in turn (correct, and
    unbounded: a prime count of a billion took minutes)."""
    best = None

    def splits(left: int, parts: int, low: int):
        if parts == 1:
            if left >= low:
                yield (left,)
            return
        for f in range(low, left + 1):
            if left % f == 0:
                for rest in splits(left // f, parts - 1, f):
                    yield (f, *rest)

    for shape in splits(n, len(dims), 1):
        if topology._slice_problem(shape, rule, dims) is None and (
            best is None or topology._evenness(shape) < topology._evenness(best)
        ):
            best = shape
    return best


@settings(max_examples=300)
@given(st.integers(1, 2048), st.sampled_from(RULES))
def test_slice_search_answers_as_the_exhaustive_one(n, rule_dims):
    rule, dims = rule_dims
    assert topology._valid_slice(n, rule, dims) == _exhaustive_slice(n, rule, dims)


@pytest.mark.parametrize("rule, dims", RULES)
def test_slice_search_matches_on_counts_near_the_pod(rule, dims):
    pod = math.prod(dims)
    for n in (*range(max(1, pod - 40), pod + 3), 8951, 8192, 6144, 3072):
        assert topology._valid_slice(n, rule, dims) == _exhaustive_slice(n, rule, dims), n


@settings(max_examples=200)
@given(st.integers(1, 2**40), st.sampled_from(RULES + (("cube-multiple-4", (2**14,) * 3),)))
def test_slice_search_is_bounded_for_any_count(n, rule_dims):
    """Any count up to 2^40, even on a pod large enough to hold it, looks at no more than
    MAX_SLICE_STEPS shapes; more chips than the pod are answered at once."""
    rule, dims = rule_dims
    best, steps = topology._slice_search(n, rule, dims)
    assert steps <= MAX_SLICE_STEPS
    if n > math.prod(dims):
        assert best is None and steps == 0
    if best is not None:
        assert math.prod(best) == n and list(best) == sorted(best)


@given(st.integers(1, 10**6))
def test_divisors_are_every_divisor(n):
    ds = topology._divisors(n)
    assert ds == sorted(ds) and all(n % d == 0 for d in ds)
    assert len(ds) == sum(2 - (d * d == n) for d in range(1, math.isqrt(n) + 1) if n % d == 0)


@pytest.mark.parametrize(
    "mesh, chip, code, words",
    [
        ("X=1000000007", "tpu-v5p", "H020", "16x20x28 (8,960 chips)"),
        ("X=1000000, Y=1000000", "tpu-v4p", "H020", "16x16x16 (4,096 chips)"),
        ("X=512", "tpu-v5e", "H020", "16x16 (256 chips)"),
        ("X=1099511627776", "h100", "S015", "4,294,967,296"),
        ("X=1000000, Y=1000000", None, "S015", "1,000,000,000,000 devices"),
        ("P=2000000011 @dcn, X=4", "tpu-v5p", "S015", "4,294,967,296"),
    ],
)
def test_meshes_no_slice_holds_are_refused(mesh, chip, code, words):
    hw = f"hardware {chip}\n" if chip else ""
    with pytest.raises(CompileError) as exc:
        shardc.compile(f"mesh {mesh}\ndim I\n{hw}A: f32[I_X]\n")
    assert f"error[{code}]" in str(exc.value) and words in str(exc.value)


def test_report_at_and_value_apply_the_same_limit():
    """A mesh axis bound by `Report.at` or `Report.value`, symbolic or declared, is held to the
    limits a compile applies (a ValueError naming the binding and the code)."""
    r = shardc.compile("mesh X\ndim I\nhardware tpu-v5e\nA: f32[I_X]\nB = A ·_I A\n")
    assert r.at(X=16, I=4096).value("t_comms_s") > 0
    with pytest.raises(ValueError, match=r"X=1000000007: error\[H020\]"):
        r.at(X=1000000007)
    declared = shardc.compile("mesh X=4\ndim I=64\nhardware h100\nA: f32[I_X]\nB = A ·_I A\n")
    assert declared.value("t_comms_s", X=8) > 0
    with pytest.raises(ValueError, match=r"error\[S015\].*4,294,967,296"):
        declared.value("t_comms_s", X=2**40)
    with pytest.raises(ValueError, match=r"S015"):
        declared.at(X=2**33)
    assert MAX_MESH_DEVICES == 2**32


# ---- showing user text -------------------------------------------------------------------------


@given(st.text())
def test_visible_leaves_nothing_a_terminal_acts_on(s):
    shown = visible(s)
    assert shown.isprintable()
    if s.isprintable():
        assert shown == s


@given(st.text(), st.integers(1, 200))
def test_quoted_is_short_and_printable(s, limit):
    q = quoted(s, limit)
    assert q.isprintable() and q[0] in "'\""
    assert len(q) <= 4 * 10 * limit + 40  # an escape is at most 10 characters


def test_diagnostics_show_controls_visibly_with_the_caret_moved():
    src = Source("a\x1b[2Jb.shard", "A: f32[I_Q] # \x1b]0;t\x07\n\x1bB = A\n")
    d = Diagnostic("error", "S001", "unknown mesh axis 'Q\x07'", Span(2, 2, 2, 3), "here\x1b")
    text = d.render(src)
    assert "\x1b" not in text and "\x07" not in text
    assert "a\\x1b[2Jb.shard:2:2" in text and "'Q\\x07'" in text and "here\\x1b" in text
    line, caret = text.splitlines()[1:3]
    assert line == "  \\x1bB = A" and caret.index("^") == line.index("B")


# ---- escaping per format -----------------------------------------------------------------------

_NO_BREAK = re.compile(r"[\n\r]")


@given(st.text())
def test_markdown_text_has_no_live_markup(s):
    out = md_text(s)
    assert "<" not in out and out.isprintable()
    assert not re.search(r"(?<!\\)\|", out) and not re.search(r"(?<!\\)\$", out)
    assert "](" not in out
    if s.count("`") % 2:
        assert not re.search(r"(?<!\\)`", out)


@given(st.text(), st.booleans())
def test_markdown_code_cannot_end_early(s, table):
    out = md_code(s, table)
    assert out.isprintable() and "<" not in md_code(s, table, markup_as_text=True)
    if out.startswith("`"):
        fence = re.match(r"`+", out).group(0)
        inner = out[len(fence) : -len(fence)]
        assert out.endswith(fence) and fence not in inner
        if table:
            assert not re.search(r"(?<!\\)\|", inner)


@given(st.text())
def test_html_round_trips(s):
    out = html_text(s)
    assert "<" not in out and ">" not in out and '"' not in out
    assert html.unescape(out) == visible(s, keep="\n\t")


@given(st.text())
def test_latex_has_no_live_specials(s):
    out = latex_text(s)
    assert not _NO_BREAK.search(out)
    unescaped = re.sub(r"\\textbackslash\{\}|\\[{}_$%&#]|\\\^\{\}|\\~\{\}|\$\\to\$", "", out)
    assert not re.search(r"[\\{}_$%&#^~]", unescaped)
    assert not _NO_BREAK.search(latex_comment(s))


def test_reports_escape_names_in_every_format(tmp_path):
    evil = "<img src=x onerror=alert(1)>`|$x$\n\\input{p}\x1b"
    r = shardc.compile("mesh X=2\ndim I=8\nA: bf16[I_X]\nB = gelu(A)\n", name=evil)
    for out in (r.to_markdown(), r._repr_markdown_(), r._repr_html_()):
        assert "<img" not in out and "\x1b" not in out
    assert "\n\\input" not in r.to_latex() and "\x1b" not in r.to_latex()
    assert "\x1b" not in r.to_text() and "\\x1b" in r.to_text()


def test_ordinary_names_are_unchanged():
    for s in ("AllGather_X(A)", "A[I_X, J]{U_Y}", "exp(A-max_S(A))", "T_math > T_hbm"):
        assert md_text(s) == s and html_text(s) == html.escape(s)
        assert md_code(s) == f"`{s}`"


# ---- writing files -----------------------------------------------------------------------------


def test_concurrent_writers_never_tear_the_file(tmp_path):
    out = tmp_path / "same.json"
    payloads = [bytes([65 + k]) * (1 << 20) for k in range(6)]
    seen: list[bytes] = []
    stop = threading.Event()

    def write(p: bytes) -> None:
        for _ in range(4):
            write_text(str(out), p.decode())

    def read() -> None:
        while not stop.is_set():
            if out.exists():
                seen.append(out.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    assert out.read_bytes() in payloads
    assert all(s in payloads for s in seen)
    assert os.listdir(tmp_path) == ["same.json"]  # no temporary file left behind


def test_a_failed_write_leaves_the_old_file(tmp_path):
    out = tmp_path / "r.txt"
    out.write_text("old")
    os.chmod(out, 0o640)
    with pytest.raises(RuntimeError), atomic_path(str(out)) as tmp:
        Path(tmp).write_text("half")
        raise RuntimeError
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["r.txt"]
    write_text(str(out), "new")
    assert out.read_text() == "new" and stat.S_IMODE(out.stat().st_mode) == 0o640


def test_refused_targets(tmp_path):
    prog = tmp_path / "p.shard"
    prog.write_text("mesh X=2\n")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    os.symlink(prog, tmp_path / "link.json")
    os.link(prog, tmp_path / "hard.json")
    cases = {
        "fifo": "not a regular file",
        "dir": "is a directory",
        "link.json": "is the input",
        "hard.json": "is the input",
        "nope/x": "does not exist",
        "new/": "names a folder",
    }
    for name, why in cases.items():
        with pytest.raises(CliIOError, match=why):
            check_writable(f"{tmp_path}/{name}", flag="-o", inputs=(str(prog),))
    with pytest.raises(CliIOError, match="not a regular file"):
        write_text("/dev/null", "x")
    assert prog.read_text() == "mesh X=2\n"


# ---- generated programs ------------------------------------------------------------------------

_AXIS = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(=\d+)?( @[A-Za-z][A-Za-z0-9]*(\([A-Za-z0-9, ]+\))?)?"
    r"( (no)?wrap)?"
)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from("XYP=2@ici(x, )wrapno\n\r;#\\dim\t"), max_size=40))
def test_mesh_flag_becomes_values_or_an_error(text):
    """`--mesh` text is parsed into names, whole numbers and links and written back from them:
    whatever the text, the program's mesh line is well formed or the flag is refused."""
    from shardc.cli.plan import InputError, mesh_layout

    try:
        layout = mesh_layout("dp", text)
    except InputError as exc:
        assert "--mesh" in str(exc) and "\n" not in str(exc)
        return
    for axis in layout.axes:
        assert _AXIS.fullmatch(axis.text()), axis.text()
