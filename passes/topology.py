"""The `resolve-topology` pass: where each mesh axis lives (link level, physical axes, rings).

Rules (the TPU chapter "TPU networking", the sharding chapter Pop Quiz 2, hardware TOMLs): without
`@` an axis uses the chip's fast link (ICI on TPUs, NVLink on GPUs); each ICI mesh axis is its own
physical axis unless `@ici(x)` names one; wraparound follows the chip's rule on the physical slice
unless `wrap` or `nowrap` says otherwise; a GPU axis longer than the NVLink domain crosses
InfiniBand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from shardc.hardware.levels import FAST_LINKS, LEVELS
from shardc.lang.input_limits import MAX_MESH_DEVICES, MAX_SLICE_STEPS
from shardc.lang.syntax import MeshAxis, MeshDecl, Program
from shardc.passes.context import Context
from shardc.passes.ir import AxisLink, PhysicalAxis, Topology
from shardc.passes.sizes import size_of

if TYPE_CHECKING:
    from shardc.hardware import Chip


def resolve_topology(
    program: Program,
    ctx: Context,
    chip: Chip | None = None,
    bindings: Mapping[str, float] = MappingProxyType({}),
) -> Topology:
    """The `resolve-topology` pass: where each mesh axis lives (the program's mesh against
    `chip`'s physical axes and network levels, with mesh sizes from the validated `bindings`)."""
    mesh = next((s for s in program.statements if isinstance(s, MeshDecl)), None)
    return _resolve(mesh.axes if mesh else (), ctx, chip, bindings)


def _resolve(
    axes: tuple[MeshAxis, ...], ctx: Context, chip: Chip | None, bindings: Mapping[str, float]
) -> Topology:
    family = "none" if chip is None else chip.family
    fast = "nvlink" if chip is not None and chip.link_kind == "nvlink" else "ici"
    levels: dict[str, str] = {}
    for ax in axes:
        level = ax.link or fast
        if level in FAST_LINKS:
            level = fast  # `@ici` on a GPU (or `@nvlink` on a TPU) names the chip's fast link
        if chip is not None and not chip.has_level(level):
            ctx.diagnostics.error(
                "H015",
                f"{chip.name} has no figure for @{level} (mesh axis {ax.name!r})",
                ax.attr_span if ax.attr_span.line else ax.span,
                notes=(
                    f"add the figure to a chip TOML of your own (docs/hardware.md) or use "
                    f"another link; {chip.name} has: "
                    + ", ".join(x for x in LEVELS if chip.has_level(x)),
                ),
            )
        if level != "ici" and (ax.physical or ax.wrap is not None):
            ctx.diagnostics.error(
                "H012",
                f"mesh axis {ax.name!r} is on {level}, where physical axes and "
                "`wrap`/`nowrap` mean nothing",
                ax.attr_span if ax.attr_span.line else ax.span,
                notes=(
                    "NVLink, PCIe, InfiniBand and DCN are switched: every chip reaches "
                    "every other one",
                ),
            )
        levels[ax.name] = level
    sizes = {ax.name: size_of(ax.name, {ax.name: ax.size}, bindings) for ax in axes}
    if _too_large(axes, sizes, levels, chip, ctx):  # before any search over the device count
        return Topology(
            tuple(AxisLink(ax.name, levels[ax.name], (), 1, None, sizes[ax.name]) for ax in axes),
            (),
            family,
        )

    # ICI: physical axes, their lengths, strides of mesh axes sharing one.
    ici = [ax for ax in axes if levels[ax.name] == "ici"]
    placement = {ax.name: ax.physical or (ax.name,) for ax in ici}
    laid = _device_mesh(ici, sizes, chip)
    if laid is not None:
        placement = {name: tuple(p for p, _ in spans) for name, spans in laid.items()}
    on_phys: dict[str, list[MeshAxis]] = {}
    for ax in ici:
        for p in placement[ax.name]:
            on_phys.setdefault(p, []).append(ax)
    lengths: dict[str, int | None] = {}
    strides: dict[str, int] = {}
    for p, users in on_phys.items():
        if laid is not None:  # every physical axis has one user and its own length
            lengths[p] = dict(laid[users[0].name])[p]
            strides[users[0].name] = 1
            continue
        if len(users) == 1 and len(placement[users[0].name]) > 1:
            n = sizes[users[0].name]
            k = len(placement[users[0].name])
            lengths[p] = None if n is None else round(n ** (1 / k))
            strides[users[0].name] = 1
            continue
        known = [sizes[u.name] for u in users]
        lengths[p] = None if None in known else math.prod(known)  # type: ignore[arg-type]
        for i, u in enumerate(users):
            later = [sizes[v.name] for v in users[i + 1 :]]
            strides[u.name] = math.prod(s for s in later if s is not None)
    for ax in ici:
        k = len(placement[ax.name])
        n = sizes[ax.name]
        if laid is None and k > 1 and n is not None and round(n ** (1 / k)) ** k != n:
            # Checked again here: --set may bind a size validate could not see.
            ctx.diagnostics.error(
                "H014",
                f"mesh axis {ax.name!r} of size {n} cannot span {k} physical axes evenly",
                ax.attr_span if ax.attr_span.line else ax.span,
                notes=(
                    "a mesh axis spanning k physical axes has size n^k: each physical axis "
                    "gets n chips",
                ),
            )
    if chip is not None and chip.link_kind == "ici" and len(on_phys) > chip.ici_axes:
        ctx.diagnostics.warning(
            "H017",
            f"the mesh uses {len(on_phys)} physical ICI axes but {chip.name} is a "
            f"{chip.ici_axes}D torus",
            axes[0].span,
            notes=(
                "name shared physical axes, e.g. `mesh A=2 @ici(x), B=2 @ici(x), ...`; "
                "wraparound is decided on the axes as declared",
            ),
        )
    if laid is not None and chip is not None:  # (a layout is found only on a chip's pod)
        _say_laid_out(ici, laid, chip, ctx)
    else:
        _check_pod(on_phys, lengths, placement, chip, ctx)
    for p, users in on_phys.items():
        said = [u for u in users if u.wrap is not None]
        if len({u.wrap for u in said}) > 1:
            other = next(u for u in said if u.wrap != said[0].wrap)
            ctx.diagnostics.error(
                "H018",
                f"physical axis {p!r} is both `{said[0].flag}` (mesh axis "
                f"{said[0].name!r}) and `{other.flag}` (mesh axis {other.name!r})",
                other.attr_span if other.attr_span.line else other.span,
                notes=(
                    "mesh axes sharing a physical axis share its wraparound: say it once, "
                    "or the same way on each",
                ),
            )
    physical = tuple(_wrap(p, lengths, on_phys[p], chip) for p in on_phys)

    # NVLink: which part of each axis shares a domain (mesh order is major first).
    inner: dict[str, int | None] = {}
    nv = [ax for ax in axes if levels[ax.name] == "nvlink"]
    domain = chip.nvlink_domain if chip is not None else None
    stride = 1
    for ax in reversed(nv):
        n = sizes[ax.name]
        if domain is None or n is None:
            inner[ax.name] = None
            continue
        if stride >= domain:
            inner[ax.name] = 1
        elif stride * n <= domain:
            inner[ax.name] = None
        else:
            split = max(1, domain // stride)
            inner[ax.name] = split
            if n % split != 0:
                ctx.diagnostics.error(
                    "H016",
                    f"mesh axis {ax.name!r} of size {n} does not split evenly across "
                    f"NVLink domains of {domain} GPUs",
                    ax.span,
                )
        stride *= n
    links = tuple(
        AxisLink(
            ax.name,
            levels[ax.name],
            placement.get(ax.name, ()),
            strides.get(ax.name, 1),
            inner.get(ax.name),
            sizes[ax.name],
        )
        for ax in axes
    )
    return Topology(links, physical, family)


def _too_large(
    axes: tuple[MeshAxis, ...],
    sizes: dict[str, int | None],
    levels: dict[str, str],
    chip: Chip | None,
    ctx: Context,
) -> bool:
    """S015 or H020 (`mesh_limit`) on the mesh's largest axis. The same check for every caller
    (compile, check, `Report.at`, regions, plan, the language server, xla-check), since all of
    them run this pass; it comes before the slice search, which it keeps to a pod's counts."""
    known = {ax.name: n for ax in axes if (n := sizes[ax.name]) is not None}
    problem = mesh_limit(known, levels, chip)
    if problem is None:
        return False
    code, message, note, name = problem
    ctx.diagnostics.error(
        code, message, next(ax.span for ax in axes if ax.name == name), notes=(note,)
    )
    return True


def mesh_limit(
    sizes: Mapping[str, int], levels: Mapping[str, str], chip: Chip | None
) -> tuple[str, str, str, str] | None:
    """(code, message, note, the axis to point at) for mesh sizes no machine holds, or None:
    H020 for ICI axes needing more chips than a TPU's largest slice (its pod), S015 for more than
    MAX_MESH_DEVICES devices in all. `Report.at` and `Report.value` check their bindings here too.

    >>> mesh_limit({"X": 4096}, {"X": "ici"}, None) is None
    True
    >>> mesh_limit({"X": 2**40}, {"X": "ici"}, None)[:2]
    ('S015', 'the mesh has 1,099,511,627,776 devices (X=1,099,511,627,776), more than the limit
    of 4,294,967,296')
    """
    if not sizes:
        return None
    biggest = max(sizes, key=lambda a: sizes[a])
    dims = chip.pod_dims if chip is not None else None
    ici = [a for a in sizes if levels.get(a, "ici") == "ici"]
    n = math.prod(sizes[a] for a in ici)
    if chip is not None and dims and ici and n > math.prod(dims):
        dcn = (
            "put the axes beyond one pod on DCN (`mesh P=2 @dcn, ...`: pods joined by the "
            "data-centre network)"
            if chip.has_level("dcn")
            else "use fewer chips"
        )
        return (
            "H020",
            f"the mesh's ICI axes hold {_count_text(n)} chips "
            f"({', '.join(f'{a}={_count_text(sizes[a])}' for a in ici)}), more than the "
            f"largest slice of a {chip.name}: its pod, {'x'.join(map(str, dims))} "
            f"({math.prod(dims):,} chips)",
            f'a slice is at most one pod (the TPU chapter: "the maximum pod size"); {dcn}',
            max(ici, key=lambda a: sizes[a]),
        )
    total = math.prod(sizes.values())
    if total > MAX_MESH_DEVICES:
        shown = ", ".join(f"{a}={_count_text(v)}" for a, v in sizes.items())
        return (
            "S015",
            f"the mesh has {_count_text(total)} devices ({shown}), more than the "
            f"limit of {MAX_MESH_DEVICES:,}",
            f"a mesh holds at most {MAX_MESH_DEVICES:,} devices (docs/language.md, "
            '"Limits"), far above any machine built',
            biggest,
        )
    return None


def _count_text(n: int) -> str:
    """A device count for a message: digits with commas, or its order of magnitude when longer
    than 20 digits (a product of 32 axes of 2**63 has 600 digits).

    >>> _count_text(8960), _count_text(10**40 + 7)
    ('8,960', 'about 10^40')
    """
    return f"{n:,}" if n < 10**20 else f"about 10^{math.floor(math.log10(n))}"


def _device_mesh(
    ici: list[MeshAxis], sizes: dict[str, int | None], chip: Chip | None
) -> dict[str, tuple[tuple[str, int], ...]] | None:
    """Where JAX would put mesh axes that make no slice the chip has, as declared (`mesh X=256`
    on a v5p, each axis its own physical axis): the same chips as the most even slice the chip
    has (4x8x8), each mesh axis over a set of its physical axes whose lengths multiply to its
    size, the minor mesh axes placed first and each on as many physical axes as it can take, as
    `jax.experimental.mesh_utils.create_device_mesh` places them on a TPU torus. None when the
    mesh fits as declared, names its physical axes itself, has an unknown size, or cannot be
    placed so (H019 then warns, and it is costed as declared)."""
    import itertools

    dims = chip.pod_dims if chip is not None else None
    if chip is None or not dims or not ici or any(ax.physical for ax in ici):
        return None
    shape = [sizes[ax.name] for ax in ici]
    if any(n is None for n in shape):
        return None
    known = [n for n in shape if n is not None]
    if _slice_problem(tuple(known), chip.wraparound, dims) is None:
        return None
    fix = _valid_slice(math.prod(known), chip.wraparound, dims)
    if fix is None:
        return None
    free = {"xyz"[i] if len(fix) <= 3 else f"a{i}": m for i, m in enumerate(fix) if m > 1}
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for ax, n in reversed(list(zip(ici, known, strict=True))):
        if n == 1:
            return None  # a unit axis has no physical axis to take
        found = None
        for k in range(len(free), 0, -1):
            found = next(
                (c for c in itertools.combinations(free, k) if math.prod(free[p] for p in c) == n),
                None,
            )
            if found is not None:
                break
        if found is None:
            return None
        out[ax.name] = tuple((p, free.pop(p)) for p in found)
    return None if free else {ax.name: out[ax.name] for ax in ici}


def _say_laid_out(
    ici: list[MeshAxis], laid: dict[str, tuple[tuple[str, int], ...]], chip: Chip, ctx: Context
) -> None:
    """H019 for a mesh laid out as JAX would lay it out (`_device_mesh`)."""
    declared = "x".join(str(math.prod(n for _, n in laid[ax.name])) for ax in ici)
    slice_ = "x".join(str(n) for _, n in sorted(p for spans in laid.values() for p in spans))
    where = ", ".join(
        f"{ax.name} over {' x '.join(f'{p} ({n})' for p, n in laid[ax.name])}" for ax in ici
    )
    ax = max(ici, key=lambda a: math.prod(n for _, n in laid[a.name]))
    ctx.diagnostics.warning(
        "H019",
        f"the mesh's ICI axes make a {declared} slice, which a {chip.name} cannot have: "
        f"it is laid out and costed as a {slice_} slice ({where})",
        ax.attr_span if ax.attr_span.line else ax.span,
        notes=(
            "as jax.experimental.mesh_utils.create_device_mesh places mesh axes on a TPU "
            "torus; name the physical axes with @ici(...) to place them otherwise",
        ),
    )


def _check_pod(
    on_phys: dict[str, list[MeshAxis]],
    lengths: dict[str, int | None],
    placement: dict[str, tuple[str, ...]],
    chip: Chip | None,
    ctx: Context,
) -> None:
    """H019: the mesh's ICI axes make a slice the chip cannot have. It is costed as declared
    (each physical axis one ring or line of its length); the note gives the same chips as a
    slice the chip has, as JAX's `mesh_utils.create_device_mesh` would lay them out."""
    dims = chip.pod_dims if chip is not None else None
    if chip is None or not dims or not on_phys or any(lengths.get(p) is None for p in on_phys):
        return
    shape = tuple(lengths[p] or 1 for p in on_phys)
    why = _slice_problem(shape, chip.wraparound, dims)
    shown = "x".join(map(str, (*shape, *(1,) * (len(dims) - len(shape)))))
    if why is None:
        return
    p = max(on_phys, key=lambda q: lengths[q] or 1)
    ax = on_phys[p][0]
    n = math.prod(shape)
    fix = _valid_slice(n, chip.wraparound, dims)
    note = (
        f"the same {n} chips as a {'x'.join(map(str, fix))} slice: "
        + ", ".join(
            f"{ax.name}{i + 1}={m} @ici({'xyz'[i] if len(fix) <= 3 else i})"
            for i, m in enumerate(fix)
            if m > 1
        )
        if fix
        else f"{n} chips do not fit a {chip.name} pod ({chip.pod_shape})"
    )
    ctx.diagnostics.warning(
        "H019",
        f"the mesh's ICI axes make a {shown} slice, which a "
        f"{chip.name} cannot have ({why}): it is costed as declared, each physical axis one ring "
        "or line of its length",
        ax.attr_span if ax.attr_span.line else ax.span,
        notes=(note,),
    )


def _slice_problem(shape: tuple[int, ...], rule: str, dims: tuple[int, ...]) -> str | None:
    """Why a slice of this shape cannot exist on a chip with this wraparound rule and pod, or
    None. Reconfigurable pods (`cube-multiple-4`, the TPU chapter: "reconfigurable cubes of 4x4x4
    chips") make slices within one cube or of whole cubes; fixed pods (v5e, v6e) only slices of
    their own grid.

    >>> _slice_problem((256,), "cube-multiple-4", (16, 20, 28))
    'its pod is 16x20x28, and longer axes need slices of whole 4x4x4 cubes: every side a
    multiple of 4'
    >>> _slice_problem((64, 32, 4), "cube-multiple-4", (16, 20, 28)) is None
    True
    >>> _slice_problem((16, 8), "cube-multiple-4", (16, 20, 28)) is None  # the training chapter
    True
    >>> _slice_problem((256,), "full-axis-16", (16, 16))
    'its pod is 16x16'
    """
    n = math.prod(shape)
    if n > math.prod(dims):
        return f"its pod has {math.prod(dims)} chips"
    if rule == "cube-multiple-4":
        # Slices of whole cubes may be rewired into longer axes than the pod's; the book's small
        # lines and rings (`mesh X=16, Y=8` on a v5p) are taken as declared while they fit
        # along the pod's axes.
        padded = (*shape, *(1,) * (len(dims) - len(shape)))
        if any(s % 4 for s in padded) and max(shape) > max(dims):
            return (
                f"its pod is {'x'.join(map(str, dims))}, and longer axes need slices of whole "
                "4x4x4 cubes: every side a multiple of 4"
            )
        return None
    if len(shape) > len(dims) or any(
        s > d for s, d in zip(sorted(shape, reverse=True), sorted(dims, reverse=True), strict=False)
    ):
        return f"its pod is {'x'.join(map(str, dims))}"
    return None


def _valid_slice(n: int, rule: str, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """The slice of n chips the chip can have with the shortest longest side, then the most
    even (sides in ascending order; 8192 on a v5p: 16x16x32), or None.

    >>> (_valid_slice(256, "cube-multiple-4", (16, 20, 28)),
    ...  _valid_slice(256, "full-axis-16", (16, 16)))
    ((4, 8, 8), (16, 16))
    >>> _valid_slice(1000000007, "cube-multiple-4", (16, 20, 28)) is None  # more than a pod
    True
    """
    return _slice_search(n, rule, dims)[0]


def _slice_search(n: int, rule: str, dims: tuple[int, ...]) -> tuple[tuple[int, ...] | None, int]:
    """`_valid_slice` and the candidate shapes it looked at: none for more chips than the pod
    holds; otherwise the k-sided shapes (ascending sides) made from n's divisors, found from its
    prime factors once, at most MAX_SLICE_STEPS of them."""
    k = len(dims)
    if n < 1 or k == 0 or n > math.prod(dims):
        return None, 0
    divisors = _divisors(n)
    best: tuple[int, ...] | None = None
    steps = 0
    stack: list[tuple[int, int, tuple[int, ...]]] = [(n, 0, ())]  # (left, lowest index, sides)
    while stack and steps < MAX_SLICE_STEPS:
        left, low, sides = stack.pop()
        if len(sides) == k - 1:
            if left < (sides[-1] if sides else 1):
                continue
            steps += 1
            shape = (*sides, left)
            if _slice_problem(shape, rule, dims) is None and (
                best is None or _evenness(shape) < _evenness(best)
            ):
                best = shape
            continue
        for i in range(len(divisors) - 1, low - 1, -1):  # pushed largest first: smallest first out
            f = divisors[i]
            if left % f == 0 and f ** (k - len(sides)) <= left:
                stack.append((left // f, i, (*sides, f)))
    return best, steps


def _divisors(n: int) -> list[int]:
    """The divisors of n in ascending order, from its prime factors (trial division, which is
    quick for the counts that reach it: at most a pod's chips).

    >>> _divisors(12), _divisors(8951)
    ([1, 2, 3, 4, 6, 12], [1, 8951])
    """
    out = [1]
    p, left = 2, n
    while p * p <= left:
        e = 0
        while left % p == 0:
            left //= p
            e += 1
        if e:
            out = [d * p**j for d in out for j in range(e + 1)]
        p += 1 if p == 2 else 2
    if left > 1:
        out += [d * left for d in out]
    return sorted(out)


def _evenness(shape: tuple[int, ...]) -> tuple[int, float]:
    return max(shape), max(shape) / min(shape)


def _wrap(
    p: str, lengths: dict[str, int | None], users: list[MeshAxis], chip: Chip | None
) -> PhysicalAxis:
    length = lengths[p]
    overrides = {u.wrap for u in users if u.wrap is not None}
    if overrides:  # conflicting ones are H018
        wrap = overrides.pop() if len(overrides) == 1 else False
        return PhysicalAxis(p, length, wrap, "wrap" if wrap else "nowrap")
    if chip is None:
        return PhysicalAxis(p, length, True, "no chip: assumed a full ring (the book's default)")
    if length is None or any(v is None for v in lengths.values()):
        return PhysicalAxis(p, length, True, "symbolic size: assumed a full ring")
    shape = tuple(v for v in lengths.values() if v is not None)
    return PhysicalAxis(p, length, chip.wraps(shape)[list(lengths).index(p)], chip.wraps_why(shape))
