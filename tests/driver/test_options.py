"""The compile options are declared once (`shardc.passes.context.Options`): the CLI's flags,
`compile`'s keywords and their checks are built from that declaration."""

from __future__ import annotations

import argparse

import pytest

import shardc
from shardc.cli.app import build_parser
from shardc.driver.options import options_with
from shardc.passes.context import OPTIONS, Options

PROGRAM = "mesh X=2\ndim B=8, D=4, F=6\nA: bf16[B, D_X]\nW: bf16[D_X, F]\nC[B, F] = A ·_D W\n"


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions}


def test_the_compile_flags_are_the_declared_options():
    """Each option with flags appears on `shardc compile` with the declared flags, choices and
    default (`--set` collects NAME=VALUE pairs into the `bindings` option)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    actions = _actions(sub.choices["compile"])
    for name, declared in OPTIONS.items():
        meta = declared.metadata
        if not meta["flags"] or name in ("free",):
            continue
        action = actions[name]
        assert tuple(action.option_strings) == meta["flags"], name
        if meta["choices"]:
            assert tuple(action.choices) == meta["choices"], name
        if name != "bindings":
            assert action.default == declared.default, name


def test_options_from_the_cli_equal_the_api_options(capsys):
    """`--remat block --set B=8` reaches the passes as `compile(remat="block", set={"B": 8})`."""
    from shardc.cli.inputs import options_from

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    args = sub.choices["compile"].parse_args(
        ["p.shard", "--remat", "block", "--set", "B=8", "--model", "book"]
    )
    assert options_from(args) == options_with(
        None, {"remat": "block", "set": {"B": 8}, "model": "book"}
    )


def test_compile_takes_an_options_value_and_overrides():
    base = shardc.Options(model="book", remat="block")
    r = shardc.compile(PROGRAM, base, hw="tpu-v5e")
    assert r.model == "book" and r.options["remat"] == "block" and r.chip.name == "tpu-v5e"
    assert shardc.compile(PROGRAM, hw="tpu-v5e").model == "exact"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"hardware": "tpu-v5e"}, TypeError, "no compile option named 'hardware'"),
        ({"explain": "yes"}, TypeError, "explain must be True or False"),
        ({"on": "peak"}, ValueError, "on='peak'"),
        ({"free": "BD"}, TypeError, "free must be a list of names"),
    ],
)
def test_a_wrong_option_is_an_error_naming_it(kwargs, error, match):
    with pytest.raises(error, match=match):
        shardc.compile(PROGRAM, **kwargs)


def test_options_must_be_an_options_value():
    """A chip name where `options` goes (the old positional `hw`) says how to give it."""
    with pytest.raises(TypeError, match="hw='tpu-v5e'"):
        shardc.compile(PROGRAM, "tpu-v5e")  # type: ignore[arg-type]
    assert isinstance(options_with(None, {}), Options)
