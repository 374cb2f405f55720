"""`shardc lsp` over stdio with a JSON-RPC client: initialize, didOpen with a broken program
(its diagnostic published with code and range), didChange to a fixed one (diagnostics
cleared), hover (the line's ops and why each collective is there), unknown methods and
malformed messages, shutdown and exit."""

from __future__ import annotations

import json
import subprocess
import sys

URI = "file:///work/t.shard"
BROKEN = "mesh X=2\ndim I=8, J=4\nA: bf16[I_X, J]\nB = gelo(A)\n"
FIXED = "mesh X=2\ndim I=8, J=4\nhardware tpu-v5e\nA: bf16[I_X, J]\nB[I, J] = gelu(A)\n"


class Client:
    def __init__(self) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "shardc", "lsp"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def raw(self, data: bytes) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, **message) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def recv(self) -> dict:
        assert self.p.stdout is not None
        length = None
        while True:
            line = self.p.stdout.readline()
            assert line, "the server closed its output"
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        assert length is not None
        return json.loads(self.p.stdout.read(length))


def test_a_session():
    c = Client()
    try:
        c.send(id=1, method="initialize", params={"capabilities": {}})
        init = c.recv()
        assert init["id"] == 1 and init["result"]["capabilities"]["hoverProvider"] is True
        c.send(method="initialized", params={})
        c.send(method="textDocument/didOpen", params={"textDocument": {
            "uri": URI, "languageId": "shard", "version": 1, "text": BROKEN}})
        (d,) = c.recv()["params"]["diagnostics"]
        assert d["code"] == "N012" and d["severity"] == 1 and "gelu" in d["message"]
        assert d["range"] == {"start": {"line": 3, "character": 4},
                              "end": {"line": 3, "character": 8}}
        c.send(id=10, method="textDocument/codeAction", params={
            "textDocument": {"uri": URI}, "range": d["range"], "context": {"diagnostics": [d]}})
        (fix,) = c.recv()["result"]
        assert fix["kind"] == "quickfix" and fix["edit"]["changes"][URI] == [
            {"range": d["range"], "newText": "gelu"}]
        # garbage between messages is skipped, the session goes on
        c.raw(b"Content-Length: nope\r\n\r\n")
        c.raw(b"Content-Length: 5\r\n\r\n{oops")
        c.send(method="textDocument/didChange", params={
            "textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": FIXED}]})
        assert c.recv()["params"] == {"uri": URI, "diagnostics": []}
        c.send(id=2, method="textDocument/hover", params={
            "textDocument": {"uri": URI}, "position": {"line": 4, "character": 1}})
        hover = c.recv()["result"]["contents"]["value"]
        assert "tpu-v5e" in hover and "`AllGather`" in hover and "why: the left-hand side" in hover
        c.send(id=3, method="textDocument/hover", params={
            "textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}})
        assert c.recv()["result"] is None  # `mesh` compiles to no op
        c.send(id=4, method="workspace/symbol", params={})
        assert c.recv()["error"]["code"] == -32601
        c.send(id=5, method="shutdown")
        assert c.recv() == {"jsonrpc": "2.0", "id": 5, "result": None}
        c.send(method="exit")
        assert c.p.wait(timeout=30) == 0
    finally:
        if c.p.poll() is None:
            c.p.kill()


def test_the_end_of_input_without_shutdown_is_exit_1():
    p = subprocess.run([sys.executable, "-m", "shardc", "lsp"], input=b"", capture_output=True,
                       timeout=60)
    assert p.returncode == 1 and p.stdout == b""
