"""Fuzz the command line and the chip files: random option values (`--set`, `--solve-for`, `--y`,
`--devices`, `--optimize`/`--with`, `--chips`, `--batch`, `--seq`, `--mesh`, `-o`, `show`'s
`--max-blocks` and array names) and mutations
of the shipped chip TOMLs. Every run must exit 0, 1 or 2 without a traceback, print no NaN,
infinite or negative quantity, name the flag when it refuses one, and leave no file that a code
payload would have created.

The default budget runs in CI (SHARDC_FUZZ_OPTIONS_N, default 60 option runs and 40 chip
mutants); `python -m tests.cli.test_fuzz_options --n 2000` runs more by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import random
import re
import signal
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.hostile.harness import BAD_NUMBER
from tests.paths import ROOT

HAS_JAX = importlib.util.find_spec("jax") is not None
"""Whether the jax extra is installed: without it (the README's `pip install '.[test]'`),
xla-check ends in its own usage error before it reads every flag."""

PROGRAM = """\
mesh X, Y=4
dim B, D=8192, F=32768
hardware tpu-v5e
In: bf16[B_X, D]
W_in: bf16[D, F_Y]
Out[B_X, F_Y] = In ·_D W_in
"""
NUMBERS = [
    "0",
    "-1",
    "1",
    "2",
    "0.5",
    "4096",
    "4M",
    "1e6",
    "1e400",
    "-1e400",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "1e-320",
    "1e-310",
    "99999999999999999999",
    "9" * 400,
    "4_096",
    "1_",
    "_1",
    "0x10",
    "1e",
    "",
    " ",
    "1.5k",
    "4Mi",
    "３",
    "1/2",
    "2**10",
]
NAMES = [
    "B",
    "X",
    "Y",
    "D",
    "F",
    "C",
    "W_hbm",
    "W_ici",
    "t_hop",
    "Q",
    "_B",
    "__class__",
    "t_math_s",
    "N",
    "b",
    "",
    "B.real",
    "B[0]",
    "x" * 300,
]
EXPR_PIECES = [
    "B",
    "X",
    "Y",
    "D",
    "F",
    "C",
    "W_ici",
    "t_math_s",
    "t_comms_s",
    "bound",
    "1",
    "0",
    "2",
    "1e400",
    "+",
    "-",
    "*",
    "/",
    "**",
    "(",
    ")",
    "sqrt(",
    "Max(",
    "log(",
    ",",
    ".",
    "__class__",
    "__import__('os')",
    "'",
    '"',
    "[",
    "]",
    "lambda",
    ":",
    "sin(",
    "B**B**B",
    "os.system('touch pwned')",
    "\x00",
    "é",
]
PLAN_NUMBERS = [
    "0",
    "-1",
    "1",
    "3",
    "12",
    "64",
    "1.5",
    "0.5",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "1e-320",
    "9" * 400,
    "4M",
    "1Mi",
    "",
    "x",
    "6_4",
    "1048577",
]
"""Values for plan's --chips, --batch and --seq: hostile ones, and legitimate ones small enough
that a plan finishes quickly (plan's speed on large pods is measured in benchmarks/)."""
FLAGS = (
    "set",
    "solve-for",
    "y",
    "devices",
    "optimize",
    "chips",
    "batch",
    "seq",
    "mesh",
    "output",
    "max-devices",
    "max-blocks",
)


class FuzzTimeout(BaseException):
    """Raised by the alarm; a BaseException so the CLI's `except Exception` cannot eat it.
    The alarm counts this process's CPU seconds (`ITIMER_PROF`), not the wall clock: on a loaded
    machine a 2 s compile took over 10 s of wall clock, failed as a hang, and the minimizer then
    ran hundreds of such compiles."""


@dataclass(frozen=True, slots=True)
class Run:
    argv: tuple[str, ...]
    flags: tuple[str, ...]
    """The options being fuzzed (none for a chip mutant): a refusal names one of them."""


@dataclass(frozen=True, slots=True)
class Finding:
    argv: tuple[str, ...]
    problem: str


class Generator:
    """Deterministic option values and chip-file mutants from a seed."""

    def __init__(self, seed: int, folder: Path) -> None:
        self.rng = random.Random(seed)
        self.folder = folder
        self.program = folder / "p.shard"
        self.program.write_text(PROGRAM, encoding="utf-8")
        self.chips = sorted((ROOT / "hardware").glob("*.toml"))

    def _expr(self) -> str:
        return "".join(self.rng.choice(EXPR_PIECES) for _ in range(self.rng.randint(1, 8)))

    def _number(self) -> str:
        return self.rng.choice(NUMBERS)

    def option_run(self) -> Run:
        p = str(self.program)
        flag = self.rng.choice(FLAGS)
        match flag:
            case "set":
                value = f"{self.rng.choice(NAMES)}={self._number()}"
                cmd = self.rng.choice(["compile", "check", "derive"])
                return Run((cmd, p, "--set", value, "--set", "B=4096"), ("--set",))
            case "solve-for":
                return Run(("derive", p, "--solve-for", self._expr()), ("--solve-for",))
            case "y":
                return Run(("sweep", p, "--set", "B=1e3:1e6:log5", "--y", self._expr()), ("--y",))
            case "devices":
                return Run(
                    (
                        "derive",
                        p,
                        "--set",
                        "Y=4",
                        "--optimize",
                        "X",
                        "--with",
                        "Y",
                        "--devices",
                        self.rng.choice([self._number(), self._expr()]),
                    ),
                    ("--devices", "--optimize"),
                )
            case "optimize":
                a, b = self.rng.choice(NAMES), self.rng.choice(NAMES)
                return Run(("derive", p, "--optimize", a, "--with", b), ("--optimize", "--with"))
            case "chips" | "batch" | "seq":
                args = {
                    "chips": "64",
                    "batch": "1M",
                    "seq": "4096",
                    flag: self.rng.choice(PLAN_NUMBERS),
                }
                return Run(
                    (
                        "plan",
                        "--card",
                        "llama3-8b",
                        "--hw",
                        "tpu-v5e",
                        *[x for k, v in args.items() for x in (f"--{k}", v)],
                    ),
                    (f"--{flag}",),
                )
            case "mesh":
                mesh = ", ".join(
                    f"{self.rng.choice(NAMES)}={self._number()}"
                    for _ in range(self.rng.randint(1, 3))
                )
                return Run(("model", "program", "llama3-8b", "--mesh", mesh), ("--mesh",))
            case "output":
                target = self.rng.choice(
                    [
                        str(self.folder / "missing" / "r.txt"),
                        str(self.folder),
                        "/dev/full",
                        p,
                        str(self.folder / "ok.txt"),
                    ]
                )
                return Run(("compile", p, "--set", "B=4096", "-o", target), ("-o",))
            case "max-blocks":  # `shardc show`: the option, an array name and a size
                array = self.rng.choice(["In", "W_in", "Out", *NAMES])
                return Run(
                    (
                        "show",
                        p,
                        array,
                        "--max-blocks",
                        self._number(),
                        "--set",
                        f"{self.rng.choice(NAMES)}={self._number()}",
                        "--ops",
                    ),
                    ("--max-blocks", "--set", "no array"),
                )
            case _:
                return Run(
                    (
                        "xla-check",
                        p,
                        "--set",
                        "B=4096",
                        "--set",
                        "X=2",
                        "--max-devices",
                        self._number(),
                    ),
                    ("--max-devices",),
                )

    def chip_mutant(self) -> Run:
        text = self.rng.choice(self.chips).read_text(encoding="utf-8")
        lines = text.splitlines()
        for _ in range(self.rng.randint(1, 3)):
            lines = self._mutate_toml(lines)
        path = self.folder / f"chip{self.rng.randrange(10**6)}.toml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if self.rng.random() < 0.5:
            return Run(("hw", "show", str(path)), ())
        return Run(("compile", str(self.program), "--set", "B=4096", "--hw", str(path)), ())

    def _mutate_toml(self, lines: list[str]) -> list[str]:
        values = [i for i, x in enumerate(lines) if re.match(r"\s*\w+\s*=", x)]
        if not values:
            return lines
        i = self.rng.choice(values)
        key = lines[i].split("=", 1)[0]
        op = self.rng.randrange(6)
        out = list(lines)
        if op == 0:
            del out[i]
        elif op == 1:
            number = self.rng.choice(
                [
                    "0",
                    "-1",
                    "nan",
                    "inf",
                    "-inf",
                    "1e400",
                    "1e-320",
                    "0.0",
                    "1e308",
                    "true",
                    "[]",
                    "{}",
                ]
            )
            out[i] = f"{key}= {number}"
        elif op == 2:
            shape = self.rng.choice(
                ["16x16", "0x0", "-4x4", "4x4x4x4", "x", "", "1e9x1e9", "99999999999999999999x2"]
            )
            out[i] = f'{key}= "{shape}"'
        elif op == 3:
            out[i] = f"{key}= " + "[" * self.rng.choice([3, 50, 3000]) + "]" * 3000
        elif op == 4:
            out.insert(i, lines[i])  # a duplicate key
        else:
            out[i] = lines[i] + self.rng.choice(["", " x", " # é", "\x00", '"'])
        return out

    def runs(self, n_options: int, n_chips: int) -> Iterator[Run]:
        for _ in range(n_options):
            yield self.option_run()
        for _ in range(n_chips):
            yield self.chip_mutant()


def judge(run: Run, code: int, out: str, err: str, folder: Path) -> str:
    """Why one run is not acceptable, or ""."""
    if code not in (0, 1, 2):
        return f"exit {code}: {err.strip()[-300:]}"
    if "Traceback" in err or "internal error" in err:
        return "traceback or internal error: " + err.strip()[-300:]
    if code in (1, 2) and not err.strip():
        return "failed without a message"
    if code == 2 and "needs JAX: pip install" in err and not HAS_JAX:
        return ""  # xla-check without the jax extra: the README's `.[test]` has none
    if code == 2 and run.flags and not any(f in err for f in run.flags):
        return f"a usage error that does not name {' or '.join(run.flags)}: {err.strip()[-200:]}"
    bad = BAD_NUMBER.search(out)
    if bad:
        return f"prints {bad.group(0)!r}: {out[max(0, bad.start() - 60) : bad.end()]!r}"
    if (folder / "pwned").exists() or Path("pwned").exists():
        return "a payload ran"
    return ""


def run_one(run: Run, folder: Path, timeout_s: float = 20.0) -> str:
    from shardc.cli.app import main

    def alarm(signum, frame):
        raise FuzzTimeout()

    old = signal.signal(signal.SIGPROF, alarm)
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    signal.setitimer(signal.ITIMER_PROF, timeout_s)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(run.argv))
    except FuzzTimeout:
        return f"took over {timeout_s:g} s of CPU"
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
        os.chdir(cwd)
    return judge(run, code, out.getvalue(), err.getvalue(), folder)


def fuzz(n_options: int, n_chips: int, seed: int = 0) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="shardc-fuzz-") as d:
        folder = Path(d)
        for run in Generator(seed, folder).runs(n_options, n_chips):
            problem = run_one(run, folder)
            if problem and problem[:60] not in seen:
                seen.add(problem[:60])
                findings.append(Finding(run.argv, problem))
    return findings


def test_fuzz_options_and_chip_files() -> None:
    n = int(os.environ.get("SHARDC_FUZZ_OPTIONS_N", "60"))
    findings = fuzz(n, max(1, n * 2 // 3), seed=int(os.environ.get("SHARDC_FUZZ_SEED", "0")))
    assert not findings, "\n".join(f"{f.argv}: {f.problem}" for f in findings)


def test_generator_is_deterministic(tmp_path: Path) -> None:
    a = [r.argv[:1] + r.argv[2:] for r in Generator(5, tmp_path).runs(20, 5) if r.flags]
    b = [r.argv[:1] + r.argv[2:] for r in Generator(5, tmp_path).runs(20, 5) if r.flags]
    assert a == b and len({r[0] for r in a}) > 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="fuzz shardc's options and chip files")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    findings = fuzz(args.n, args.n // 2, args.seed)
    for f in findings:
        print(f"--- {' '.join(f.argv)}\n    {f.problem}")
    print(f"{len(findings)} distinct problems")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
