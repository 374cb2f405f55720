"""Hypothesis strategies: meshes, layouts that use each mesh axis once, shapes divisible by
their shardings, and whole .shard programs exercising the four cases, chains, reshards,
explicit collectives and elementwise ops."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

AXES = ("X", "Y", "Z")
DIMS = ("I", "J", "K", "L")


@dataclass(frozen=True)
class Mesh:
    """A mesh as `meshes` draws it: axis names and sizes in order."""

    sizes: tuple[tuple[str, int], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.sizes)

    @property
    def devices(self) -> int:
        return math.prod(s for _, s in self.sizes)

    def decl(self) -> str:
        return "mesh " + ", ".join(f"{n}={s}" for n, s in self.sizes)


def meshes(
    max_devices: int = 16, max_axes: int = 3, sizes: tuple[int, ...] = (1, 2, 2, 3, 4)
) -> st.SearchStrategy[Mesh]:
    """A `Mesh` of 1 to `max_axes` axes named X, Y, Z, each size drawn from `sizes` (a size
    listed twice is drawn twice as often), at most `max_devices` devices in all.

    >>> from hypothesis import find
    >>> m = find(meshes(max_devices=4), lambda m: len(m.names) == 3)
    >>> m.names, m.devices <= 4
    (('X', 'Y', 'Z'), True)
    """
    if not 1 <= max_axes <= len(AXES):
        raise ValueError(f"max_axes must be 1 to {len(AXES)}, got {max_axes}")
    if max_devices < 1 or not sizes or min(sizes) < 1:
        raise ValueError("max_devices and every size must be at least 1")
    return _meshes(max_devices, max_axes, tuple(sizes))


@st.composite
def _meshes(draw, max_devices: int, max_axes: int, sizes: tuple[int, ...]) -> Mesh:
    n = draw(st.integers(1, max_axes))
    drawn = [(name, draw(st.sampled_from(sizes))) for name in AXES[:n]]
    mesh = Mesh(tuple(drawn))
    if mesh.devices > max_devices:
        drawn = [(n, min(s, 2)) for n, s in drawn]
        # Still too many: the last axes become 1 until the mesh fits.
        while math.prod(s for _, s in drawn) > max_devices:
            i = max(i for i, (_, s) in enumerate(drawn) if s > 1)
            drawn[i] = (drawn[i][0], 1)
        return Mesh(tuple(drawn))
    return mesh


@st.composite
def layout_text(draw, dims: tuple[str, ...], mesh: Mesh, allow_unreduced: bool = False) -> str:
    """`[I_XY, J]{U_Z}`: every axis shards at most one dim, in a random order; with
    `allow_unreduced`, some axes may hold partial sums instead (`{U_Z}`)."""
    assign: dict[str, list[str]] = {d: [] for d in dims}
    unreduced: list[str] = []
    axes = list(mesh.names)
    order = draw(st.permutations(axes))
    for a in order:
        choice = draw(st.sampled_from([*dims, None, None] + (["U"] if allow_unreduced else [])))
        if choice == "U":
            unreduced.append(a)
        elif choice is not None:
            assign[choice].append(a)
    inner = ", ".join(d + ("_" + "".join(assign[d]) if assign[d] else "") for d in dims)
    text = f"[{inner}]"
    if unreduced:
        text += "{U_" + "".join(sorted(unreduced)) + "}"
    return text


def layouts(dims: tuple[str, ...], mesh: Mesh, unreduced: bool = False) -> st.SearchStrategy[str]:
    """A layout of `dims` over `mesh`, as the language writes it after an array's name
    (`[I_XY, J]`, with `unreduced` perhaps `[I, J]{U_Z}`): each mesh axis shards at most one
    dim, several axes of one dim in either order.

    >>> from hypothesis import find
    >>> find(layouts(("I", "J"), Mesh((("X", 2), ("Y", 2)))), lambda t: "XY" in t)
    '[I_XY, J]'
    """
    return layout_text(tuple(dims), mesh, allow_unreduced=unreduced)


def dim_sizes(mesh: Mesh, scale: int) -> int:
    # Divisible by any product of distinct mesh axes: a multiple of all axis sizes' product.
    return mesh.devices * scale


@st.composite
def programs(draw, symbolic: bool = False) -> tuple[str, dict[str, int]]:
    """A program text and the sizes of any dims it leaves symbolic: the generator of
    shardc's own tests (one kind of statement per program). Users: `shardc.testing.programs`
    draws whole programs with bounds as arguments."""
    mesh = draw(meshes())
    scales = {d: draw(st.sampled_from([1, 2])) for d in DIMS}
    sizes = {d: dim_sizes(mesh, scales[d]) for d in DIMS}
    sym = {d for d in DIMS if symbolic and draw(st.booleans())}
    lines = [mesh.decl(), "dim " + ", ".join(d if d in sym else f"{d}={sizes[d]}" for d in DIMS)]
    kind = draw(
        st.sampled_from(
            [
                "matmul",
                "matmul",
                "batch",
                "chain",
                "reshard",
                "collective",
                "elementwise",
                "multi",
                "train",
            ]
        )
    )
    if kind in ("matmul", "multi"):
        # A[I, J] ·_J B[J, K] with random shardings, maybe partial sums passing through.
        a = draw(layout_text(("I", "J"), mesh, allow_unreduced=True))
        b = draw(layout_text(("J", "K"), mesh))
        lines += [f"A: bf16{a}", f"B: bf16{b}"]
        out = draw(
            st.one_of(st.just(""), layout_text(("I", "K"), mesh), layout_text(("K", "I"), mesh))
        )
        lines.append(f"C{out} = A ·_J B")
        if kind == "multi":
            lines.append(f"D{draw(layout_text(('I', 'K'), mesh))} = C")
            lines.append("E = gelu(D) * D")
    elif kind == "train":
        # A training step of a two-layer MLP: `backward` derives the gradients, each requested
        # in its parameter's layout (FSDP, TP, DP or a mix, as the layouts fall).
        a = draw(layout_text(("I", "J"), mesh))
        w1 = draw(layout_text(("J", "K"), mesh))
        w2 = draw(layout_text(("K", "J"), mesh))
        mid = draw(st.one_of(st.just(""), layout_text(("I", "K"), mesh)))
        out = draw(layout_text(("I", "J"), mesh))  # `backward` needs the loss's layout
        lines += [
            f"In: bf16{a}",
            f"param W1: bf16{w1}",
            f"param W2: bf16{w2}",
            f"Tmp{mid} = In ·_J W1",
            f"Out{out} = gelu(Tmp) ·_K W2",
            "backward",
        ]
    elif kind == "batch":
        a = draw(layout_text(("L", "I", "J"), mesh))
        b = draw(layout_text(("L", "J", "K"), mesh))
        lines += [f"A: bf16{a}", f"B: bf16{b}"]
        out = draw(st.one_of(st.just(""), layout_text(("L", "I", "K"), mesh)))
        lines.append(f"C{out} = A ·_J B")
    elif kind == "chain":
        a = draw(layout_text(("I", "J"), mesh))
        b = draw(layout_text(("J", "K"), mesh))
        c = draw(layout_text(("K", "L"), mesh))
        out = draw(st.one_of(st.just(""), layout_text(("I", "L"), mesh)))
        lines.append(f"Out{out} = In{a} ·_J W1{b} *_K W2{c}")
    elif kind == "reshard":
        a = draw(layout_text(("I", "J", "K"), mesh, allow_unreduced=True))
        b = draw(layout_text(("I", "J", "K"), mesh))
        lines += [f"A: f32{a}", f"B{b} = A"]
        # A read again in B's layout, which B's statement made: the lowering reuses that value.
        lines += draw(
            st.sampled_from([[], [f"C = B + A{b}"], [f"C = exp(A{b}) * B"], ["C = B - A"]])
        )
    elif kind == "collective":
        a = draw(layout_text(("I", "J"), mesh))
        b = draw(layout_text(("J", "K"), mesh))
        lines += [
            f"A: bf16{a}",
            f"B: bf16{b}",
            "C[I, K]{U_" + "".join(mesh.names) + "} = "
            "A[I, J_" + "".join(mesh.names) + "] ·_J B[J_" + "".join(mesh.names) + ", K]",
        ]
        first = mesh.names[0]
        rest = "".join(mesh.names[1:])
        if rest:
            lines.append(f"R[I, K_{first}]{{U_{rest}}} = ReduceScatter_{{{first},K}}(C)")
            lines.append(f"S = AllReduce_{rest}(R)")
            lines.append(f"T = AllToAll_{{{first},I}}(S)")
        else:
            lines.append(f"R = ReduceScatter_{{{first},K}}(C)")
            lines.append(f"T = AllToAll_{{{first},I}}(R)")
        lines.append(f"G = AllGather_{first}(T)")
    elif kind == "elementwise":
        a = draw(layout_text(("I", "K"), mesh))
        b = draw(layout_text(("I", "K"), mesh))
        bias = draw(layout_text(("K",), mesh))
        op = draw(st.sampled_from(["+", "-", "*"]))
        lines += [f"A: bf16{a}", f"B: f32{b}", f"bias: bf16{bias}", f"C = silu(A {op} B) + bias"]
    return "\n".join(lines) + "\n", {d: sizes[d] for d in sym}


def json_values() -> st.SearchStrategy:
    """What a report's JSON holds, and the corners json.dumps treats specially: non-ASCII and
    control characters, NaN and infinities, non-string keys, tuples, and one dict object
    shared by several parents (as `Report.q` shares them)."""
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    keys = st.text(max_size=6) | st.integers(-3, 3) | st.booleans() | st.none() | st.floats()

    def nest(inner: st.SearchStrategy) -> st.SearchStrategy:
        shared = st.dictionaries(keys, scalars, max_size=3).flatmap(
            lambda d: st.lists(st.just(d), min_size=2, max_size=3)
        )
        return (
            st.lists(inner, max_size=4)
            | st.tuples(inner, inner)
            | st.dictionaries(keys, inner, max_size=4)
            | shared
        )

    return st.recursive(scalars, nest, max_leaves=30)
