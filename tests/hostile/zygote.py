"""`python -m tests.hostile.zygote SOCKET`: a process that imports shardc once and forks one child
per hostile case, so that a case pays for its own work and not for importing SymPy and the
compiler again (a third of a second of CPU, 350 times).

Each child is still a process of its own: it gets the case's stdin, stdout and stderr (passed
over the Unix socket), its folder, and its own address-space and CPU limits, then runs
`sys.exit(main())` of `shardc.cli` as the console script does, interpreter shutdown included.
The zygote (single-threaded, so that forking it is safe) waits for the child and sends back its
exit status and resource usage (`os.wait4`), which the harness judges as before.

Protocol, one connection per case: the harness sends 4 bytes (the length of a JSON object
`{"argv": [...], "cwd": ..., "as": ..., "cpu": ...}`) with the three file descriptors, then the
object; the zygote answers the child's pid (4 bytes), and when the child has ended, a JSON
line `{"status": ..., "cpu": ..., "maxrss": ...}`. The zygote ends when its stdin closes.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import select
import socket
import struct
import sys
import threading

PRELOAD = (
    "shardc.cli",
    "shardc.cli.calibrate",
    "shardc.cli.derive",
    "shardc.cli.limits",
    "shardc.cli.lsp",
    "shardc.cli.plan",
    "shardc.cli.show",
    "shardc.cli.sweep",
    "shardc.cli.test",
    "shardc.cli.xla",
    "shardc.driver.api",
    "shardc.driver.report",
    "shardc.passes.objective",
    "shardc.passes.pipeline",
)
"""What `compile`, `check` and the other commands import before they read their input; never
JAX, whose threads would make forking unsafe."""


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        block = conn.recv(n - len(data))
        if not block:
            raise EOFError
        data += block
    return data


def _child(request: dict, fds: list[int]) -> None:
    """In the forked child: become the case's process (the caller then runs the CLI)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    resource.setrlimit(resource.RLIMIT_AS, (request["as"], request["as"]))
    resource.setrlimit(resource.RLIMIT_CPU, (request["cpu"], request["cpu"] + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.argv = ["-c", *request["argv"]]


def serve(path: str) -> bool:
    """Serve cases until stdin closes (False); True in a forked child, which then runs one."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    waiting: dict[int, socket.socket] = {}
    open_ = True
    while open_ or waiting:
        ready, _, _ = select.select([listener, sys.stdin] if open_ else [], [], [], 0.02)
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            open_ = False
        if listener in ready:
            conn, _ = listener.accept()
            head, fds, _, _ = socket.recv_fds(conn, 4, 3)
            head += _read(conn, 4 - len(head))
            request = json.loads(_read(conn, struct.unpack("!I", head)[0]))
            assert threading.active_count() == 1, "a zygote with threads must not fork"
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                for other in waiting.values():
                    other.close()
                _child(request, fds)
                return True
            for fd in fds:
                os.close(fd)
            conn.sendall(struct.pack("!i", pid))
            waiting[pid] = conn
        while waiting:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if not pid:
                break
            conn = waiting.pop(pid)
            answer = {
                "status": status,
                "cpu": usage.ru_utime + usage.ru_stime,
                "maxrss": usage.ru_maxrss,
            }
            try:
                conn.sendall(json.dumps(answer).encode() + b"\n")
            except OSError:
                pass
            conn.close()
    return False


WARM = "mesh X=2\ndim B=8, D=8\nIn: bf16[B_X, D]\nOut[B, D] = AllGather_X(In)\n"
"""A program `warm` compiles before the first fork."""


def warm() -> None:
    """Compile `WARM` once, as a case would (`shardc.cli.app.main`): what the commands
    import only after reading their input (the parser and its LALR tables, the validation
    passes, the chip files, the renderers) is then in every child, as `PRELOAD` is. Without it
    each child would import them again, about a third of a case's CPU. What a case does with its
    own input, and the limits it runs under, are unchanged."""
    import tempfile

    from shardc.cli.app import main

    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "warm.shard")
        with open(program, "w", encoding="utf-8") as f:
            f.write(WARM)
        if main(["compile", program, "-o", os.path.join(tmp, "out")]) != 0:
            raise RuntimeError("tests/hostile/zygote.py: the warm-up compile failed")


if __name__ == "__main__":
    for name in PRELOAD:
        importlib.import_module(name)
    warm()
    if serve(sys.argv[1]):
        from shardc.cli import main

        sys.exit(main())
