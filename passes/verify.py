"""The IR verifier: a compiled program is consistent when every value an op reads was made by an
earlier op (a declared input is an `Input` op) in the layout it is read in, or that layout with
dims renamed, and no value is made twice. A program that fails is a compiler bug: `verify_ir`
raises `IRError`, never a user diagnostic.
"""

from __future__ import annotations

from shardc.passes.ir import CompiledProgram, Op, Value, operands


class IRError(Exception):
    """The compiled program is inconsistent: a bug in the pass that made it."""


def verify_ir(program: CompiledProgram) -> CompiledProgram:
    """`program` itself if it is consistent; otherwise `IRError` naming the first bad op by its
    index in `program.ops`.

    >>> from shardc.lang.layout import Layout
    >>> from shardc.passes.ir import Elementwise, Input
    >>> a = Value("A", "A", "f32", Layout.of({"I": ("X",)}))
    >>> b = Value("B", "B", "f32", a.layout)
    >>> ok = CompiledProgram("p", (("X", 2),), (("I", 4),), None, (Input(a),), (a,))
    >>> verify_ir(ok) is ok
    True
    >>> bad = Elementwise("exp", b, (Value("A.1", "A", "f32", a.layout),))
    >>> verify_ir(CompiledProgram("p", (("X", 2),), (("I", 4),), None, (Input(a), bad), (a,)))
    Traceback (most recent call last):
    ...
    shardc.passes.verify.IRError: op 1 (line 0, Elementwise -> B[I_X]): reads A[I_X] as value
    'A.1', which no earlier op makes
    """
    made: dict[str, Value] = {}
    order = program.mesh_axes
    for i, op in enumerate(program.ops):
        for v in operands(op):
            have = made.get(v.id)
            if have is None:
                raise IRError(
                    f"{_where(i, op, order)}: reads {v.format(order)} as value "
                    f"'{v.id}', which no earlier op makes"
                )
            if v.layout != have.layout and not v.layout.relabels(have.layout):
                raise IRError(
                    f"{_where(i, op, order)}: reads value '{v.id}' as "
                    f"{v.format(order)}, but it was made as {have.format(order)}"
                )
        if op.out.id in made:
            raise IRError(f"{_where(i, op, order)}: makes value '{op.out.id}' again")
        made[op.out.id] = op.out
    return program


def _where(index: int, op: Op, order: tuple[str, ...]) -> str:
    return f"op {index} (line {op.span.line}, {type(op).__name__} -> {op.out.format(order)})"
