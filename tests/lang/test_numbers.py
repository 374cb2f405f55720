"""One meaning of `4M`: `--set`, `plan --batch`, card token counts and a program's `dim` sizes
read numbers through `shardc.lang.numeric`, decimal suffixes k M G T and binary Ki Mi Gi Ti."""

from __future__ import annotations

import re
from decimal import Decimal, localcontext
from importlib.resources import files

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardc.cli.app import parse_binding
from shardc.cli.plan import InputError, parse_tokens
from shardc.lang.diagnostics import Diagnostics
from shardc.lang.numeric import (
    MAX_INTEGER,
    SIZE_PATTERN,
    SUFFIX,
    NumberError,
    parse_decimal,
    parse_whole,
)
from shardc.lang.parser import parse
from shardc.lang.source import Source

SPELLINGS = [
    ("4096", 4096),
    ("4_096", 4096),
    ("1e6", 10**6),
    ("4k", 4000),
    ("4K", 4000),
    ("4M", 4_000_000),
    ("2G", 2 * 10**9),
    ("15T", 15 * 10**12),
    ("1.5k", 1500),
    ("4Ki", 4096),
    ("8Ki", 8192),
    ("4Mi", 4 * 2**20),
    ("1Gi", 2**30),
    ("1Ti", 2**40),
    ("1.5Ki", 1536),
    ("0.5Mi", 2**19),
    ("1e3Ki", 1000 * 1024),
]


@pytest.mark.parametrize("text, value", SPELLINGS)
def test_each_spelling_means_one_number_everywhere(text: str, value: int):
    assert parse_decimal(text) == value
    assert parse_whole(text, "B") == value
    assert parse_tokens(text, "--batch") == value
    assert parse_binding(f"B={text}") == ("B", float(value))
    assert _dim(text) == value


@pytest.mark.parametrize("text", ["1.5", "1e-3", "0.5", "1__0", "1_"])
def test_a_program_refuses_a_size_that_is_not_whole(text: str):
    d = Diagnostics()
    assert parse(Source("t.shard", f"dim B={text}\n"), d) is None
    assert [x.code for x in d.items] == ["P006"]
    with pytest.raises((NumberError, InputError)):
        parse_tokens(text, "--batch")


@pytest.mark.parametrize("text", ["4KB", "4mi", "4Qi", "0x10", "4e"])
def test_other_suffixes_are_not_numbers(text: str):
    with pytest.raises(NumberError):
        parse_decimal(text)
    d = Diagnostics()
    assert parse(Source("t.shard", f"dim B={text}\n"), d) is None
    assert [x.code for x in d.items] == ["P006"]


@pytest.mark.parametrize("text", ["10000000T", "8388608Ti", "1e999"])
def test_a_size_past_the_limit_is_p011(text: str):
    d = Diagnostics()
    assert parse(Source("t.shard", f"dim B={text}\n"), d) is None
    assert [x.code for x in d.items] == ["P011"]


def test_repeat_counts_and_mesh_axes_take_suffixes():
    d = Diagnostics()
    prog = parse(Source("t.shard", "mesh X=1Ki\ndim B\nrepeat 2k {\nA: bf16[B]\n}\n"), d)
    assert prog is not None and prog.statements[0].axes[0].size == 1024
    assert prog.repeats[0].tree == 2000


def test_the_grammar_size_terminal_is_the_numeric_pattern():
    text = (files("shardc.grammar") / "shard.lark").read_text()
    m = re.search(r"^SIZE: /(.*)/$", text, re.M)
    assert m is not None and m.group(1) == SIZE_PATTERN


@given(st.integers(min_value=1, max_value=MAX_INTEGER), st.sampled_from(sorted(SUFFIX)))
def test_an_integer_written_with_any_suffix_reads_back(n: int, suffix: str):
    scale = SUFFIX[suffix]
    with localcontext(prec=100):  # exact: n / 10**k and n / 2**k have finite decimals
        text = f"{Decimal(n) / scale:f}{suffix}"
    assert parse_whole(text, "B") == n
    if n % scale == 0:
        assert parse_tokens(f"{n // scale}{suffix}", "--batch") == n


def _dim(text: str) -> int | None:
    d = Diagnostics()
    prog = parse(Source("t.shard", f"dim B={text}\n"), d)
    assert prog is not None, [x.message for x in d.items]
    return prog.statements[0].dims[0].size
