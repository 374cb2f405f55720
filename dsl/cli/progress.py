"""Progress on stderr for commands that search for more than a second (`limits`, `plan`,
`sweep`, `calibrate`): on a terminal a rich progress bar with the elapsed time and an ETA,
removed when the work ends; elsewhere (`--progress`) a line per stage. Results stay on stdout.

The searches report with a message (`"compiling fsdp-tp (X=2048 Y=4): 3 of 8"`): one ending in
`K of N` moves the bar to the K-th of N (done already where the message's first word is in the
past tense: `compiled ...: 3 of 8`); any other message starts a new stage when its head (the
text before `:`) is new, and the bar counts stages out of `stages`, where the command knows
them.
"""

from __future__ import annotations

import re
import sys
import time
from typing import Any

_COUNT = re.compile(r"^(?P<what>.*?):?\s*(?P<k>\d[\d,]*) of (?P<n>\d[\d,]*)\s*$")


class Progress:
    """Call with a message; `update(done, total, what)` sets the bar outright; `done()` ends
    it. Nothing is shown before `delay` seconds have passed, so a quick run prints nothing."""

    def __init__(
        self, tty: bool, delay: float = 1.0, *, stages: int | None = None, console: Any = None
    ) -> None:
        self.tty, self.last, self.start, self.delay = tty, "", time.monotonic(), delay
        self.shown = False
        self.stages, self.seen = stages, 0
        self._stage: str | None = None
        self._console = console
        self._bar: Any = None
        self._task: Any = None
        self._state: tuple[float, float | None, str] = (0.0, stages, "")

    def __call__(self, message: str) -> None:
        head = message.split(":")[0]
        m = _COUNT.match(message)
        if m is not None:
            k, n = int(m["k"].replace(",", "")), int(m["n"].replace(",", ""))
            past = m["what"].split(" ")[0].endswith("ed")
            self._state = (float(k if past else k - 1), float(n), m["what"])
        else:
            if head != self._stage:
                self._stage = head
                self.seen += 1
            self._state = (float(self.seen - 1), self.stages, message)
        self._show(message, head)

    def update(self, done: int, total: int, what: str) -> None:
        """`done` of `total` steps finished; `what` is the next."""
        self._state = (float(done), float(total), what)
        self._show(f"{done}/{total} {what}", f"{done}/{total} {what}")

    def _show(self, message: str, head: str) -> None:
        elapsed = time.monotonic() - self.start
        if elapsed < self.delay:
            return
        self.shown = True
        if self.tty:
            self._draw()
            self.last = head
            return
        if head != self.last:
            self.last = head
            print(f"[{elapsed:5.1f}s] {head}", file=sys.stderr, flush=True)

    def _draw(self) -> None:
        done, total, what = self._state
        if self._bar is None:
            import rich.progress as rp

            from shardc.cli.style import console, wants_colour

            out = self._console or console(sys.stderr, no_color=not wants_colour(sys.stderr))
            self._bar = rp.Progress(
                rp.TextColumn("{task.description}"),
                rp.BarColumn(),
                rp.MofNCompleteColumn(),
                rp.TimeElapsedColumn(),
                rp.TextColumn("ETA"),
                rp.TimeRemainingColumn(),
                console=out,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,  # results stay on stdout
                # no refresh thread: `plan --jobs` forks worker processes
                # while the bar is up, and a fork copies a thread's locks
                auto_refresh=False,
            )
            self._task = self._bar.add_task(what, total=total, completed=done)
            self._bar.start()
        self._bar.update(self._task, completed=done, total=total, description=what, refresh=True)

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def for_command(
    requested: bool, machine_output: bool = False, *, stages: int | None = None
) -> Progress | None:
    """A `Progress` when `--progress` asks for one, or when stderr is a terminal and the result
    is for a person (`machine_output`: JSON, which a program reads, gets none unasked)."""
    tty = sys.stderr.isatty()
    if requested:
        return Progress(tty, delay=1.0 if tty else 0.0, stages=stages)
    return Progress(tty, stages=stages) if tty and not machine_output else None


__all__ = ["Progress", "for_command"]
