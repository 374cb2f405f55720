"""The `fuse-elementwise` pass: which ops XLA runs as one kernel on the chip's backend, so that
a fused group reads its inputs from HBM once and writes only what leaves it.

XLA's fusion passes (`InstructionFusion` in xla/service/instruction_fusion.cc, on GPU
`PriorityFusion` in xla/service/gpu/transforms/priority_fusion.cc, formerly
`GpuInstructionFusion`) merge a producer into its consumer; the kernel that results is one of
`HloInstruction::FusionKind`: kLoop (elementwise ops in one loop), kInput (a reduction with the
elementwise ops feeding it) or kOutput (a matmul or convolution with ops fused around it).
The rules here follow them, op by op (docs/cost-model.md, "Fusion"):

- elementwise chains fuse into one loop (kLoop), on every backend;
- a reduction (`Sum`, `Max`) fuses its elementwise producers (kInput);
- an elementwise op that reads both a value and a reduction of that value (the "diamond" of a
  softmax or a normalisation) fuses with the reduction: XLA:GPU's `SoftmaxRewriterTriton`
  (xla/service/gpu/transforms/softmax_rewriter_triton.cc) makes such a diamond one kernel, so
  `softmax_{S}` is one fused kernel; on a TPU this is assumed too (fusing more only lowers the
  bytes, so the roofline stays a bound);
- a matmul fuses elementwise work around it only where XLA does: on a GPU the cuBLASLt
  epilogues XLA's `GemmRewriter` (xla/service/gpu/transforms/gemm_rewriter.cc) folds into the
  call, a bias added to the product and a `relu` or `gelu` after it; on a TPU any elementwise
  consumer (output fusion) and elementwise producers read only by the matmul;
- collectives, local slices (layout changes) and the ops of different `repeat` blocks are
  boundaries; a group never holds two matmuls, and never an op on both sides of an outside op
  (it would have to wait for itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shardc.passes.ir import (
    CompiledProgram,
    Einsum,
    Elementwise,
    Op,
    Reduction,
    operands,
)

EPILOGUE_ACTIVATIONS = ("relu", "gelu")
"""Activations cuBLASLt applies in a matmul's epilogue (`CUBLASLT_EPILOGUE_RELU`, `_GELU`, and
their `_BIAS` forms), which XLA's `GemmRewriter` fuses into the call."""


@dataclass(frozen=True, slots=True)
class FusionGroup:
    """Ops run as one kernel. `root` is the op its cost is charged to (the matmul, else the last
    op); `members` are every op of the group in program order, the root included; `kind` is
    XLA's fusion kind: "loop", "input" (a reduction) or "output" (a matmul)."""

    root: int
    members: tuple[int, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class Fusion:
    """The groups of two or more ops, and the backend whose rules made them."""

    groups: tuple[FusionGroup, ...] = ()
    backend: str = "none"

    def by_op(self) -> dict[int, FusionGroup]:
        """op index -> its group, for the ops in one."""
        return {i: g for g in self.groups for i in g.members}


def _role(op: Op) -> str:
    match op:
        case Elementwise():
            return "elementwise"
        case Reduction(kind="broadcast"):
            return "elementwise"  # a broadcast fuses like elementwise work (a kLoop operand)
        case Reduction():
            return "reduction"
        case Einsum():
            return "matmul"
    return "boundary"  # inputs, collectives, local slices


class _Groups:
    """Union-find over op indices, with what each group holds."""

    def __init__(self, roles: list[str]):
        self.parent = list(range(len(roles)))
        self.members: dict[int, list[int]] = {i: [i] for i in range(len(roles))}
        self.roles = roles

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def count(self, root: int, role: str) -> int:
        return sum(1 for i in self.members[root] if self.roles[i] == role)

    def union(self, a: int, b: int) -> None:
        a, b = self.find(a), self.find(b)
        if a == b:
            return
        if len(self.members[a]) < len(self.members[b]):
            a, b = b, a
        self.parent[b] = a
        self.members[a].extend(self.members.pop(b))


def fuse_elementwise(program: CompiledProgram, backend: str) -> Fusion:
    """The fusion groups of `program` under `backend`'s rules ("gpu", "tpu", or "none": the
    rules every backend shares, no matmul fusion).

    >>> from shardc.lang.layout import Layout
    >>> from shardc.passes.ir import Input, Value
    >>> lay = Layout.of({"I": ()})
    >>> a, b = Value("A", "A", "bf16", lay), Value("B", "B", "bf16", lay)
    >>> s, m = Value("s", "s", "bf16", lay), Value("m", "m", "bf16", lay)
    >>> ops = (Input(a), Input(b), Elementwise("silu", s, (a,)), Elementwise("*", m, (s, b)))
    >>> prog = CompiledProgram("p", (), (("I", 4),), None, ops, (a, b, m))
    >>> fuse_elementwise(prog, "gpu").groups
    (FusionGroup(root=3, members=(2, 3), kind='loop'),)
    """
    ops = program.ops
    roles = [_role(op) for op in ops]
    producer: dict[str, int] = {}
    for i, op in enumerate(ops):
        producer.setdefault(op.out.id, i)
    consumers: dict[str, list[int]] = {}
    for j, op in enumerate(ops):
        for v in dict.fromkeys(x.id for x in operands(op)):
            consumers.setdefault(v, []).append(j)
    groups = _Groups(roles)
    backward = program.backward_line

    def side(k: int) -> bool:
        return backward is not None and ops[k].span.line == backward

    # Producer by producer, in program order: a value read by several ops fuses only if every
    # reader fuses with it (else it is written to HBM anyway, and XLA would have to compute it
    # twice); the merged group must hold one matmul at most, lie in one `repeat` block and on
    # one side of the backward pass, and never leave itself and come back.
    for i, op in enumerate(ops):
        if roles[i] == "boundary":
            continue
        readers = consumers.get(op.out.id, [])
        if not readers or any(
            roles[k] == "boundary" or ops[k].times != op.times or side(k) != side(i)
            for k in readers
        ):
            continue
        if not all(_fuses(i, k, ops, roles, producer, consumers, groups, backend) for k in readers):
            continue
        roots = dict.fromkeys(groups.find(x) for x in (i, *readers))
        merged = [m for r in roots for m in groups.members[r]]
        if sum(1 for m in merged if roles[m] == "matmul") > 1:
            continue
        if len(roots) > 1 and _leaves_and_returns(merged, ops, consumers):
            continue
        for k in readers:
            groups.union(i, k)
    out = []
    for members in groups.members.values():
        if len(members) < 2:
            continue
        members = sorted(members)
        matmuls = [i for i in members if roles[i] == "matmul"]
        kind = (
            "output"
            if matmuls
            else "input"
            if any(roles[i] == "reduction" for i in members)
            else "loop"
        )
        out.append(FusionGroup(matmuls[0] if matmuls else members[-1], tuple(members), kind))
    out.sort(key=lambda g: g.members[0])
    return Fusion(tuple(out), backend)


def _fuses(
    i: int,
    j: int,
    ops: Sequence[Op],
    roles: Sequence[str],
    producer: Mapping[str, int],
    consumers: Mapping[str, list[int]],
    groups: _Groups,
    backend: str,
) -> bool:
    """Whether XLA fuses producer op i into consumer op j (or j into i's matmul)."""
    ri, rj = roles[i], roles[j]
    gi, gj = groups.find(i), groups.find(j)
    has_matmul = groups.count(gi, "matmul") or groups.count(gj, "matmul")
    if ri == "elementwise" and rj in ("elementwise", "reduction"):
        # kLoop / kInput; on a GPU a matmul's group takes no more than its epilogue: a bias
        # add may take the activation after it (cuBLASLt's BIAS_RELU / BIAS_GELU)
        if backend == "tpu" or not has_matmul:
            return True
        return (
            backend == "gpu"
            and groups.find(i) == gi
            and groups.count(gi, "matmul") == 1
            and len(groups.members[gi]) == 2
            and not groups.count(gj, "matmul")
            and len(groups.members[gj]) == 1
            and isinstance(op_j := ops[j], Elementwise)
            and op_j.fn in EPILOGUE_ACTIVATIONS
            and consumers.get(ops[i].out.id, []) == [j]
        )
    if ri == "reduction" and rj == "elementwise":
        return _diamond(i, j, ops, producer) and not (backend != "tpu" and has_matmul)
    if ri == "matmul" and rj == "elementwise":
        if len(consumers.get(ops[i].out.id, ())) != 1:
            return False  # the product is read elsewhere too: it is written anyway
        if backend == "tpu":
            return True
        return backend == "gpu" and _epilogue(ops[j], ops[i].out.id)
    if ri == "elementwise" and rj == "matmul":
        # a TPU fuses elementwise producers into the matmul's operands (a prologue)
        return backend == "tpu" and len(consumers.get(ops[i].out.id, ())) == 1
    return False


def _epilogue(op: Op, product: str) -> bool:
    """A cuBLASLt epilogue on the product `product`: `relu`/`gelu` of it, or a bias added to it
    (the other operand has fewer dims: a vector broadcast along the product's rows)."""
    if not isinstance(op, Elementwise):
        return False
    if op.fn in EPILOGUE_ACTIVATIONS and len(op.args) == 1:
        return True
    if op.fn == "+" and len(op.args) == 2:
        ids = [a.id for a in op.args]
        if product in ids:
            other = op.args[1 - ids.index(product)]
            return set(other.dims) < set(op.out.dims)
    return False


def _diamond(i: int, j: int, ops: Sequence[Op], producer: Mapping[str, int]) -> bool:
    """Op j reads reduction i's result and the value it reduces (or an input of the elementwise
    op making that value): the softmax / normalisation diamond."""
    reduction = ops[i]
    assert isinstance(reduction, Reduction)  # op i's role is "reduction"
    src = reduction.src.id
    reads = {v.id for v in operands(ops[j])}
    if src in reads:
        return True
    k = producer.get(src)
    return (
        k is not None
        and isinstance(maker := ops[k], Elementwise)
        and bool(reads & {v.id for v in maker.args})
    )


def _leaves_and_returns(
    members: list[int], ops: Sequence[Op], consumers: Mapping[str, list[int]]
) -> bool:
    """Whether some path leaves `members` and comes back: fusing them would make a kernel that
    waits for its own output."""
    inside = set(members)
    last = max(inside)
    seen: set[int] = set()
    stack = [
        k for m in inside for k in consumers.get(ops[m].out.id, ()) if k not in inside and k < last
    ]
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        for n in consumers.get(ops[k].out.id, ()):
            if n in inside:
                return True
            if n < last and n not in seen:
                stack.append(n)
    return False
