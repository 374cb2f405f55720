"""`shardc lsp`: a language server over stdio (the Language Server Protocol's JSON-RPC with
`Content-Length` framing), so that an editor shows the compiler's diagnostics as the user types
and an op's costs on hover.

It answers `initialize`, `shutdown`, `textDocument/hover` and `textDocument/codeAction` (the
fix a diagnostic's label names, "did you mean 'gelu'?", as a quick fix), and handles the notifications
`initialized`, `textDocument/didOpen`, `didChange` (full text), `didClose` and `exit`. Each open
or change compiles the document (the program's own chip and sizes) and publishes its
diagnostics, with their codes, labels and notes. Hover on a line shows the ops that line
compiled to: each one's time, bytes and, for an inserted collective, why it is there. Standard
library only; one document's text is at most `MAX_SOURCE_BYTES`, and a message at most twice
that.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, BinaryIO

from shardc.lang.limits import MAX_SOURCE_BYTES
from shardc.lang.source import NO_SPAN

MAX_MESSAGE_BYTES = 2 * MAX_SOURCE_BYTES + 65536
_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'\?")
SEVERITY = {"error": 1, "warning": 2, "note": 3}


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    """One JSON-RPC message; None at the end of the stream. A header without a usable
    `Content-Length`, or a body past `MAX_MESSAGE_BYTES` or not JSON, is skipped ({})."""
    length = None
    while True:
        line = stream.readline(4096)
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    if length is None or length > MAX_MESSAGE_BYTES:
        return {}
    body = stream.read(length)
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return message if isinstance(message, dict) else {}


def write_message(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def _range(span) -> dict[str, Any]:
    """An LSP range (0-based) from a span (1-based lines and columns); the whole first line
    for a diagnostic without a position."""
    if span.line <= 0:
        return {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    end_line = max(span.end_line, span.line)
    end_col = span.end_col if end_line > span.line or span.end_col > span.col else span.col + 1
    return {"start": {"line": span.line - 1, "character": span.col - 1},
            "end": {"line": end_line - 1, "character": end_col - 1}}


class Server:
    """The documents open in the editor and what their last compile gave."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.reports: dict[str, Any] = {}
        self.published: dict[str, list[tuple[dict[str, Any], str]]] = {}
        """Per document: each published diagnostic with its label (for quick fixes)."""
        self.shutdown = False

    def send(self, message: dict[str, Any]) -> None:
        write_message(self.out, {"jsonrpc": "2.0", **message})

    def compile(self, uri: str, text: str) -> None:
        from shardc.driver.api import run_pipeline
        from shardc.lang.source import Source

        if len(text.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
            diagnostics = [{"range": _range(NO_SPAN), "severity": 1, "source": "shardc",
                            "message": f"the program is larger than {MAX_SOURCE_BYTES} bytes"}]
            self.reports.pop(uri, None)
        else:
            result = run_pipeline(Source(uri, text))
            self.reports[uri] = result.report
            diagnostics = [{
                "range": _range(d.span), "severity": SEVERITY.get(d.severity, 1),
                "code": d.code, "source": "shardc",
                "message": d.message + (f" ({d.label})" if d.label else "")
                + "".join(f"\nnote: {n}" for n in d.notes)}
                for d in result.diagnostics.items]
            self.published[uri] = [(x, d.label) for x, d in
                                   zip(diagnostics, result.diagnostics.items, strict=True)]
        self.send({"method": "textDocument/publishDiagnostics",
                   "params": {"uri": uri, "diagnostics": diagnostics}})

    def hover(self, uri: str, line: int) -> dict[str, Any] | None:
        from shardc.lang.units import fmt_value

        report = self.reports.get(uri)
        if report is None:
            return None
        rows = []
        for c in report.ops:
            if c.line != line + 1:
                continue
            moved = c.comm_bytes if c.kind == "collective" else c.hbm_bytes
            row = (f"- `{c.op}` {c.src} → {c.dst}: {fmt_value(report.value(c.time), 's')}, "
                   f"{fmt_value(report.value(moved), 'B')}")
            if c.kind == "collective" and c.reason:
                row += f"  \n  why: {c.reason}"
            rows.append(row)
        if not rows:
            return None
        chip = report.hardware_name or "no chip (hardware symbols stay symbolic)"
        if report.shown_region is not None:  # plans by region of the symbolic sizes
            rows.append(f"\n(the plan where {report.shown_region[0]}: "
                        f"{report.shown_region[1]:.0%} of the sizes sampled)")
        return {"contents": {"kind": "markdown",
                             "value": f"**line {line + 1}** on {chip}\n\n" + "\n".join(rows)}}

    def code_actions(self, uri: str, line: int) -> list[dict[str, Any]]:
        """Quick fixes on `line`: where a diagnostic's label names the fix ("did you mean
        'gelu'?"), replace the marked text with it."""
        out = []
        for diag, label in self.published.get(uri, []):
            m = _DID_YOU_MEAN.search(label)
            r = diag["range"]
            if m and r["start"]["line"] <= line <= r["end"]["line"]:
                out.append({"title": f"Replace with '{m[1]}'", "kind": "quickfix",
                            "diagnostics": [diag], "isPreferred": True,
                            "edit": {"changes": {uri: [{"range": r, "newText": m[1]}]}}})
        return out

    def handle(self, message: dict[str, Any]) -> bool:
        """One message; False once `exit` has come."""
        method, params, ident = message.get("method"), message.get("params") or {}, \
            message.get("id")
        if not isinstance(params, dict):
            params = {}
        got = params.get("textDocument")
        doc: dict[str, Any] = got if isinstance(got, dict) else {}
        uri = doc.get("uri") if isinstance(doc.get("uri"), str) else None
        if method == "exit":
            return False
        if method == "initialize":
            from shardc.cli.app import _installed_version

            result: Any = {"capabilities": {"textDocumentSync": 1, "hoverProvider": True,
                                            "codeActionProvider": True},
                           "serverInfo": {"name": "shardc", "version": _installed_version()}}
        elif method == "shutdown":
            self.shutdown, result = True, None
        elif method == "textDocument/didOpen" and uri is not None:
            text = doc.get("text")
            if isinstance(text, str):
                self.compile(uri, text)
            return True
        elif method == "textDocument/didChange" and uri is not None:
            changes = params.get("contentChanges")
            if isinstance(changes, list) and changes and isinstance(changes[-1], dict) \
                    and isinstance(changes[-1].get("text"), str):
                self.compile(uri, changes[-1]["text"])
            return True
        elif method == "textDocument/didClose" and uri is not None:
            self.reports.pop(uri, None)
            self.send({"method": "textDocument/publishDiagnostics",
                       "params": {"uri": uri, "diagnostics": []}})
            return True
        elif method == "textDocument/hover" and uri is not None:
            where = params.get("position")
            line = where.get("line") if isinstance(where, dict) else None
            result = self.hover(uri, line) if isinstance(line, int) and line >= 0 else None
        elif method == "textDocument/codeAction" and uri is not None:
            span = params.get("range")
            start = span.get("start") if isinstance(span, dict) else None
            line = start.get("line") if isinstance(start, dict) else None
            result = self.code_actions(uri, line) if isinstance(line, int) else []
        elif ident is None:
            return True  # a notification we do not handle
        else:
            self.send({"id": ident, "error": {"code": -32601,
                                              "message": f"method not found: {method}"}})
            return True
        if ident is not None:
            self.send({"id": ident, "result": result})
        return True


def serve(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Serve until `exit` or the end of input; exit status 0 after `shutdown`, else 1 (as the
    protocol asks)."""
    src = stdin if stdin is not None else sys.stdin.buffer
    server = Server(stdout if stdout is not None else sys.stdout.buffer)
    while True:
        message = read_message(src)
        if message is None or not server.handle(message):
            break
    return 0 if server.shutdown else 1


__all__ = ["MAX_MESSAGE_BYTES", "Server", "read_message", "serve", "write_message"]
