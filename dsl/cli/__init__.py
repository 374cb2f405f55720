"""The `shardc` command line: argparse and dispatch only (one module per command group); results
on stdout, diagnostics on stderr."""

from __future__ import annotations

import atexit
import os
import sys
import threading

from shardc.cli import app

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """The `shardc` command, as the console script and `python -m shardc` run it:
    `shardc.cli.app.main` (which the tests and notebooks call in-process), then the end of
    the process without freeing its objects one by one.

    Freeing them is the interpreter's last step and a seventh of a 2,000-einsum compile (the
    program, the report, SymPy's caches); mypy ends the same way. Output is flushed and the
    `atexit` functions run first, so nothing observable changes; where another thread is still
    running, or a flush fails (a closed pipe), the process ends as usual instead. A usage error
    (argparse's or the CLI's `SystemExit` with a status) ends the same way: the interpreter's
    own ending would free the same objects, a tenth of a second of CPU before exit status 2.
    """
    try:
        code = app.main(argv)
    except SystemExit as exc:
        if exc.code is not None and not isinstance(exc.code, int):
            raise  # `sys.exit("message")`: the interpreter prints it
        code = exc.code or 0
    if threading.active_count() == 1:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # the usual shutdown reports it, as it always has
            return code
        atexit._run_exitfuncs()  # what the interpreter would run next (no public spelling)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return code
