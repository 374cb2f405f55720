"""The language server as an editor sees it: the wall time from starting `shardc lsp` to its
answer to `initialize`, and from a `didOpen` (then from each `didChange`) to the
`publishDiagnostics` it causes; medians.

Usage: python benchmarks/bench_lsp.py [--repeat 5] [--statements 200] [--server CMD]

`--server` runs another server command instead of `python -m shardc lsp` (an older version,
say), for a comparison on the same machine at the same time.

Documents: programs/mlp-fsdp-train.shard (a book example) and `gen.program(n)` (n generated
statements, every one planning collectives). A change appends a comment, so each change
compiles the same program again (the server has no cache keyed by the text).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gen import program  # noqa: E402

URI = "file:///bench.shard"


SERVER = [sys.executable, "-m", "shardc", "lsp"]


class Client:
    def __init__(self) -> None:
        self.p = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(self, **message: object) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.p.stdin is not None
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def recv(self) -> dict:
        assert self.p.stdout is not None
        length = 0
        while (line := self.p.stdout.readline()) not in (b"\r\n", b"\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(length))

    def wait_for(self, method: str) -> dict:
        while (m := self.recv()).get("method") != method:
            pass
        return m

    def close(self) -> None:
        self.send(id=99, method="shutdown")
        self.send(method="exit")
        self.p.wait(timeout=60)


def one_session(text: str, changes: int) -> tuple[float, float, list[float]]:
    t0 = time.perf_counter()
    c = Client()
    c.send(id=1, method="initialize", params={"processId": None, "capabilities": {}})
    while c.recv().get("id") != 1:
        pass
    startup = time.perf_counter() - t0
    c.send(method="initialized", params={})
    t0 = time.perf_counter()
    c.send(
        method="textDocument/didOpen",
        params={"textDocument": {"uri": URI, "languageId": "shard", "version": 1, "text": text}},
    )
    c.wait_for("textDocument/publishDiagnostics")
    opened = time.perf_counter() - t0
    changed = []
    for k in range(changes):
        t0 = time.perf_counter()
        c.send(
            method="textDocument/didChange",
            params={
                "textDocument": {"uri": URI, "version": k + 2},
                "contentChanges": [{"text": text + f"# edit {k}\n"}],
            },
        )
        c.wait_for("textDocument/publishDiagnostics")
        changed.append(time.perf_counter() - t0)
    c.close()
    return startup, opened, changed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--statements", type=int, default=200)
    ap.add_argument("--server", help="the server's command line (default: python -m shardc lsp)")
    args = ap.parse_args()
    if args.server:
        SERVER[:] = shlex.split(args.server)
    docs = {
        "mlp-fsdp-train.shard": (ROOT / "programs/mlp-fsdp-train.shard").read_text(),
        f"generated, {args.statements} statements": program(args.statements),
    }
    for name, text in docs.items():
        runs = [one_session(text, 3) for _ in range(args.repeat)]
        med = statistics.median
        print(
            f"{name}: initialize {med(r[0] for r in runs) * 1000:.0f} ms, "
            f"didOpen -> diagnostics {med(r[1] for r in runs) * 1000:.0f} ms, "
            f"didChange -> diagnostics {med(x for r in runs for x in r[2]) * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
