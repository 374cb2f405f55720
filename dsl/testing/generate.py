"""`programs()`: a Hypothesis strategy drawing whole .shard programs that `shardc.compile`
accepts, statement by statement, with bounds on devices, mesh axes, statements and sizes.

Each statement group uses arrays of its own (suffixed by its number) over the shared dims
I, J, K, L, every size a multiple of the mesh's device count so that every sharding divides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from shardc.testing.strategies import DIMS, Mesh, layout_text, meshes

KINDS = ("contraction", "chain", "reshard", "elementwise", "reduction", "train")
"""What `programs(kinds=...)` can draw: a contraction `C = A ·_J B` (batched too), a chain
`In ·_J W1 *_K W2`, a reshard `B[...] = A` (from partial sums too), an elementwise expression
with a broadcast bias, a reduction (`Sum_J`, `Max_J`, `softmax_J`), and a training step (two
layers with `param`s and `backward`, drawn as a program of its own)."""


def _decl(name: str, dtype: str, layout: str) -> str:
    return f"{name}: {dtype}{layout}"


@st.composite
def _contraction(draw, mesh: Mesh, k: int) -> list[str]:
    dt = draw(st.sampled_from(["bf16", "f32"]))
    if draw(st.booleans()):
        a = draw(layout_text(("I", "J"), mesh, allow_unreduced=True))
        b = draw(layout_text(("J", "K"), mesh))
        out = draw(
            st.one_of(st.just(""), layout_text(("I", "K"), mesh), layout_text(("K", "I"), mesh))
        )
    else:  # batched over L
        a = draw(layout_text(("L", "I", "J"), mesh))
        b = draw(layout_text(("L", "J", "K"), mesh))
        out = draw(st.one_of(st.just(""), layout_text(("L", "I", "K"), mesh)))
    return [_decl(f"A{k}", dt, a), _decl(f"B{k}", dt, b), f"C{k}{out} = A{k} ·_J B{k}"]


@st.composite
def _chain(draw, mesh: Mesh, k: int) -> list[str]:
    a = draw(layout_text(("I", "J"), mesh))
    b = draw(layout_text(("J", "K"), mesh))
    c = draw(layout_text(("K", "L"), mesh))
    out = draw(st.one_of(st.just(""), layout_text(("I", "L"), mesh)))
    return [
        _decl(f"In{k}", "bf16", a),
        _decl(f"W{k}", "bf16", b),
        _decl(f"V{k}", "bf16", c),
        f"Out{k}{out} = In{k} ·_J W{k} *_K V{k}",
    ]


@st.composite
def _reshard(draw, mesh: Mesh, k: int) -> list[str]:
    a = draw(layout_text(("I", "J", "K"), mesh, allow_unreduced=True))
    b = draw(layout_text(("I", "J", "K"), mesh))
    return [_decl(f"A{k}", "f32", a), f"R{k}{b} = A{k}"]


@st.composite
def _elementwise(draw, mesh: Mesh, k: int) -> list[str]:
    a = draw(layout_text(("I", "K"), mesh))
    b = draw(layout_text(("I", "K"), mesh))
    bias = draw(layout_text(("K",), mesh))
    op = draw(st.sampled_from(["+", "-", "*"]))
    fn = draw(st.sampled_from(["silu", "gelu", "exp", "tanh"]))
    return [
        _decl(f"A{k}", "bf16", a),
        _decl(f"B{k}", "f32", b),
        _decl(f"bias{k}", "bf16", bias),
        f"E{k} = {fn}(A{k} {op} B{k}) + bias{k}",
    ]


@st.composite
def _reduction(draw, mesh: Mesh, k: int) -> list[str]:
    a = draw(layout_text(("I", "J"), mesh))
    op = draw(st.sampled_from(["Sum", "Max", "softmax"]))
    return [_decl(f"A{k}", "f32", a), f"S{k} = {op}_J(A{k})"]


@st.composite
def _train(draw, mesh: Mesh, k: int) -> list[str]:
    a = draw(layout_text(("I", "J"), mesh))
    w1 = draw(layout_text(("J", "K"), mesh))
    w2 = draw(layout_text(("K", "J"), mesh))
    mid = draw(st.one_of(st.just(""), layout_text(("I", "K"), mesh)))
    out = draw(layout_text(("I", "J"), mesh))  # `backward` needs the loss's layout
    return [
        _decl(f"In{k}", "bf16", a),
        f"param W{k}: bf16{w1}",
        f"param V{k}: bf16{w2}",
        f"Tmp{k}{mid} = In{k} ·_J W{k}",
        f"Out{k}{out} = gelu(Tmp{k}) ·_K V{k}",
        "backward",
    ]


_PIECES = {
    "contraction": _contraction,
    "chain": _chain,
    "reshard": _reshard,
    "elementwise": _elementwise,
    "reduction": _reduction,
    "train": _train,
}
_STATEMENTS = {
    "contraction": 1,
    "chain": 1,
    "reshard": 1,
    "elementwise": 1,
    "reduction": 1,
    "train": 2,
}


def programs(
    kinds: Sequence[str] = KINDS,
    max_devices: int = 16,
    max_axes: int = 3,
    max_statements: int = 3,
    max_size: int = 64,
    symbolic: bool = False,
    hardware: str | None = None,
) -> st.SearchStrategy[str]:
    """Program texts that `shardc.compile` accepts.

    - `kinds`: which statements to draw, of `KINDS`; a training step is a program of its own;
    - `max_devices`, `max_axes`: the mesh (`meshes`): axes X, Y, Z of sizes 1 to 4;
    - `max_statements`: assignments, at least one (a training step counts two);
    - `max_size`: the largest dim size, raised to the device count where that is larger (every
      size is a multiple of it, so that each sharding divides it);
    - `symbolic`: leave some dims without a size (`dim I, J=8`), for reports over symbols;
    - `hardware`: a chip's name for a `hardware` line (times then have numbers).

    >>> import shardc
    >>> from hypothesis import find
    >>> text = find(programs(kinds=["reduction"]), lambda t: "mesh X=2" in t)
    >>> print(text)
    mesh X=2
    dim I=2, J=2, K=2, L=2
    A0: f32[I_X, J]
    S0 = Sum_J(A0)
    <BLANKLINE>
    >>> shardc.compile(text).ops[0].op
    'sum_J'
    """
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(
            f"kinds: {', '.join(map(repr, unknown)) or 'none given'}; choose from "
            + ", ".join(KINDS)
        )
    if max_statements < 1 or max_size < 1:
        raise ValueError("max_statements and max_size must be at least 1")
    if "train" in kinds and max_statements < 2 and len(kinds) == 1:
        raise ValueError("a training step has two statements: max_statements must be 2 or more")

    @st.composite
    def draw_program(draw) -> str:
        mesh = draw(meshes(max_devices=max_devices, max_axes=max_axes))
        devices = mesh.devices
        scales = max(1, max_size // devices)
        sizes = {d: devices * draw(st.integers(1, scales)) for d in DIMS}
        sym = {d for d in DIMS if symbolic and draw(st.booleans())}
        lines = [
            mesh.decl(),
            "dim " + ", ".join(d if d in sym else f"{d}={sizes[d]}" for d in DIMS),
        ]
        if hardware is not None:
            lines.append(f"hardware {hardware}")
        allowed = [k for k in kinds if _STATEMENTS[k] <= max_statements]
        first = draw(st.sampled_from(allowed))
        if first == "train":
            return "\n".join(lines + draw(_train(mesh, 0))) + "\n"
        rest = [k for k in allowed if k != "train"]
        used, k = 0, 0
        kind = first
        while True:
            lines += draw(_PIECES[kind](mesh, k))
            used += _STATEMENTS[kind]
            k += 1
            if not rest or used >= max_statements or not draw(st.booleans()):
                break
            kind = draw(st.sampled_from(rest))
        return "\n".join(lines) + "\n"

    return draw_program()


__all__ = ["KINDS", "programs"]
