"""Reading programs and writing results for the CLI: bounded reads of regular files or standard
input only, and writes that fail with a message naming the flag, never a traceback, never over
one of the command's own inputs or onto a FIFO or device, and always whole (a temporary file in
the target's folder, then a rename). Every file a user names for output goes through here."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from shardc.lang.input_limits import MAX_SOURCE_BYTES
from shardc.lang.quoting import quoted


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
                raise CliIOError(
                    f"cannot read {what} {name}: not a regular file (a FIFO, socket "
                    "or device); give a file, or '-' for standard input"
                )
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
        raise CliIOError(
            f"{what} {name} is not UTF-8 text (byte {exc.start}: "
            f"{data[exc.start : exc.start + 1]!r})"
        ) from None


def check_writable(path: str, *, flag: str, inputs: tuple[str | None, ...] = ()) -> Path:
    """The file `path` names for the option `flag`, symlinks resolved, or CliIOError: refused
    when it is a directory, a FIFO, a socket or a device, when it resolves to one of `inputs`
    (the program, a chip file, a model card; '-' and None are skipped), or when its folder does
    not exist. Called before a long computation, and again by the writers.

    >>> check_writable("/dev/null", flag="-o")
    Traceback (most recent call last):
    ...
    shardc.driver.files.CliIOError: -o '/dev/null' is not a regular file (a FIFO, socket or
    device); give a file name
    """
    shown = quoted(path)
    if not path or path.endswith(("/", os.sep)):
        raise CliIOError(f"{flag} {shown} names a folder; give a file name")
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise CliIOError(f"{flag} {shown}: cannot write: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise CliIOError(f"{flag} {shown} is a directory; give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        raise CliIOError(
            f"{flag} {shown} is not a regular file (a FIFO, socket or device); give a file name"
        )
    for name in inputs:
        if name is None or name == "-":
            continue
        if _same_file(target, name):
            raise CliIOError(
                f"{flag} {shown} is the input {quoted(name)}; refusing to overwrite it"
            )
    if not target.parent.is_dir():
        folder = os.path.dirname(path) or "."
        raise CliIOError(f"{flag} {shown}: the folder {quoted(folder)} does not exist")
    return target


def chip_path(hw: str | None) -> str | None:
    """`--hw` when it names a chip file (a path, as `shardc.hardware.load` reads it), else None:
    the input a write must not overwrite (`tpu-v5e` names a shipped chip, not ./tpu-v5e).

    >>> chip_path("tpu-v5e"), chip_path("chips/mine.toml")
    (None, 'chips/mine.toml')
    """
    if hw and (hw.endswith(".toml") or "/" in hw or os.sep in hw):
        return hw
    return None


def _same_file(target: Path, name: str) -> bool:
    """Whether writing `target` (already resolved) would overwrite the input `name`: the same
    path once symlinks are resolved, or the same file (a hard link)."""
    try:
        if Path(os.path.realpath(name)) == target:
            return True
        return target.exists() and os.path.exists(name) and os.path.samefile(target, name)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def atomic_path(
    path: str, *, flag: str = "-o", inputs: tuple[str | None, ...] = ()
) -> Iterator[str]:
    """A temporary file's name in `path`'s folder (same suffix) to write the whole output to;
    on success it replaces `path` in one `os.replace`, so a reader, or a concurrent run writing
    the same file, sees the old file or a whole new one, never a torn one. On any error the
    temporary file is removed and `path` is left as it was.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with atomic_path(os.path.join(d, "r.txt")) as tmp:
    ...     _ = Path(tmp).write_text("whole")
    >>> Path(d, "r.txt").read_text(), sorted(os.listdir(d))
    ('whole', ['r.txt'])
    """
    target = check_writable(path, flag=flag, inputs=inputs)
    try:
        fd, tmp = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=f".tmp{target.suffix}"
        )
    except OSError as exc:
        raise CliIOError(f"{flag} {quoted(path)}: cannot write: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        yield tmp
        try:
            os.chmod(tmp, _mode_for(target))
            os.replace(tmp, target)
        except OSError as exc:
            raise CliIOError(
                f"{flag} {quoted(path)}: cannot write: {exc.strerror or exc}"
            ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _mode_for(target: Path) -> int:
    """The permissions the output gets: the file's own if it exists, else what `open` would
    give a new file (0o666 less the umask); `mkstemp` makes its file 0o600."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_text(
    path: str, text: str, *, flag: str = "-o", inputs: tuple[str | None, ...] = ()
) -> None:
    """Write `text` (UTF-8) to `path` for the option `flag`, atomically (`atomic_path`), after
    the checks of `check_writable`."""
    with atomic_path(path, flag=flag, inputs=inputs) as tmp:
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise CliIOError(
                f"{flag} {quoted(path)}: cannot write: {exc.strerror or exc}"
            ) from None
