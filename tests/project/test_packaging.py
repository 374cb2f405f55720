"""Packaging: one import name. The wheel puts `shardc` (and its dist-info) into site-packages and
nothing else, and it works from a working folder that has its own `hardware/`, `passes/`,
`grammar/` and `dsl/` packages (common in ML repositories), both as `import shardc` and as the
`shardc` command. CI (.ci/run) installs the `test` extra and ends with the README's test command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest

from tests.paths import ROOT

PROGRAM = "mesh X=2\ndim B=8, D=4, F=6\nA: bf16[B, D_X]\nW: bf16[D_X, F]\nC[B, F] = A ·_D W\n"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_package_list_matches_the_tree() -> None:
    """pyproject.toml lists every package by import name; a new folder must be added there."""
    setuptools = _pyproject()["tool"]["setuptools"]
    found = set()
    for name, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *rel.parts]))
    assert sorted(setuptools["packages"]) == sorted(found)


def test_console_script_points_at_the_cli() -> None:
    assert _pyproject()["project"]["scripts"] == {"shardc": "shardc.cli:main"}


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^Run the tests.*?\n```\n(.+?)\n```", readme, re.M | re.S)
    assert found, "README.md has no fenced command after 'Run the tests'"
    return found.group(1)


def test_ci_ends_with_the_readmes_test_command() -> None:
    """.ci/run's last command is the README's test command, CONTRIBUTING.md quotes it, and the
    plugin its `-n` needs (pytest-xdist) is in the `test` extra that both install."""
    command = _readme_test_command()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == command
    assert f"`{command}`" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    if re.search(r"\s-n\s", f" {command} "):
        test_extra = _pyproject()["project"]["optional-dependencies"]["test"]
        assert any(re.match(r"pytest-xdist\b", r) for r in test_extra), test_extra


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str], set[str]]:
    """A fresh venv with the wheel installed (no dependencies: they come from this environment
    through a .pth file placed after the venv's own site-packages); returns the venv and the
    names in its site-packages before and after."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Build from a copy: setuptools leaves a build/ folder in the tree it builds.
    shutil.copytree(
        ROOT,
        tmp / "src",
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".ci-venv",
            "build",
            "dist",
            "*.egg-info",
            "__pycache__",
            ".hypothesis",
            ".pytest_cache",
            ".ruff_cache",
            "tests",
            "benchmarks",
            "docs",
        ),
    )
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(tmp / "src"),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("shardc-*.whl")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    before = {p.name for p in site.iterdir()}
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    after = {p.name for p in site.iterdir()}
    # Dependencies (sympy, lark, numpy, networkx) from the environment running the tests.
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env_dir, before, after


def test_the_wheel_adds_only_shardc(installed: tuple[Path, set[str], set[str]]) -> None:
    _, before, after = installed
    added = {n for n in after - before if n != "__pycache__"}
    assert {n for n in added if not n.endswith(".dist-info")} == {"shardc"}, added
    assert len([n for n in added if n.endswith(".dist-info")]) == 1, added


def test_works_beside_colliding_folders(
    installed: tuple[Path, set[str], set[str]], tmp_path: Path
) -> None:
    env_dir, _, _ = installed
    for name in ("hardware", "passes", "grammar", "dsl", "lang", "tools"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ImportError('the working folder\\'s own {name} package was imported')\n"
        )
    (tmp_path / "p.shard").write_text(PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    api = subprocess.run(
        [
            str(env_dir / "bin" / "python"),
            "-c",
            "import shardc; r = shardc.compile(open('p.shard').read(), hw='tpu-v5e'); "
            "print([c.op for c in r.ops]); import shardc.hardware as h; print(h.__file__)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert api.returncode == 0, api.stderr[-2000:]
    assert "['AllGather', 'AllGather', 'einsum']" in api.stdout
    assert str(env_dir) in api.stdout
    cli = subprocess.run(
        [
            str(env_dir / "bin" / "shardc"),
            "compile",
            "p.shard",
            "--hw",
            "tpu-v5e",
            "--format",
            "json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert '"schema": "shardc.report/1"' in cli.stdout
    for args in (["hw", "list"], ["model", "list"], ["limits", "--help"]):
        run = subprocess.run(
            [str(env_dir / "bin" / "shardc"), *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
        )
        assert run.returncode == 0, (args, run.stderr[-1000:])
