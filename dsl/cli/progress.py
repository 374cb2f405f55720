"""A status line on stderr for commands that search for more than a second (`limits`, `plan`):
rewritten in place on a terminal, a line per stage elsewhere (`--progress`); results stay on
stdout."""

from __future__ import annotations

import sys
import time


class Progress:
    """Call with a message (`"fsdp-tp (X=2048 Y=4): 3 of 8"`); `done()` clears the line.
    Nothing is shown before `delay` seconds have passed, so a quick run prints nothing."""

    def __init__(self, tty: bool, delay: float = 1.0) -> None:
        self.tty, self.last, self.start, self.delay = tty, "", time.monotonic(), delay
        self.shown = False

    def __call__(self, message: str) -> None:
        elapsed = time.monotonic() - self.start
        if elapsed < self.delay:
            return
        self.shown = True
        if self.tty:
            sys.stderr.write(f"\r\033[K[{elapsed:5.1f}s] {message}")
            sys.stderr.flush()
            return
        head = message.split(":")[0]
        if head != self.last:
            self.last = head
            print(f"[{elapsed:5.1f}s] {head}", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.tty and self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def for_command(requested: bool, machine_output: bool = False) -> Progress | None:
    """A `Progress` when `--progress` asks for one, or when stderr is a terminal and the result
    is for a person (`machine_output`: JSON, which a program reads, gets none unasked)."""
    tty = sys.stderr.isatty()
    if requested:
        return Progress(tty, delay=1.0 if tty else 0.0)
    return Progress(tty) if tty and not machine_output else None


__all__ = ["Progress", "for_command"]
