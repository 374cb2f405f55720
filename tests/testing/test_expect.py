"""`# expect:` lines: the grammar (grammar/expect.lark, shardc.lang.expect), the checks over the
whole domain (shardc.testing.expect), the pytest plugin and `shardc test`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.cli.app import main
from shardc.lang.diagnostics import Diagnostics
from shardc.lang.expect import Collectives, Found, Num, Relation, find, parse
from shardc.lang.source import Source
from shardc.testing.expect import check_source, render_failure

FSDP = """mesh X=4
dim B, D, F
hardware tpu-v5e
In: bf16[B_X, D]
W: bf16[D_X, F]
"""


def outcomes(text: str, examples: int = 40) -> list[tuple[bool, str, str]]:
    checked = check_source(Source("p.shard", text), examples=examples)
    assert not checked.diagnostics.items, checked.diagnostics.render(checked.source)
    return [(o.passed, o.how, o.message) for o in checked.outcomes]


def errors(text: str) -> str:
    checked = check_source(Source("p.shard", text))
    return checked.diagnostics.render(checked.source)


# ---- parsing -----------------------------------------------------------------------------------
def test_find_takes_comment_lines_and_trailing_comments_not_strings():
    src = Source(
        "p",
        'hardware "a#expect: x"\n# expect: comm_bytes == 0\n'
        "C = A ·_J B   #expect:collectives == []\n# expected: not one\n",
    )
    found = find(src)
    assert [(f.line, f.col, f.text, f.statement) for f in found] == [
        (2, 11, "comm_bytes == 0", False),
        (3, 23, "collectives == []", True),
    ]


def test_parse_relations_chains_where_and_collectives():
    def one(text: str):
        e = parse(Found(Source("p", text), 1, 1, text, False), Diagnostics())
        assert e is not None
        return e

    e = one("0 < T_comms <= 2*Max(T_math, t_hbm_s) where B >= 64Ki and X <= 16")
    assert isinstance(e.claim, Relation) and e.claim.ops == ("<", "<=")
    assert [w.operands[1] for w in e.where] == [Num("64Ki", 65536), Num("16", 16)]
    c = one("collectives == [AllGather_X(W_in), ReduceScatter_{X,Y}(gelu(Tmp))]").claim
    assert isinstance(c, Collectives) and c.op == "=="
    assert [(i.op, i.subscript, i.operand) for i in c.items] == [
        ("AllGather", ("X",), "W_in"),
        ("ReduceScatter", ("X", "Y"), "gelu(Tmp)"),
    ]
    assert one("AllToAll_XY(C) not in collectives").claim.op == "not in"


@pytest.mark.parametrize(
    "line,message,caret",
    [
        ("comm_bytes = 0", "unexpected '=' (compare with '==')", 22),
        ("comm_bytes ==", "ends too early", 24),
        ("collectives < 3", "unexpected symbol '<'", 23),
        ("", "empty expectation", 11),
        ("B.subs == 1", "no attribute access", 12),
        ("__import__('os') == 1", "unexpected character '_'", 11),
        ("1e999 == 1", "too large", 11),
        ("collectives == [AllGather_{X,}(A)]", "names mesh axes", 27),
    ],
)
def test_syntax_errors_are_e001_with_a_caret(line, message, caret):
    src = Source("p.shard", f"mesh X=2\n# expect: {line}\n")
    diags = Diagnostics()
    assert parse(find(src)[0], diags) is None
    text = diags.render(src)
    head, quoted, marks = text.splitlines()[:3]
    assert head.startswith(f"p.shard:2:{caret}: error[E001]: ") and message in head, text
    assert marks.index("^") - 2 == caret - 1, text


def test_deep_nesting_is_refused():
    text = "-" * 80 + "B == 1"
    assert "nested deeper" in errors(f"mesh X=2\ndim B\n# expect: {text}\n")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(alphabet="BXcomm_bytes =<>!()[]*/+-0123456789.,_{}wherandinotAllGather ", max_size=40)
)
def test_any_text_parses_or_is_e001(text):
    src = Source("p", "# expect: " + text.replace("\n", " "))
    diags = Diagnostics()
    for f in find(src):
        e = parse(f, diags)
        assert (e is None) == bool(diags.items)
    for d in diags.items:
        assert d.code == "E001" and d.span.line == 1


# ---- checking ----------------------------------------------------------------------------------
def test_a_relation_that_holds_for_every_size_is_proven():
    [(ok, how, _)] = outcomes(FSDP + "G = In\n# expect: comm_bytes == 0\n")
    assert ok and how.startswith("exactly")


def test_a_failing_relation_shows_a_shrunk_point_and_both_sides():
    [(ok, how, message)] = outcomes(FSDP + "G = AllGather_X(In)\n# expect: comm_bytes == 0\n")
    assert not ok and how == "counterexample"
    # the smallest sizes the layouts divide: B and D over X=4
    assert "at B=4, D=4, F=1 (a counterexample Hypothesis found and shrank)" in message
    assert "comm_bytes = 2*B*D = 32" in message and "0 = 0" in message


def test_labels_and_where_narrow_the_domain():
    text = FSDP + "Tmp = In ·_D W\n"
    [(ok, _, message), (ok2, how2, _)] = outcomes(
        text + "# expect: T_comms <= T_math where B >= 1Mi\n"
        "# expect: T_comms <= T_math where B >= 1Mi and D >= 4096 and F >= 4096\n"
    )
    assert not ok and "B=1048576" in message and "T_comms = " in message
    assert ok2 and how2.startswith("on ")


def test_collectives_of_the_program_and_of_one_statement_by_region():
    text = FSDP + "Tmp = In ·_D W   # expect: collectives == [AllGather_X(W)]\n"
    [(ok, how, message)] = outcomes(text)
    # Where B is small the compiler moves the activations instead: a counterexample.
    assert not ok and "line 6's collectives are [AllToAll_X(In), AllReduce_X(Tmp)]" in message
    [(ok, how, _)] = outcomes(
        FSDP.replace("dim B, D, F", "dim B=64Ki, D=8192, F=32Ki")
        + "Tmp = In ·_D W   # expect: collectives == [AllGather_X(W)]\n"
    )
    assert ok and how.startswith("at the program's sizes")
    [(ok, how, _), (ok2, _, _)] = outcomes(
        FSDP + "Tmp = In ·_D W\n# expect: AllGather_X(In) not in collectives\n"
        "# expect: AllGather_X(W) in collectives where B >= 1Mi and D <= 64Ki and F <= 64Ki\n"
    )
    assert ok and how.startswith("exactly") and ok2


def test_unknown_names_are_e002_listing_what_is_known():
    text = errors(FSDP + "# expect: frob == 1\n# expect: collectives == [AllGather_Q(W)]\n")
    assert "p.shard:6:11: error[E002]: unknown quantity 'frob'; totals: flops" in text
    assert "labels: T_math" in text and "sizes: B, D, F, X" in text
    assert "p.shard:7:27: error[E002]: 'Q' in AllGather_Q(W) is not a mesh axis" in text


def test_times_without_a_chip_say_so():
    [(ok, how, message)] = outcomes(
        "mesh X=2\ndim B=8\nA: bf16[B_X]\nG = AllGather_X(A)\n# expect: T_comms == 0\n"
    )
    assert not ok and "W_ici" in message and "names no chip" in message


def test_a_program_that_does_not_compile_reports_its_errors():
    assert "error[N009]" in errors("mesh X=2\nA: bf16[I]\n# expect: comm_bytes == 0\n")


def test_render_failure_names_file_and_line():
    checked = check_source(
        Source("dir/p.shard", FSDP + "G = AllGather_X(W)\n# expect: comm_bytes < 1\n"), examples=20
    )
    assert render_failure(checked.outcomes[0]).startswith(
        "dir/p.shard:7: expectation failed: comm_bytes < 1\n  at "
    )


# ---- `shardc test` ---------------------------------------------------------------------------
def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    ok = tmp_path / "ok.shard"
    ok.write_text(FSDP + "G = In\n# expect: comm_bytes == 0\n", encoding="utf-8")
    bad = tmp_path / "bad.shard"
    bad.write_text(
        FSDP + "G = AllGather_X(W)\n# expect: comm_bytes == 0\n# expect: comm_bytes = 0\n",
        encoding="utf-8",
    )
    assert main(["test", str(ok)]) == 0
    out = capsys.readouterr().out
    assert "ok.shard:7: ok" in out and "1 passed, 0 failed" in out
    assert main(["test", str(ok), str(bad), "--examples", "20"]) == 1
    captured = capsys.readouterr()
    assert "bad.shard:7: FAIL comm_bytes == 0" in captured.out
    assert "comm_bytes = 2*D*F = 8" in captured.out
    assert "bad.shard:8:22: error[E001]" in captured.err
    assert "1 passed, 1 failed, 1 error" in captured.out
    empty = tmp_path / "none.shard"
    empty.write_text("mesh X=2\n", encoding="utf-8")
    assert main(["test", str(empty)]) == 2
    assert "no `# expect:` line" in capsys.readouterr().err
    assert main(["test", str(tmp_path), "--examples", "20"]) == 1  # a folder: its files
    out = capsys.readouterr().out
    assert "bad.shard:7: FAIL" in out and "ok.shard:7: ok" in out
    with pytest.raises(SystemExit) as exit:
        main(["test", str(tmp_path / "missing.shard")])
    assert exit.value.code == 2


@pytest.mark.parametrize(
    "payload",
    [
        "\x00\x01 == 1",
        "comm_bytes == " + "1" * 5000,
        "B" + "*B" * 3000 + " == 1",
        "collectives == [" + "AllGather_X(A), " * 500 + "]",
        "sqrt(-1) == comm_bytes",
        "comm_bytes / 0 == 1",
        "B ** B == 1",
        "Max() == 1",
        "comm_bytes == 1e308 * 1e308",
    ],
)
def test_hostile_expectations_get_diagnostics_not_tracebacks(tmp_path, capsys, payload):
    path = tmp_path / "h.shard"
    path.write_text(
        "mesh X=2\ndim B\nA: bf16[B_X]\nG = AllGather_X(A)\n# expect: " + payload + "\n",
        encoding="utf-8",
    )
    code = main(["test", str(path), "--examples", "5"])
    captured = capsys.readouterr()
    assert code in (1, 2), captured
    assert "Traceback" not in captured.err + captured.out
    assert "internal error" not in captured.err


# ---- the pytest plugin -------------------------------------------------------------------------
def test_the_plugin_collects_one_item_per_line(tmp_path: Path):
    (tmp_path / "p.shard").write_text(
        FSDP + "G = AllGather_X(W)\n# expect: comm_bytes >= 0\n# expect: comm_bytes == 0\n"
        "# expect: comm_bytes =\n",
        encoding="utf-8",
    )
    (tmp_path / "other.shard").write_text("mesh X=2\n", encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--shardc-examples",
            "20",
            "-rA",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "2 failed, 1 passed" in out, out
    assert "p.shard:8: expectation failed: comm_bytes == 0" in out
    assert "comm_bytes = 2*D*F = 8" in out
    assert "p.shard:9:22: error[E001]" in out
    assert "Traceback" not in out


def test_a_where_no_point_meets_checks_nothing_and_fails():
    [(ok, how, message), (ok2, how2, _)] = outcomes(
        FSDP + "# expect: comm_bytes == 1 where B >= 64 and B <= 32\n"
        "# expect: comm_bytes == 1 where B > 1Ti * D\n"
    )
    assert not ok and how == "vacuous" and "checks nothing" in message
    assert not ok2 and how2 == "vacuous"
    [(ok, how, _)] = outcomes(
        "mesh X=2\ndim B=8\nA: bf16[B_X]\n# expect: comm_bytes == 1 where B > 8\n"
    )
    assert not ok and how == "vacuous"


def test_the_plugin_reports_a_file_it_cannot_read(tmp_path: Path):
    (tmp_path / "latin1.shard").write_bytes(b"mesh X=2\n# expect: comm_bytes == 0 \xe9\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout and "UTF-8" in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stdout


def test_at_most_so_many_expectations_a_file(monkeypatch):
    monkeypatch.setattr("shardc.testing.expect.MAX_EXPECTATIONS", 2)
    checked = check_source(Source("p.shard", FSDP + "# expect: comm_bytes >= 0\n" * 3))
    assert len(checked.outcomes) == 2
    assert (
        "p.shard:8:11: error[E003]: more than 2 expectations in one file (3)"
        in checked.diagnostics.render(checked.source)
    )


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.sampled_from(
            [
                "B",
                "X",
                "comm_bytes",
                "T_math",
                "0",
                "1e300",
                "1/0",
                "-1",
                "sqrt(-4)",
                "Max(B, 0/X)",
                "X**-16",
                "0**-1",
                "4Ki",
            ]
        ),
        min_size=2,
        max_size=4,
    ),
    st.sampled_from(["==", "<", ">=", "!="]),
)
def test_any_relation_is_decided_or_a_diagnostic(atoms, op):
    text = f"{' * '.join(atoms[:-1])} {op} {atoms[-1]}"
    checked = check_source(Source("p.shard", FSDP + f"# expect: {text}\n"), examples=5)
    assert len(checked.outcomes) + len(checked.diagnostics.items) == 1
