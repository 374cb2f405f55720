"""The chips a plan runs on and the strategies on them, each as mesh axes with roles placed on
the slice's physical ICI axes (the training chapter's table; the TPU chapter for pods and their
optical cubes)."""

from __future__ import annotations

import dataclasses
import math

from shardc.hardware import Chip
from shardc.tools.models import ModelCard
from shardc.tools.models.sharding import Axis, Layout, ShardingError, WeightSplitError
from shardc.tools.plan.candidates import Candidate, PlanError, Slice


def is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def pod_chips(chip: Chip) -> int | None:
    """Chips in one ICI pod (v5p: 16x20x28 = 8960, the TPU chapter), None for GPUs."""
    dims = chip.pod_dims
    return None if dims is None else math.prod(dims)


def choose_slice(chip: Chip, chips: int) -> Slice:
    """The chips a plan runs on: on GPUs every chip; on TPUs a power of two (one slice, or whole
    pods of the largest power of two a pod holds), or a whole number of pods of which each uses that
    power of two (a v5p pod of 8960 chips runs 8192: the LLaMA 3 chapter rounds to "2048-way FSDP
    and 4-way model parallelism")."""
    if chips < 1:
        raise PlanError(f"--chips {chips}: must be at least 1")
    pod = pod_chips(chip)
    if pod is None:  # a switched network: any count (the search tries what divides it)
        return Slice(1, chips, (), 0)
    per_pod = 1 << (pod.bit_length() - 1)  # the largest power of two a pod holds
    if chips <= pod and is_power_of_two(chips):
        return Slice(1, chips, _shape(chip, chips), 0)
    if chips % pod == 0:
        return Slice(chips // pod, per_pod, _shape(chip, per_pod), chips - chips // pod * per_pod)
    if is_power_of_two(chips) and chips > pod:
        return Slice(chips // per_pod, per_pod, _shape(chip, per_pod), 0)
    cubes = _cube_slice(chip, chips)
    if cubes is not None:
        return cubes
    raise PlanError(
        f"--chips {chips} is neither a power of two, a whole number of "
        f"{chip.name} pods ({pod} chips, {chip.pod_shape}), nor "
        + (
            "equal slices of 4x4x4 cubes, one a pod"
            if _reconfigurable(chip)
            else "a slice this chip's pods can make"
        )
    )


def _cube_slice(chip: Chip, chips: int) -> Slice | None:
    """Chips that are not a power of two on a pod of 4x4x4 cubes: the fewest pods whose equal
    slices of whole cubes fit in a pod each (PaLM's 6144 TPU v4 chips: two pods of 16x16x12,
    Chowdhery et al. 2022)."""
    dims, pod = chip.pod_dims, pod_chips(chip)
    if not _reconfigurable(chip) or dims is None or pod is None:
        return None
    for pods in range(1, chips + 1):
        if chips % pods:
            continue
        per_pod = chips // pods
        if per_pod > pod:
            continue
        shape = even_factors(per_pod, len(dims), multiple=4, limits=tuple(sorted(dims)))
        if shape is not None:
            return Slice(pods, per_pod, shape, 0)
        return None
    return None


def even_factors(
    n: int, k: int, multiple: int = 1, limits: tuple[int, ...] | None = None
) -> tuple[int, ...] | None:
    """n as k factors in ascending order, each a multiple of `multiple` (and at most
    `limits[i]`), the largest over the smallest as small as possible; None if there are none.
    For a power of two, its exponent split as evenly as it goes, the larger ones last.

    >>> even_factors(3072, 3, 4), even_factors(2048, 2), even_factors(768, 2)
    ((12, 16, 16), (32, 64), (24, 32))
    """
    best: tuple[float, tuple[int, ...]] | None = None

    def walk(rest: int, left: int, lo: int, got: tuple[int, ...]) -> None:
        nonlocal best
        if left == 1:
            if rest >= lo and rest % multiple == 0:
                out = (*got, rest)
                if limits is None or all(x <= m for x, m in zip(out, limits, strict=True)):
                    key = (out[-1] / out[0], out)
                    if best is None or key < best:
                        best = key
            return
        d = lo
        while d**left <= rest:
            if rest % d == 0 and d % multiple == 0:
                walk(rest // d, left - 1, d, (*got, d))
            d += 1

    walk(n, k, 1, ())
    return None if best is None else best[1]


def _shape(chip: Chip, n: int, axes: int | None = None) -> tuple[int, ...]:
    """A power-of-two slice of n chips over the chip's ICI axes, as even as possible
    (8192 on a v5p: 16x16x32)."""
    shape = even_factors(n, axes or max(1, chip.ici_axes))
    assert shape is not None  # n is a power of two: its exponents always split
    return shape


def _reconfigurable(chip: Chip) -> bool:
    """Slices built of 4x4x4 cubes joined by optical switches can take any cube-multiple shape
    (the TPU chapter: "reconfigurable cubes of 4x4x4 chips connected by optical wraparound
    links")."""
    return chip.wraparound == "cube-multiple-4"


def layouts(card: ModelCard, chip: Chip, sl: Slice, sequences: int, seq: int) -> list[Candidate]:
    """Every unpipelined strategy on the slice: DP, FSDP, TP over every chip, FSDP + TP for each
    power-of-two tensor degree that divides the chips, and DP + TP (replicated weights) where the
    tensor axis stays inside a fast domain (an NVLink domain, or a TPU slice's first axis).
    Pipelined candidates are chosen after these are evaluated (`stages.pipeline_candidates`)."""
    m = sl.chips_per_pod
    out = [
        _layout(card, chip, sl, "dp", 1, sequences, seq),
        _layout(card, chip, sl, "fsdp", 1, sequences, seq),
    ]
    fast = chip.nvlink_domain if chip.nvlink_domain else (sl.shape[0] if sl.shape else 1)
    for t in tensor_degrees(sl):
        out.append(_layout(card, chip, sl, "fsdp-tp", t, sequences, seq))
        if t <= fast:
            out.append(_layout(card, chip, sl, "dp-tp", t, sequences, seq))
    if m > 1:
        out.append(_layout(card, chip, sl, "tp", m, sequences, seq))
    return out


def tensor_degrees(sl: Slice) -> list[int]:
    """The tensor degrees the search tries on a pod's chips: the powers of two that divide them,
    and the length of each physical axis that is not one (PaLM's 12-way model parallelism
    on a 16x16x12 slice), short of every chip.

    >>> tensor_degrees(Slice(1, 3072, (12, 16, 16), 0))[:6]
    [2, 4, 8, 12, 16, 32]
    """
    m = sl.chips_per_pod
    out = {t for t in (1 << e for e in range(1, m.bit_length())) if m % t == 0}
    out |= {n for n in sl.shape if 1 < n and m % n == 0}
    return sorted(t for t in out if t < m)


def one_layout(
    card: ModelCard, chip: Chip, sl: Slice, strategy: str, t: int, sequences: int, seq: int
) -> Candidate:
    """One strategy at tensor degree `t`, laid out on the slice as `layouts` lays it out
    (`plan --layout`)."""
    if strategy not in ("dp", "fsdp", "tp", "fsdp-tp", "dp-tp"):
        raise ShardingError(f"unknown strategy {strategy!r} (dp, fsdp, tp, fsdp-tp or dp-tp)")
    m = sl.chips_per_pod
    if (
        t < 1
        or m % t
        or (strategy == "tp" and t != m)
        or (strategy in ("dp", "fsdp") and t != 1)
        or (strategy in ("fsdp-tp", "dp-tp") and not 1 < t < m)
    ):
        want = {
            "dp": "no tensor axis",
            "fsdp": "no tensor axis",
            "tp": f"Y={m}",
            "fsdp-tp": f"a tensor degree between 2 and {m // 2} that divides {m}",
            "dp-tp": f"a tensor degree between 2 and {m // 2} that divides {m}",
        }[strategy]
        raise ShardingError(f"{strategy} on {m} chips per pod needs {want} (got {t})")
    return _layout(card, chip, sl, strategy, t, sequences, seq)


def _layout(
    card: ModelCard, chip: Chip, sl: Slice, strategy: str, t: int, sequences: int, seq: int
) -> Candidate:
    try:
        lay = build_layout(card, chip, sl, strategy, t, sequences, seq)
        if lay.fsdp and not sl.shape:
            lay = _hybrid(card, chip, lay, sequences, seq)
    except ShardingError as exc:
        return Candidate(strategy, None, t, reason=f"not evaluated: {exc}")
    return Candidate(strategy, lay, t)


def _hybrid(card: ModelCard, chip: Chip, lay: Layout, sequences: int, seq: int) -> Layout:
    """On GPUs, an FSDP layout whose data axis no weight dimension divides (MT-NLG 530B on 1,120
    GPUs: 1,120 is a multiple of 7) as hybrid sharding: the weights sharded over the largest
    part of the data axis they divide, replicated over the rest, which becomes a batch-only
    axis P across nodes (hybrid sharding: Zhao et al. 2023, "PyTorch FSDP").
    ZeRO-3 pads the weights instead, which shardc does not model. The layout unchanged when
    it shards as it is, or when no split helps (the first error is then the reason)."""
    from shardc.tools.models.programs import parts

    try:
        parts(card, lay, sequences, seq, hw=chip.name)
        return lay
    except WeightSplitError as exc:
        first = exc
    data = [a for a in lay.axes if a.role == "data"]
    if len(data) != 1 or not data[0].size:
        raise first
    x, n = data[0], data[0].size
    for r in range(2, n):
        if n % r:
            continue
        split = tuple(
            a
            for b in lay.axes
            for a in (
                (Axis("P", r, "pod"), dataclasses.replace(b, size=n // r)) if b is x else (b,)
            )
        )
        hybrid = dataclasses.replace(lay, axes=split)
        try:
            parts(card, hybrid, sequences, seq, hw=chip.name)
        except ShardingError:
            continue
        return hybrid
    raise first


def build_layout(
    card: ModelCard, chip: Chip, sl: Slice, strategy: str, t: int, sequences: int, seq: int
) -> Layout:
    m = sl.chips_per_pod
    data = m // t
    if sequences % sl.pods:
        raise ShardingError(f"{sequences} sequences do not split over {sl.pods} pods")
    # The batch takes what divides the sequences; the rest of the data axes split the sequence
    # (the LLaMA 3 chapter: "FSDP over both the batch and sequence axes").
    b = math.gcd(data, sequences // sl.pods)
    s = data // b
    if seq % s:
        raise ShardingError(
            f"{sequences} sequences x {seq} tokens cannot be split {data} ways "
            f"({b} over the batch, {s} over the sequence)"
        )
    k, g = _head_split(card, t)
    tp = [("tp", n) for n in (k, g) if n > 1]
    if not sl.shape:  # GPUs: no physical axes; TP innermost, so inside an NVLink domain
        e = math.gcd(b, card.moe.n_experts) if card.moe is not None else 1
        batch = [("data", b // e), ("data", e)] if 1 < e < b else [("data", b)]
        phys = [[(r, n) for r, n in (*batch, ("seq", s), *tp) if n > 1]]
    elif t == m:  # every chip on the model: each physical axis one tensor axis
        phys = [[("tp", n)] for n in sl.shape]
    else:
        reshaped = _reshaped(chip, b, s, t, tp) if _reconfigurable(chip) else None
        phys = reshaped if reshaped is not None else _on_slice(sl.shape, b, s, t, tp)
    axes: list[Axis] = [Axis("P", sl.pods, "pod", "@dcn")] if sl.pods > 1 else []
    mesh = _mesh_axes(phys, physical=bool(sl.shape))
    return Layout(
        strategy,
        (*axes, *mesh),
        fsdp=strategy in ("fsdp", "fsdp-tp"),
        expert_parallel=card.moe is not None,
    )


def replicated_memory(fsdp_tp: Candidate, zero: int) -> float:
    """DP + TP's memory per chip at FSDP + TP's tensor degree, from FSDP + TP's figures: the
    same activations (the same activation layouts), and the weights, gradients and optimizer
    state times the data degree (replicated; ZeRO shards the optimizer state, and at stage 2
    the gradients, again)."""
    mem = fsdp_tp.figures.get("memory", {})
    n = fsdp_tp.data_degree
    params, grads, opt = (mem.get(k, 0.0) * n for k in ("parameters", "gradients", "optimizer"))
    if zero >= 1:
        opt /= n
    if zero >= 2:
        grads /= n
    return params + grads + opt + mem.get("activations", 0.0)


def fits_replicated(fsdp_tp: Candidate, hbm: float, zero: int) -> str | None:
    """Why DP + TP need not be compiled (`replicated_memory` exceeds HBM), or None."""
    total = replicated_memory(fsdp_tp, zero)
    if total <= hbm:
        return None
    hint = "" if zero >= 1 else "; try --zero 1"
    return (
        f"not evaluated: with the weights replicated it needs about {total / 1e9:.1f} GB "
        f"per chip, more than {hbm / 1e9:.0f} GB (fsdp-tp's activations, its weights, "
        f"gradients and optimizer state x {fsdp_tp.data_degree}){hint}"
    )


def _head_split(card: ModelCard, t: int) -> tuple[int, int]:
    """A tensor degree t as KV-head ways x query-group ways (MLA: all on the heads)."""
    if card.mla is not None:
        if card.n_heads % t:
            raise ShardingError(f"the {card.n_heads} heads do not split {t} ways")
        return t, 1
    k = math.gcd(t, card.n_kv_heads)
    g = t // k
    if card.groups % g:
        raise ShardingError(
            f"the {card.n_heads} heads ({card.n_kv_heads} KV heads x "
            f"{card.groups} query groups) do not split {t} ways"
        )
    return k, g


Phys = list[list[tuple[str, int]]]
"""Physical axes, each the (role, size) of the mesh axes on it, major first."""


def _reshaped(chip: Chip, b: int, s: int, t: int, tp: list[tuple[str, int]]) -> Phys | None:
    """A slice shape of whole 4x4x4 cubes that gives tensor and sequence parallelism a
    physical axis each (the training chapter: "using the optical switches to reconfigure the
    topology to have an 8-long axis for model sharding") and the batch the rest, or None when an
    axis would be shorter than 4 (it would lose the wraparound). A 2-way split shares a batch axis,
    innermost (a 2-way tensor split on the sequence's axis when that has one)."""
    phys: Phys = []
    if t >= 4:
        phys.append(list(tp))
    if s >= 4:
        phys.append([("seq", s)])
    free = chip.ici_axes - len(phys)
    if free < 1 or b < 4**free:
        return None
    sizes = even_factors(b, free)
    if sizes is None:
        return None
    batch = [[("data", n)] for n in sizes]
    if s == 2:
        batch[0].append(("seq", 2))
    if t == 2:  # on the sequence's own axis if it has one: the batch axes can then be one
        (phys[-1] if s >= 4 else batch[0]).extend(tp)
    phys = batch + phys
    if not all(chip.wraps(tuple(math.prod(n for _, n in ax) for ax in phys))):
        return None
    return phys


def _on_slice(shape: tuple[int, ...], b: int, s: int, t: int, tp: list[tuple[str, int]]) -> Phys:
    """On a fixed slice: tensor axes on the innermost chips of the first physical axis, the
    batch on the rest, the sequence innermost after it."""
    if shape[0] % t:
        raise ShardingError(
            f"a tensor axis of {t} does not fit on one physical axis of the "
            f"{'x'.join(map(str, shape))} slice"
        )
    phys: Phys = []
    rest_b, rest_s = b, s
    for i, n in enumerate(shape):
        d = n // (t if i == 0 else 1)
        bb = math.gcd(d, rest_b)
        rest_b //= bb
        rest_s //= d // bb
        ax = [(r, x) for r, x in (("data", bb), ("seq", d // bb)) if x > 1]
        phys.append(ax + (list(tp) if i == 0 else []))
    if rest_b != 1 or rest_s != 1:
        raise ShardingError(
            f"the {'x'.join(map(str, shape))} slice does not split as {b} "
            f"(batch) x {s} (sequence) x {t} (model)"
        )
    return phys


def _mesh_axes(phys: Phys, physical: bool = True) -> list[Axis]:
    """Mesh axes for the physical axes: batch, then sequence, then tensor axes (so the major
    one comes first where they share a physical axis); whole batch axes of equal length become
    one axis spanning them (`X=1024 @ici(y, z)`, the sharding chapter's multi-axis collectives)."""
    names = "xyz" if len(phys) <= 3 else [f"a{i}" for i in range(len(phys))]
    on = [[(role, n, names[i]) for role, n in ax] for i, ax in enumerate(phys)]
    whole = [ax[0] for ax in on if len(ax) == 1 and ax[0][0] == "data"]
    lengths = {n for _, n, _ in whole}
    spans = physical and len(whole) > 1 and len(lengths) == 1
    groups: dict[str, list[tuple[int, str]]] = {"data": [], "seq": [], "tp": []}
    if spans:
        groups["data"].append(
            (math.prod(n for _, n, _ in whole), ", ".join(p for _, _, p in whole))
        )
    for ax in on:
        for role, n, p in ax:
            if not (spans and len(ax) == 1 and role == "data"):
                groups[role].append((n, p))
    out = []
    for role, letter in (("data", "X"), ("seq", "X"), ("tp", "Y")):
        for n, p in groups[role]:
            out.append((role, n, p, letter))
    counts = {"X": sum(1 for *_, x in out if x == "X"), "Y": sum(1 for *_, x in out if x == "Y")}
    seen = {"X": 0, "Y": 0}
    axes = []
    for role, n, p, letter in out:
        seen[letter] += 1
        name = letter if counts[letter] == 1 else f"{letter}{seen[letter]}"
        axes.append(Axis(name, n, role, f"@ici({p})" if physical else ""))
    return axes
