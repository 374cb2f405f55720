"""docs/testing.md is run as written: its files are extracted into a folder, each quoted
`shardc test` output is what the command prints, and pytest there passes what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

DOC = ROOT / "docs" / "testing.md"
BLOCK = r"<!-- {kind}: (?P<arg>[^>]*?) -->\n```[a-z]*\n(?P<body>.*?)```\n"


def files() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    return {m["arg"]: m["body"] for m in re.finditer(BLOCK.format(kind="file"), text, re.S)}


def outputs() -> list[tuple[str, int, str]]:
    text = DOC.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(BLOCK.format(kind="output"), text, re.S):
        command, code = re.fullmatch(r"(.*) \(exit (\d)\)", m["arg"]).groups()
        first, _, printed = m["body"].partition("\n")
        assert first == f"$ {command}"
        out.append((command, int(code), printed))
    return out


def write(folder: Path, names: list[str] | None = None) -> None:
    for name, body in files().items():
        if names is None or name in names:
            (folder / name).write_text(body, encoding="utf-8")


def test_the_page_has_its_example():
    assert {"first.shard", "mlp.shard", "test_mlp.py", "test_rows.py"} <= files().keys()
    assert len(outputs()) == 2


@pytest.mark.parametrize("command,code,printed", outputs(), ids=lambda x: str(x)[:30])
def test_each_quoted_output_is_what_shardc_prints(tmp_path, command, code, printed):
    write(tmp_path)
    argv = command.split()
    assert argv[0] == "shardc"
    proc = subprocess.run(
        [sys.executable, "-m", "shardc", *argv[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == printed


def test_pytest_passes_what_the_page_says(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    runs = re.findall(r"<!-- pytest: (\d+) passed \(([^)]*)\) -->", text)
    assert runs
    count, names = runs[-1]  # the last: the whole folder
    write(tmp_path, [n.strip() for n in names.split(",")])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert f"{count} passed" in proc.stdout, proc.stdout[-4000:]
