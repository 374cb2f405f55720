"""The layer contract: imports go one way only, lowest first: hardware -> the language -> passes
-> the driver -> tools -> the CLI. A module may import its own layer and those below it, never
one above, not even inside a function. The language has no SymPy; hardware/ is stdlib only.
No two modules import each other, directly or around a loop (function-local imports count;
imports under `if TYPE_CHECKING:` do not), and no module imports another's `_private` name (not
even for a type checker).

The layers are the import names under `shardc` (see pyproject.toml's package-dir).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx
import pytest

from tests.paths import ROOT

PACKAGE_DIRS = {
    "dsl": "shardc",
    "passes": "shardc.passes",
    "hardware": "shardc.hardware",
    "grammar": "shardc.grammar",
}
LAYERS = (
    ("hardware", ("shardc.hardware",)),
    ("language", ("shardc.grammar", "shardc.lang")),
    ("passes", ("shardc.passes",)),
    ("driver", ("shardc.driver",)),
    ("tools", ("shardc.tools", "shardc.testing")),
    ("cli", ("shardc.cli", "shardc.__main__")),
    ("api", ("shardc",)),
)
"""Lowest first. `shardc` itself (the package's `__init__`) re-exports the public API and sits on
top."""
STDLIB = set(sys.stdlib_module_names)
SUBPACKAGES = ("hardware", "grammar", "passes", "lang", "driver", "tools", "testing", "cli")


def layer_of(module: str) -> int:
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    assert level >= 0, module
    return level


def modules() -> list[tuple[str, Path]]:
    out = []
    for folder, name in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out.append((".".join([name, *parts]), path))
    return out


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every import in the file, at any depth; relative imports
    resolved against `module`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            subpackages = [a.name for a in node.names if a.name in SUBPACKAGES]
            if target == "shardc" and subpackages:  # `from shardc import hardware`
                out.extend((node.lineno, f"shardc.{n}") for n in subpackages)
            else:
                out.append((node.lineno, target))
    return out


MODULES = modules()
NAMES = {m for m, _ in MODULES}


def _type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST, type_checking: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements at any depth: those that run when the module runs or its functions
    are called, and with `type_checking` those in the body of an `if TYPE_CHECKING:` too."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif not type_checking and isinstance(node, ast.If) and _type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: n.lineno)


def _known(target: str) -> str | None:
    """The package module `target` names, or the longest one it lies under."""
    while target:
        if target in NAMES:
            return target
        target = target.rpartition(".")[0]
    return None


def runtime_imports(
    path: Path, module: str, type_checking: bool = False
) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, package module, names imported from it) for each import that runs (with
    `type_checking`, also those only a type checker reads), resolved as
    Python does: `from shardc.tools.plan import render` imports the module `render`, while
    `from shardc.tools.plan import plan` imports a name of the package's `__init__`. A module
    that calls `importlib.import_module` imports every package module whose full name it
    spells in a string (the CLI's table of subcommand modules)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    out = []
    if "import_module" in text:  # `importlib.import_module(name)` over a table of module names
        out.extend(
            (node.lineno, node.value, ())
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in NAMES and "." in node.value
        )
    for node in _import_nodes(tree, type_checking):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, t, ()) for a in node.names if (t := _known(a.name)))
            continue
        if node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module or ""
        names: list[str] = []
        for a in node.names:
            if f"{source}.{a.name}" in NAMES:
                out.append((node.lineno, f"{source}.{a.name}", ()))
            else:
                names.append(a.name)
        if names and (t := _known(source)):
            out.append((node.lineno, t, tuple(names)))
    return out


def import_graph() -> nx.DiGraph:
    """The package's modules, an edge from each to each module it imports at run time."""
    g = nx.DiGraph()
    for name, path in MODULES:
        g.add_node(name, path=path)
        for line, target, _ in runtime_imports(path, name):
            if target != name:
                g.add_edge(name, target, line=line)
    return g


KNOWN_CYCLES: tuple[frozenset[str], ...] = ()
"""Import cycles that exist today and are scheduled to go. A cycle passes only when all its
modules lie inside one of these sets."""

KNOWN_PRIVATE: frozenset[tuple[str, str, str]] = frozenset()
"""(importer, imported module, name) of `_private` imports scheduled to go."""


def test_runtime_imports_counts_local_imports_not_type_checking(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from shardc.tools.plan import render, plan\n"
        "if TYPE_CHECKING:\n"
        "    from shardc.driver.report import Report\n"
        "def f():\n"
        "    from shardc.tools.sweep import _sizes\n",
        encoding="utf-8",
    )
    assert runtime_imports(path, "shardc.tools.m") == [
        (2, "shardc.tools.plan.render", ()),
        (2, "shardc.tools.plan", ("plan",)),
        (6, "shardc.tools.sweep", ("_sizes",)),
    ]
    assert (4, "shardc.driver.report", ("Report",)) in runtime_imports(
        path, "shardc.tools.m", type_checking=True
    )


def test_no_import_cycles() -> None:
    g = import_graph()
    cycles = []
    for scc in nx.strongly_connected_components(g):
        if len(scc) < 2 or any(scc <= known for known in KNOWN_CYCLES):
            continue
        sub = g.subgraph(scc)
        loop = nx.find_cycle(sub)
        edges = "\n".join(
            f"  {a} imports {b} ({g.nodes[a]['path'].relative_to(ROOT)}:{g.edges[a, b]['line']})"
            for a, b in loop
        )
        cycles.append(f"{len(scc)} modules import each other: {sorted(scc)}; one loop:\n{edges}")
    assert not cycles, "\n".join(cycles)


def test_known_cycles_still_exist() -> None:
    """A cycle that is gone comes off the list, so that it cannot come back unseen."""
    sccs = [scc for scc in nx.strongly_connected_components(import_graph()) if len(scc) > 1]
    for known in KNOWN_CYCLES:
        assert any(scc & known for scc in sccs), f"no cycle among {sorted(known)}: unlist it"


def test_no_private_names_imported() -> None:
    found = []
    for name, path in MODULES:
        for line, target, names in runtime_imports(path, name, type_checking=True):
            for n in names:
                if (
                    n.startswith("_")
                    and not n.startswith("__")
                    and (name, target, n) not in KNOWN_PRIVATE
                ):
                    found.append(f"{path.relative_to(ROOT)}:{line}: imports {n} from {target}")
    assert not found, (
        "a private name belongs to its module; make it public or move it:\n" + "\n".join(found)
    )


def test_every_module_has_a_layer() -> None:
    for name, _ in MODULES:
        layer_of(name)


@pytest.mark.parametrize("name,path", MODULES, ids=[m for m, _ in MODULES])
def test_imports_go_down(name: str, path: Path) -> None:
    mine = layer_of(name)
    upward = []
    for line, target in imports(path, name):
        if not target.startswith("shardc"):
            continue
        if target == "shardc" and name != "shardc":
            upward.append(f"line {line}: imports the top-level package `shardc`")
            continue
        theirs = layer_of(target)
        if theirs > mine:
            upward.append(f"line {line}: {target} ({LAYERS[theirs][0]}) is above {LAYERS[mine][0]}")
    assert not upward, f"{path.relative_to(ROOT)}:\n" + "\n".join(upward)


@pytest.mark.parametrize(
    "name,path", [(m, p) for m, p in MODULES if layer_of(m) == 0], ids=lambda x: str(x)
)
def test_hardware_is_stdlib_only(name: str, path: Path) -> None:
    outside = [
        t
        for _, t in imports(path, name)
        if t.split(".")[0] not in STDLIB and not t.startswith("shardc.hardware")
    ]
    assert not outside, f"{name} imports {outside}"


@pytest.mark.parametrize(
    "name,path", [(m, p) for m, p in MODULES if layer_of(m) == 1], ids=lambda x: str(x)
)
def test_the_language_has_no_sympy(name: str, path: Path) -> None:
    assert not [t for _, t in imports(path, name) if t.split(".")[0] == "sympy"], (
        f"{name} imports SymPy; costs belong to the passes"
    )


DRIVER_LINES = 300
"""The driver's modules stay small: one purpose each, at most this many lines."""


def test_driver_modules_stay_small() -> None:
    grown = []
    for name, path in MODULES:
        if not name.startswith("shardc.driver."):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > DRIVER_LINES:
            grown.append(f"{path.relative_to(ROOT)}: {lines} lines (at most {DRIVER_LINES})")
    assert not grown, "split the module by purpose:\n" + "\n".join(grown)
