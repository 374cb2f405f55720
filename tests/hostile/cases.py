"""The hostile-input corpus: each case an input a hostile but realistic user has tried, with the
outcome shardc must give (see `harness.py` for the judge). Grouped as the hardening issue lists
them: code execution, tracebacks on bad input, hangs and blow-ups, silently wrong output.
"""

from __future__ import annotations

from tests.hostile.harness import Case

PAYLOAD = "B.subs.__globals__['__builtins__']['__import__']('os').system('touch pwned')"
"""A string that runs `touch pwned` when handed to `sympify`, `eval` or `parse_expr`."""
PYPAYLOAD = '__import__("os").system("touch pwned")'

MLP = """\
mesh X=16
dim B=131072, D=8192, F=32768
hardware tpu-v5p
In: bf16[B_X, D]
param W_in: bf16[D_X, F]
param W_out: bf16[F, D_X]
Tmp = In ·_D W_in
Out[B_X, D] = gelu(Tmp) ·_F W_out
backward
"""
FSDP_SYMBOLIC = """\
mesh X
dim B, D=8192, F=32768
hardware tpu-v5p
In: bf16[B_X, D]
param W_in: bf16[D_X, F]
param W_out: bf16[F, D_X]
Tmp[B_X, F] = In ·_D W_in
Out[B_X, D] = Tmp ·_F W_out
backward
"""
SMALL = """\
mesh X=8, Y=4
dim I=8192, J=8192, K=16384
hardware tpu-v5e
A: bf16[I_X, J]
B: bf16[J, K_Y]
C[I_X, K_Y] = A ·_J B
"""
REPEAT_L = """\
mesh X=4
dim B=1024, D=1024, E=1024, L
hardware tpu-v5e
repeat L {
  A: bf16[B_X, D]
  param W: bf16[D, E]
  C = A ·_D W
}
"""
TINY = "mesh X=2\ndim I=4\nA: bf16[I_X]\n"


def _nested_calls(depth: int) -> str:
    return (
        "mesh X=2\ndim I=8, J=8\nA: f32[I_X, J]\nC = " + "gelu(" * depth + "A" + ")" * depth + "\n"
    )


def _chain(op: str, terms: int) -> str:
    return "mesh X=2\ndim I=8, J=8\nA: f32[I_X, J]\nC = " + f" {op} ".join(["A"] * terms) + "\n"


def _contraction_chain(n: int) -> str:
    return "mesh X=2\ndim I=8\nA: f32[I, I]\nC = " + " ·_I ".join(["A"] * n) + "\n"


def _many_statements(n: int) -> str:
    return "mesh X=2\ndim I=8\n" + "".join(f"A{i}: f32[I_X]\n" for i in range(n))


def _symbolic_chain(n: int) -> str:
    lines = ["mesh X, Y", "dim " + ", ".join(f"D{i}" for i in range(n + 1)), "A0: bf16[D0_X, D1]"]
    for i in range(1, n + 1):
        lines.append(
            f"W{i}: bf16[D{i}, D{i + 1 if i < n else 0}_Y]"
            if False
            else f"W{i}: bf16[D{i}_Y, D{(i + 1) % (n + 1)}]"
        )
        lines.append(f"A{i} = A{i - 1} ·_D{i} W{i}")
    return "\n".join(lines) + "\n"


def _wide_mesh(n: int) -> str:
    axes = ", ".join(f"M{i}=2" for i in range(n))
    return f"mesh {axes}\ndim I=8\nA: f32[I_M0]\n"


def _contraction_over_axes(n: int) -> str:
    axes = [f"M{i}" for i in range(n)]
    return (
        f"mesh {', '.join(a + '=2' for a in axes)}\n"
        f"dim I={2**n}, J={2**n}, K={2**n}\n"
        f"A: f32[I, J_{{{','.join(axes)}}}]\nB: f32[J, K]\nC[I, K] = A ·_J B\n"
    )


CHIP_BAD_POD = """\
name = "mine"
kind = "tpu"
[compute]
bf16_flops = 1.97e14
[memory]
hbm_bytes = 1.6e10
hbm_bandwidth = 8.1e11
[ici]
bandwidth_unidirectional = 4.5e10
links_per_axis = 2
latency = 1e-6
[topology]
pod = [16, -16]
wraparound = "full"
"""
CHIP_DEEP = 'name = "deep"\nx = ' + "[" * 5000 + "]" * 5000 + "\n"


CODE_EXECUTION = [
    Case(
        "solve-for-payload",
        ("derive", "{tmp}/p.shard", "--solve-for", PAYLOAD),
        files={"p.shard": MLP},
        expect=("--solve-for",),
    ),
    Case(
        "sweep-y-payload",
        ("sweep", "{tmp}/p.shard", "--set", "B=1e3:1e6:log4", "--y", PAYLOAD),
        files={"p.shard": MLP},
        expect=("--y",),
    ),
    Case(
        "set-name-payload",
        ("compile", "{tmp}/p.shard", "--set", PAYLOAD + "=3"),
        files={"p.shard": MLP},
        expect=("--set",),
    ),
    Case(
        "devices-payload",
        ("derive", "{tmp}/p.shard", "--optimize", "X", "--with", "Y", "--devices", PAYLOAD),
        files={"p.shard": SMALL},
        expect=("--devices",),
    ),
    Case(
        "optimize-payload",
        ("derive", "{tmp}/p.shard", "--optimize", PAYLOAD, "--with", "Y"),
        files={"p.shard": SMALL},
        expect=("--optimize",),
    ),
    Case(
        "export-jax-file-name",
        ("export-jax", '{tmp}/a"""+str(' + PYPAYLOAD + ')+"""b.shard', "-o", "{tmp}/out.py"),
        files={'a"""+str(' + PYPAYLOAD + ')+"""b.shard': SMALL},
        exits=(0,),
        after=("python -c \"import runpy; runpy.run_path('out.py', run_name='imported')\"",),
    ),
    Case(
        "export-jax-output-name",
        ("export-jax", "{tmp}/p.shard", "-o", '{tmp}/o"""+str(' + PYPAYLOAD + ')+"""x.py'),
        files={"p.shard": SMALL},
        exits=(0,),
        after=(
            'for f in o*.py; do python -c "import runpy,sys; '
            'runpy.run_path(sys.argv[1], run_name=\'imported\')" "$f"; done',
        ),
    ),
    Case(
        "sweep-y-dunder",
        ("sweep", "{tmp}/p.shard", "--set", "B=1e3:1e6:log4", "--y", "t_math_s.__class__"),
        files={"p.shard": MLP},
        expect=("--y",),
    ),
    Case(
        "card-field-payload",
        ("plan", "--model", "{tmp}/card.toml", "--hw", "tpu-v5p", "--chips", "256"),
        files={"card.toml": f'name = "{PYPAYLOAD}"\nd_model = "{PYPAYLOAD}"\n'},
    ),
]

TRACEBACKS = [
    Case(
        "dim-1e400",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\ndim B=1e400\nA: f32[B_X]\n"},
    ),
    Case(
        "dim-5000-digits",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\ndim B=" + "9" * 5000 + "\nA: f32[B_X]\n"},
    ),
    Case(
        "mesh-5000-digits",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=" + "9" * 5000 + "\ndim B=8\nA: f32[B_X]\n"},
    ),
    Case(
        "repeat-1e400",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": REPEAT_L.replace("repeat L", "repeat 1e400")},
    ),
    Case(
        "repeat-huge-int",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": REPEAT_L.replace("repeat L", "repeat " + "9" * 400)},
    ),
    Case("nested-gelu-500", ("compile", "{tmp}/p.shard"), files={"p.shard": _nested_calls(500)}),
    Case("nested-gelu-5000", ("compile", "{tmp}/p.shard"), files={"p.shard": _nested_calls(5000)}),
    Case("sum-chain-3000", ("compile", "{tmp}/p.shard"), files={"p.shard": _chain("+", 3000)}),
    Case("product-chain-3000", ("compile", "{tmp}/p.shard"), files={"p.shard": _chain("*", 3000)}),
    Case(
        "contraction-chain-500",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _contraction_chain(500)},
    ),
    Case(
        "parens-5000",
        ("compile", "{tmp}/p.shard"),
        exits=(0, 1),
        files={
            "p.shard": "mesh X=2\ndim I=8\nA: f32[I_X]\nC = " + "(" * 5000 + "A" + ")" * 5000 + "\n"
        },
    ),
    Case(
        "repeat-nesting-500",
        ("compile", "{tmp}/p.shard"),
        files={
            "p.shard": "mesh X=2\ndim I=8\n" + "repeat 2 {\n" * 500 + "A: f32[I_X]\n" + "}\n" * 500
        },
    ),
    Case(
        "set-mesh-axis-zero",
        ("compile", "{tmp}/p.shard", "--set", "X=0"),
        files={"p.shard": FSDP_SYMBOLIC},
        expect=("--set",),
    ),
    Case(
        "set-C-zero",
        ("compile", "{tmp}/p.shard", "--set", "C=0"),
        files={"p.shard": MLP},
        expect=("--set",),
    ),
    Case(
        "set-W_ici-zero",
        ("compile", "{tmp}/p.shard", "--set", "W_ici=0"),
        files={"p.shard": MLP},
        expect=("--set",),
    ),
    Case(
        "derive-devices-zero",
        ("derive", "{tmp}/p.shard", "--optimize", "X", "--with", "Y", "--devices", "0"),
        files={"p.shard": SMALL.replace("mesh X=8, Y=4", "mesh X, Y")},
        expect=("--devices",),
    ),
    Case(
        "derive-devices-negative",
        ("derive", "{tmp}/p.shard", "--optimize", "X", "--with", "Y", "--devices", "-1"),
        files={"p.shard": SMALL.replace("mesh X=8, Y=4", "mesh X, Y")},
        expect=("--devices",),
    ),
    Case(
        "solve-for-syntax-error",
        ("derive", "{tmp}/p.shard", "--solve-for", "B/(X"),
        files={"p.shard": MLP},
        expect=("--solve-for",),
    ),
    Case(
        "solve-for-function-call",
        ("derive", "{tmp}/p.shard", "--solve-for", "sin(B)"),
        files={"p.shard": MLP},
        expect=("--solve-for",),
    ),
    Case(
        "solve-for-unknown",
        ("derive", "{tmp}/p.shard", "--solve-for", "Q"),
        files={"p.shard": MLP},
        expect=("--solve-for",),
    ),
    Case(
        "solve-for-empty",
        ("derive", "{tmp}/p.shard", "--solve-for", ""),
        files={"p.shard": MLP},
        expect=("--solve-for",),
    ),
    Case(
        "output-missing-folder",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/no/such/dir/r.txt"),
        files={"p.shard": SMALL},
        expect=("-o",),
    ),
    Case(
        "output-is-directory",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/adir"),
        files={"p.shard": SMALL},
        setup="dir",
        expect=("-o",),
    ),
    Case(
        "output-full-disk",
        ("compile", "{tmp}/p.shard", "-o", "/dev/full"),
        files={"p.shard": SMALL},
        expect=("-o",),
    ),
    Case(
        "output-is-input",
        ("compile", "{tmp}/p.shard", "-o", "{tmp}/p.shard"),
        files={"p.shard": SMALL},
        expect=("-o",),
    ),
    Case(
        "output-is-input-export",
        ("export-jax", "{tmp}/p.shard", "-o", "{tmp}/p.shard"),
        files={"p.shard": SMALL},
        expect=("-o",),
    ),
    Case(
        "sweep-y-divide-by-zero",
        ("sweep", "{tmp}/p.shard", "--set", "B=1e3:1e6:log4", "--y", "t_math_s/0"),
        files={"p.shard": MLP},
        expect=("--y",),
    ),
    Case(
        "sweep-y-unknown-function",
        ("sweep", "{tmp}/p.shard", "--set", "B=1e3:1e6:log4", "--y", "frobnicate(t_math_s)"),
        files={"p.shard": MLP},
        expect=("--y",),
    ),
    Case(
        "sweep-y-syntax-error",
        ("sweep", "{tmp}/p.shard", "--set", "B=1e3:1e6:log4", "--y", "t_math_s +"),
        files={"p.shard": MLP},
        expect=("--y",),
    ),
    Case(
        "chip-bad-pod",
        ("hw", "show", "{tmp}/chip.toml"),
        files={"chip.toml": CHIP_BAD_POD},
        expect=("error[H",),
    ),
    Case(
        "chip-deep-nesting",
        ("hw", "show", "{tmp}/chip.toml"),
        files={"chip.toml": CHIP_DEEP},
        expect=("error[H",),
    ),
    Case(
        "chip-deep-nesting-compile",
        ("compile", "{tmp}/p.shard", "--hw", "{tmp}/chip.toml"),
        files={"chip.toml": CHIP_DEEP, "p.shard": SMALL},
    ),
    Case(
        "chip-not-utf8",
        ("hw", "show", "{tmp}/chip.toml"),
        files={"chip.toml": b'name = "\xff\xfe"\n'},
        expect=("error[H",),
    ),
    Case(
        "model-program-mesh-zero",
        ("model", "program", "llama3-70b", "--mesh", "X=0"),
        expect=("--mesh",),
    ),
    Case(
        "model-program-mesh-garbage",
        ("model", "program", "llama3-70b", "--mesh", "X=(("),
        expect=("--mesh",),
    ),
    Case("card-deep-nesting", ("model", "show", "{tmp}/card.toml"), files={"card.toml": CHIP_DEEP}),
    Case(
        "plan-batch-garbage",
        ("plan", "--model", "llama3-70b", "--hw", "tpu-v5p", "--chips", "256", "--batch", "lots"),
        expect=("--batch",),
    ),
    Case(
        "plan-batch-nan",
        ("plan", "--model", "llama3-70b", "--hw", "tpu-v5p", "--chips", "256", "--batch", "nan"),
        expect=("--batch",),
    ),
    Case(
        "plan-seq-negative",
        ("plan", "--model", "llama3-70b", "--hw", "tpu-v5p", "--chips", "256", "--seq", "-4096"),
        expect=("--seq",),
    ),
    Case(
        "plan-chips-zero",
        ("plan", "--model", "llama3-70b", "--hw", "tpu-v5p", "--chips", "0"),
        expect=("--chips",),
    ),
    Case(
        "xla-max-devices-negative",
        ("xla-check", "{tmp}/p.shard", "--max-devices", "-3"),
        files={"p.shard": SMALL},
        expect=("--max-devices",),
    ),
]

HANGS = [
    Case("mesh-300-axes", ("compile", "{tmp}/p.shard"), files={"p.shard": _wide_mesh(300)}),
    Case(
        "contraction-over-10-axes",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _contraction_over_axes(10)},
        exits=(0, 1),
    ),
    Case(
        "contraction-over-16-axes",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _contraction_over_axes(16)},
        exits=(0, 1),
    ),
    Case(
        "line-10MB",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\n# " + "x" * 10_000_000 + "\n"},
    ),
    Case(
        "statements-100000",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _many_statements(100_000)},
    ),
    Case(
        "symbolic-chain-25",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": _symbolic_chain(25)},
        exits=(0, 1),
    ),
    Case(
        "regions-symbolic-chain-25",
        ("compile", "{tmp}/p.shard", "--regions"),
        files={"p.shard": _symbolic_chain(25)},
        exits=(0, 1),
    ),
    Case(
        "derive-regions-symbolic-chain-4",
        ("derive", "{tmp}/p.shard", "--solve-for", "D1"),
        files={"p.shard": _symbolic_chain(4)},
        exits=(0, 1),
    ),
    Case(
        "solve-for-tower",
        ("derive", "{tmp}/p.shard", "--solve-for", "B**B**B**B**B"),
        files={"p.shard": MLP},
        exits=(0, 1, 2),
    ),
    Case("fifo-without-writer", ("compile", "{tmp}/fifo.shard"), setup="fifo"),
    Case("dev-zero", ("compile", "/dev/zero")),
    Case("dev-urandom", ("compile", "/dev/urandom")),
    Case("stdin-huge", ("compile", "-"), stdin=b"# " + b"x" * 50_000_000),
    Case(
        "sweep-1e8-points",
        ("sweep", "{tmp}/p.shard", "--set", "B=1:1e8:lin100000000"),
        files={"p.shard": MLP},
        expect=("--set",),
    ),
    Case(
        "sweep-1e9-points",
        ("sweep", "{tmp}/p.shard", "--set", "B=1:1e8:log1000000000"),
        files={"p.shard": MLP},
        expect=("--set",),
    ),
    Case(
        "sweep-two-grids-huge",
        ("sweep", "{tmp}/p.shard", "--set", "B=1:1e8:lin40000", "--set", "D=1:1e8:lin40000"),
        files={"p.shard": FSDP_SYMBOLIC.replace("D=8192", "D")},
        expect=("--set",),
    ),
    Case(
        "plan-chips-1048576",
        ("plan", "--model", "llama3-70b", "--hw", "tpu-v5p", "--chips", "1048576"),
        exits=(0, 1, 2),
    ),
    Case(
        "xla-check-huge-dims",
        ("xla-check", "{tmp}/p.shard"),
        files={
            "p.shard": "mesh X=2\ndim I=4194304, J=4194304\nA: f32[I_X, J]\nB: f32[J, I]\n"
            "C = A ·_J B\n"
        },
        exits=(0, 1),
        needs=("jax",),
    ),
]

SILENTLY_WRONG = [
    *[
        Case(
            f"set-{what}-{value}",
            ("compile", "{tmp}/p.shard", "--set", f"{name}={value}"),
            files={"p.shard": FSDP_SYMBOLIC},
            expect=("--set",),
        )
        for what, name in (("size", "B"), ("axis", "X"), ("hardware", "W_hbm"))
        for value in ("inf", "nan", "1e400", "-4", "0", "0.5", "-inf", "1e-320")
        if not (what == "hardware" and value == "0.5")
    ],
    Case(
        "set-hardware-fraction-ok",
        ("compile", "{tmp}/p.shard", "--set", "t_hop=0.5e-6"),
        files={"p.shard": MLP},
        exits=(0,),
    ),
    Case(
        "set-size-fraction-suffix",
        ("compile", "{tmp}/p.shard", "--set", "B=1.5k"),
        files={"p.shard": FSDP_SYMBOLIC},
        exits=(0,),
    ),
    Case(
        "repeat-count-half",
        ("compile", "{tmp}/p.shard", "--set", "L=0.5"),
        files={"p.shard": REPEAT_L},
        expect=("--set",),
    ),
    Case(
        "repeat-count-zero",
        ("compile", "{tmp}/p.shard", "--set", "L=0"),
        files={"p.shard": REPEAT_L},
        expect=("--set",),
    ),
    Case(
        "repeat-literal-zero",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": REPEAT_L.replace("repeat L", "repeat 0")},
        exits=(0, 1),
    ),
    Case(
        "repeat-difference-zero",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": REPEAT_L.replace("repeat L", "repeat 2 - 2")},
        expect=("error[R",),
    ),
    Case(
        "mesh-axis-size-one",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=1, Y=2\ndim I=8, J=8\nA: f32[I_X, J]\nB[I, J_X] = A\n"},
        exits=(0,),
        stdout_forbid=("CollectivePermute",),
    ),
    Case(
        "hbm-subnormal",
        ("compile", "{tmp}/p.shard", "--set", "W_hbm=1e-310"),
        files={"p.shard": MLP},
        expect=("--set",),
    ),
    Case(
        "optimize-with-itself",
        ("derive", "{tmp}/p.shard", "--optimize", "X", "--with", "X"),
        files={"p.shard": SMALL.replace("mesh X=8, Y=4", "mesh X, Y")},
        expect=("--with",),
    ),
    Case(
        "mesh-axis-zero-literal",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=0\ndim I=8\nA: f32[I_X]\n"},
        expect=("error[",),
    ),
    Case(
        "dim-zero-literal",
        ("compile", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\ndim I=0\nA: f32[I_X]\n"},
        expect=("error[",),
    ),
    Case(
        "form-feed-in-comment",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2 # a\x0cb\ndim I=8\nA: f32[I_Q]\n"},
        expect=("p.shard:3:", "A: f32[I_Q]"),
    ),
    Case(
        "line-separator-in-comment",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2 # a\u2028b\u2029c\x85d\x1ce\ndim I=8\nA: f32[I_Q]\n"},
        expect=("p.shard:3:", "A: f32[I_Q]"),
    ),
    Case(
        "carriage-returns",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": "mesh X=2\rdim I=8\r\nA: f32[I_Q]\n"},
        expect=("p.shard:3:", "A: f32[I_Q]"),
    ),
    Case(
        "nul-bytes",
        ("check", "{tmp}/p.shard"),
        files={"p.shard": b"mesh X=2\x00\ndim I=8\n"},
        expect=("error[",),
    ),
    Case("not-utf8", ("check", "{tmp}/p.shard"), files={"p.shard": b"mesh X=2\ndim I=8 # \xff\n"}),
    Case("bom", ("check", "{tmp}/p.shard"), files={"p.shard": "\ufeff" + TINY}, exits=(0,)),
    Case("missing-file", ("compile", "{tmp}/nope.shard"), expect=("nope.shard",)),
    Case("path-is-directory", ("compile", "{tmp}"), expect=("directory",)),
    Case(
        "calibrate-from-directory",
        ("calibrate", "--hw", "h100", "--from", "{tmp}"),
        expect=("error[H001]", "directory"),
    ),
    Case(
        "calibrate-from-another-chip",
        ("calibrate", "--hw", "h100", "--from", "{root}/hardware/calibration/h200.toml"),
        expect=("error[H001]", "'h200'"),
    ),
    Case(
        "calibrate-from-no-rows",
        ("calibrate", "--hw", "a100", "--from", "{root}/hardware/calibration/a100.toml"),
        expect=("no measured rows",),
    ),
]

CASES = [*CODE_EXECUTION, *TRACEBACKS, *HANGS, *SILENTLY_WRONG]

from tests.hostile.cases_numbers import CASES as _NUMBERS  # noqa: E402, I001

CASES += _NUMBERS

from tests.hostile.cases_safety import CASES as _SAFETY  # noqa: E402, I001

CASES += _SAFETY
