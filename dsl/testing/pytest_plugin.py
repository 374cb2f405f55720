"""The pytest plugin (installed with shardc, entry point `pytest11`): a .shard file with
`# expect:` lines is collected as tests, one per line, each checked over the program's whole
domain of sizes (`shardc.testing.expect`). A failure names the file and line, the point and
both sides' values; a line that is not an expectation fails with its diagnostic.

Options: `--shardc-hw CHIP` (a chip for programs without a `hardware` line) and
`--shardc-examples N` (points a sampled expectation is tried at); or `shardc_hw` and
`shardc_examples` in the ini file. Loading the plugin imports nothing of the compiler.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from shardc.lang.expect import Found
    from shardc.lang.source import Source

MARKER = re.compile(rb"#[ \t]*expect[ \t]*:")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("shardc", "shardc: `# expect:` lines in .shard files")
    group.addoption(
        "--shardc-hw",
        default=None,
        metavar="CHIP",
        help="chip for .shard programs without a `hardware` line",
    )
    group.addoption(
        "--shardc-examples",
        default=None,
        type=int,
        metavar="N",
        help="points a sampled expectation is tried at (default 100)",
    )
    parser.addini("shardc_hw", "chip for .shard programs without a `hardware` line")
    parser.addini("shardc_examples", "points a sampled expectation is tried at")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".shard":
        return None
    try:
        with file_path.open("rb") as f:
            head = f.read(4 * 2**20 + 1)
    except OSError:
        return None
    if not MARKER.search(head):
        return None
    return ShardFile.from_parent(parent, path=file_path)


class ExpectationFailed(AssertionError):
    """An expectation that does not hold, or a line that is not one: the message says why."""


class ShardFile(pytest.File):
    """A .shard program; its items are its `# expect:` lines."""

    _checked: Any = None

    def _source(self) -> Source:
        """The program, named by its path from pytest's root directory (as pytest names it)."""
        from shardc.driver.api import as_source

        path = Path(self.path)
        try:
            name = str(path.relative_to(self.config.rootpath))
        except ValueError:
            name = str(path)
        return as_source(path, name=name)

    def collect(self):
        from shardc.driver.files import CliIOError
        from shardc.lang.expect import find

        try:
            source = self._source()
        except (CliIOError, OSError, UnicodeError) as exc:
            yield UnreadableItem.from_parent(self, name="read", message=str(exc))
            return
        for found in find(source):
            yield ExpectItem.from_parent(self, name=f"line {found.line}: {found.text}", found=found)

    def checker(self) -> tuple[Any, str]:
        """The program compiled once for all its items: (a `Checker`, "") or (None, the
        diagnostics)."""
        if self._checked is None:
            from shardc.driver import api
            from shardc.lang.diagnostics import CompileError
            from shardc.testing.expect import EXAMPLES, Checker

            config = self.config
            hw = config.getoption("--shardc-hw") or config.getini("shardc_hw") or None
            examples = config.getoption("--shardc-examples") or int(
                config.getini("shardc_examples") or EXAMPLES
            )
            try:
                report = api.compile(self._source(), hw=hw)
            except CompileError as exc:
                self._checked = (None, f"{self.path.name}: the program does not compile:\n{exc}")
            else:
                self._checked = (Checker(report, examples), "")
        return self._checked


class ExpectItem(pytest.Item):
    """One `# expect:` line."""

    def __init__(self, *, found: Found, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.found = found

    def runtest(self) -> None:
        from shardc.lang.diagnostics import Diagnostics
        from shardc.lang.expect import ExpectError, parse
        from shardc.testing.expect import render_failure

        diags = Diagnostics()
        e = parse(self.found, diags)
        if e is None:
            raise ExpectationFailed(diags.render(self.found.source))
        assert isinstance(self.parent, ShardFile)
        checker, problem = self.parent.checker()
        if checker is None:
            raise ExpectationFailed(problem)
        try:
            outcome = checker.check(e)
        except ExpectError as exc:
            diags.error("E002", exc.message, exc.span, exc.label)
            raise ExpectationFailed(diags.render(self.found.source)) from None
        self.user_properties.append(("shardc", outcome.how))  # exactly, or on a sample
        if not outcome.passed:
            raise ExpectationFailed(render_failure(outcome))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ExpectationFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return (
            self.path,
            self.found.line - 1,
            f"{self.path.name}:{self.found.line}: expect: {self.found.text}",
        )


class UnreadableItem(pytest.Item):
    """A .shard file with `# expect:` lines that cannot be read (not UTF-8, too large)."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise ExpectationFailed(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name}: read"
