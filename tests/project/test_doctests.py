"""Every docstring example in the package runs: each module under `shardc` is imported by its
import name and `doctest` runs its examples (pytest's --doctest-modules would import the files
by their folder names, dsl.* and passes.*, which are not the installed names)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

SKIP = ("shardc.__main__",)
"""Modules that run on import."""
OPTIONAL = ("matplotlib", "jax", "jaxlib")
"""Extras a module may import at the top (`pip install 'shardc[plot]'`, `'shardc[jax]'`)."""


def _modules() -> list[str]:
    """Every module, walking `shardc` and the subpackages that live in folders of their own."""
    names = {"shardc"}
    for pkg in ("shardc", "shardc.passes", "shardc.hardware", "shardc.grammar"):
        names.add(pkg)
        path = importlib.import_module(pkg).__path__
        names.update(info.name for info in pkgutil.walk_packages(path, pkg + "."))
    return sorted(names - set(SKIP))


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs the optional {exc.name}")
        raise
    result = doctest.testmod(
        module,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
        report=True,
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
