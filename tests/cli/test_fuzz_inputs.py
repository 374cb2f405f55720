"""Fuzz inputs for the front end: random derivations of grammar/shard.lark, random token
streams, and mutations of programs/*.shard; plus the in-process runner that judges each one.

Run a large budget by hand: `python -m tests.cli.test_fuzz_inputs --n 10000 --seed 0`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.paths import ROOT

POSITIONED = re.compile(r"^[^:]+:\d+:\d+: error\[[A-Z]\d{3}\]")

SAMPLES: dict[str, list[str]] = {
    "NAME": [
        "A",
        "B",
        "C",
        "W_in",
        "I",
        "J",
        "K",
        "X",
        "Y",
        "bf16",
        "f32",
        "int8",
        "gelu",
        "copy",
        "mesh",
        "U",
        "AllGather_X",
        "x1",
        "nowrap",
        "ici",
        "dcn",
    ],
    "INT": ["0", "1", "2", "3", "4", "8", "16", "64", "1_024", "8192", "99999999999999999999"],
    "DIMSPEC": ["I", "J", "K", "I_X", "J_Y", "K_XY", "I_{X,Y}", "J_YX", "Q_Z", "I_", "K_X"],
    "CONTRACT": ["·_J", "*_I", "·_{I,J}", "·_K", "*_Q", "·_{J,J}"],
    "COLLECTIVE": [
        "AllGather_X",
        "ReduceScatter_{X,K}",
        "AllReduce_Y",
        "AllToAll_{X,J}",
        "AllGather_XY",
        "ReduceScatter_X",
        "AllToAll_{Y,I}",
        "AllReduce_{X,X}",
    ],
    "UNREDUCED": ["U_X", "U_Y", "U_XY", "U_Z"],
    "HWNAME": ["tpu-v5e", "h100", "tpu-v4p", "nosuch", "b200"],
    "STRING": ['"tpu-v5e"', '"x.toml"', '"TPU v5e"', '""'],
    "ADDOP": ["+", "-"],
    "MULOP": ["*"],
    "COMMENT": ["# note"],
    "_NL": ["\n"],
}
"""Text for each named terminal; unknown terminals get a word from `GENERIC`."""
GENERIC = ["A", "X", "1", "=", ",", "(", ")", "[", "]", "{", "}", "·", "*_J", "@", "\n"]
NOISE = [
    "×",
    "@",
    "⋅",
    "−",
    "–",
    "\\\n",
    ";",
    "#",
    '"',
    "_",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "\t",
    "é",
    "\x00",
    "·",
    "·_",
    "_{}",
    "= =",
    "\r\n",
]


def _grammar():
    """(rules by origin, terminal samples) from the shipped grammar, via Lark's own loader."""
    from lark import Lark

    from shardc import grammar

    parser = Lark(grammar.grammar_text(), parser="lalr", keep_all_tokens=True)
    rules: dict[str, list[list[tuple[bool, str]]]] = {}
    for r in parser.rules:
        rules.setdefault(r.origin.name, []).append([(s.is_term, s.name) for s in r.expansion])
    terms: dict[str, list[str]] = {}
    for t in parser.terminals:
        if t.pattern.type == "str":
            terms[t.name] = [t.pattern.value]
        else:
            terms[t.name] = SAMPLES.get(t.name, GENERIC)
    return rules, terms


@dataclass
class Generator:
    """Deterministic fuzz inputs from a seed."""

    seed: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.rules, self.terms = _grammar()
        # Comments dropped: mutations should land in code, not in prose.
        self.seeds = [
            re.sub(r"(?m)^\s*#.*\n|\s*#.*$", "", p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "programs").glob("*.shard"))
        ]
        self.depth = self._min_depth()

    def _min_depth(self) -> dict[str, int]:
        depth: dict[str, int] = {}
        for _ in range(50):
            for name, alts in self.rules.items():
                for alt in alts:
                    d = [0 if term else depth.get(s, 10**6) for term, s in alt]
                    depth[name] = min(depth.get(name, 10**6), 1 + max(d, default=0))
        return depth

    def derive(self, symbol: str = "start", budget: int = 16) -> list[str]:
        """A random derivation; past the budget the shallowest alternative is taken."""
        alts = self.rules[symbol]
        if budget <= 0:
            alts = sorted(
                alts, key=lambda a: max([0 if t else self.depth.get(s, 0) for t, s in a], default=0)
            )[:1]
        out: list[str] = []
        for term, s in self.rng.choice(alts):
            if term:
                out.append(self.rng.choice(self.terms.get(s, GENERIC)))
            else:
                out.extend(self.derive(s, budget - 1))
        return out

    def from_grammar(self) -> str:
        return " ".join(self.derive())

    def token_stream(self) -> str:
        pool = [w for ws in self.terms.values() for w in ws]
        return " ".join(self.rng.choice(pool) for _ in range(self.rng.randint(1, 30)))

    def mutant(self) -> str:
        tokens = re.findall(
            r"\s+|[A-Za-z_][A-Za-z0-9_]*(?:_\{[^}\n]*\})?|\d[\d_]*|.", self.rng.choice(self.seeds)
        )
        for _ in range(self.rng.randint(1, 4)):
            tokens = self._mutate(tokens)
        return "".join(tokens)

    def _mutate(self, t: list[str]) -> list[str]:
        if not t:
            return [self.rng.choice(NOISE)]
        i = self.rng.randrange(len(t))
        op = self.rng.randrange(9)
        if op == 0:
            return t[:i] + t[i + 1 :]
        if op == 1:
            return t[:i] + [t[i], t[i]] + t[i + 1 :]
        if op == 2 and i + 1 < len(t):
            return t[:i] + [t[i + 1], t[i]] + t[i + 2 :]
        if op == 3:
            nums = [k for k, x in enumerate(t) if x[:1].isdigit()]
            if nums:
                k = self.rng.choice(nums)
                return (
                    t[:k]
                    + [
                        self.rng.choice(
                            ["0", "-1", "1.5", "3", "99999999999999999999", "7", "1_0", "65536"]
                        )
                    ]
                    + t[k + 1 :]
                )
        if op == 4:
            swap = {"X": "Y", "Y": "X", "I": "J", "J": "I", "K": "X", "D": "B", "B": "F"}
            return [
                re.sub(r"\b[XYIJKDBF]\b|(?<=_)[XY]", lambda m: swap.get(m.group(0), "Z"), x)
                if k == i
                else x
                for k, x in enumerate(t)
            ]
        if op == 5:
            brackets = [k for k, x in enumerate(t) if x in "[](){}"]
            if brackets:
                k = self.rng.choice(brackets)
                return t[:k] + t[k + 1 :]
        if op == 6:
            return t[:i]
        if op == 7:
            return t[:i] + [self.rng.choice(NOISE)] + t[i:]
        pool = [w for ws in self.terms.values() for w in ws]
        return t[:i] + [self.rng.choice(pool)] + t[i + 1 :]

    def inputs(self, n: int) -> Iterator[tuple[str, str]]:
        """(kind, text) pairs: half mutations, a third grammar derivations, the rest tokens."""
        for _ in range(n):
            r = self.rng.random()
            if r < 0.5:
                yield "mutant", self.mutant()
            elif r < 0.85:
                yield "grammar", self.from_grammar()
            else:
                yield "tokens", self.token_stream()


class FuzzTimeout(BaseException):
    """Raised by the alarm: a BaseException so the CLI's `except Exception` does not eat it.
    The alarm counts this process's CPU seconds (`ITIMER_PROF`), not the wall clock: on a loaded
    machine a 2 s compile took over 10 s of wall clock, failed as a hang, and the minimizer then
    ran hundreds of such compiles."""


@dataclass(frozen=True, slots=True)
class Outcome:
    command: str
    code: int
    problem: str  # "" when the input was handled: exit 0/1 and positioned diagnostics

    @property
    def ok(self) -> bool:
        return not self.problem


def judge(command: str, code: int, err: str) -> str:
    """Why an exit code and stderr are not acceptable, or ""."""
    if code not in (0, 1):
        return f"exit {code}: {err.strip().splitlines()[0] if err.strip() else ''}"
    if "Traceback" in err or "internal error" in err:
        return "traceback or internal error"
    for line in err.splitlines():
        if "error[" in line and not POSITIONED.match(line):
            return f"diagnostic without a position: {line}"
    if code == 1 and not any(POSITIONED.match(x) for x in err.splitlines()):
        return "exit 1 without a positioned error"
    return ""


def run_one(text: str, folder: Path, timeout_s: float = 10.0) -> list[Outcome]:
    """`shardc check` and `shardc compile` of `text`, in-process, each judged."""
    from shardc.cli.app import main

    path = folder / "fuzz.shard"
    path.write_text(text, encoding="utf-8")
    out: list[Outcome] = []

    def alarm(signum, frame):
        raise FuzzTimeout()

    old = signal.signal(signal.SIGPROF, alarm)
    try:
        for command in ("check", "compile"):
            err = io.StringIO()
            signal.setitimer(signal.ITIMER_PROF, timeout_s)
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    code = main([command, str(path)])
            except FuzzTimeout:
                out.append(Outcome(command, -1, f"took over {timeout_s:g} s of CPU"))
                continue
            except SystemExit as exc:
                code = int(exc.code or 0)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            out.append(Outcome(command, code, judge(command, code, err.getvalue())))
    finally:
        signal.signal(signal.SIGPROF, old)
    return out


def minimize(text: str, still_fails) -> str:
    """Greedy delta debugging over lines, then tokens, to a fixpoint: drop what the failure
    does not need."""
    for split in (r"[^\n]*\n|[^\n]+", r"\s+|\w+|."):
        tokens = re.findall(split, text)
        changed = True
        while changed:
            changed = False
            chunk = max(1, len(tokens) // 2)
            while chunk >= 1:
                i = 0
                while i < len(tokens):
                    trial = tokens[:i] + tokens[i + chunk :]
                    if trial and still_fails("".join(trial)):
                        tokens, changed = trial, True
                    else:
                        i += chunk
                chunk //= 2
        text = "".join(tokens)
    return text


def _signature(problem: str) -> str:
    """The kind of failure: `exit 3: ... AttributeError`, without the changing details."""
    m = re.search(r"(\w+(?:Error|Exception|Iteration)):", problem)
    return m.group(1) if m else problem[:40]


def fuzz(n: int, seed: int = 0, deadline_s: float | None = None) -> dict:
    """Run `n` inputs; return counts and the failures (minimized), as a JSON-able dict."""
    gen = Generator(seed)
    kinds: dict[str, int] = {}
    exits: dict[str, int] = {}
    failures: list[dict] = []
    signatures: set[str] = set()
    start = time.perf_counter()
    ran = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind, text in gen.inputs(n):
            if deadline_s is not None and time.perf_counter() - start > deadline_s:
                break
            ran += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            for o in run_one(text, folder):
                exits[f"{o.command} {o.code}"] = exits.get(f"{o.command} {o.code}", 0) + 1
                if o.ok:
                    continue
                sig = f"{o.command}: {o.problem[:120]}"
                if sig in signatures:
                    continue
                signatures.add(sig)

                def fails(t: str, o=o) -> bool:
                    return any(
                        r.command == o.command and _signature(r.problem) == _signature(o.problem)
                        for r in run_one(t, folder)
                    )

                failures.append(
                    {
                        "kind": kind,
                        "command": o.command,
                        "problem": o.problem,
                        "input": text,
                        "minimal": minimize(text, fails),
                    }
                )
    return {
        "inputs": ran,
        "seed": seed,
        "kinds": kinds,
        "exits": exits,
        "seconds": round(time.perf_counter() - start, 1),
        "failures": failures,
    }


def test_generator_is_deterministic_and_varied() -> None:
    a = list(Generator(3).inputs(30))
    assert a == list(Generator(3).inputs(30))
    assert {k for k, _ in a} == {"mutant", "grammar", "tokens"}


def test_judge_accepts_positioned_errors_only() -> None:
    good = "p.shard:3:14: error[S002]: mesh axis 'X' shards two dimensions of 'A'\n  A\n"
    assert judge("check", 1, good) == ""
    assert judge("check", 3, "shardc: internal error").startswith("exit 3")
    assert "without a position" in judge("check", 1, "p.shard: error[N010]: x")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="fuzz shardc's front end")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", help="write the findings as JSON here")
    args = ap.parse_args(argv)
    result = fuzz(args.n, args.seed)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "failures"}))
    for f in result["failures"]:
        print(f"--- {f['command']}: {f['problem']}\n{f['minimal']!r}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
