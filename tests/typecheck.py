"""Type-check the `shardc` package with mypy, from the source tree.

The package's folders are mapped onto one import name by pyproject's `package-dir` (dsl/ is
`shardc`, passes/ is `shardc.passes`, ...), which mypy cannot read. This builds that tree out of
symbolic links under `build/typecheck/` and runs mypy on it, printing each error with the path of
the real file.

    python -m tests.typecheck            # the whole package; exit 0 when there is no error
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

TREE = ROOT / "build" / "typecheck"
# Subpackages that live in their own top-level folder (pyproject's package-dir).
SUBPACKAGES = ("passes", "hardware", "grammar")


def build_tree() -> Path:
    """`build/typecheck/shardc/`: links to dsl/'s entries and to the other top-level folders."""
    pkg = TREE / "shardc"
    if TREE.exists():
        shutil.rmtree(TREE)
    pkg.mkdir(parents=True)
    for entry in (ROOT / "dsl").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name in SUBPACKAGES:
        (pkg / name).symlink_to(ROOT / name)
    return pkg


def real_path(line: str) -> str:
    """Map `shardc/passes/x.py:3: ...` back to `passes/x.py:3: ...`."""
    if not line.startswith("shardc/"):
        return line
    rest = line[len("shardc/") :]
    head = rest.split("/", 1)[0]
    return rest if head in SUBPACKAGES else "dsl/" + rest


def run(argv: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    build_tree()
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(ROOT / "build" / "mypy-cache"),
        "-p",
        "shardc",
        *(argv or []),
    ]
    env = {**os.environ, "MYPYPATH": ""}
    return subprocess.run(cmd, cwd=TREE, capture_output=True, text=True, env=env)


def main(argv: list[str] | None = None) -> int:
    proc = run(argv if argv is not None else sys.argv[1:])
    for line in (proc.stdout + proc.stderr).splitlines():
        print(real_path(line))
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
