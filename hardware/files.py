"""Reading a chip file the user named: a regular file, UTF-8, at most `MAX_CHIP_BYTES`.

The same rules as `shardc.driver.files.read_text` (hardware/ imports nothing above it, so the few
lines are repeated here; tests/lang/test_boundaries.py checks that the two limits agree).
"""

from __future__ import annotations

import os
import stat

from shardc.hardware.schema import HardwareError

MAX_CHIP_BYTES = 1 * 2**20
"""A chip TOML is read up to this many bytes; equals `shardc.lang.input_limits.MAX_CONFIG_BYTES`."""


def read_chip_file(path: str) -> str:
    """The text of the chip file `path`; a FIFO, a device or a directory is refused before
    anything is read, so no chip file can block or fill memory.

    >>> read_chip_file("/dev/zero")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shardc.hardware.schema.HardwareError: /dev/zero: not a regular file ...
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise HardwareError(f"{path}: no such chip file", path=path) from None
    except OSError as exc:
        raise HardwareError(
            f"{path}: cannot read chip file: {exc.strerror or exc}", path=path
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise HardwareError(f"{path}: is a directory, not a chip file", path=path)
        if not stat.S_ISREG(mode):
            raise HardwareError(
                f"{path}: not a regular file (a FIFO, socket or device); give a chip TOML file",
                path=path,
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_CHIP_BYTES + 1)
    except OSError as exc:
        raise HardwareError(
            f"{path}: cannot read chip file: {exc.strerror or exc}", path=path
        ) from None
    finally:
        os.close(fd)
    if len(data) > MAX_CHIP_BYTES:
        raise HardwareError(
            f"{path}: larger than the limit of {MAX_CHIP_BYTES // 2**20} MiB for a chip file",
            path=path,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HardwareError(
            f"{path}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})",
            path=path,
        ) from None
