"""`shardc test FILES`: check the `# expect:` lines of .shard files over each program's whole
domain of sizes (`shardc.testing.expect`), as the pytest plugin does, without pytest.

Results on stdout (one line per expectation, then why each failure fails); diagnostics (a line
that is not an expectation, a program that does not compile) on stderr. Exit 0 when every
expectation holds, 1 when one fails or a file has errors, 2 for usage (no file, a file that
cannot be read, no `# expect:` line in any of them).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from shardc.cli.inputs import add_cost_model_flag, add_option_flags, read_program, usage_error
from shardc.lang.visible import visible, visible_lines


def _examples(text: str) -> int:
    """--examples: a whole number from 1 to 100,000."""
    from shardc.lang.numeric import NumberError, parse_whole

    try:
        n = parse_whole(text, "--examples")
    except NumberError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 1 <= n <= 100_000:
        raise argparse.ArgumentTypeError(f"expected 1 to 100000 points, got {n}")
    return n


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "test", help="check the `# expect:` lines of .shard files over every size (docs/testing.md)"
    )
    t.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="paths to .shard files, or folders (their .shard files at any depth)",
    )
    add_option_flags(
        t, "hw", help={"hw": "chip for programs without a `hardware` line (name or TOML)"}
    )
    add_cost_model_flag(t)
    t.add_argument(
        "--examples",
        type=_examples,
        default=None,
        metavar="N",
        help="points a sampled expectation is tried at (default 100)",
    )
    t.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shardc.testing.expect import EXAMPLES, check_source, render_failure

    paths: list[str] = []
    for path in args.files:  # a folder: its .shard files, at any depth
        if path != "-" and os.path.isdir(path):
            paths.extend(sorted(str(p) for p in Path(path).rglob("*.shard") if p.is_file()))
        else:
            paths.append(path)
    sources = [read_program(path) for path in paths]  # exit 2 for one it cannot read
    examples = args.examples or EXAMPLES
    passed = failed = errors = found = 0
    failures: list[str] = []
    for source in sources:
        from shardc.hardware import HardwareError

        try:
            checked = check_source(
                source,
                hw=args.hw,
                examples=examples,
                compile_options={"model": args.model, "matmul_precision": args.matmul_precision},
            )
        except HardwareError as exc:
            return usage_error(f"--hw: {exc}")
        found += len(checked.found)
        if checked.diagnostics.items:
            print(checked.diagnostics.render(source), file=sys.stderr)
        errors += len(checked.diagnostics.errors())
        for o in checked.outcomes:
            status = "ok  " if o.passed else "FAIL"
            print(f"{visible(o.where)}: {status} {visible(o.expectation.text)}   ({o.how})")
            if o.passed:
                passed += 1
            else:
                failed += 1
                failures.append(render_failure(o))
    if not found:
        return usage_error(
            "no `# expect:` line in "
            + (", ".join(visible(s.name) for s in sources) or "no .shard file")
            + " (docs/testing.md)"
        )
    if failures:
        print()
        for text in failures:
            print(visible_lines(text))
    summary = [f"{passed} passed", f"{failed} failed"]
    if errors:
        summary.append(f"{errors} error{'s' if errors > 1 else ''}")
    print(", ".join(summary))
    return 0 if not failed and not errors else 1


__all__ = ["add_parser", "run"]
