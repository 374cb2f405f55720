"""Run one hostile case in its own process, under a CPU-time and an address-space limit, and say
what is wrong with the outcome (nothing, when the case passes).

A case passes when shardc exits with one of the allowed codes (0, 1 or 2; never 3, the internal
error), prints no traceback, names the diagnostic code or flag the case expects, leaves no file
the payload would have created, prints no NaN, infinite or negative quantity, and stays within
`CPU_LIMIT_S` seconds of CPU and `MEMORY_LIMIT_BYTES` of resident memory.

Time is the child's own CPU time (user + system, from `os.wait4`), not the wall clock: on a
shared machine under load a case waits for a core without doing more work, and a wall-clock
limit failed cases that were fine. `WALL_LIMIT_S` only catches a case that blocks without
computing (a FIFO, a lock: no CPU used for `IDLE_S`); the kernel stops a runaway at
`CPU_KILL_S` of CPU.

The process is forked from one that has already imported shardc (`zygote.py`), then sets its own
limits and runs the `shardc` entry point: the import is paid once, not once per case, and a
case's CPU time and peak memory are those of its own work.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.paths import ROOT

CPU_LIMIT_S = 10.0
"""The CPU seconds (user + system, every thread of the child) a case may use."""
CPU_KILL_S = 20
"""RLIMIT_CPU in the child: past it the kernel ends the process (SIGXCPU, then SIGKILL)."""
WALL_LIMIT_S = 120.0
"""Only to catch a hang: a case still running after this many seconds of wall clock, and idle
(no CPU used for `IDLE_S`: blocked, not waiting for a core), is killed."""
IDLE_S = 20.0
WALL_HARD_LIMIT_S = 900.0
"""A case is killed after this long whatever it does (a machine at load 15 on 2 cores ran
cases 20 times slower than their CPU time)."""
MEMORY_LIMIT_BYTES = 1 << 30
ADDRESS_SPACE_BYTES = 6 << 30
"""The hard limit: a runaway allocation fails inside the child instead of swapping the machine.
It is larger than the memory bound because numpy and XLA reserve address space they never touch;
the bound itself is checked on the child's peak resident set."""

BAD_NUMBER = re.compile(
    r"(?<![A-Za-z_])(nan|NaN|-?inf(inity)?|zoo|-\d[\d.]*\s*(s|us|ms|ns|B|kB|MB|GB))\b"
)
"""A printed quantity that must never appear: NaN, infinity, SymPy's complex infinity, or a
negative time or size."""


@dataclass(frozen=True)
class Case:
    """One hostile input: shardc's arguments (with `{tmp}` for the case's own folder), the files
    to create there first, and what is allowed to come back."""

    name: str
    argv: tuple[str, ...]
    files: dict[str, str | bytes] = field(default_factory=dict)
    exits: tuple[int, ...] = (1, 2)
    expect: tuple[str, ...] = ()
    """Strings that must all appear on stderr (a diagnostic code like `error[N014]`, a flag)."""
    stdout_expect: tuple[str, ...] = ()
    stdout_forbid: tuple[str, ...] = ()
    """Strings that must not appear on stdout (a collective that should not be there)."""
    stderr_forbid: tuple[str, ...] = ()
    """Strings that must not appear on stderr (`RuntimeWarning`: numpy's, leaked)."""
    stderr_limit: int | None = None
    """The most characters stderr may hold: a huge input must not be echoed in full."""
    stdin: bytes | None = None
    needs: tuple[str, ...] = ()
    """Optional packages the case needs (`jax` for xla-check past its flags): without them the
    case is skipped, as the README's `pip install '.[test]'` installs no jax."""
    must_not_exist: tuple[str, ...] = ("pwned",)
    """Files (relative to the case folder) that a successful payload would have created."""
    setup: str = ""
    """A named setup step for inputs a table cannot hold: `fifo`, `dir`, `symlink:LINK->TARGET`."""
    check_numbers: bool = True
    after: tuple[str, ...] = ()
    """A command to run after shardc (say, the exported script), with `{tmp}` substituted; it
    may fail, but must not create the payload's file."""


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    """Wall clock, for the table only; the limit is on `cpu_seconds`."""
    peak_bytes: int
    problems: list[str]
    cpu_seconds: float = 0.0
    """The child's user + system time."""


def _materialise(case: Case, tmp: Path) -> None:
    for rel, content in case.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    if case.setup == "fifo":
        os.mkfifo(tmp / "fifo.shard")
    elif case.setup == "dir":
        (tmp / "adir").mkdir()
    elif case.setup.startswith("symlink:"):  # "symlink:LINK->TARGET", both in the case folder
        link, target = case.setup.removeprefix("symlink:").split("->")
        os.symlink(target, tmp / link)


def _wait(
    pid: int, sock: socket.socket, feed, stdin: bytes | None, stdout, stderr
) -> tuple[int, int, float, bool, bytes, bytes]:
    """(exit code, the child's own peak resident bytes, its CPU seconds, hung?, stdout,
    stderr) of the zygote's child `pid`, whose end the zygote reports on `sock`."""
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(stream, key: str) -> None:
        for block in iter(lambda: stream.read(65536), b""):
            chunks[key].append(block)

    readers = [
        threading.Thread(target=drain, args=(stdout, "out"), daemon=True),
        threading.Thread(target=drain, args=(stderr, "err"), daemon=True),
    ]
    for t in readers:
        t.start()
    if feed is not None:
        try:
            feed.write(stdin or b"")
            feed.close()
        except BrokenPipeError:
            pass
    start = time.monotonic()
    seen, seen_at = 0.0, start  # the child's CPU seconds when last seen to grow, and when
    timed_out = False
    peak = 0
    sock.settimeout(0.02)
    answer = b""
    while not answer.endswith(b"\n"):
        peak = max(peak, _high_water(pid))
        try:
            block = sock.recv(4096)
        except TimeoutError:
            block = None
        if block == b"":
            raise RuntimeError("tests/hostile/zygote.py ended mid-case")
        if block:
            answer += block
            continue
        now = time.monotonic()
        cpu = _cpu_seconds(pid)
        if cpu is not None and cpu > seen + 0.01:
            seen, seen_at = cpu, now
        if not timed_out and (
            now - start > WALL_HARD_LIMIT_S
            or (now - start > WALL_LIMIT_S and now - seen_at > IDLE_S)
        ):
            timed_out = True
            os.kill(pid, signal.SIGKILL)
    ended = json.loads(answer)
    code = os.waitstatus_to_exitcode(ended["status"])
    for t in readers:
        t.join(5)
    return (
        code,
        # wait4's ru_maxrss may count the resident set of the process the child was forked
        # from: the child's own high-water mark, read while it runs, instead
        peak or ended["maxrss"] * 1024,
        ended["cpu"],
        timed_out,
        b"".join(chunks["out"]),
        b"".join(chunks["err"]),
    )


def _high_water(pid: int) -> int:
    """The running child's peak resident bytes so far (VmHWM of Linux's /proc), or 0."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # kB
    return 0


def _cpu_seconds(pid: int) -> float | None:
    """The running child's user + system seconds so far (Linux's /proc), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state is fields[0]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _substitute(args: tuple[str, ...], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)).replace("{root}", str(ROOT)) for a in args]


def run(case: Case) -> Outcome:
    """Run `case` in a fresh temporary folder and judge it."""
    with tempfile.TemporaryDirectory(prefix="shardc-hostile-") as d:
        tmp = Path(d)
        _materialise(case, tmp)
        env = _env()
        start = time.monotonic()
        code, peak, cpu, timed_out, out, err = _ZYGOTE.run(
            _substitute(case.argv, tmp), tmp, case.stdin
        )
        seconds = time.monotonic() - start
        for cmd in case.after:
            subprocess.run(
                _substitute((cmd,), tmp)[0],
                shell=True,
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=WALL_LIMIT_S,
            )
        outcome = Outcome(
            None if timed_out else code,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            seconds,
            peak,
            [],
            cpu,
        )
        outcome.problems = judge(case, outcome, tmp, timed_out)
        return outcome


def _env() -> dict[str, str]:
    env = dict(
        os.environ,
        OPENBLAS_NUM_THREADS="1",
        PYTHONPATH=str(ROOT),
        XLA_FLAGS="--xla_force_host_platform_device_count=8",
    )
    env.pop("SHARDC_DEBUG", None)
    return env


class Zygote:
    """`tests/hostile/zygote.py`, started on first use: it forks each case's process from one
    that has already imported shardc (see there). `close()` ends it; so does the end of this
    process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._dir: tempfile.TemporaryDirectory | None = None

    def _socket(self) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._dir = tempfile.TemporaryDirectory(prefix="shardc-zygote-")
                path = str(Path(self._dir.name) / "socket")
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.hostile.zygote", path],
                    cwd=ROOT,
                    env=_env(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
                assert self._proc.stdout is not None
                if self._proc.stdout.readline() != b"ready\n":
                    raise RuntimeError("tests/hostile/zygote.py did not start")
                atexit.register(self.close)
            assert self._dir is not None
            return str(Path(self._dir.name) / "socket")

    def close(self) -> None:
        """End the zygote (after the cases it runs now), so that its CPU time is counted."""
        with self._lock:
            if self._proc is not None:
                assert self._proc.stdin is not None and self._proc.stdout is not None
                self._proc.stdin.close()
                self._proc.wait()
                self._proc.stdout.close()
                self._proc = None
            if self._dir is not None:
                self._dir.cleanup()
                self._dir = None

    def run(
        self, argv: list[str], cwd: Path, stdin: bytes | None
    ) -> tuple[int, int, float, bool, bytes, bytes]:
        """Run shardc with `argv` in `cwd` in a forked process; see `_wait`."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self._socket())
        in_r, in_w = os.pipe() if stdin is not None else (os.open(os.devnull, os.O_RDONLY), -1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = json.dumps(
            {
                "argv": argv,
                "cwd": str(cwd),
                "as": ADDRESS_SPACE_BYTES,
                "cpu": CPU_KILL_S,
            }
        ).encode()
        try:
            socket.send_fds(sock, [struct.pack("!I", len(request))], [in_r, out_w, err_w])
            sock.sendall(request)
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        with (
            sock,
            open(out_r, "rb") as out,
            open(err_r, "rb") as err,
            open(in_w, "wb") if in_w >= 0 else contextlib.nullcontext() as feed,
        ):
            pid = struct.unpack("!i", _read_exactly(sock, 4))[0]
            return _wait(pid, sock, feed, stdin, out, err)


_ZYGOTE = Zygote()
close = _ZYGOTE.close


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        block = sock.recv(n - len(data))
        if not block:
            raise RuntimeError("tests/hostile/zygote.py ended mid-case")
        data += block
    return data


def judge(case: Case, o: Outcome, tmp: Path, timed_out: bool) -> list[str]:
    problems = []
    if timed_out:
        problems.append(
            f"still running after {o.seconds:.0f} s of wall clock, "
            f"{o.cpu_seconds:.1f} s of CPU: blocked (killed)"
        )
    elif o.cpu_seconds > CPU_LIMIT_S:
        problems.append(
            f"used {o.cpu_seconds:.1f} s of CPU, more than {CPU_LIMIT_S:.0f} s"
            + (" (stopped by RLIMIT_CPU)" if o.cpu_seconds >= CPU_KILL_S else "")
        )
    elif o.code not in case.exits:
        problems.append(f"exit code {o.code}, expected one of {case.exits}")
    if o.peak_bytes > MEMORY_LIMIT_BYTES:
        problems.append(
            f"peak memory {o.peak_bytes / 2**20:.0f} MiB > {MEMORY_LIMIT_BYTES / 2**20:.0f} MiB"
        )
    for text in (o.stdout, o.stderr):
        if "Traceback" in text or "internal error" in text:
            problems.append("crashed: " + text[-600:])
    for want in case.expect:
        if want not in o.stderr:
            problems.append(f"stderr lacks {want!r}: {o.stderr[-400:]!r}")
    for unwanted in case.stderr_forbid:
        if unwanted in o.stderr:
            problems.append(f"stderr has {unwanted!r}: {o.stderr[-400:]!r}")
    if case.stderr_limit is not None and len(o.stderr) > case.stderr_limit:
        problems.append(
            f"stderr holds {len(o.stderr):,} characters, more than "
            f"{case.stderr_limit:,}: {o.stderr[:300]!r}..."
        )
    for want in case.stdout_expect:
        if want not in o.stdout:
            problems.append(f"stdout lacks {want!r}")
    for unwanted in case.stdout_forbid:
        if unwanted in o.stdout:
            problems.append(f"stdout has {unwanted!r}")
    if case.check_numbers:
        bad = BAD_NUMBER.search(o.stdout)
        if bad:
            line = o.stdout[max(0, bad.start() - 80) : bad.end() + 20]
            problems.append(f"prints a NaN, infinite or negative quantity: {line!r}")
    for rel in case.must_not_exist:
        if (tmp / rel).exists():
            problems.append(f"the payload created {rel!r}")
    if o.code in (1, 2) and not o.stderr.strip():
        problems.append("failed without a message on stderr")
    return problems
