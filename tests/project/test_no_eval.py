"""No user text is evaluated: no eval/exec/compile/sympify/parse_expr/__import__ anywhere in the
packages (the one exec of shardc's own generated code carries `# generated-code:`), and the
issue's payloads create no file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGES = ("dsl", "passes", "hardware", "grammar")
FORBIDDEN_CALLS = {
    "eval",
    "exec",
    "compile",
    "sympify",
    "parse_expr",
    "__import__",
    "parse_latex",
    "lambda_notation",
}
"""Calls that evaluate text (`compile` the builtin: `re.compile` is an attribute call on re)."""
ALLOW = "# generated-code:"
PAYLOAD = "B.subs.__globals__['__builtins__']['__import__']('os').system('touch pwned')"


def _files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _allowed(lines: list[str], node: ast.AST) -> bool:
    end = getattr(node, "end_lineno", node.lineno)
    return any(ALLOW in lines[i - 1] for i in range(node.lineno, end + 1))


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        # sp.sympify, sympy.parsing.parse_expr, builtins.eval; not re.compile / x.compile()
        if func.attr == "compile":
            base = func.value
            return "compile" if isinstance(base, ast.Name) and base.id == "builtins" else None
        return func.attr
    return None


def offences(path: Path) -> list[str]:
    """`file:line: what` for every forbidden call or import in one file."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text, str(path))
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    aliases: dict[str, str] = {}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod.startswith("sympy.parsing"):
                out.append(f"{rel}:{node.lineno}: imports {mod}")
            for a in node.names:
                if a.name in FORBIDDEN_CALLS or a.name == "S" and mod.startswith("sympy"):
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("sympy.parsing"):
                    out.append(f"{rel}:{node.lineno}: imports {a.name}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _allowed(lines, node):
            continue
        name = _called_name(node.func)
        name = aliases.get(name, name) if name else None
        if name in FORBIDDEN_CALLS:
            out.append(f"{rel}:{node.lineno}: calls {name}")
        elif (
            name == "S"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append(f"{rel}:{node.lineno}: calls S with a string")
    return out


def test_no_package_evaluates_text():
    found = [o for p in _files() for o in offences(p)]
    assert not found, "\n".join(found)


def test_the_grep_agrees():
    """A second, plain-text check for what an AST walk could miss (getattr tricks aside)."""
    pattern = re.compile(r"\b(sympify|parse_expr|__import__|eval|exec)\s*\(|sympy\.parsing")
    found = []
    for p in _files():
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0] if ALLOW not in line else ""
            if pattern.search(code) and not code.lstrip().startswith(('"', "'", ">>>")):
                found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_checker_finds_what_it_forbids(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text(
        "import sympy as sp\nfrom sympy.parsing.sympy_parser import parse_expr as p\n"
        "x = sp.sympify('1')\ny = p('2')\nz = eval('3')\n"
        "w = exec('4')  # generated-code: a test of the allowlist\n"
    )
    found = offences(bad)
    assert [f.split(": ", 1)[1] for f in found] == [
        "imports sympy.parsing.sympy_parser",
        "calls sympify",
        "calls parse_expr",
        "calls eval",
    ]


MLP = """\
mesh X=16
dim B=131072, D=8192, F=32768
hardware tpu-v5p
In: bf16[B_X, D]
param W_in: bf16[D_X, F]
param W_out: bf16[F, D_X]
Tmp = In ·_D W_in
Out[B_X, D] = gelu(Tmp) ·_F W_out
"""
"""The program the payloads are given with: its forward pass is enough for every command to
read the payload (with `backward`, `sweep` compiled for 3 s of CPU before it did)."""


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["derive", "p.shard", "--solve-for", PAYLOAD], "--solve-for"),
        (["sweep", "p.shard", "--set", "B=1e3:1e6:log4", "--y", PAYLOAD], "--y"),
        (["derive", "p.shard", "--optimize", "X", "--with", "X", "--devices", PAYLOAD], "--with"),
    ],
)
def test_the_payloads_run_nothing(tmp_path, monkeypatch, capsys, argv, flag):
    from shardc.cli.app import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.shard").write_text(MLP)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and flag in err
    assert not (tmp_path / "pwned").exists()
