"""Every number that reaches a report goes through one checked conversion
(`shardc.lang.numeric`): whatever a user passes, it comes out finite and in its domain, or it
is refused with an error naming where it came from, never a NaN or an infinity. The Python API
checks its arguments' types the same way: a TypeError or ValueError naming the parameter."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import shardc
from shardc.hardware.schema import FIGURE_RANGE
from shardc.hardware.schema import QUOTE_WIDTH as HARDWARE_QUOTE_WIDTH
from shardc.hardware.schema import quoted as hardware_quoted
from shardc.lang.diagnostics import QUOTE_WIDTH
from shardc.lang.numeric import (
    MAX_INTEGER,
    NumberError,
    figure,
    finite,
    parse_decimal,
    positive,
    real,
    whole,
)
from shardc.lang.quoting import quoted
from tests.paths import ROOT

TWO_CHIP = (ROOT / "programs" / "two-chip.shard").read_text(encoding="utf-8")

ANY_INPUT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.text(alphabet="0123456789.eE+-_kKMGTi nafy", max_size=40),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-inf",
            "1e400",
            "1e-400",
            "4Mi",
            "9" * 1000,
            "0",
            "-0",
            "5e-324",
            "1e308",
            "2**63",
        ]
    ),
)
"""What a user may hand a conversion: any float, huge ints, Decimals, and number-like text."""


def _outcome(convert, value):
    """The conversion's value, or None when it refused `value` with a ValueError (NumberError
    is one); any other exception fails the test."""
    try:
        return convert(value)
    except ValueError:
        return None


@given(ANY_INPUT)
def test_a_size_point_is_finite_and_positive_or_refused(value) -> None:
    out = _outcome(lambda v: positive(v, "B"), value)
    if out is not None:
        assert isinstance(out, float) and math.isfinite(out) and 0 < out <= MAX_INTEGER


@given(ANY_INPUT)
def test_a_size_is_a_whole_number_in_range_or_refused(value) -> None:
    out = _outcome(lambda v: whole(v, "B"), value)
    if out is not None:
        assert isinstance(out, int) and 1 <= out <= MAX_INTEGER


@given(ANY_INPUT)
def test_a_figure_is_in_the_chip_range_or_refused(value) -> None:
    out = _outcome(lambda v: figure(v, "C"), value)
    if out is not None:
        low, high = FIGURE_RANGE
        assert isinstance(out, float) and low <= out <= high


@given(ANY_INPUT)
def test_a_computed_quantity_is_finite_and_not_negative_or_refused(value) -> None:
    if isinstance(value, str):
        return  # `finite` takes computed numbers, not text
    out = _outcome(lambda v: finite(v, "t_math_s"), value)
    if out is not None:
        assert math.isfinite(out) and out >= 0


@given(st.text(max_size=60) | st.text(alphabet="0123456789_.eE+-", max_size=2000))
def test_parse_decimal_refuses_with_number_error_only(text: str) -> None:
    try:
        d = parse_decimal(text)
    except NumberError:
        return
    assert d.is_finite()


@pytest.mark.parametrize("value", [True, None, [4096], {"B": 1}, object(), b"4096", 3j])
def test_real_refuses_what_is_not_a_number_by_type(value) -> None:
    with pytest.raises(TypeError, match="^B must be a number"):
        real(value, "B")


def test_a_million_digits_is_a_number_error_not_decimal_overflow() -> None:
    for text in ("9" * 1_000_000, "1." + "9" * 1_000_000 + "e2", "1e" + "9" * 1_000_000):
        with pytest.raises(NumberError, match="characters") as info:
            parse_decimal(text)
        assert len(str(info.value)) < 400


def test_quoted_values_are_cut_as_diagnostics_cut_lines() -> None:
    assert HARDWARE_QUOTE_WIDTH == QUOTE_WIDTH == 120
    long = "x" * 1_000_000
    assert quoted(long) == hardware_quoted(long)
    assert len(quoted(long)) < QUOTE_WIDTH + 40 and quoted(long).endswith(
        "(1,000,000 characters in all)"
    )
    assert quoted("B") == "'B'" and quoted("\x1b]0;t\x07") == repr("\x1b]0;t\x07")


# ---- the API's arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"hw": 3}, TypeError, "^hw must be"),
        ({"hw": ["tpu-v5e"]}, TypeError, "^hw must be"),
        ({"set": {"B": "x"}}, ValueError, r"set\['B'\]"),
        ({"set": {"B": None}}, TypeError, r"set\['B'\] must be a number"),
        ({"set": {"B": True}}, TypeError, r"set\['B'\] must be a number"),
        ({"set": 3}, TypeError, "^set must be a mapping"),
        ({"set": [("B", 4096)]}, TypeError, "^set must be a mapping"),
        ({"set": {3: 4096}}, TypeError, "^set: a key"),
        ({"set": {"B D": 4096}}, ValueError, "is not a name"),
        ({"free": "B"}, TypeError, "^free must be a list"),
        ({"free": [3]}, TypeError, "^free:"),
        ({"name": 3}, TypeError, "^name must be a string"),
        ({"explain": "no"}, TypeError, "^explain must be True or False"),
        ({"idle_axes": 1}, TypeError, "^idle_axes must be True or False"),
        ({"model": 3}, ValueError, "^model=3"),
    ],
)
def test_compile_names_the_parameter_of_a_wrong_argument(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        shardc.compile(TWO_CHIP, **kwargs)


@pytest.mark.parametrize("source", [3, None, b"mesh X=2\n", ["mesh X=2"]])
def test_compile_refuses_a_program_of_the_wrong_type(source) -> None:
    with pytest.raises(TypeError, match="the program must be"):
        shardc.compile(source)


def test_set_takes_text_as_the_command_line_does_and_leaves_the_domain_to_n016() -> None:
    r = shardc.compile(TWO_CHIP, hw="tpu-v5e", set={"B": "4Ki", "D": Decimal(8192), "F": 1024})
    assert r.value("flops") == 2 * 4096 * 8192 * 1024
    with pytest.raises(shardc.CompileError, match="N016"):
        shardc.compile(TWO_CHIP, set={"B": math.nan})
    with pytest.raises(shardc.CompileError, match="N010"):
        shardc.compile(TWO_CHIP, set={"Q": 3})


@pytest.fixture(scope="module")
def report():
    return shardc.compile(TWO_CHIP, hw="tpu-v5e", set={"D": 4096, "F": 1024})


@pytest.mark.parametrize(
    "bindings, error, message",
    [
        ({"C": 0}, ValueError, "^hardware figure 'C' must be positive"),
        ({"W_hbm": 5e-324}, ValueError, "'W_hbm' = 5e-324 is too small"),
        ({"C": math.inf}, ValueError, "'C' must be a finite number"),
        ({"B": 0}, ValueError, "^B must be (a )?positive"),
        ({"B": -1}, ValueError, "^B must be (a )?positive"),
        ({"B": math.nan}, ValueError, "^B must be (a finite number|a positive whole number)"),
        ({"B": 10**400}, ValueError, "^B = .* is larger than the limit"),
        ({"B": "x"}, ValueError, "^B: 'x' is not a number"),
        ({"B": None}, TypeError, "^B must be a number"),
        ({"B": True}, TypeError, "^B must be a number"),
        ({"B": [1]}, TypeError, "^B must be a number"),
    ],
)
def test_value_and_at_name_a_bad_binding(report, bindings, error, message) -> None:
    with pytest.raises(error, match=message):
        report.value("t_lower_s", **bindings)
    (name,) = bindings
    with pytest.raises(error, match=rf"^{name}\b|'{name}'"):  # at: a size must also be whole
        report.at(**bindings)


def test_value_takes_text_numbers_and_a_latency_of_zero(report) -> None:
    assert report.value("t_math_s", B="4Ki") == report.value("t_math_s", B=4096)
    no_latency = report.value("t_comms_s", B=4096, t_hop=0)
    assert no_latency is not None and 0 < no_latency <= report.value("t_comms_s", B=4096)


def test_plan_names_the_parameter_of_a_wrong_argument() -> None:
    from shardc.tools.plan.evaluation import plan

    good = {"card": "llama3-8b", "chip": "tpu-v5e", "chips": 8, "batch_tokens": 8 * 8192}
    for change, error, message in [
        ({"chips": 0}, ValueError, "^chips must be a positive whole number"),
        ({"chips": 8.0}, TypeError, "^chips must be a whole number"),
        ({"chips": True}, TypeError, "^chips must be a whole number"),
        ({"batch_tokens": "4M"}, TypeError, "^batch_tokens must be a whole number"),
        ({"batch_tokens": 2**70}, ValueError, "^batch_tokens = .* larger than the limit"),
        ({"seq": -1}, ValueError, "^seq must be a positive whole number"),
        ({"jobs": 0}, ValueError, "^jobs must be"),
        ({"card": 3}, TypeError, "^card must be"),
        ({"chip": None}, TypeError, "^chip must be"),
        ({"options": {}}, TypeError, "^options must be"),
        ({"progress": 3}, TypeError, "^progress must be"),
    ]:
        with pytest.raises(error, match=message):
            plan(**{**good, **change})


def test_derive_refuses_a_device_count_that_is_not_a_number() -> None:
    from shardc.tools.derive import derive

    r = shardc.compile(TWO_CHIP.replace("mesh X=2", "mesh X, Y"))
    for devices in (math.nan, math.inf, 0, 3.5, "nan", " Inf "):
        with pytest.raises(ValueError, match="devices"):
            derive(r, None, optimize="X", partner="Y", devices=devices)


# ---- sources that made NaN, inf or a wrong byte count -----------------------------------------


@pytest.mark.parametrize("count", ["L - L", "1 - L", "L - 2 * L", "L * (3 - 3)", "(L - L) * L"])
def test_a_symbolic_count_that_never_reaches_one_is_r002(count: str) -> None:
    program = (
        "mesh X=2\ndim B=8, D=8, L\nhardware tpu-v5e\n"
        f"repeat {count} {{\n  A: bf16[B_X, D]\n  C = gelu(A)\n}}\n"
    )
    with pytest.raises(shardc.CompileError, match="R002"):
        shardc.compile(program)


def test_at_refuses_a_point_where_a_repeat_runs_no_times() -> None:
    program = (
        "mesh X=2\ndim B=8, D=8, L\nhardware tpu-v5e\n"
        "repeat L - 1 {\n  A: bf16[B_X, D]\n  C = gelu(A)\n}\n"
    )
    r = shardc.compile(program)
    with pytest.raises(ValueError, match="runs at least once"):
        r.at(L=1)
    assert r.at(L=3).value("t_lower_s") == pytest.approx(2 * r.at(L=2).value("t_lower_s"))


@pytest.mark.parametrize("elements, stored", [(1, 1), (2, 1), (3, 2), (9, 5), (4096, 2048)])
def test_int4_blocks_take_whole_bytes(elements: int, stored: int) -> None:
    numeric = shardc.compile(f"mesh X=1\ndim I={elements}\nA: int4[I]\n")
    assert numeric.value("memory_per_device_bytes") == stored
    symbolic = shardc.compile("mesh X=1\ndim I\nA: int4[I]\n")
    assert symbolic.value("memory_per_device_bytes", I=elements) == stored


def test_an_alias_is_stored_once() -> None:
    one = shardc.compile("mesh X=2\ndim I=8, J=4\nA: bf16[I_X, J]\n")
    aliased = shardc.compile("mesh X=2\ndim I=8, J=4\nA: bf16[I_X, J]\nB = A\nC = B\n")
    assert aliased.value("memory_per_device_bytes") == one.value("memory_per_device_bytes") == 32
    copied = shardc.compile("mesh X=2\ndim I=8, J=4\nA: bf16[I_X, J]\nB[I, J_X] = A\n")
    assert copied.value("memory_per_device_bytes") == 64  # a reshard is a new array


def test_the_cli_gives_n010_for_an_unknown_set_name(capsys) -> None:
    from shardc.cli.app import main

    assert main(["compile", str(ROOT / "programs" / "case4.shard"), "--set", "Q=3"]) == 1
    err = capsys.readouterr().err
    assert "error[N010]" in err and "internal error" not in err


def test_at_refuses_sizes_whose_costs_overflow_as_compile_does() -> None:
    dims = ", ".join(f"D{i}" for i in range(20))
    r = shardc.compile(f"mesh X=2\ndim {dims}\nhardware tpu-v5e\nA: f32[{dims}]\nB = gelu(A)\n")
    with pytest.raises(ValueError, match="overflows a float: flops"):
        r.at(**{f"D{i}": 4 * 10**18 for i in range(20)})
    assert r.at(**{f"D{i}": 2 for i in range(20)}).value("flops") == 8 * 2**20
