"""The tests mirror the package: a test file lives in the folder of the layer it tests
(tests/lang/ for `shardc.lang`, ...), whole-project checks in tests/project/. This module holds
the file -> folder table and moves files into place; run it after adding a test file.

    python -m tests.mirror            # move every tests/test_*.py into its folder, fix references
    python -m tests.mirror --check    # say what is out of place; exit 1 if anything is

A file the table does not name goes where its imports point (`infer_folder`); add it to FOLDERS
so the choice is written down. Modules not named `test_*.py` (conftest.py, paths.py, the shared
helpers) stay at tests/. Moving a file also rewrites `Path(__file__)...` roots into
`tests.paths.ROOT`, and every reference to its old path (`tests/test_x.py`, `tests.test_x`) in
the repository's text files, CHANGELOG.md aside (history names the paths of its day).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.paths import ROOT, TESTS

LAYERS = ("hardware", "lang", "passes", "driver", "tools", "cli", "testing")
"""Folders named after the package's layers (`shardc.<layer>`), lowest first; `testing` is the
users' test helpers (`shardc.testing`)."""

FOLDERS: dict[str, tuple[str, ...]] = {
    "hardware": (
        "test_hardware",
        "test_chip_schema",
        "test_rates",
        "test_calibration",
        "test_network_calibration",
    ),
    "lang": (
        "test_parser",
        "test_numbers",
        "test_checked_numbers",
        "test_input_limits",
        "test_boundaries",
        "test_safety",
        "test_dtypes_and_units",
        "test_text_limits",
    ),
    "passes": (
        "test_attention_efficiency",
        "test_backward",
        "test_chain_plans",
        "test_elementwise_plans",
        "test_fusion",
        "test_lowering",
        "test_permute_cost",
        "test_pipeline",
        "test_reductions",
        "test_rename",
        "test_repeat",
        "test_reshard_and_plans",
        "test_schedule",
        "test_send",
        "test_validate_pass",
        "test_verify",
        "test_at_ties",
        "test_symbolic_fast_paths",
        "test_properties",
        "test_strategy_programs",
        "test_validate_parts",
        "test_reshard_rules",
        "test_backward_rules",
        "test_objective",
        "test_bound_sizes",
        "test_memo",
        "test_regions_alias",
        "test_lowering_parts",
    ),
    "driver": (
        "test_document",
        "test_evaluate",
        "test_json_text",
        "test_regions",
        "test_relation_text",
        "test_report_api",
        "test_explain",
        "test_user_expr",
        "test_output_schemas",
        "test_options",
        "test_schemas",
        "test_writers",
        "test_json_writer",
        "test_report_functions",
        "test_user_expr_syntax",
        "test_points",
    ),
    "tools": (
        "test_derive",
        "test_thresholds",
        "test_sweep",
        "test_simulate",
        "test_derive_regions_alias",
        "test_simulator_properties",
        "test_epoch_cli",
        "test_epoch_closed_form",
        "test_epoch_consistency",
        "test_epoch_simulator",
        "test_models",
        "test_hf_config",
        "test_card_schema",
        "test_plan",
        "test_plan_pipeline",
        "test_published_runs",
        "test_validation",
        "test_xla",
        "test_xla_random",
        "test_xla_reproducers",
        "test_lsp",
        "test_tool_parts",
        "test_xla_statements",
        "test_sweep_plans",
        "test_plan_accounting",
        "test_plan_framework",
    ),
    "cli": (
        "test_cli_and_api",
        "test_errors",
        "test_fuzz",
        "test_fuzz_inputs",
        "test_fuzz_options",
        "test_hostile",
        "test_show",
        "test_terminal",
        "test_termwrap",
        "test_command_modules",
    ),
    "testing": (
        "test_testing",
        "test_testing_docs",
        "test_oracle",
        "test_expect",
        "test_expect_parts",
    ),
    "project": (
        "test_golden",
        "test_citations",
        "test_layers",
        "test_lint",
        "test_packaging",
        "test_doctests",
        "test_no_eval",
        "test_notebook",
        "test_book",
        "test_book_corpus",
        "test_measured_bound",
        "test_textmate",
        "test_vscode_extension",
        "test_modules_tested",
        "test_test_layout",
    ),
}
"""Each test module (by name) and its folder. A module whose subject spans layers goes where its
main subject lives; the goldens and the book corpus, every program through the whole compiler,
are the project's."""

TITLES = {
    "hardware": "Tests of `shardc.hardware`: chip files, their schema, rates and calibrations.",
    "lang": "Tests of `shardc.lang`: the parser, numbers and the limits on input.",
    "passes": "Tests of `shardc.passes`: validation, lowering, collectives, costs, schedule.",
    "driver": "Tests of `shardc.driver`: compile(), the report as a value and its writers.",
    "tools": "Tests of `shardc.tools`: derive, sweep, simulate, plan, limits, xla-check, lsp.",
    "cli": "Tests of `shardc.cli`: commands, streams, exit codes, error output, hostile input.",
    "testing": "Tests of `shardc.testing`: strategies, checkers, the oracle, `# expect:` lines.",
    "project": "Whole-project checks: goldens, layers, lint, citations, packaging, docs, the "
    "book corpus.",
}
"""The one-line docstring of each folder's `__init__.py`."""

NOT_REWRITTEN = ("CHANGELOG.md",)
TEXT = {".py", ".md", ".toml", ".json", ".ipynb", ".lark", ".txt", ".yaml", ".shard", ".cfg"}
"""Text whose references to old test paths stay: the history names the paths of its day."""

_ROOTS = [
    (re.compile(r"Path\(__file__\)(?:\.resolve\(\))?\.(?:parent\.parent|parents\[1\])"), "ROOT"),
    (re.compile(r"Path\(__file__\)(?:\.resolve\(\))?\.parent(?![.\w])"), "TESTS"),
]


def folder_of(name: str) -> str | None:
    """The folder FOLDERS gives a test module (`test_parser` -> `lang`), or None."""
    for folder, names in FOLDERS.items():
        if name in names:
            return folder
    return None


RUNNERS = frozenset(
    {
        "shardc",
        "shardc.cli.app",
        "shardc.driver.api",
        "shardc.lang.source",
        "shardc.testing.strategies",
    }
)
"""Modules most tests import to run something (a command in-process, a compile, a source, a
generated program): they say nothing about what a test is about."""


def infer_folder(source: str) -> str:
    """Where a test file the table does not name goes: the layer it imports most modules of
    (RUNNERS aside), the higher on a tie; the CLI where it only runs commands in-process, the
    driver where it only compiles, and tests/project/ where it imports nothing of shardc.

    >>> infer_folder("from shardc.lang.parser import parse\\nfrom shardc.cli.app import main")
    'lang'
    >>> infer_folder("from shardc.cli.app import main"), infer_folder("import re")
    ('cli', 'project')
    """
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    shardc = {n for n in names if n == "shardc" or n.startswith("shardc.")}
    counts = Counter(n.split(".")[1] for n in shardc - RUNNERS if n.split(".")[1] in LAYERS)
    if counts:
        return max(LAYERS, key=lambda layer: (counts[layer], LAYERS.index(layer)))
    if "shardc.cli.app" in shardc:
        return "cli"
    return "driver" if shardc else "project"


def fix_roots(text: str) -> str:
    """`Path(__file__).resolve().parent.parent` -> ROOT, `Path(__file__).parent` -> TESTS,
    imported from tests.paths; a `ROOT = ROOT` left behind goes.

    >>> fix_roots('import json\\nDOC = Path(__file__).parents[1] / "docs"\\n')
    'import json\\n\\nfrom tests.paths import ROOT\\nDOC = ROOT / "docs"\\n'
    """
    used = []
    for pattern, name in _ROOTS:
        text, n = pattern.subn(name, text)
        if n:
            used.append(name)
    if not used:
        return text
    text = re.sub(r"^(ROOT|TESTS) = \1\n", "", text, flags=re.M)
    have = re.search(r"^from tests\.paths import (.*)$", text, flags=re.M)
    names = sorted(set(used) | set(have.group(1).split(", ") if have else ()))
    line = f"from tests.paths import {', '.join(names)}"
    if have:
        return text[: have.start()] + line + text[have.end() :]
    # After the last top-level import; `ruff check --fix` then sorts it into its block.
    last = max(
        (
            node.end_lineno or 0
            for node in ast.parse(text).body
            if isinstance(node, ast.Import | ast.ImportFrom)
        ),
        default=0,
    )
    lines = text.split("\n")
    lines.insert(last, "\n" + line)
    return "\n".join(lines)


def misplaced() -> list[tuple[Path, str]]:
    """Each test file at tests/'s top level, and each one in a folder other than the one FOLDERS
    gives it, with the folder it belongs in."""
    out = []
    for path in sorted(TESTS.glob("test_*.py")):
        folder = folder_of(path.stem) or infer_folder(path.read_text(encoding="utf-8"))
        out.append((path, folder))
    for path in sorted(TESTS.glob("*/test_*.py")):
        folder = folder_of(path.stem)
        if folder and folder != path.parent.name:
            out.append((path, folder))
    return out


def placed() -> dict[str, str]:
    """Each test module in a folder, by name: `test_parser` -> `lang`."""
    return {p.stem: p.parent.name for p in TESTS.glob("*/test_*.py")}


def _text_files() -> list[Path]:
    """The repository's text files, tracked or not yet (git's ignores apply)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    paths = [ROOT / name for name in out.stdout.decode().split("\0") if name]
    return [
        p
        for p in paths
        if p.is_file()
        and p.name not in NOT_REWRITTEN
        and (p.suffix in TEXT or p.parent.name == ".ci")
    ]


def _reference(name: str, folder: str) -> re.Pattern[str]:
    """`tests/test_x.py`, `tests.test_x`, or the same in a folder other than `folder`."""
    others = "|".join(sorted(set(FOLDERS) - {folder}))
    return re.compile(rf"(?<![\w/.])tests([/.])(?:(?:{others})\1)?{name}(?![\w])")


def stale_references(where: dict[str, str]) -> dict[Path, int]:
    """Text files that still name a test module by its old top-level path, with the count."""
    out = {}
    patterns = {name: _reference(name, folder) for name, folder in where.items()}
    for path in _text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        # a pattern matches only where its name is in the text: the test is the cheap filter
        n = sum(len(p.findall(text)) for name, p in patterns.items() if name in text)
        if n:
            out[path] = n
    return out


def rewrite_references(where: dict[str, str]) -> list[Path]:
    """`tests/test_x.py` -> `tests/<folder>/test_x.py` and `tests.test_x` ->
    `tests.<folder>.test_x` in every tracked text file; returns the files changed."""
    changed = []
    patterns = {name: _reference(name, folder) for name, folder in where.items()}
    for path in stale_references(where):
        text = path.read_text(encoding="utf-8")
        new = text
        for name, pattern in patterns.items():
            new = pattern.sub(lambda m, n=name: f"tests{m.group(1)}{where[n]}{m.group(1)}{n}", new)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def _ensure_folder(folder: str) -> None:
    init = TESTS / folder / "__init__.py"
    if not init.exists():
        init.parent.mkdir(exist_ok=True)
        title = TITLES.get(folder, f"Tests of `shardc.{folder}`.")
        init.write_text(f'"""{title}"""\n', encoding="utf-8")
        subprocess.run(["git", "add", str(init)], cwd=ROOT, check=False)


def move(path: Path, folder: str) -> Path:
    """`git mv` a test file into its folder (created with an `__init__.py`), fixing its roots."""
    _ensure_folder(folder)
    target = TESTS / folder / path.name
    if target.exists():
        raise SystemExit(f"{target.relative_to(ROOT)} exists already: rename {path.name}")
    moved = subprocess.run(["git", "mv", str(path), str(target)], cwd=ROOT, capture_output=True)
    if moved.returncode != 0:  # not tracked yet
        path.rename(target)
    text = target.read_text(encoding="utf-8")
    fixed = fix_roots(text)
    if fixed != text:
        target.write_text(fixed, encoding="utf-8")
    return target


def own_roots() -> list[Path]:
    """Test files in a folder that still find the repository from their own place
    (`Path(__file__).parent.parent`): a merge can bring one back into a moved file."""
    return [
        p
        for p in sorted(TESTS.glob("*/test_*.py"))
        if any(pattern.search(p.read_text(encoding="utf-8")) for pattern, _ in _ROOTS)
    ]


def leftover_file_uses(path: Path) -> list[str]:
    """Lines that still locate things from the file's own place (other than its own name)."""
    return [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "__file__" in line and "Path(__file__).name" not in line
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.mirror", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--check", action="store_true", help="report only; exit 1 when anything is out of place"
    )
    args = ap.parse_args(argv)
    todo = misplaced()
    if args.check:
        stale = stale_references(placed())
        rooted = own_roots()
        for path, folder in todo:
            print(f"{path.relative_to(ROOT)}: belongs in tests/{folder}/")
        for path, n in stale.items():
            print(f"{path.relative_to(ROOT)}: {n} reference(s) to a test's old path")
        for path in rooted:
            print(f"{path.relative_to(ROOT)}: finds the repository from __file__ (tests.paths)")
        return 1 if todo or stale or rooted else 0
    moved = []
    for path, folder in todo:
        how = "" if folder_of(path.stem) else "  (inferred from its imports: add it to FOLDERS)"
        moved.append(move(path, folder))
        print(f"{path.relative_to(ROOT)} -> tests/{folder}/{path.name}{how}")
    for path in own_roots():  # placed already, but a merge brought `Path(__file__)` roots back
        path.write_text(fix_roots(path.read_text(encoding="utf-8")), encoding="utf-8")
        moved.append(path)
        print(f"roots from tests.paths: {path.relative_to(ROOT)}")
    changed = rewrite_references(placed())
    for path in changed:
        print(f"references updated: {path.relative_to(ROOT)}")
    touched = [str(p) for p in moved + [c for c in changed if c.suffix == ".py"]]
    if touched:  # the import a move added, sorted into place; an import it left unused, gone
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ruff",
                "check",
                "--no-cache",
                "--fix",
                "--quiet",
                "--select",
                "I,F401",
                *touched,
            ],
            cwd=ROOT,
            check=False,
        )
    for path in moved:
        for line in leftover_file_uses(path):
            print(f"check by hand: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
