"""The whole-program search's lowerings resumed from shared statements
(`passes.lower.prefixes`): every plan vector lowered with the book of earlier lowerings gives
the program, and records the options, that a lowering from the first statement gives."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

import shardc
from shardc.lang.diagnostics import Diagnostics
from shardc.passes.lower.prefixes import (
    Prefixes,
    Recording,
    end_of,
    recording,
    restore,
    snapshot,
)
from shardc.passes.objective import Forced
from shardc.passes.pipeline import InsertCollectives, configure
from shardc.passes.symbolic_plans import AtPoint
from tests.passes.test_objective import FSDP, fsdp

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


def lowered(recipe, chooser, book):
    ctx = dataclasses.replace(recipe.ctx, diagnostics=Diagnostics())
    (p,) = configure(
        (InsertCollectives(chooser, prefixes=book),),
        dataclasses.replace(recipe.ctx.options, explain=False),
    )
    return p.run(recipe.unit, ctx).compiled


def records(c: Forced):
    return dict(c.seen), dict(c.options), dict(c.picked)


def every_vector(recipe, base=None, book=None):
    """Each vector of the search's options, lowered with `book` and from the first statement."""
    first = Forced(base, shared=recipe.shared)
    lowered(recipe, first, None)
    seen = first.seen
    ordinals = sorted(seen)
    book = Prefixes() if book is None else book
    count = 0
    for vector in itertools.product(*(range(seen[k]) for k in ordinals)):
        forced = dict(zip(ordinals, vector, strict=True))
        resumed = Forced(base, forced, shared=recipe.shared)
        plain = Forced(base, forced, shared=recipe.shared)
        assert lowered(recipe, resumed, book) == lowered(recipe, plain, None)
        assert records(resumed) == records(plain)
        count += 1
    return count, book


@pytest.mark.parametrize(
    "text",
    [
        fsdp(4096),
        fsdp(8192),
        (PROGRAMS / "attention-gqa-train.shard").read_text(encoding="utf-8"),
    ],
    ids=["fsdp-4096", "fsdp-8192", "attention-gqa-train"],
)
def test_resumed_lowerings_equal_lowerings_from_the_start(text):
    r = shardc.compile(text)
    count, book = every_vector(r.recipe)
    assert count > 1
    assert book.starts  # statements were shared
    # a second pass over the same vectors finds each lowering's end
    again, _ = every_vector(r.recipe, book=book)
    assert again == count


def test_resumed_at_points_of_a_free_size():
    """With B free, the options depend on the point (`AtPoint`): one book serves them all."""
    r = shardc.compile(FSDP)
    book = Prefixes()
    counts = [
        every_vector(r.recipe, AtPoint({"B": b}), book)[0]
        for b in (1024.0, 7000.0, 8192.0, 16384.0, 65536.0)
    ]
    assert max(counts) > 1


@pytest.mark.parametrize("base", [None, AtPoint({"B": 7000.0}), AtPoint({"B": 65536.0})])
def test_the_end_of_a_chooser_is_where_its_lowering_ends(base):
    """`end_of` replays the book to a chooser: None before a lowering with its answers ended;
    after, where it ended, with the options the lowering records; vectors that end at one
    position answer alike and lower to one program."""
    r = shardc.compile(FSDP if base is not None else fsdp(4096))
    first = Forced(base, shared=r.recipe.shared)
    lowered(r.recipe, first, None)
    ordinals = sorted(first.seen)
    book = Prefixes()
    by_end: dict = {}
    known_before = 0
    for vector in itertools.product(*(range(first.seen[k]) for k in ordinals)):
        forced = dict(zip(ordinals, vector, strict=True))
        before = Forced(base, forced, shared=r.recipe.shared)
        known = end_of(book, before)
        chooser = Forced(base, forced, shared=r.recipe.shared)
        program = lowered(r.recipe, chooser, book)
        after = Forced(base, forced, shared=r.recipe.shared)
        end = end_of(book, after)
        assert end is not None and end in book.ends
        assert known in (None, end)
        known_before += known is not None
        assert records(after) == records(chooser)
        answers = tuple(sorted(chooser.picked.items()))
        assert by_end.setdefault(end, (answers, program)) == (answers, program)
    assert 1 < len(by_end)
    assert known_before > 0 or base is not None  # the FSDP step's 64 vectors are 36 programs


def test_a_chooser_without_rank_is_not_recorded():
    assert recording(AtPoint({}), Prefixes()) is None
    assert recording(Forced(), None) is None
    assert isinstance(recording(Forced(), Prefixes()), Recording)


def test_snapshots_are_copies():
    r = shardc.compile(fsdp(4096))
    from shardc.passes.lower.state import LoweringState

    st = LoweringState(r.recipe.ctx)
    st.copies["a"] = []
    snap = snapshot(st)
    st.ops.append(None)
    st.copies["a"].append(None)
    restore(st, snap)
    assert st.ops == [] and st.copies == {"a": []}
    st.ops.append(None)
    assert snap["ops"] == []
