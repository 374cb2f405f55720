"""Hostile cases for numbers that are not numbers and for crashes on wrong types (the hardening
issue's round 2): NaN, infinity, subnormal and out-of-range values in every place a number
enters a report (repeat counts, derive's --devices, sweep grids, chip files, model cards,
`--set`, literals of a million digits), type-wrong card and chip fields, and values so long that
echoing them would flood the terminal. Each class has the reproducer and its neighbours.
"""

from __future__ import annotations

from tests.hostile.harness import ROOT, Case

V5E = (
    (ROOT / "hardware" / "tpu-v5e.toml")
    .read_text(encoding="utf-8")
    .replace('name = "tpu-v5e"', 'name = "mine"')
)
"""The shipped TPU v5e chip file as `mine.toml` (a chip file's name equals its file name)."""
CARD = (ROOT / "dsl" / "tools" / "models" / "cards" / "llama3-8b.toml").read_text(encoding="utf-8")
TWO_CHIP = (ROOT / "programs" / "two-chip.shard").read_text(encoding="utf-8")
CASE4 = (ROOT / "programs" / "case4.shard").read_text(encoding="utf-8")
REPEAT = """\
mesh X=4
dim B=1024, D=1024, E=1024, L
hardware tpu-v5e
repeat COUNT {
  A: bf16[B_X, D]
  param W: bf16[D, E]
  C = A ·_D W
}
"""
SYMBOLIC = """\
mesh X, Y
dim I=8192, J=8192, K=16384
hardware tpu-v5e
A: bf16[I_X, J]
B: bf16[J, K_Y]
C[I_X, K_Y] = A ·_J B
"""
WIDE = (
    "mesh X=2\ndim " + ", ".join(f"D{i}" for i in range(20)) + "\nhardware tpu-v5e\n"
    "A: f32[" + ", ".join(f"D{i}" for i in range(20)) + "]\nB = gelu(A)\n"
)
"""Twenty symbolic sizes in one array: bound near 2**62 each, every cost overflows a float."""
MILLION = "9" * 1_000_000
ARG_DIGITS = "9" * 100_000
"""A long number for the command line (one argument holds at most 128 KiB on Linux)."""
QUIET = 4000
"""The most characters of stderr a refusal of a huge value may take."""


def _chip(old: str, new: str) -> dict[str, str]:
    assert old in V5E, old
    return {"mine.toml": V5E.replace(old, new, 1)}


def _card(old: str, new: str) -> dict[str, str]:
    assert old in CARD, old
    return {"card.toml": CARD.replace(old, new, 1)}


def _card_line(key: str, value: str) -> dict[str, str]:
    """The card with the line `key = ...` written `key = value`."""
    lines = CARD.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"{key} = "))
    lines[at] = f"{key} = {value}"
    return {"card.toml": "\n".join(lines)}


def _repeat(count: str) -> dict[str, str]:
    return {"p.shard": REPEAT.replace("COUNT", count)}


REPEAT_COUNTS = [
    Case(
        "repeat-symbolic-self-difference",
        ("compile", "{tmp}/p.shard"),
        files=_repeat("L - L"),
        expect=("error[R002]", "every value of L"),
    ),
    Case(
        "repeat-symbolic-one-minus",
        ("compile", "{tmp}/p.shard"),
        files=_repeat("1 - L"),
        expect=("error[R002]",),
    ),
    Case(
        "repeat-symbolic-negative-multiple",
        ("compile", "{tmp}/p.shard"),
        files=_repeat("L - 2 * L"),
        expect=("error[R002]",),
    ),
    Case(
        "repeat-symbolic-times-zero",
        ("compile", "{tmp}/p.shard"),
        files=_repeat("L * (2 - 2)"),
        expect=("error[R002]",),
    ),
    Case(
        "repeat-symbolic-check",
        ("check", "{tmp}/p.shard"),
        files=_repeat("(L - L) * 3"),
        expect=("error[R002]",),
    ),
    Case(
        "repeat-symbolic-bound-to-zero",
        ("compile", "{tmp}/p.shard", "--set", "L=1"),
        files=_repeat("L - 1"),
        expect=("error[R002]",),
    ),
    Case(
        "repeat-symbolic-plus-one",
        ("compile", "{tmp}/p.shard"),
        files=_repeat("L - L + 1"),
        exits=(0,),
    ),
    Case(
        "repeat-symbolic-may-be-positive",
        ("compile", "{tmp}/p.shard"),
        files=_repeat("L * L - L"),
        exits=(0,),
    ),
    Case(
        "repeat-symbolic-json",
        ("compile", "{tmp}/p.shard", "--format", "json"),
        files=_repeat("L - L"),
        expect=("error[R002]",),
    ),
    Case(
        "repeat-count-million-digits",
        ("compile", "{tmp}/p.shard"),
        files=_repeat(MILLION),
        expect=("error[P",),
        stderr_limit=QUIET,
    ),
]

DERIVE_DEVICES = [
    Case(
        f"derive-devices-is-{name}",
        ("derive", "{tmp}/p.shard", "--optimize", "X", "--with", "Y", "--devices", value),
        files={"p.shard": SYMBOLIC},
        expect=("--devices",),
    )
    for name, value in (
        ("nan", "nan"),
        ("NaN", "NaN"),
        ("inf", "inf"),
        ("Infinity", "Infinity"),
        ("minus-inf", "-inf"),
        ("zero", "0"),
        ("negative", "-3"),
        ("fraction", "3.5"),
        ("1e400", "1e400"),
        ("subnormal", "5e-324"),
        ("digits", ARG_DIGITS),
    )
]

SWEEP_GRIDS = [
    Case(
        "sweep-negative-grid",
        ("sweep", "{tmp}/p.shard", "--set", "B=-1:1:lin5", "--set", "D=4096", "--set", "F=1024"),
        files={"p.shard": TWO_CHIP},
        expect=("--set", "must be positive"),
    ),
    Case(
        "sweep-negative-grid-wide",
        (
            "sweep",
            "{tmp}/p.shard",
            "--set",
            "B=-4096:4096:lin5",
            "--set",
            "D=4096",
            "--set",
            "F=1024",
        ),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
    ),
    Case(
        "sweep-zero-start",
        ("sweep", "{tmp}/p.shard", "--set", "B=0:4096:lin5", "--set", "D=4096", "--set", "F=1024"),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
    ),
    Case(
        "sweep-negative-stop-log",
        ("sweep", "{tmp}/p.shard", "--set", "B=1:-1e6:log5", "--set", "D=4096", "--set", "F=1024"),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
    ),
    Case(
        "sweep-negative-fixed",
        ("sweep", "{tmp}/p.shard", "--set", "B=1:4096:lin5", "--set", "D=-4096", "--set", "F=1024"),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
    ),
    Case(
        "sweep-two-grids-negative",
        (
            "sweep",
            "{tmp}/p.shard",
            "--set",
            "B=1:4096:lin5",
            "--set",
            "D=-8:8:lin5",
            "--set",
            "F=1024",
        ),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
    ),
    Case(
        "sweep-grid-past-a-size",
        (
            "sweep",
            "{tmp}/p.shard",
            "--set",
            "B=1e-300:1e300:log50",
            "--set",
            "D=9e18",
            "--set",
            "F=9e18",
        ),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
        stderr_forbid=("RuntimeWarning",),
    ),
    Case(
        "sweep-grid-huge-ends",
        ("sweep", "{tmp}/p.shard", "--set", "B=1:9e18:lin50", "--set", "D=9e18", "--set", "F=9e18"),
        files={"p.shard": TWO_CHIP},
        exits=(0, 1),
        stderr_forbid=("RuntimeWarning",),
    ),
    Case(
        "sweep-overflowing-quantities",
        (
            "sweep",
            "{tmp}/p.shard",
            "--set",
            "D0=1:9e18:log8",
            *(a for i in range(1, 20) for a in ("--set", f"D{i}=4e18")),
        ),
        files={"p.shard": WIDE},
        stderr_forbid=("RuntimeWarning", "Warning:"),
    ),
    Case(
        "sweep-figure-subnormal",
        (
            "sweep",
            "{tmp}/p.shard",
            "--set",
            "W_hbm=1e-320:1e-300:log5",
            "--set",
            "D=4096",
            "--set",
            "F=1024",
            "--set",
            "B=8",
        ),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
        stderr_forbid=("RuntimeWarning",),
    ),
    Case(
        "sweep-figure-zero",
        ("sweep", "{tmp}/p.shard", "--set", "C=0:1e14:lin5", "--set", "D=4096", "--set", "F=1024"),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
    ),
    Case(
        "sweep-grid-digits",
        (
            "sweep",
            "{tmp}/p.shard",
            "--set",
            f"B=1:{ARG_DIGITS}:lin5",
            "--set",
            "D=4096",
            "--set",
            "F=1024",
        ),
        files={"p.shard": TWO_CHIP},
        expect=("--set",),
        stderr_limit=QUIET,
    ),
    Case(
        "sweep-json-overflow",
        (
            "sweep",
            "{tmp}/p.shard",
            "--format",
            "json",
            "--set",
            "D0=1:9e18:log8",
            *(a for i in range(1, 20) for a in ("--set", f"D{i}=4e18")),
        ),
        files={"p.shard": WIDE},
        stdout_forbid=("Infinity", "NaN"),
        stderr_forbid=("RuntimeWarning",),
    ),
]

CHIP_FIGURES = [
    *(
        Case(
            f"chip-{name}-{label}",
            ("hw", "show", "{tmp}/mine.toml"),
            files=_chip(line, line.split("=")[0] + "= " + value),
            expect=("error[H",),
        )
        for name, line in (
            ("flops", "bf16 = 1.97e14"),
            ("hbm-bw", "hbm_bw = 8.1e11"),
            ("hop-latency", "hop_latency_s = 1e-6"),
            ("dcn", "bw_per_chip = 3.125e9"),
            ("pcie", "pcie_bw = 1.6e10"),
        )
        for label, value in (
            ("subnormal", "5e-324"),
            ("tiny", "1e-200"),
            ("huge", "1e308"),
            ("inf", "inf"),
            ("nan", "nan"),
            ("negative", "-1.0"),
        )
    ),
    Case(
        "chip-hbm-bytes-1e308",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip("hbm_bytes = 16e9", "hbm_bytes = 1e308"),
        expect=("error[H",),
    ),
    Case(
        "chip-links-huge-int",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip("links_per_axis = 2", "links_per_axis = 99999999999999999999999"),
        expect=("error[H",),
    ),
    Case(
        "chip-subnormal-compile",
        ("compile", "{tmp}/p.shard", "--hw", "{tmp}/mine.toml"),
        files={**_chip("hbm_bw = 8.1e11", "hbm_bw = 5e-324"), "p.shard": TWO_CHIP},
        expect=("error[H",),
    ),
    Case(
        "chip-subnormal-sweep",
        (
            "sweep",
            "{tmp}/p.shard",
            "--hw",
            "{tmp}/mine.toml",
            "--set",
            "B=1:4096:lin5",
            "--set",
            "D=4096",
            "--set",
            "F=1024",
        ),
        files={**_chip("hbm_bw = 8.1e11", "hbm_bw = 5e-324"), "p.shard": TWO_CHIP},
    ),
    Case(
        "chip-megabyte-choice",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip('family = "tpu"', 'family = "' + "x" * 1_000_000 + '"'),
        expect=("error[H", "characters in all"),
        stderr_limit=QUIET,
    ),
    Case(
        "chip-megabyte-number-field",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip("hbm_bw = 8.1e11", 'hbm_bw = "' + "x" * 1_000_000 + '"'),
        expect=("error[H",),
        stderr_limit=QUIET,
    ),
    Case(
        "chip-megabyte-dtype-key",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip("[flops]", "[flops]\nk" + "y" * 1_000_000 + " = 3"),
        expect=("error[H",),
        stderr_limit=QUIET,
    ),
    Case(
        "chip-megabyte-name",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip('name = "mine"', 'name = "' + "z" * 1_000_000 + '"'),
        expect=("error[H",),
        stderr_limit=QUIET,
    ),
    Case(
        "chip-megabyte-alias",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip("aliases = [", 'aliases = [1, "' + "z" * 1_000_000 + '", '),
        expect=("error[H",),
        stderr_limit=QUIET,
    ),
    Case(
        "chip-megabyte-unknown-key",
        ("hw", "show", "{tmp}/mine.toml"),
        files=_chip("[flops]", "q" * 1_000_000 + " = 1\n[flops]"),
        expect=("error[H",),
        stderr_limit=QUIET,
    ),
    Case("hw-name-digits", ("hw", "show", ARG_DIGITS), stderr_limit=QUIET),
]

CARDS = [
    Case(
        "card-tokens-1e308",
        ("model", "show", "{tmp}/card.toml"),
        files=_card("tokens = 15e12", "tokens = 1e308"),
        expect=("tokens",),
    ),
    Case(
        "card-tokens-1e308-json",
        ("model", "show", "{tmp}/card.toml", "--format", "json"),
        files=_card("tokens = 15e12", "tokens = 1e308"),
        expect=("tokens",),
        stdout_forbid=("Infinity", "NaN"),
    ),
    Case(
        "card-tokens-large-json",
        ("model", "show", "{tmp}/card.toml", "--format", "json"),
        files=_card("tokens = 15e12", "tokens = 1e18"),
        exits=(0,),
        stdout_forbid=("Infinity", "NaN"),
    ),
    *(
        Case(
            f"card-tokens-{label}",
            ("model", "show", "{tmp}/card.toml"),
            files=_card("tokens = 15e12", f"tokens = {value}"),
            expect=("tokens",),
        )
        for label, value in (
            ("inf", "inf"),
            ("nan", "nan"),
            ("subnormal", "5e-324"),
            ("fraction", "0.5"),
            ("negative", "-15e12"),
            ("text-1e308", '"1e308"'),
            ("text-nan", '"nan"'),
            ("text-digits", '"' + MILLION + '"'),
            ("huge-int", "99999999999999999999999"),
        )
    ),
    Case(
        "card-batch-tokens-1e308",
        ("model", "show", "{tmp}/card.toml"),
        files=_card("[training]\n", "[training]\nbatch_tokens = 1e308\n"),
        expect=("batch_tokens",),
    ),
    *(
        Case(
            f"card-aliases-{label}",
            ("model", "show", "{tmp}/card.toml"),
            files=_card_line("aliases", value),
            expect=("aliases",),
        )
        for label, value in (
            ("integer-only", "3"),
            ("string", '"llama"'),
            ("table", "{a = 1}"),
            ("list-of-ints", "[1, 2]"),
            ("empty-string", '[""]'),
            ("float", "1e308"),
            ("bool", "true"),
            ("nested", "[[1]]"),
        )
    ),
    Case(
        "card-name-integer",
        ("model", "show", "{tmp}/card.toml"),
        files=_card_line("name", "3"),
        expect=("name must be",),
    ),
    Case(
        "card-name-empty",
        ("model", "show", "{tmp}/card.toml"),
        files=_card_line("name", '""'),
        expect=("name must be",),
    ),
    Case(
        "card-name-table",
        ("model", "show", "{tmp}/card.toml"),
        files=_card_line("name", "{a = 1}"),
        expect=("name must be",),
    ),
    Case(
        "card-display-name-list",
        ("model", "show", "{tmp}/card.toml"),
        files=_card_line("display_name", "[1]"),
        expect=("display_name",),
    ),
    Case(
        "card-display-name-megabyte-list",
        ("model", "show", "{tmp}/card.toml"),
        files=_card_line("display_name", '["' + "x" * 1_000_000 + '"]'),
        expect=("display_name",),
        stderr_limit=QUIET,
    ),
    Case(
        "card-reference-source-number",
        ("model", "show", "{tmp}/card.toml"),
        files={"card.toml": CARD + "\n[reference.extra]\nvalue = 3\nsource = 4\n"},
        expect=("source",),
    ),
    Case(
        "card-reference-value-tiny",
        ("model", "show", "{tmp}/card.toml"),
        files={
            "card.toml": CARD.replace(
                "[reference]", "[reference]\nparams = { value = 1e-300, source = 'tiny' }", 1
            )
            if "[reference]" in CARD
            else CARD + "\n[reference.params]\nvalue = 1e-300\nsource = 'tiny'\n"
        },
        exits=(0,),
    ),
    Case(
        "card-reference-value-inf",
        ("model", "show", "{tmp}/card.toml"),
        files={"card.toml": CARD + "\n[reference.extra]\nvalue = inf\n"},
        expect=("reference",),
    ),
    Case(
        "card-d-model-float",
        ("model", "show", "{tmp}/card.toml"),
        files=_card("d_model = 4096", "d_model = 4096.5"),
        expect=("d_model",),
    ),
    Case(
        "card-megabyte-key",
        ("model", "show", "{tmp}/card.toml"),
        files=_card("[architecture]", "[architecture]\nk" + "y" * 1_000_000 + " = 3"),
        expect=("error",),
        stderr_limit=QUIET,
    ),
    Case(
        "model-show-tokens-1e308",
        ("model", "show", "llama3-8b", "--tokens", "1e308"),
        expect=("--tokens",),
    ),
    Case(
        "model-show-tokens-nan",
        ("model", "show", "llama3-8b", "--tokens", "nan"),
        expect=("--tokens",),
    ),
    Case(
        "plan-card-tokens-1e308",
        ("plan", "--model", "{tmp}/card.toml", "--hw", "tpu-v5e", "--chips", "8"),
        files=_card("tokens = 15e12", "tokens = 1e308"),
        expect=("tokens",),
    ),
]

SETTINGS = [
    Case(
        "set-unknown-name",
        ("compile", "{tmp}/p.shard", "--set", "Q=3"),
        files={"p.shard": CASE4},
        expect=("error[N010]", "'Q'"),
    ),
    Case(
        "set-unknown-name-fraction",
        ("compile", "{tmp}/p.shard", "--set", "Q=0.5"),
        files={"p.shard": CASE4},
        expect=("error[N010]",),
    ),
    Case(
        "set-unknown-and-bad",
        ("compile", "{tmp}/p.shard", "--set", "Q=3", "--set", "I=0"),
        files={"p.shard": CASE4},
        expect=("error[N010]", "error[N016]"),
    ),
    Case(
        "set-unknown-name-check",
        ("check", "{tmp}/p.shard", "--set", "Q=3"),
        files={"p.shard": CASE4},
    ),
    Case(
        "set-unknown-name-derive",
        ("derive", "{tmp}/p.shard", "--set", "Q=3"),
        files={"p.shard": CASE4},
        expect=("N010",),
    ),
    Case(
        "set-unknown-name-json",
        ("compile", "{tmp}/p.shard", "--set", "Q=3", "--format", "json"),
        files={"p.shard": CASE4},
        expect=("error[N010]",),
    ),
    Case(
        "set-figure-huge",
        ("compile", "{tmp}/p.shard", "--set", "C=1e300"),
        files={"p.shard": CASE4},
        expect=("error[N016]",),
    ),
    Case(
        "set-figure-tiny",
        ("compile", "{tmp}/p.shard", "--set", "W_hbm=1e-200"),
        files={"p.shard": CASE4},
        expect=("error[N016]",),
    ),
    Case(
        "set-digits",
        ("compile", "{tmp}/p.shard", "--set", "I=" + ARG_DIGITS),
        files={"p.shard": CASE4},
        expect=("--set",),
        stderr_limit=QUIET,
    ),
    Case(
        "set-name-digits",
        ("compile", "{tmp}/p.shard", "--set", "Q" * 100_000 + "=3"),
        files={"p.shard": CASE4},
        stderr_limit=QUIET,
    ),
]

LITERALS = [
    Case(
        "dim-million-digits",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": f"mesh X=2\ndim I={MILLION}\nA: f32[I_X]\n"},
        expect=("error[P", "p.shard:2:"),
        stderr_limit=QUIET,
    ),
    Case(
        "dim-million-digit-fraction",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": f"mesh X=2\ndim I=1.{MILLION}e2\nA: f32[I_X]\n"},
        expect=("error[P",),
        stderr_limit=QUIET,
    ),
    Case(
        "dim-million-digit-exponent",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": f"mesh X=2\ndim I=1e{MILLION}\nA: f32[I_X]\n"},
        expect=("error[P",),
        stderr_limit=QUIET,
    ),
    Case(
        "mesh-million-digits",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": f"mesh X={MILLION}\ndim I=8\nA: f32[I_X]\n"},
        expect=("error[P",),
        stderr_limit=QUIET,
    ),
    Case(
        "dim-million-zeros",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": f"mesh X=2\ndim I=0.{'0' * 999_999}1\nA: f32[I_X]\n"},
        expect=("error[P",),
        stderr_limit=QUIET,
    ),
    Case(
        "dim-suffix-after-digits",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": f"mesh X=2\ndim I={'9' * 500}Ki\nA: f32[I_X]\n"},
        expect=("error[P",),
        stderr_limit=QUIET,
    ),
    Case(
        "plan-chips-digits",
        ("plan", "--model", "llama3-8b", "--hw", "tpu-v5e", "--chips", ARG_DIGITS),
        expect=("--chips",),
        stderr_limit=QUIET,
    ),
    Case(
        "plan-batch-digits",
        ("plan", "--model", "llama3-8b", "--hw", "tpu-v5e", "--chips", "8", "--batch", ARG_DIGITS),
        expect=("--batch",),
        stderr_limit=QUIET,
    ),
]

STORAGE = [
    Case(
        "int4-odd-block",
        ("compile", "{tmp}/p.shard"),
        files={
            "p.shard": "mesh X=2\ndim I=6, J=3\nhardware tpu-v5e\nA: int4[I_X, J]\nC = gelu(A)\n"
        },
        exits=(0,),
        stdout_forbid=("4.5 B", "9 B"),
    ),
    Case(
        "int4-odd-symbolic-at-set",
        ("compile", "{tmp}/p.shard", "--set", "I=3"),
        files={"p.shard": "mesh X=1\ndim I\nhardware tpu-v5e\nA: int4[I]\nC = gelu(A)\n"},
        exits=(0,),
        stdout_forbid=("1.5 B",),
    ),
    Case(
        "alias-counted-once",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\ndim I=8\nhardware tpu-v5e\nA: bf16[I_X]\nB = A\nC = B\n"},
        exits=(0,),
        stdout_forbid=("24 B", "16 B"),
    ),
]

CASES = [
    *REPEAT_COUNTS,
    *DERIVE_DEVICES,
    *SWEEP_GRIDS,
    *CHIP_FIGURES,
    *CARDS,
    *SETTINGS,
    *LITERALS,
    *STORAGE,
]
