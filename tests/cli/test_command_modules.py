"""The command modules, each from its own module: every extension registers its commands with a
`run` (`shardc.cli.app.EXTENSIONS`), imports without numpy or sympy (start-up pays only for the
command that runs), and the shared input helpers (`shardc.cli.inputs`) and the language
server's flags (`shardc.cli.lsp`) refuse bad values as usage errors."""

from __future__ import annotations

import argparse
import subprocess
import sys
from decimal import Decimal

import pytest

from shardc.cli import calibrate, derive, inputs, limits, lsp, plan, show, sweep, xla
from shardc.cli import test as test_command
from shardc.cli.app import EXTENSIONS, build_parser
from shardc.lang.input_limits import LSP_COMPILE_SECONDS
from tests.paths import ROOT

MODULES = {
    "shardc.cli.limits": limits,
    "shardc.cli.xla": xla,
    "shardc.cli.sweep": sweep,
    "shardc.cli.derive": derive,
    "shardc.cli.plan": plan,
    "shardc.cli.calibrate": calibrate,
    "shardc.cli.test": test_command,
    "shardc.cli.show": show,
}


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {
        name: p
        for a in parser._actions
        if isinstance(a, argparse._SubParsersAction)
        for name, p in a.choices.items()
    }


def _runs(parser: argparse.ArgumentParser) -> bool:
    """The parser's command has a `run`, or each of its subcommands has (`model import`)."""
    if callable(parser.get_default("run")):
        return True
    subs = _commands(parser)
    return bool(subs) and all(_runs(p) for p in subs.values())


def test_each_extension_registers_commands_that_run():
    assert set(MODULES) == set(EXTENSIONS)
    app = _commands(build_parser())
    for name, module in MODULES.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        module.add_parser(sub)
        assert sub.choices, name
        for command, p in sub.choices.items():
            assert _runs(p), (name, command)
            assert command in app  # the app's parser has it too


def test_the_command_modules_import_without_numpy_or_sympy():
    names = [*EXTENSIONS, "shardc.cli.inputs", "shardc.cli.lsp", "shardc.cli.app"]
    code = (
        f"import sys\nfor n in {names!r}: __import__(n)\n"
        "print(sorted(m for m in ('numpy', 'sympy', 'jax') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_bindings_as_the_command_line_reads_them():
    assert inputs.parse_binding("B=4M") == ("B", Decimal(4_000_000))
    assert inputs.parse_binding(" eta_mxu = 0.5 ") == ("eta_mxu", Decimal("0.5"))
    for bad in ("B", "=4", "B=1e400", "B=four", "4B=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            inputs.parse_binding(bad)


def test_a_usage_error_goes_to_stderr_with_code_2(capsys):
    assert inputs.usage_error("no such file: 'x\x1b.shard'") == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("shardc: error: no such file:") and "\x1b" not in err


def test_reading_a_program_that_is_not_there_is_a_usage_error(tmp_path, capsys):
    good = tmp_path / "p.shard"
    good.write_text("dim I=4\n", encoding="utf-8")
    assert inputs.read_program(str(good)).text == "dim I=4\n"
    with pytest.raises(SystemExit) as exc:
        inputs.read_program(str(tmp_path / "missing.shard"))
    assert exc.value.code == 2 and "shardc: error:" in capsys.readouterr().err


def test_the_language_servers_time_budget():
    p = argparse.ArgumentParser()
    lsp.add_arguments(p)
    assert p.parse_args([]).time_budget == LSP_COMPILE_SECONDS
    assert p.parse_args(["--time-budget", "2.5"]).time_budget == 2.5
    for bad in ("0", "-1", "3601", "nan", "inf", "soon"):
        with pytest.raises(SystemExit):
            p.parse_args(["--time-budget", bad])
