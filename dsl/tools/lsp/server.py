"""`shardc lsp`'s server, on pygls and lsprotocol: a thin layer that compiles each open
document (in a worker process, within a time budget) and maps the compiler's diagnostics, hover
rows and "did you mean" fixes to LSP types and ranges.

The message loop is ours, not pygls' (`framing.py` says why): frames are read on a thread and
checked here before pygls sees them, as the protocol asks: a request before `initialize` gets
-32002, a request after `shutdown` -32600, a response from the client is never answered, and
`exit` ends the loop with status 0 after `shutdown`, 1 without.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import attrs
from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from shardc.lang.input_limits import LSP_COMPILE_SECONDS, MAX_SOURCE_BYTES
from shardc.lang.source import Source
from shardc.tools.lsp.compiler import Compiler
from shardc.tools.lsp.framing import (
    FdReader,
    LongNumber,
    Oversize,
    ParseError,
    decode,
    read_frame,
)

DEFAULT_TIME_BUDGET_S = LSP_COMPILE_SECONDS
DEBOUNCE_S = 0.15
"""A change is compiled once no other change to its document came for this long."""
CANCEL_AFTER_S = 1.0
"""A change stops its document's compile in flight if that has run this long (a shorter one
finishes: restarting the worker would cost more)."""
PROGRESS_AFTER_S = 0.5
"""A compile still running after this long shows as work-done progress (where the client
supports it)."""
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'\?")

# JSON-RPC's and the LSP's error codes.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SERVER_NOT_INITIALIZED = -32002


@dataclass
class _Document:
    """What the server knows of one open document: its change count, the compile in flight,
    and what its last compile published."""

    generation: int = 0
    task: asyncio.Task[None] | None = None
    started: float | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    text: str = ""
    """The text the published diagnostics and hovers belong to."""
    published: list[tuple[types.Diagnostic, str]] = field(default_factory=list)
    """Each published diagnostic with its label (for quick fixes)."""
    hover: dict[str, str] = field(default_factory=dict)
    pictures: dict[str, str] = field(default_factory=dict)
    """Each array's picture (Markdown), shown on hover over its name."""


class ShardcProtocol(LanguageServerProtocol):
    """pygls' protocol with the checks it leaves out (see the module's docstring) and UTF-8
    columns whenever the client offers them (pygls takes the client's first choice)."""

    initialized = False

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        general = params.capabilities.general
        if general is not None and types.PositionEncodingKind.Utf8 in (
            general.position_encodings or []
        ):
            params.capabilities.general = attrs.evolve(
                general, position_encodings=[types.PositionEncodingKind.Utf8]
            )
        return (yield from super().lsp_initialize(params))

    def error(self, ident: Any, code: int, message: str) -> None:
        self._send_data(
            {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
        )

    def receive(self, item: Any) -> int | None:
        """Handle one decoded frame; the exit status once `exit` has come, else None."""
        if isinstance(item, Oversize):
            if self.initialized:
                self._server.window_log_message(
                    types.LogMessageParams(
                        types.MessageType.Warning,
                        f"shardc lsp: skipped a message of {item.length} bytes (over the limit)",
                    )
                )
            return None
        if isinstance(item, ParseError):
            self.error(None, PARSE_ERROR, f"parse error: {item.reason}")
            return None
        if not isinstance(item, dict):
            self.error(None, INVALID_REQUEST, "a message must be a JSON object")
            return None
        method, is_request, ident = item.get("method"), "id" in item, item.get("id")
        if "method" not in item:  # a response (or nothing): never answered
            if (
                is_request
                and isinstance(ident, str)
                and ident in self._result_types
                and ("result" in item or "error" in item)
                and item.get("jsonrpc") == "2.0"
            ):
                try:
                    self.handle_message(self.structure_message(item))
                except Exception:
                    logging.getLogger(__name__).debug("unusable response", exc_info=True)
            return None
        if is_request and not (isinstance(ident, str) or type(ident) is int):
            kind = "too long" if isinstance(ident, LongNumber) else type(ident).__name__
            self.error(
                None, INVALID_REQUEST, f"a request's id must be an integer or a string, not {kind}"
            )
            return None
        if not isinstance(method, str) or item.get("jsonrpc") != "2.0":
            if is_request:
                self.error(ident, INVALID_REQUEST, "not a JSON-RPC 2.0 request")
            return None
        if method == types.EXIT:
            return 0 if self._shutdown else 1
        if not self.initialized and method != types.INITIALIZE:
            if is_request:
                self.error(ident, SERVER_NOT_INITIALIZED, "the server is not initialized")
            return None  # a notification before `initialize` is dropped
        if self._shutdown or (self.initialized and method == types.INITIALIZE):
            if is_request:
                self.error(
                    ident,
                    INVALID_REQUEST,
                    "the server is shutting down" if self._shutdown else "initialize came twice",
                )
            return None
        if (
            method not in self.fm.features
            and method not in self.fm.builtin_features
            and method != types.CANCEL_REQUEST
        ):
            if is_request:
                self.error(ident, METHOD_NOT_FOUND, f"method not found: {method[:120]}")
            return None  # an unknown notification ($/ ones included) is dropped
        try:
            message = self.structure_message(item)
        except Exception:
            if is_request:
                self.error(ident, INVALID_PARAMS, f"invalid params for {method[:120]}")
            return None
        if is_request != hasattr(message, "id"):  # `didOpen` with an id, `hover` without one
            if is_request:
                self.error(ident, INVALID_REQUEST, f"{method[:120]} is a notification")
            return None
        if method == types.INITIALIZE:
            self.initialized = True
        self.handle_message(message)
        return None


class ShardcServer(LanguageServer):
    """The documents open in the editor, the compile worker, and the message loop."""

    protocol: ShardcProtocol

    def __init__(self, version: str, time_budget: float) -> None:
        super().__init__(
            "shardc",
            version,
            protocol_cls=ShardcProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.time_budget = time_budget
        self.docs: dict[str, _Document] = {}
        self.compiler: Compiler | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A handler's error, in the client's log (pygls' default shows it to the user, which a
        hostile message should not be able to do)."""
        try:
            self.window_log_message(
                types.LogMessageParams(
                    types.MessageType.Error,
                    f"shardc lsp: {type(error).__name__}: {str(error)[:200]}",
                )
            )
        except Exception:
            pass

    def stop_compiles(self) -> None:
        for doc in self.docs.values():
            if doc.task is not None:
                doc.task.cancel()
        if self.compiler is not None:
            self.compiler.stop()

    # -- the message loop ------------------------------------------------------------------

    async def run(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        loop = asyncio.get_running_loop()
        self.protocol.set_writer(StdoutWriter(stdout))
        self.compiler = Compiler(self.time_budget)
        frames: asyncio.Queue[Any] = asyncio.Queue(maxsize=16)

        def read() -> None:
            while True:
                try:
                    frame = read_frame(stdin)
                    item = frame if frame is None or isinstance(frame, Oversize) else decode(frame)
                except Exception:  # the input itself failed (closed, not readable)
                    item = None
                try:
                    asyncio.run_coroutine_threadsafe(frames.put(item), loop).result()
                except Exception:  # the loop has ended
                    return
                if item is None:
                    return

        threading.Thread(target=read, name="shardc-lsp-reader", daemon=True).start()
        try:
            await self.compiler.start()
            while True:
                item = await frames.get()
                if item is None:  # the end of input
                    return 0 if self.protocol._shutdown else 1
                code = self.protocol.receive(item)
                if code is not None:
                    return code
        except (BrokenPipeError, ConnectionError):
            return 1
        finally:
            self.stop_compiles()

    # -- compiling -------------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        """Compile `uri` after `delay` seconds, unless it changes again first."""
        loop = asyncio.get_running_loop()
        doc = self.docs.setdefault(uri, _Document())
        doc.generation += 1
        doc.done.clear()
        old = doc.task
        if (
            old is not None
            and not old.done()
            and (doc.started is None or loop.time() - doc.started > CANCEL_AFTER_S)
        ):
            old.cancel()
        doc.task = asyncio.ensure_future(self._validate(uri, doc, doc.generation, delay))

    def close(self, uri: str) -> None:
        doc = self.docs.pop(uri, None)
        if doc is not None:
            if doc.task is not None:
                doc.task.cancel()
            doc.done.set()
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    async def _validate(self, uri: str, doc: _Document, generation: int, delay: float) -> None:
        try:
            await self._compile_and_publish(uri, doc, generation, delay)
        except Exception as exc:  # a bug here must not end the server; the client's log says it
            self.report_server_error(exc, None)
        finally:
            if generation == doc.generation:
                doc.started = None
                doc.done.set()

    async def _compile_and_publish(
        self, uri: str, doc: _Document, generation: int, delay: float
    ) -> None:
        if delay:
            await asyncio.sleep(delay)
        text = self.workspace.get_text_document(uri).source
        if (
            len(text) > MAX_SOURCE_BYTES
            or len(text.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES
        ):
            answer = {
                "diagnostics": [
                    {
                        "severity": "error",
                        "code": "",
                        "label": "",
                        "notes": [],
                        "span": [0, 0, 0, 0],
                        "message": f"the program is larger than the limit "
                        f"of {MAX_SOURCE_BYTES // 2**20} MiB",
                    }
                ],
                "hover": {},
            }
        else:
            assert self.compiler is not None
            doc.started = asyncio.get_running_loop().time()
            progress = self._progress(uri)
            try:
                answer = await self.compiler.compile(uri, text)
            finally:
                progress()
        if generation == doc.generation and self.docs.get(uri) is doc:
            self._publish(uri, doc, text, answer)

    def _publish(self, uri: str, doc: _Document, text: str, answer: dict[str, Any]) -> None:
        source = Source(uri, text)
        published = []
        for d in answer.get("diagnostics", []):
            message = (
                d["message"]
                + (f" ({d['label']})" if d["label"] else "")
                + "".join(f"\nnote: {n}" for n in d["notes"])
            )
            diag = types.Diagnostic(
                range=self.lsp_range(source, *d["span"]),
                message=message,
                severity=SEVERITY.get(d["severity"], types.DiagnosticSeverity.Error),
                code=d["code"] or None,
                source="shardc",
            )
            published.append((diag, d["label"]))
        doc.text, doc.published, doc.hover = text, published, answer.get("hover", {})
        doc.pictures = answer.get("pictures", {})
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[d for d, _ in published])
        )

    def _progress(self, uri: str) -> Any:
        """Show the compile as work-done progress if it is still running after
        `PROGRESS_AFTER_S` (and the client supports it; cancelling it there cancels the
        compile); returns the function that ends it."""
        window = self.client_capabilities.window
        if window is None or not window.work_done_progress:
            return lambda: None
        loop = asyncio.get_running_loop()
        token, state = f"shardc-{uuid.uuid4()}", {"done": False, "begun": False}
        task = asyncio.current_task()

        def created(_result: Any) -> None:
            if state["done"]:
                return
            state["begun"] = True
            self.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(
                    title="shardc",
                    message=f"compiling {uri.rsplit('/', 1)[-1][:80]}",
                    cancellable=True,
                ),
            )
            cancel = self.work_done_progress.tokens.get(token)
            if cancel is not None and task is not None:
                cancel.add_done_callback(lambda f: f.cancelled() and task.cancel())

        def start() -> None:
            if not state["done"]:
                self.work_done_progress.create(token, created)

        timer = loop.call_later(PROGRESS_AFTER_S, start)

        def end() -> None:
            state["done"] = True
            timer.cancel()
            if state["begun"]:
                self.work_done_progress.end(token, types.WorkDoneProgressEnd())
            self.work_done_progress.tokens.pop(token, None)

        return end

    # -- positions ---------------------------------------------------------------------------

    def units(self, line: str, col: int) -> int:
        """Column `col` (0-based, code points) of `line` in the negotiated encoding's units;
        a column past the line's end stays past it by as many units."""
        codec = self.workspace.position_codec
        return codec.client_num_units(line[:col]) + max(0, col - len(line))

    def word_at(self, line: str, units: int) -> tuple[str, int, int] | None:
        """The name (letters, digits, `_`) at column `units` (the negotiated encoding's units)
        of `line`, with its start and end in code points; None off a name."""
        codec = self.workspace.position_codec
        col, seen = 0, 0
        for ch in line:  # one pass: a long line's every prefix would be quadratic
            seen += codec.client_num_units(ch)
            if seen > units:
                break
            col += 1
        for m in _NAME.finditer(line):
            if m.start() <= col < m.end():
                return m.group(0), m.start(), m.end()
            if m.start() > col:
                break
        return None

    def lsp_range(
        self, source: Source, line: int, col: int, end_line: int, end_col: int
    ) -> types.Range:
        """The LSP range of a span (1-based, code points, end exclusive); a span without a
        position is the start of the document."""
        if line <= 0:
            return types.Range(types.Position(0, 0), types.Position(0, 0))
        end_line = max(end_line, line)
        if not (end_line > line or end_col > col):
            end_col = col + 1
        return types.Range(
            types.Position(line - 1, self.units(source.line_text(line), col - 1)),
            types.Position(end_line - 1, self.units(source.line_text(end_line), end_col - 1)),
        )


def build_server(
    version: str = "unknown", time_budget: float = DEFAULT_TIME_BUDGET_S
) -> ShardcServer:
    """The server with its features: diagnostics on open and change, hover, quick fixes."""
    server = ShardcServer(version, time_budget)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: ShardcServer, params: Any) -> None:
        ls.stop_compiles()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ShardcServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ShardcServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ShardcServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: ShardcServer, params: types.HoverParams) -> types.Hover | None:
        """The ops the hovered line compiled to, once the document's compile in flight (if
        any) has finished; `$/cancelRequest` ends the wait."""
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return None
        if not doc.done.is_set():
            assert ls.compiler is not None
            try:
                await asyncio.wait_for(doc.done.wait(), ls.compiler.wall + DEBOUNCE_S + 5)
            except TimeoutError:
                return None
        line = params.position.line
        text = Source("", doc.text).line_text(line + 1)
        ops = doc.hover.get(str(line + 1))
        word = ls.word_at(text, params.position.character)
        picture = doc.pictures.get(word[0]) if word is not None else None
        if ops is None and picture is None:
            return None
        # over an array's name: its picture, then the line's ops; the range is the name's
        # where the line compiled to no op
        markdown = "\n\n".join(m for m in (picture, ops) if m is not None)
        start, end = (word[1], word[2]) if ops is None and word is not None else (0, len(text))
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown),
            range=types.Range(
                types.Position(line, ls.units(text, start)),
                types.Position(line, ls.units(text, end)),
            ),
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(ls: ShardcServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Where a diagnostic on the asked line names its fix ("did you mean 'gelu'?"), a
        quick fix replacing the marked text with it."""
        doc = ls.docs.get(params.text_document.uri)
        line, out = params.range.start.line, []
        for diag, label in doc.published if doc is not None else []:
            m = _DID_YOU_MEAN.search(label)
            if m and diag.range.start.line <= line <= diag.range.end.line:
                edit = types.TextEdit(range=diag.range, new_text=m[1])
                out.append(
                    types.CodeAction(
                        title=f"Replace with '{m[1]}'",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        is_preferred=True,
                        edit=types.WorkspaceEdit(changes={params.text_document.uri: [edit]}),
                    )
                )
        return out

    return server


def serve(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    version: str = "unknown",
    time_budget: float = DEFAULT_TIME_BUDGET_S,
) -> int:
    """Serve until `exit` or the end of input; exit status 0 after `shutdown`, else 1 (as the
    protocol asks)."""
    if not os.environ.get("SHARDC_DEBUG"):
        logging.getLogger("pygls").setLevel(logging.CRITICAL)
        logging.getLogger(__name__).setLevel(logging.CRITICAL)
    server = build_server(version, time_budget)
    src: Any = stdin if stdin is not None else FdReader(sys.stdin.fileno())
    return asyncio.run(server.run(src, stdout if stdout is not None else sys.stdout.buffer))


__all__ = ["DEFAULT_TIME_BUDGET_S", "ShardcServer", "build_server", "serve"]
