"""Reading programs and writing results for the CLI: bounded reads of regular files or standard
input only, and writes that fail with a message naming the flag, never a traceback, and never
over one of the command's own inputs."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from shardc.lang.input_limits import MAX_SOURCE_BYTES


class CliIOError(Exception):
    """A file the user named cannot be read or written; the message names it (and the flag)."""


def read_text(path: str, *, what: str = "program", limit: int = MAX_SOURCE_BYTES) -> str:
    """The text of `path` ('-' is standard input): a regular file, UTF-8, at most `limit` bytes.

    A FIFO, a device such as /dev/zero, or a directory is refused before anything is read, so no
    input can block or fill memory.
    """
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
        name = "standard input"
    else:
        name = repr(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise CliIOError(f"cannot read {what} {name}: {exc.strerror or exc}") from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise CliIOError(f"cannot read {what} {name}: it is a directory")
            if not stat.S_ISREG(mode):
                raise CliIOError(f"cannot read {what} {name}: not a regular file (a FIFO, socket "
                                 "or device); give a file, or '-' for standard input")
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(limit + 1)
        except OSError as exc:
            raise CliIOError(f"cannot read {what} {name}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
    if len(data) > limit:
        raise CliIOError(f"{what} {name} is larger than the limit of {limit // 2**20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliIOError(f"{what} {name} is not UTF-8 text (byte {exc.start}: "
                         f"{data[exc.start:exc.start + 1]!r})") from None


def write_text(path: str, text: str, *, flag: str = "-o", inputs: tuple[str, ...] = ()) -> None:
    """Write `text` to `path` for the option `flag`; refuse to overwrite any of `inputs`."""
    target = Path(path)
    for name in inputs:
        if name == "-":
            continue
        try:
            if target.exists() and Path(name).exists() and os.path.samefile(target, name):
                raise CliIOError(f"{flag} {path!r} is the input {name!r}; refusing to overwrite "
                                 "it")
        except OSError:
            continue
    if target.is_dir():
        raise CliIOError(f"{flag} {path!r} is a directory; give a file name")
    if not target.parent.exists() and str(target.parent) not in ("", "."):
        raise CliIOError(f"{flag} {path!r}: the folder {str(target.parent)!r} does not exist")
    try:
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise CliIOError(f"{flag} {path!r}: cannot write: {exc.strerror or exc}") from None


def check_writable(path: str, *, flag: str, inputs: tuple[str, ...] = ()) -> None:
    """Fail early, before a long computation, when `path` cannot be written (for a plot)."""
    target = Path(path)
    for name in inputs:
        if name != "-" and target.exists() and Path(name).exists():
            try:
                if os.path.samefile(target, name):
                    raise CliIOError(f"{flag} {path!r} is the input {name!r}; refusing to "
                                     "overwrite it")
            except OSError:
                continue
    if target.is_dir():
        raise CliIOError(f"{flag} {path!r} is a directory; give a file name")
    if not target.parent.exists() and str(target.parent) not in ("", "."):
        raise CliIOError(f"{flag} {path!r}: the folder {str(target.parent)!r} does not exist")
