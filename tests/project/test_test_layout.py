"""The tests mirror the package (tests/mirror.py): each test file in its layer's folder, every
folder a package (so two files of one name in two folders are two modules), no text naming a
test file by a path it has left, and no test finding the repository from its own place."""

from __future__ import annotations

import doctest

import tests.mirror
from tests.mirror import FOLDERS, misplaced, own_roots, placed, stale_references
from tests.paths import ROOT, TESTS


def test_each_test_file_is_in_its_folder():
    wrong = [f"{path.relative_to(ROOT)} -> tests/{folder}/" for path, folder in misplaced()]
    assert not wrong, "run `python -m tests.mirror` to move:\n" + "\n".join(wrong)


def test_each_folder_is_a_package():
    folders = {p.parent for p in TESTS.glob("*/test_*.py")}
    assert {f.name for f in folders} <= set(FOLDERS)
    assert all((f / "__init__.py").is_file() for f in folders)


def test_the_table_names_only_test_files_that_exist():
    where = placed()
    gone = sorted(name for names in FOLDERS.values() for name in names if name not in where)
    assert not gone, f"tests/mirror.py's FOLDERS names files that do not exist: {gone}"


def test_no_text_names_an_old_test_path():
    stale = stale_references(placed())
    assert not stale, "run `python -m tests.mirror` to update:\n" + "\n".join(
        f"{p.relative_to(ROOT)}: {n}" for p, n in stale.items()
    )


def test_no_test_file_finds_the_repository_from_its_own_place():
    rooted = [str(p.relative_to(ROOT)) for p in own_roots()]
    assert not rooted, (
        "use tests.paths.ROOT (`python -m tests.mirror` rewrites them): " + ", ".join(rooted)
    )


def test_the_mirror_examples():
    result = doctest.testmod(tests.mirror)
    assert result.attempted and not result.failed
