"""Every module of the package is imported by at least one test file: a module no test names is
tested only by accident, through whatever happens to call it. The scan is static (the import
statements of tests/, at any depth, function-local ones included), so a test that only runs a
command, or imports every module by a computed name (tests/project/test_doctests.py), does not
count for the modules it reaches. The modules are found the way pyproject's package-dir maps
folders onto `shardc`.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.paths import ROOT, TESTS

UNTESTED: tuple[str, ...] = ()
"""Modules no test imports yet (none now). The list may shrink, never grow: a new module comes
with a test that imports it, and a module that gains one leaves the list (the test says so)."""

NOT_IMPORTED = {
    "shardc.__main__": "runs the command line on import; tests/driver/test_regions.py runs it "
    "as `python -m shardc`",
    "shardc.tools.lsp.server": "serves stdio; tests/tools/test_lsp.py drives `shardc lsp` in a "
    "child process as an editor does",
}
"""Modules a test reaches without importing them, and how."""


def package_modules() -> dict[str, Path]:
    """Each module of the package by its import name (packages by their `__init__`)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dirs = config["tool"]["setuptools"]["package-dir"]
    out = {}
    for package, folder in dirs.items():
        nested = [f"{dirs[p]}/" for p in dirs if p.startswith(package + ".")]
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder)
            if any(f"{folder}/{rel.as_posix()}".startswith(n) for n in nested):
                continue  # a subpackage with a folder of its own, walked as itself
            parts = [p for p in rel.with_suffix("").parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def imported_by_tests() -> dict[str, set[str]]:
    """Each module name a test file imports, with the files: `import a.b.c` and
    `from a.b import c` both import `a`, `a.b` and (where it is a module) `a.b.c`."""
    out: dict[str, set[str]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        names = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                out.setdefault(".".join(parts[:i]), set()).add(path.relative_to(ROOT).as_posix())
    return out


MODULES = package_modules()
IMPORTED = imported_by_tests()


def test_the_walk_finds_the_package():
    assert {
        "shardc",
        "shardc.lang.parser",
        "shardc.passes.ir",
        "shardc.hardware.chip",
        "shardc.cli.app",
        "shardc.tools.plan",
    } <= set(MODULES)
    assert not any(m.startswith(("shardc.passes.passes", "shardc.dsl")) for m in MODULES)
    assert "tests/lang/test_parser.py" in IMPORTED["shardc.lang.parser"]
    assert "shardc.lang" in IMPORTED  # through `shardc.lang.parser`


def test_every_module_is_imported_by_a_test():
    missing = sorted(set(MODULES) - set(IMPORTED) - set(UNTESTED) - set(NOT_IMPORTED))
    assert not missing, (
        "no test imports these modules; test each where its layer's tests "
        "live (tests/mirror.py):\n"
        + "\n".join(f"  {m} ({MODULES[m].relative_to(ROOT)})" for m in missing)
    )


def test_the_untested_list_only_shrinks():
    tested = sorted(m for m in UNTESTED if m in IMPORTED)
    gone = sorted(m for m in (*UNTESTED, *NOT_IMPORTED) if m not in MODULES)
    assert not tested, f"now imported by a test: remove from UNTESTED: {tested}"
    assert not gone, f"no such module: remove from the lists: {gone}"
    assert not set(UNTESTED) & set(NOT_IMPORTED)
