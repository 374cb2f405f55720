"""`shardc lsp` over stdio, driven as an editor drives it (a JSON-RPC client on pipes): a
session (diagnostics, quick fix, hover, shutdown), columns in UTF-16 and UTF-8 after `·`, the
protocol's rules (requests before `initialize`, client responses, `exit` without `shutdown`),
hostile frames (oversize, nested 100,000 deep, a 5,000-digit id), a compile past its time
budget, cancellation, and a fuzz of JSON-RPC frames after which `shutdown` is still answered.

Every read has a timeout and every server is killed at the end, so a broken server fails a
test instead of hanging the suite."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from benchmarks.gen import shapes
from shardc.tools.lsp.framing import (
    MAX_MESSAGE_BYTES,
    LongNumber,
    Oversize,
    ParseError,
    decode,
    read_frame,
)

URI = "file:///work/t.shard"
BROKEN = "mesh X=2\ndim I=8, J=4\nA: bf16[I_X, J]\nB = gelo(A)\n"
FIXED = "mesh X=2\ndim I=8, J=4\nhardware tpu-v5e\nA: bf16[I_X, J]\nB[I, J] = gelu(A)\n"
DOT = "mesh X=2\ndim I=8, J=4, K=2\nhardware tpu-v5e\nA: f32[I, J]\nB: f32[J, K]\nC = A ·_J Bq\n"
"""`Bq` (undefined, "did you mean 'B'?") at code points 10-12 of line 5, after a `·`: one
UTF-16 code unit, two UTF-8 bytes."""
TIMEOUT = 120.0
"""Seconds any one answer may take (generous: the suite runs on loaded machines)."""


def frame(message: Any, ascii: bool = True) -> bytes:
    body = json.dumps(message, ensure_ascii=ascii).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Client:
    """A server process and a thread that reads its frames into a queue (so the server never
    blocks on a full pipe)."""

    def __init__(self, *args: str) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "shardc", "lsp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.inbox: queue.Queue[dict | None] = queue.Queue()
        self.backlog: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.p.stdout
        assert out is not None
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b"\n"):
                if not line:
                    self.inbox.put(None)
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert length is not None
            self.inbox.put(json.loads(out.read(length)))

    def raw(self, data: bytes) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, ascii: bool = True, **message: Any) -> None:
        self.raw(frame({"jsonrpc": "2.0", **message}, ascii))

    def recv(self, timeout: float = TIMEOUT) -> dict:
        message = self.inbox.get(timeout=timeout)
        assert message is not None, "the server closed its output"
        return message

    def wait_for(self, method: str | None = None, ident: Any = None) -> dict:
        """The first message not yet taken with this method (a notification or a request of
        the server's) or, without a method, this id (a response); others stay for later."""

        def wanted(m: dict) -> bool:
            return (
                m.get("method") == method
                if method is not None
                else ("method" not in m and m.get("id") == ident)
            )

        for k, m in enumerate(self.backlog):
            if wanted(m):
                return self.backlog.pop(k)
        while not wanted(m := self.recv()):
            self.backlog.append(m)
        return m

    def request(self, ident: Any, method: str, params: Any = None) -> dict:
        self.send(id=ident, method=method, **({} if params is None else {"params": params}))
        return self.wait_for(ident=ident)

    def initialize(self, encodings: list[str] | None = None) -> dict:
        caps: dict[str, Any] = {}
        if encodings is not None:
            caps["general"] = {"positionEncodings": encodings}
        result = self.request(1, "initialize", {"processId": None, "capabilities": caps})
        self.send(method="initialized", params={})
        return result

    def open(self, text: str, uri: str = URI, ascii: bool = True) -> None:
        self.send(
            ascii,
            method="textDocument/didOpen",
            params={
                "textDocument": {"uri": uri, "languageId": "shard", "version": 1, "text": text}
            },
        )

    def finish(self) -> int:
        """`shutdown` (answered with a null result) then `exit`: the exit status."""
        assert self.request("end", "shutdown") == {"jsonrpc": "2.0", "id": "end", "result": None}
        self.send(method="exit")
        return self.p.wait(timeout=TIMEOUT)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def client():
    c = Client()
    yield c
    c.kill()


def test_a_session(client: Client) -> None:
    init = client.initialize()["result"]
    caps = init["capabilities"]
    assert caps["hoverProvider"] is True and caps["positionEncoding"] == "utf-16"
    assert init["serverInfo"]["name"] == "shardc"
    client.open(BROKEN)
    (d,) = client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"]
    assert d["code"] == "N012" and d["severity"] == 1 and "did you mean 'gelu'?" in d["message"]
    assert d["range"] == {"start": {"line": 3, "character": 4}, "end": {"line": 3, "character": 8}}
    (fix,) = client.request(
        10,
        "textDocument/codeAction",
        {"textDocument": {"uri": URI}, "range": d["range"], "context": {"diagnostics": [d]}},
    )["result"]
    assert fix["kind"] == "quickfix" and fix["edit"]["changes"][URI] == [
        {"range": d["range"], "newText": "gelu"}
    ]
    # garbage between messages is skipped, the session goes on
    client.raw(b"Content-Length: nope\r\n\r\n")
    client.raw(b"Content-Length: 5\r\n\r\n{oops")
    assert client.wait_for(ident=None)["error"]["code"] == -32700
    client.send(
        method="textDocument/didChange",
        params={"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": FIXED}]},
    )
    assert client.wait_for("textDocument/publishDiagnostics")["params"] == {
        "uri": URI,
        "diagnostics": [],
    }
    hover = client.request(
        2,
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 4, "character": 1}},
    )["result"]
    text = hover["contents"]["value"]
    assert "tpu-v5e" in text and "`AllGather`" in text and "why: the left-hand side" in text
    assert hover["range"] == {
        "start": {"line": 4, "character": 0},
        "end": {"line": 4, "character": len("B[I, J] = gelu(A)")},
    }
    assert (
        client.request(
            3,
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
        )["result"]
        is None
    )
    assert client.request(4, "workspace/symbol", {"query": ""})["error"]["code"] == -32601
    assert client.request(5, "shardc/unknown")["error"]["code"] == -32601
    client.send(method="textDocument/didClose", params={"textDocument": {"uri": URI}})
    assert client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"] == []
    assert client.finish() == 0


@pytest.mark.parametrize(
    "offered,encoding,start,end",
    [
        (None, "utf-16", 10, 12),
        (["utf-16"], "utf-16", 10, 12),
        (["utf-16", "utf-8"], "utf-8", 11, 13),
        (["utf-8"], "utf-8", 11, 13),
    ],
)
def test_columns_after_a_middle_dot(client: Client, offered, encoding, start, end) -> None:
    """UTF-16 unless the client offers UTF-8; diagnostic ranges, quick-fix edits, hover ranges
    and incoming edit ranges all count in the negotiated units."""
    assert client.initialize(offered)["result"]["capabilities"]["positionEncoding"] == encoding
    client.open(DOT)
    (d,) = client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"]
    assert d["code"] == "N011" and d["range"] == {
        "start": {"line": 5, "character": start},
        "end": {"line": 5, "character": end},
    }
    (fix,) = client.request(
        2,
        "textDocument/codeAction",
        {"textDocument": {"uri": URI}, "range": d["range"], "context": {"diagnostics": [d]}},
    )["result"]
    assert fix["edit"]["changes"][URI] == [{"range": d["range"], "newText": "B"}]
    # the quick fix applied as an incremental edit: the server reads the range in these units
    client.send(
        method="textDocument/didChange",
        params={
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": d["range"], "text": "B"}],
        },
    )
    assert client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"] == []
    hover = client.request(
        3,
        "textDocument/hover",
        {"textDocument": {"uri": URI}, "position": {"line": 5, "character": 3}},
    )["result"]
    assert "C[I, K]" in hover["contents"]["value"]
    assert hover["range"]["end"] == {"line": 5, "character": end - 1}  # `C = A ·_J B`
    assert client.finish() == 0


def test_the_end_of_input_without_shutdown_is_exit_1() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "shardc", "lsp"], input=b"", capture_output=True, timeout=TIMEOUT
    )
    assert p.returncode == 1 and p.stdout == b""


def test_requests_before_initialize_and_exit_without_shutdown(client: Client) -> None:
    assert (
        client.request(
            7,
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
        )["error"]["code"]
        == -32002
    )
    client.open(BROKEN)  # a notification before initialize is dropped: no diagnostics
    assert client.request(8, "shutdown")["error"]["code"] == -32002
    client.send(method="exit")
    assert client.p.wait(timeout=TIMEOUT) == 1
    assert client.inbox.get(timeout=TIMEOUT) is None  # nothing else was sent


def test_after_shutdown_requests_are_refused_and_exit_is_0(client: Client) -> None:
    client.initialize()
    assert client.request(2, "shutdown")["result"] is None
    assert (
        client.request(
            3,
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
        )["error"]["code"]
        == -32600
    )
    assert (
        client.request(4, "initialize", {"processId": None, "capabilities": {}})["error"]["code"]
        == -32600
    )
    client.send(method="exit")
    assert client.p.wait(timeout=TIMEOUT) == 0


def test_the_clients_responses_are_never_answered(client: Client) -> None:
    client.initialize()
    client.send(id=42, result=None)
    client.send(id="x", error={"code": -32601, "message": "no"})
    client.send(id=43)  # neither result nor error
    client.raw(frame({"id": 44, "result": {"nested": [1, 2]}}))  # without "jsonrpc"
    assert client.request(45, "shardc/unknown")["id"] == 45  # the first answer after them
    assert client.finish() == 0


def test_an_oversize_frame_is_skipped_and_the_next_one_read(client: Client) -> None:
    client.initialize()
    body = (
        b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": "'
        + b"x" * (MAX_MESSAGE_BYTES - 60)
        + b'"}'
    )
    assert len(body) > MAX_MESSAGE_BYTES
    client.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    log = client.wait_for("window/logMessage")["params"]
    assert "skipped a message of" in log["message"]
    assert client.finish() == 0


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": '
        + b'{"a": ' * 100_000
        + b"1"
        + b"}" * 100_001,
        b'{"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"x": "'
        + b"\xff\xfe"
        + b'"}}',
        b'{"jsonrpc": "2.0", "id": NaN, "method": "shutdown"}',
    ],
    ids=["array", "params", "not utf-8", "nan"],
)
def test_a_body_that_cannot_be_parsed_gets_a_parse_error(client: Client, body: bytes) -> None:
    client.initialize()
    client.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    error = client.wait_for(ident=None)
    assert error["error"]["code"] == -32700
    assert client.finish() == 0


def test_ids_that_are_not_ids(client: Client) -> None:
    client.initialize()
    for bad in ("9" * 5000, "-" + "9" * 5000, "1.5", "true", "[1]", "{}"):
        body = b'{"jsonrpc": "2.0", "method": "shutdown", "id": %s}' % bad.encode()
        client.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert client.wait_for(ident=None)["error"]["code"] == -32600
    # a header with 5,000 digits has no usable length: dropped, the next frame is read
    client.raw(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n")
    nested = "[" * 900 + "]" * 900  # within the parser's depth: a typed params error
    client.raw(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "textDocument/hover",
                "params": json.loads(nested),
            }
        )
    )
    assert client.wait_for(ident=6)["error"]["code"] == -32602
    assert client.finish() == 0


def test_a_compile_past_its_budget_is_stopped_and_the_server_answers_meanwhile() -> None:
    """A document that takes seconds of CPU to compile, under a one-second budget: hover on
    another document and `$/cancelRequest` are answered while it runs, and (the client
    supporting it) the compile shows as work-done progress once the client has created the
    token; then the document gets a diagnostic saying the compile was stopped, and the server
    still compiles the next document and answers shutdown."""
    c = Client("--time-budget", "1")
    try:
        c.request(
            1,
            "initialize",
            {"processId": None, "capabilities": {"window": {"workDoneProgress": True}}},
        )
        c.send(method="initialized", params={})
        slow = "file:///work/slow.shard"
        c.open(shapes(6000, 1), slow)
        c.send(
            id=2,
            method="textDocument/hover",
            params={"textDocument": {"uri": slow}, "position": {"line": 0, "character": 0}},
        )
        assert c.request(
            3,
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}},
        ) == {"jsonrpc": "2.0", "id": 3, "result": None}
        c.send(method="$/cancelRequest", params={"id": 2})
        assert c.wait_for(ident=2)["error"]["code"] == -32800  # the waiting hover, cancelled
        create = c.wait_for("window/workDoneProgress/create")
        token = create["params"]["token"]
        c.send(id=create["id"], result=None)  # the one response the server reads
        begin = c.wait_for("$/progress")["params"]
        assert begin["token"] == token and begin["value"]["kind"] == "begin"
        assert begin["value"]["title"] == "shardc"
        assert c.wait_for("$/progress")["params"] == {"token": token, "value": {"kind": "end"}}
        published = c.wait_for("textDocument/publishDiagnostics")["params"]
        (d,) = published["diagnostics"]
        assert published["uri"] == slow and "ran past its time budget of 1 s" in d["message"]
        c.open(BROKEN)  # a fresh worker compiles the next document
        (d,) = c.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"]
        assert d["code"] == "N012"
        assert c.finish() == 0
    finally:
        c.kill()


def test_a_mesh_layout_that_hangs_or_not_gets_diagnostics() -> None:
    """A TPU mesh whose slice search took minutes when this server was written: within its
    budget the document gets its diagnostics (the layout's, or the budget's), and the server
    answers throughout."""
    c = Client("--time-budget", "1")
    try:
        c.initialize()
        c.open("mesh X=1000000007\ndim I=8\nhardware tpu-v5e\nA: f32[I]\nB = gelu(A)\n")
        assert (
            c.request(
                2,
                "textDocument/codeAction",
                {
                    "textDocument": {"uri": "file:///other"},
                    "context": {"diagnostics": []},
                    "range": {
                        "start": {"line": 0, "character": 0},
                        "end": {"line": 0, "character": 0},
                    },
                },
            )["result"]
            == []
        )
        c.wait_for("textDocument/publishDiagnostics")
        assert c.finish() == 0
    finally:
        c.kill()


def test_a_compile_past_the_memory_cap_is_stopped() -> None:
    """`softmax_{S}` nested 200 deep took 5.6 GB to compile when this server was written; in
    the server it meets the worker's 2 GiB cap, or (once the compiler needs less) compiles:
    either way the document gets diagnostics and the next document compiles."""
    c = Client("--time-budget", "60")
    try:
        c.initialize()
        c.open(
            "mesh X=2\ndim B=8, S=16\nA: f32[B, S_X]\nC = "
            + "softmax_{S}(" * 200
            + "A"
            + ")" * 200
            + "\n",
            "file:///work/deep.shard",
        )
        published = c.wait_for("textDocument/publishDiagnostics")["params"]
        assert published["uri"] == "file:///work/deep.shard"
        assert all("internal error" not in d["message"] for d in published["diagnostics"])
        c.open(BROKEN)
        (d,) = c.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"]
        assert d["code"] == "N012"
        assert c.finish() == 0
    finally:
        c.kill()


def test_a_program_over_the_size_limit_is_not_compiled(client: Client) -> None:
    from shardc.lang.input_limits import MAX_SOURCE_BYTES

    client.initialize()
    client.open("#" * (MAX_SOURCE_BYTES // 2) + "·" * (MAX_SOURCE_BYTES // 4 + 1), ascii=False)
    (d,) = client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"]
    assert "larger than the limit" in d["message"]
    assert client.finish() == 0


# -- framing, in process ---------------------------------------------------------------------


class Bytes:
    def __init__(self, data: bytes) -> None:
        import io

        self.f = io.BytesIO(data)

    def readline(self, limit: int) -> bytes:
        return self.f.readline(limit)

    def read(self, n: int) -> bytes:
        return self.f.read(n)


def test_read_frame_resynchronises() -> None:
    s = Bytes(
        b"\r\n\r\ngarbage: 1\r\ncontent-length:  2\r\n\r\n{}"
        b"Content-Length: x\r\n\r\n"
        b"noise Content-Length: 3\r\n\r\n[1]"
        b"Content-Length: %d\r\n\r\n"
        % (MAX_MESSAGE_BYTES + 1)
        + b"a" * (MAX_MESSAGE_BYTES + 1)
        + b"Content-Length: 2\r\n\r\n[]"
    )
    assert read_frame(s) == b"{}"
    assert read_frame(s) == b"[1]"
    assert read_frame(s) == Oversize(MAX_MESSAGE_BYTES + 1)
    assert read_frame(s) == b"[]"
    assert read_frame(s) is None
    assert read_frame(Bytes(b"Content-Length: 10\r\n\r\n{}")) is None  # the stream ended


def test_decode_never_raises() -> None:
    assert decode(b'{"id": ' + b"7" * 5000 + b"}") == {"id": LongNumber("7" * 24)}
    assert decode(b"[" * 100_000) == ParseError("nested too deeply")
    assert isinstance(decode(b"\xff"), ParseError)
    assert isinstance(decode(b"Infinity"), ParseError)
    assert decode(b'{"a": [1, "\\u00b7"]}') == {"a": [1, "·"]}


# -- the fuzz ----------------------------------------------------------------------------------

METHODS = [
    "initialize",
    "initialized",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "textDocument/hover",
    "textDocument/codeAction",
    "$/cancelRequest",
    "$/setTrace",
    "shutdown",
    "workspace/symbol",
    "shardc/unknown",
    "textDocument/completion",
    "window/workDoneProgress/cancel",
    "",
]
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.text(max_size=12),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just([1]),
)
documents = st.sampled_from([BROKEN, FIXED, DOT, "", "mesh X=", "·" * 50, "\x00\ud800"])
positions = st.fixed_dictionaries(
    {"line": st.integers(-5, 2**31), "character": st.integers(-5, 2**31)}
)


@st.composite
def typed_params(draw: Any, method: str) -> Any:
    """Params of the right shape, often, so that frames reach the features."""
    doc = {"uri": draw(st.sampled_from([URI, "file:///b.shard", ""]))}
    match method:
        case "initialize":
            return {
                "processId": None,
                "capabilities": draw(
                    st.sampled_from(
                        [
                            {},
                            {"general": {"positionEncodings": ["utf-8"]}},
                            {"window": {"workDoneProgress": True}},
                        ]
                    )
                ),
            }
        case "textDocument/didOpen":
            return {
                "textDocument": {
                    **doc,
                    "languageId": "shard",
                    "version": 1,
                    "text": draw(documents),
                }
            }
        case "textDocument/didChange":
            change: dict[str, Any] = {"text": draw(documents)}
            if draw(st.booleans()):
                change["range"] = {"start": draw(positions), "end": draw(positions)}
            return {"textDocument": {**doc, "version": 2}, "contentChanges": [change]}
        case "textDocument/hover":
            return {"textDocument": doc, "position": draw(positions)}
        case "textDocument/codeAction":
            return {
                "textDocument": doc,
                "range": {"start": draw(positions), "end": draw(positions)},
                "context": {"diagnostics": []},
            }
        case "$/cancelRequest":
            return {"id": draw(ids)}
        case _:
            return draw(json_value)


@st.composite
def frames(draw: Any) -> bytes:
    """One piece of the input stream: a request or notification (well-typed params or any
    JSON), a response, a body that is not JSON, deep nesting, a huge id, a garbage header,
    an oversize frame (rarely: eight megabytes), a length shorter than the body."""
    kind = draw(
        st.sampled_from(
            ["message"] * 6
            + ["response", "not json", "nested", "huge id", "garbage", "short", "blank"]
            + (["oversize"] if draw(st.integers(0, 40)) == 0 else [])
        )
    )
    method = draw(st.sampled_from(METHODS))
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0"] * 5 + ["1.0", 2]))}
    if method:
        message["method"] = method
    if draw(st.booleans()):
        message["id"] = draw(ids)
    if draw(st.integers(0, 3)):
        message["params"] = draw(typed_params(method)) if draw(st.booleans()) else draw(json_value)
    match kind:
        case "message":
            return frame(message)
        case "response":
            return frame(
                {
                    "jsonrpc": "2.0",
                    "id": draw(ids),
                    draw(st.sampled_from(["result", "error"])): draw(json_value),
                }
            )
        case "not json":
            body = draw(st.binary(max_size=40))
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        case "nested":
            depth = draw(st.integers(1, 100_000))
            body = (
                b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": '
                + b"[" * depth
                + b"]" * depth
                + b"}"
            )
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        case "huge id":
            body = b'{"jsonrpc": "2.0", "method": "shutdown", "id": %s}' % (
                b"9" * draw(st.integers(20, 6000))
            )
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        case "garbage":
            line = draw(st.binary(max_size=60)).replace(b"\n", b" ").replace(b"\r", b" ")
            # a garbage header must not promise a body it does not have
            return line.lower().replace(b"content-length", b"x") + b"\r\n"
        case "short":
            body = json.dumps(message).encode()
            return b"Content-Length: %d\r\n\r\n" % draw(st.integers(1, len(body))) + body
        case "blank":
            return b"\r\n"
        case _:
            body = b" " * (MAX_MESSAGE_BYTES + 1)
            return b"Content-Length: %d\r\n\r\n" % len(body) + body


def fuzz_session(stream: list[bytes], end_with_exit: bool) -> None:
    """Feed the frames; then either `exit` (the server ends, 0 or 1) or `shutdown`, which must
    be answered (its result, or the error the protocol asks for after an earlier shutdown or
    before initialize), and `exit`."""
    c = Client()
    try:
        for data in stream:
            c.raw(data)
        # A "short" frame may leave part of a body unread: a blank line and a frame boundary
        # so the shutdown below starts a header block of its own.
        c.raw(b"\r\n\r\n")
        if end_with_exit:
            c.send(method="exit")
            assert c.p.wait(timeout=TIMEOUT) in (0, 1)
            return
        answer = c.request("final-shutdown", "shutdown")
        assert "result" in answer or answer["error"]["code"] in (-32600, -32002)
        assert c.p.poll() is None
        c.send(method="exit")
        assert c.p.wait(timeout=TIMEOUT) in (0, 1)
    finally:
        c.kill()


NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
"""A failing session is reported as drawn: shrinking restarts a server per try (minutes)."""


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK)
@given(st.lists(frames(), min_size=50, max_size=50), st.booleans())
def test_fuzz_frames_then_shutdown_is_answered(stream: list[bytes], end_with_exit: bool) -> None:
    """300 frames: six sessions of 50."""
    fuzz_session(stream, end_with_exit)


@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), phases=NO_SHRINK
)
@given(st.lists(frames(), min_size=50, max_size=50), st.booleans())
def test_fuzz_frames_slow(stream: list[bytes], end_with_exit: bool) -> None:
    """10,000 frames: two hundred sessions of 50 (a longer session would outgrow what
    Hypothesis draws for one example)."""
    fuzz_session(stream, end_with_exit)
