"""The server's side of the compile worker (worker.py): one child process at a time, compiles
one after another, each within a time budget; a compile past its budget, or cancelled while it
runs, ends the child, and the next compile starts a fresh one."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from typing import Any

MAX_ANSWER_BYTES = 1 << 28
"""One answer of the worker (diagnostics and hover rows of one document) at most."""
START_SECONDS = 300.0
"""Wall-clock time the worker may take to start (its imports), however loaded the machine."""
_SIGXCPU = int(getattr(signal, "SIGXCPU", 24))


def _failure(message: str) -> dict[str, Any]:
    return {
        "diagnostics": [
            {
                "severity": "error",
                "code": "",
                "message": message,
                "label": "",
                "notes": [],
                "span": [0, 0, 0, 0],
            }
        ],
        "hover": {},
    }


class Compiler:
    """Compiles documents in a worker process: `await compile(uri, text)` gives the worker's
    answer, or one diagnostic saying why there is none (the budget ran out, the worker ended).

    `budget` is CPU seconds per compile (the worker enforces it); the wall-clock cap, which
    catches a compile that waits instead of computing, is four times that plus ten seconds, so
    that a loaded machine does not cut a compile short. Both start once the worker has
    imported the compiler (`START_SECONDS` at most)."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.wall = 4 * budget + 10
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._reaping: set[asyncio.Task[Any]] = set()
        self._ready = False

    async def start(self) -> None:
        """Start the worker unless one is running (its imports overlap with the editor's
        start-up, so the first compile waits less)."""
        if self._proc is None or self._proc.returncode is not None:
            self._ready = False
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "shardc.tools.lsp.worker",
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                limit=MAX_ANSWER_BYTES,
            )

    def stop(self) -> None:
        """End the worker now (a compile in flight is lost)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            task = asyncio.ensure_future(proc.wait())
            self._reaping.add(task)
            task.add_done_callback(self._reaping.discard)

    async def compile(self, uri: str, text: str) -> dict[str, Any]:
        """The worker's answer for `text`. Cancelling the caller ends the worker's compile."""
        async with self._lock:
            try:
                return await self._compile(uri, text)
            except asyncio.CancelledError:
                self.stop()
                raise

    async def _compile(self, uri: str, text: str) -> dict[str, Any]:
        await self.start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        if not self._ready:  # the worker's imports count against no budget
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), START_SECONDS)
            except (TimeoutError, ValueError, asyncio.LimitOverrunError):
                line = b""
            self._ready = line == b'{"ready": true}\n'
            if not self._ready:
                self.stop()
                return _failure("the compiler did not start")
        request = json.dumps({"uri": uri, "text": text, "budget": self.budget}) + "\n"
        line, timed_out = b"", False
        try:
            proc.stdin.write(request.encode("utf-8", "surrogatepass"))
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), self.wall)
        except TimeoutError:
            timed_out = True  # the wall-clock cap
        except (ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
        if line.endswith(b"\n"):
            try:
                answer = json.loads(line)
                if isinstance(answer, dict):
                    if answer.get("restart"):
                        self.stop()
                    return answer
            except ValueError:
                pass
        if not timed_out:  # the worker ended: how?
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                pass
        self.stop()
        if timed_out or proc.returncode == -_SIGXCPU:  # or the worker's CPU budget ran out
            return _failure(
                f"the compile ran past its time budget of {self.budget:g} s "
                "and was stopped (`shardc lsp --time-budget SECONDS` sets it)"
            )
        return _failure(f"the compiler stopped unexpectedly (exit status {proc.returncode})")


__all__ = ["Compiler"]
