"""The layer contract: imports go one way only, lowest first: hardware -> the language -> passes
-> the driver -> tools -> the CLI. A module may import its own layer and those below it, never
one above, not even inside a function. The language has no SymPy; hardware/ is stdlib only.

The layers are the import names under `shardc` (see pyproject.toml's package-dir).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"dsl": "shardc", "passes": "shardc.passes", "hardware": "shardc.hardware",
                "grammar": "shardc.grammar"}
LAYERS = (
    ("hardware", ("shardc.hardware",)),
    ("language", ("shardc.grammar", "shardc.lang")),
    ("passes", ("shardc.passes",)),
    ("driver", ("shardc.driver",)),
    ("tools", ("shardc.tools",)),
    ("cli", ("shardc.cli", "shardc.__main__")),
    ("api", ("shardc",)),
)
"""Lowest first. `shardc` itself (the package's `__init__`) re-exports the public API and sits on
top."""
STDLIB = set(sys.stdlib_module_names)
SUBPACKAGES = ("hardware", "grammar", "passes", "lang", "driver", "tools", "cli")


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
            upward.append(f"line {line}: {target} ({LAYERS[theirs][0]}) is above "
                          f"{LAYERS[mine][0]}")
    assert not upward, f"{path.relative_to(ROOT)}:\n" + "\n".join(upward)


@pytest.mark.parametrize("name,path", [(m, p) for m, p in MODULES
                                       if layer_of(m) == 0], ids=lambda x: str(x))
def test_hardware_is_stdlib_only(name: str, path: Path) -> None:
    outside = [t for _, t in imports(path, name)
               if t.split(".")[0] not in STDLIB and not t.startswith("shardc.hardware")]
    assert not outside, f"{name} imports {outside}"


@pytest.mark.parametrize("name,path", [(m, p) for m, p in MODULES
                                       if layer_of(m) == 1], ids=lambda x: str(x))
def test_the_language_has_no_sympy(name: str, path: Path) -> None:
    assert not [t for _, t in imports(path, name) if t.split(".")[0] == "sympy"], (
        f"{name} imports SymPy; costs belong to the passes")
