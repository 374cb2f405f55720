"""Hostile cases for the second hardening round's "Hangs and memory" and "Outputs that can hurt":
meshes no slice can hold (huge, prime, 2^40 devices, on TPUs, GPUs and no chip), nested
reductions, `-o` and `--plot` onto FIFOs, devices, folders and inputs (through symlinks too),
reports and generated programs carrying markup or terminal escapes from names, file names and
flag values. Each runs under the harness's time and memory bounds (tests/hostile/harness.py).
"""

from __future__ import annotations

from tests.hostile.harness import ROOT, Case

CARD = (ROOT / "dsl" / "tools" / "models" / "cards" / "llama3-8b.toml").read_text(encoding="utf-8")
V5E = (ROOT / "hardware" / "tpu-v5e.toml").read_text(encoding="utf-8")
PROG = "mesh X=2\ndim I=8, J=8\nhardware tpu-v5e\nA: bf16[I_X, J]\nB = gelu(A)\n"
IMG = "<img src=x onerror=alert(1)>"


def _mesh(axes: str, chip: str | None) -> str:
    hw = f"hardware {chip}\n" if chip else ""
    return f"mesh {axes}\ndim I\n{hw}A: f32[I_X]\nB = A ·_I A\n"


def _nested(kind: str, depth: int) -> str:
    return (
        "mesh X=2\ndim T=8, S=8\nA: f32[T_X, S]\nC = "
        + f"{kind}(" * depth
        + "A"
        + ")" * depth
        + "\n"
    )


def _chip_named(name: str) -> str:
    """The shipped v5e's TOML under another name (a chip's name must be its file's stem)."""
    quoted = name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    lines = [
        f'name = "{quoted}"'
        if line.startswith("name =")
        else "aliases = []"
        if line.startswith("aliases =")
        else line
        for line in V5E.splitlines()
    ]
    return "\n".join(lines) + "\n"


def _card(**fields: str) -> str:
    lines = CARD.splitlines()
    for key, value in fields.items():
        lines = [f'{key} = "{value}"' if line.startswith(f"{key} =") else line for line in lines]
    return "\n".join(lines) + "\n"


_TPUS = ("tpu-v5p", "tpu-v4p", "tpu-v5e", "tpu-v6e")
_HUGE = {
    "prime": "X=1000000007",
    "million-squared": "X=1000000, Y=1000000",
    "2pow40": "X=1099511627776",
    "2pow20-cubed": "X=1048576, Y=1048576, Z=1048576",
    "just-over-pod": "X=8961",
}

HANGS = [
    *(
        Case(
            f"mesh-{what}-{chip}",
            ("check", "{tmp}/p.shard"),
            files={"p.shard": _mesh(axes, chip)},
            expect=("error[H020]", "its pod")
            if what != "just-over-pod" or chip != "tpu-v5p"
            else ("error[H020]", "16x20x28"),
        )
        for chip in _TPUS
        for what, axes in _HUGE.items()
        if not (what == "just-over-pod" and chip != "tpu-v5p")
    ),
    *(
        Case(
            f"mesh-{what}-{chip or 'no-chip'}",
            ("compile", "{tmp}/p.shard"),
            files={"p.shard": _mesh(axes.replace("1000000007", "4294967311"), chip)},
            expect=("error[S015]", "4,294,967,296"),
        )
        for chip in ("h100", "b200", "gb200-nvl72", None)
        for what, axes in _HUGE.items()
        if what != "just-over-pod"
    ),
    Case(
        "mesh-prime-h100-within-limit",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _mesh("X=1000000007", "h100")},
        exits=(0, 1),
    ),
    Case(
        "mesh-dcn-pods-beyond-limit",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _mesh("P=2000000011 @dcn, X=4", "tpu-v5p")},
        expect=("error[S015]",),
    ),
    Case(
        "mesh-largest-prime-a-pod-holds",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _mesh("X=8951", "tpu-v5p")},
        exits=(0, 1),
    ),
    Case(
        "mesh-whole-pod",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _mesh("X=16, Y=20, Z=28", "tpu-v5p")},
        exits=(0, 1),
    ),
    Case(
        "mesh-pods-over-dcn",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _mesh("P=64 @dcn, X=4096", "tpu-v5p")},
        exits=(0, 1),
    ),
    Case(
        "mesh-set-prime",
        ("compile", "{tmp}/p.shard", "--set", "X=1000000007"),
        files={"p.shard": _mesh("X", "tpu-v5p")},
        expect=("error[H020]",),
    ),
    Case(
        "mesh-set-2pow40-check",
        ("check", "{tmp}/p.shard", "--set", "X=1099511627776"),
        files={"p.shard": _mesh("X, Y", "tpu-v5e")},
        expect=("error[H020]",),
    ),
    Case(
        "mesh-set-prime-regions",
        ("compile", "{tmp}/p.shard", "--regions", "--set", "X=1000000007"),
        files={"p.shard": _mesh("X", "tpu-v4p")},
        expect=("error[H020]",),
    ),
    Case(
        "mesh-set-huge-gpu",
        (
            "compile",
            "{tmp}/p.shard",
            "--set",
            "X=9223372036854775807",
            "--set",
            "Y=9223372036854775807",
        ),
        files={"p.shard": _mesh("X, Y", "h100")},
        expect=("error[S015]", "about 10^"),
    ),
    Case(
        "mesh-prime-json",
        ("compile", "{tmp}/p.shard", "--format", "json"),
        files={"p.shard": _mesh("X=1000000007", "tpu-v5p")},
        expect=("error[H020]",),
    ),
    Case(
        "mesh-prime-xla-check",
        ("xla-check", "{tmp}/p.shard"),
        files={"p.shard": _mesh("X=1000000007", "tpu-v5p")},
        exits=(1, 2),
    ),
    Case(
        "mesh-prime-export-jax",
        ("export-jax", "{tmp}/p.shard", "-o", "{tmp}/out.py"),
        files={"p.shard": _mesh("X=1000000007", "tpu-v5p")},
        exits=(1, 2),
        must_not_exist=("pwned", "out.py"),
    ),
    Case(
        "xla-max-devices-65536",
        ("xla-check", "{tmp}/p.shard", "--max-devices", "65536"),
        files={"p.shard": _mesh("X=256, Y=256", None)},
        expect=("--max-devices",),
    ),
    Case(
        "xla-max-devices-2pow40",
        ("xla-check", "{tmp}/p.shard", "--max-devices", "1099511627776"),
        files={"p.shard": _mesh("X=2", None)},
        expect=("--max-devices",),
    ),
    Case(
        "xla-more-devices-than-xla-flags",
        ("xla-check", "{tmp}/p.shard", "--max-devices", "1024"),
        files={"p.shard": _mesh("X=32, Y=32", None)},
        exits=(0, 2),
    ),
    Case(
        "plan-prime-chips",
        ("plan", "llama3-8b", "--hw", "tpu-v5p", "--chips", "1000000007"),
        expect=("--chips",),
    ),
    *(
        Case(
            f"nested-{kind.split('_')[0].lower()}-{depth}",
            ("compile", "{tmp}/p.shard"),
            files={"p.shard": _nested(kind, depth)},
            expect=("error[P012]",),
        )
        for kind in ("softmax_{S}", "Max_{S}")
        for depth in (101, 200, 1000)
    ),
    Case(
        "nested-softmax-100",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _nested("softmax_{S}", 100)},
        exits=(0,),
    ),
    Case(
        "nested-softmax-30-md",
        ("compile", "{tmp}/p.shard", "--format", "md"),
        files={"p.shard": _nested("softmax_{S}", 30)},
        exits=(0,),
    ),
    Case(
        "nested-softmax-20-backward",
        ("compile", "{tmp}/p.shard"),
        files={
            "p.shard": "mesh X=2\ndim T=8, S=8\nparam A: f32[T_X, S]\nC[T_X, S] = "
            + "softmax_{S}(" * 20
            + "A"
            + ")" * 20
            + "\nbackward\n"
        },
        exits=(0, 1),
    ),
]

_WRITERS = {
    "compile": ("compile", "{tmp}/p.shard", "-o"),
    "compile-md": ("compile", "{tmp}/p.shard", "--format", "md", "-o"),
    "model-program": ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X=2", "-o"),
    "export-jax": ("export-jax", "{tmp}/p.shard", "-o"),
    "sweep-plot": ("sweep", "{tmp}/p.shard", "--set", "I=8:64:lin3", "--plot"),
    "limits-plot": ("limits", "--preset", "h100", "--plot"),
}
"""Every command that writes a file the user names, up to the flag naming it."""

OUTPUTS = [
    *(
        Case(
            f"{name}-into-fifo",
            (*argv, "{tmp}/fifo.shard"),
            files={"p.shard": PROG},
            setup="fifo",
            expect=(argv[-1],),
        )
        for name, argv in _WRITERS.items()
    ),
    *(
        Case(
            f"{name}-into-dev-null",
            (*argv, "/dev/null"),
            files={"p.shard": PROG},
            expect=(argv[-1],),
        )
        for name, argv in _WRITERS.items()
        if name != "limits-plot"
    ),
    *(
        Case(
            f"{name}-into-directory",
            (*argv, "{tmp}/adir"),
            files={"p.shard": PROG},
            setup="dir",
            expect=(argv[-1],),
        )
        for name, argv in _WRITERS.items()
        if name != "limits-plot"
    ),
    *(
        Case(
            f"{name}-through-symlink-to-program",
            (*argv, "{tmp}/out.json"),
            files={"p.shard": PROG},
            setup="symlink:out.json->p.shard",
            expect=(argv[-1],),
        )
        for name, argv in _WRITERS.items()
        if name in ("compile", "compile-md", "export-jax", "sweep-plot")
    ),
    Case(
        "compile-o-dotdot-to-program",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/adir/../p.shard"),
        files={"p.shard": PROG},
        setup="dir",
        expect=("-o", "is the input"),
    ),
    Case(
        "compile-o-dev-stdout",
        ("compile", "{tmp}/p.shard", "-o", "/dev/stdout"),
        files={"p.shard": PROG},
        expect=("-o",),
    ),
    Case(
        "compile-o-trailing-slash",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/new/"),
        files={"p.shard": PROG},
        expect=("-o",),
        must_not_exist=("new",),
    ),
    Case(
        "compile-o-onto-chip-file",
        ("compile", "{tmp}/p.shard", "--hw", "{tmp}/tpu-v5e.toml", "-o", "{tmp}/tpu-v5e.toml"),
        files={"p.shard": PROG, "tpu-v5e.toml": V5E},
        expect=("-o", "is the input"),
    ),
    Case(
        "compile-o-onto-hardware-line-chip",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/link.toml"),
        files={
            "p.shard": PROG.replace("hardware tpu-v5e", 'hardware "tpu-v5e.toml"'),
            "tpu-v5e.toml": V5E,
        },
        setup="symlink:link.toml->tpu-v5e.toml",
        expect=("-o", "is the input"),
    ),
    Case(
        "model-program-o-symlink-onto-card",
        ("model", "program", "./card.toml", "-o", "{tmp}/out.toml"),
        files={"card.toml": CARD},
        setup="symlink:out.toml->card.toml",
        expect=("-o", "is the input"),
    ),
    Case(
        "model-program-o-onto-card",
        ("model", "program", "{tmp}/card.toml", "-o", "{tmp}/card.toml"),
        files={"card.toml": CARD},
        expect=("-o", "is the input"),
    ),
    Case(
        "compile-o-long-name-is-cut",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/" + "a" * 5000),
        files={"p.shard": PROG},
        expect=("-o", "characters in all)"),
    ),
    Case(
        "compile-o-control-chars-in-name",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/nope/\x1b]0;pwned\x07.json"),
        files={"p.shard": PROG},
        expect=("-o", "\\x1b]0;pwned\\x07"),
    ),
    # Markup and escapes from names, file names, notes and flags.
    Case(
        "md-chip-name-html",
        ("compile", "{tmp}/p.shard", "--format", "md", "--hw", f"{{tmp}}/{IMG}.toml"),
        files={"p.shard": PROG, f"{IMG}.toml": _chip_named(IMG)},
        exits=(0,),
        stdout_expect=("&lt;img",),
        stdout_forbid=("<img",),
    ),
    Case(
        "md-file-name-html",
        ("compile", f"{{tmp}}/{IMG}.shard", "--format", "md"),
        files={f"{IMG}.shard": PROG},
        exits=(0,),
        stdout_forbid=("<img",),
    ),
    Case(
        "md-file-name-backticks-and-pipes",
        ("compile", "{tmp}/a`|`b $x$ [l](javascript:x).shard", "--format", "md"),
        files={"a`|`b $x$ [l](javascript:x).shard": PROG},
        exits=(0,),
        stdout_forbid=("](javascript",),
    ),
    Case(
        "md-file-name-newline",
        ("compile", "{tmp}/a\n<script>x.shard", "--format", "md"),
        files={"a\n<script>x.shard": PROG},
        exits=(0,),
        stdout_forbid=("<script", "\n<"),
    ),
    Case(
        "latex-file-name-newline",
        ("compile", "{tmp}/a\n\\input{pwn}.shard", "--format", "latex"),
        files={"a\n\\input{pwn}.shard": PROG},
        exits=(0,),
        stdout_forbid=("\n\\input",),
    ),
    Case(
        "latex-chip-name-specials",
        ("compile", "{tmp}/p.shard", "--format", "latex", "--hw", "{tmp}/x$\\def.toml"),
        files={"p.shard": PROG, "x$\\def.toml": _chip_named("x$\\def")},
        exits=(0,),
        stdout_expect=("% shardc report",),
    ),
    Case(
        "latex-chip-name-newline",
        ("compile", "{tmp}/p.shard", "--format", "latex", "--hw", "{tmp}/x\n\\input{p}.toml"),
        files={"p.shard": PROG, "x\n\\input{p}.toml": _chip_named("x\n\\input{p}")},
        exits=(0,),
        stdout_forbid=("\n\\input",),
    ),
    Case(
        "text-file-name-escape",
        ("compile", "{tmp}/\x1b]0;pwned\x07.shard"),
        files={"\x1b]0;pwned\x07.shard": PROG},
        exits=(0,),
        stdout_forbid=("\x1b", "\x07"),
        stdout_expect=("\\x1b]0;pwned\\x07",),
    ),
    Case(
        "diagnostic-file-name-escape",
        ("check", "{tmp}/\x1b[2J.shard"),
        files={"\x1b[2J.shard": PROG + "C: f32[I_Q]\n"},
        expect=("\\x1b[2J", "error[S001]"),
    ),
    Case(
        "diagnostic-source-line-escape",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\ndim I=8\nA: f32[I_Q] # \x1b]0;pwned\x07 \x9b31m\n"},
        expect=("\\x1b]0;pwned\\x07", "\\x9b31m", "error[S001]"),
    ),
    Case(
        "diagnostic-bidi-override",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\ndim I=8\nA: f32[I_Q] # \u202eevil\n"},
        expect=("\\u202e",),
    ),
    Case(
        "hw-show-chip-note-escape",
        ("hw", "show", "{tmp}/tpu-v5e.toml"),
        files={
            "tpu-v5e.toml": V5E.replace(
                'wraparound_note = "', 'wraparound_note = "\\u001b]0;pwned\\u0007'
            )
        },
        exits=(0, 1),
        stdout_forbid=("\x1b",),
    ),
    Case(
        "mesh-flag-newline",
        ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X=2\ndim Zq=3"),
        expect=("--mesh",),
        stdout_forbid=("Zq",),
    ),
    Case(
        "mesh-flag-backslash-n",
        ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X=2\\ndim Zq=3"),
        expect=("--mesh",),
        stdout_forbid=("Zq",),
    ),
    Case(
        "mesh-flag-carriage-return-in-link",
        ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X=2 @ici\rdim Zq=3"),
        expect=("--mesh",),
        stdout_forbid=("Zq",),
    ),
    Case(
        "mesh-flag-semicolon-after-wrap",
        ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X=2 wrap;dim Zq=3"),
        expect=("--mesh",),
        stdout_forbid=("Zq",),
    ),
    Case(
        "mesh-flag-comment",
        ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X=2 @ici # x"),
        expect=("--mesh",),
    ),
    Case(
        "mesh-flag-link-written-from-values",
        (
            "model",
            "program",
            "llama3-8b",
            "--strategy",
            "dp",
            "--mesh",
            " X = 4 @ ici ( x ) , Y=2 nowrap",
        ),
        exits=(0,),
        stdout_expect=("mesh X=4 @ici(x), Y=2 nowrap\n",),
    ),
    Case(
        "mesh-flag-name-with-newline",
        ("model", "program", "llama3-8b", "--strategy", "fsdp", "--mesh", "X\n=2"),
        exits=(0, 1),
        stdout_forbid=("X\n=",),
    ),
    Case(
        "card-display-name-newline",
        ("model", "program", "{tmp}/card.toml", "--strategy", "fsdp", "--mesh", "X=2"),
        files={"card.toml": _card(display_name="Evil\\nmesh Zq=3\\r")},
        exits=(0,),
        stdout_forbid=("\nmesh Zq", "\r"),
    ),
    Case(
        "card-file-name-newline",
        ("model", "program", "{tmp}/a\nmesh Zq=3\n.toml", "--strategy", "fsdp", "--mesh", "X=2"),
        files={"a\nmesh Zq=3\n.toml": CARD},
        exits=(0,),
        stdout_forbid=("\nmesh Zq",),
    ),
    Case(
        "model-program-hw-path-quote",
        ("model", "program", "llama3-8b", "--hw", '{tmp}/a"b.toml'),
        files={'a"b.toml': _chip_named('a"b')},
        exits=(1, 2),
    ),
    Case(
        "model-show-card-escape",
        ("model", "show", "{tmp}/card.toml"),
        files={"card.toml": _card(display_name="\\u001b]0;pwned\\u0007")},
        exits=(0, 1),
        stdout_forbid=("\x1b",),
    ),
]

CASES = [*HANGS, *OUTPUTS]
