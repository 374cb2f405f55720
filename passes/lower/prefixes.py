"""The whole-program search's lowerings, sharing the statements before their first different
choice.

`passes.objective.search` lowers the program once per plan vector, and vectors tried in order
share long prefixes (the FSDP step's 64 vectors differ first at the last of six contractions
in half of them). A lowering is a function of the program, the context and the answers its
chooser gave so far, so the state of the walk at the start of a statement, keyed by those
answers, is the state any other lowering with the same answers reaches there. `Prefixes`
keeps, for one program and context, the events each lowering met (a chooser's question, the
end of a statement) by the answers before them, and the walk's state at the start of each
statement that asks one; a later lowering replays the questions to its own chooser (which
records its options as the lowering would) and resumes at the last statement it shares. What
it returns is the program a lowering from the first statement returns
(tests/passes/test_prefixes.py compares them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shardc.passes.objective import NEAR

if TYPE_CHECKING:
    from shardc.passes.ir import CompiledProgram
    from shardc.passes.lower.state import LoweringState
    from shardc.passes.symbolic_plans import Candidate, Chooser

Position = tuple[int, tuple[Any, ...]]
"""Where a lowering is: the statement it is in and its chooser's answers so far."""

FIXED = frozenset(
    ("ctx", "chooser", "chip", "topology", "bindings", "explain", "idle_axes", "caches")
)
"""The fields of `LoweringState` that one program's lowerings share (the rest is the walk's)."""


def snapshot(st: LoweringState) -> dict[str, Any]:
    """The walk's own fields of `st`, copied one level deep (values and ops are frozen)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(st):
        if f.name in FIXED:
            continue
        v = getattr(st, f.name)
        if f.name == "copies":
            v = {k: list(kids) for k, kids in v.items()}
        elif isinstance(v, (list, dict, set)):
            v = v.copy()
        out[f.name] = v
    return out


def restore(st: LoweringState, snap: dict[str, Any]) -> None:
    """`st` as it was at `snap`, with copies of its containers (the snapshot stays as taken)."""
    for k, v in snapshot_of(snap).items():
        setattr(st, k, v)


def snapshot_of(snap: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in snap.items():
        if k == "copies":
            v = {key: list(kids) for key, kids in v.items()}
        elif isinstance(v, (list, dict, set)):
            v = v.copy()
        out[k] = v
    return out


@dataclass(slots=True)
class Prefixes:
    """What one program's lowerings met, by position (`Position`): the event that came next
    (a chooser's question with its arguments, or the end of the statement), the state at the
    start of each statement that asked one, and each lowering's result where it ended."""

    events: dict[Position, tuple[Any, ...]] = field(default_factory=dict)
    starts: dict[Position, dict[str, Any]] = field(default_factory=dict)
    ends: dict[Position, CompiledProgram] = field(default_factory=dict)


@dataclass(slots=True)
class Recording:
    """The chooser of one lowering that records into `Prefixes` (and forwards to `inner`)."""

    inner: Any
    book: Prefixes
    at: Position = (0, ())
    pending: dict[str, Any] | None = None
    """The state at the start of the current statement, kept if the statement asks."""

    @property
    def shared(self) -> Any:
        return self.inner.shared

    def _asked(self, event: tuple[Any, ...], answer: Any) -> None:
        if self.pending is not None:
            self.book.starts[self.at] = self.pending
            self.pending = None
        self.book.events[self.at] = event
        self.at = (self.at[0], (*self.at[1], answer))

    def rank(
        self, ordinal: int, times: Sequence[float], near: float = NEAR, product: int = 0
    ) -> int:
        r: int = self.inner.rank(ordinal, times, near, product)
        self._asked(("rank", ordinal, tuple(times), near, product), r)
        return r

    def choose(self, ordinal: int, candidates: Sequence[Candidate]) -> int | None:
        r: int | None = self.inner.choose(ordinal, candidates)
        self._asked(("choose", ordinal, tuple(candidates)), r)
        return r

    def begin(self, st: LoweringState, statement: int) -> None:
        """The walk starts `statement` (its state is kept if the statement asks)."""
        self.at = (statement, self.at[1])
        # a statement met before with these answers has its start kept, or asks nothing
        self.pending = None if self.at in self.book.events else snapshot(st)

    def end(self) -> None:
        """The walk finished the current statement."""
        self.pending = None
        self.book.events[self.at] = ("end",)
        self.at = (self.at[0] + 1, self.at[1])

    def finish(self, result: CompiledProgram) -> None:
        self.pending = None
        self.book.ends[self.at] = result

    def resume(self, st: LoweringState) -> CompiledProgram | int:
        """Replay what earlier lowerings met to this lowering's chooser, as long as its answers
        are theirs: the result where a lowering with the same answers ended, else the statement
        to go on from (`st` restored to the state at its start; 0 where none is shared)."""
        at: Position = (0, ())
        start: tuple[Position, dict[str, Any]] | None = None
        book, chooser = self.book, self.inner
        while True:
            if at in book.ends:
                self.at = at
                return book.ends[at]
            snap = book.starts.get(at)
            if snap is not None:
                start = (at, snap)
            event = book.events.get(at)
            if event is None:
                break
            if event[0] == "end":
                at = (at[0] + 1, at[1])
                continue
            answer = (chooser.rank if event[0] == "rank" else chooser.choose)(*event[1:])
            at = (at[0], (*at[1], answer))
        if start is None:
            return 0
        (statement, answers), snap = start
        restore(st, snap)
        self.at = (statement, answers)
        return statement


def end_of(book: Prefixes, chooser: Any) -> Position | None:
    """Where a lowering answered by `chooser` ends, where an earlier lowering with the same
    answers ended there (its result is `book.ends`' at it: a lowering returns that very
    program, `Recording.resume`); None where its answers lead where none went. The questions
    are put to `chooser` as that lowering would put them, so it records the same options."""
    at: Position = (0, ())
    while at not in book.ends:
        event = book.events.get(at)
        if event is None:
            return None
        if event[0] == "end":
            at = (at[0] + 1, at[1])
            continue
        answer = (chooser.rank if event[0] == "rank" else chooser.choose)(*event[1:])
        at = (at[0], (*at[1], answer))
    return at


def recording(chooser: Chooser | None, book: Prefixes | None) -> Recording | None:
    """A recording chooser around `chooser` where lowerings are shared (`book`): only the
    search's own choosers (`passes.objective.Forced`, which answer `rank`)."""
    if book is None or not hasattr(chooser, "rank"):
        return None
    return Recording(chooser, book)


__all__ = ["Position", "Prefixes", "Recording", "end_of", "recording", "restore", "snapshot"]
