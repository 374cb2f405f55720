"""The device groups of XLA's collectives: their HLO spellings, and the mesh axes they span.

Replica groups come in three spellings (explicit lists, iota `[G,S]<=[dims]T(perm)`, and the
mesh form `mesh['axis_0'=4,...], device_ids=(...) {'axis_0'}`, sub-axes `'axis_0':(1)2`); each
becomes lists of device ids. Devices are numbered row-major over the program's mesh, so a group
maps back to mesh axes when it is a product of one arithmetic progression per axis: `m` members
`s` apart, the same in every group. A whole axis is m = n; a part of one is the sub-axis
`X:(pre)m`, as JAX and Shardy spell it: X split major to minor into pre x m x n/(pre m), the
middle factor.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

Groups = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class SubAxis:
    """The part of mesh axis `axis` (of `size` devices) a group spans: `members`, `stride` apart.

    >>> SubAxis("X", 4, 1, 4).name, SubAxis("X", 2, 1, 4).name, SubAxis("X", 2, 2, 4).name
    ('X', 'X:(2)2', 'X:(1)2')
    """

    axis: str
    members: int
    stride: int
    size: int

    @property
    def whole(self) -> bool:
        return self.members == self.size

    @property
    def name(self) -> str:
        if self.whole:
            return self.axis
        return f"{self.axis}:({self.size // (self.members * self.stride)}){self.members}"


def coords(device: int, sizes: list[int]) -> tuple[int, ...]:
    """A device id's coordinates on a row-major mesh.

    >>> coords(5, [2, 4])
    (1, 1)
    """
    out = []
    for s in reversed(sizes):
        out.append(device % s)
        device //= s
    return tuple(reversed(out))


def map_groups(groups: Groups | None, mesh: Mapping[str, int]) -> tuple[SubAxis, ...] | None:
    """The mesh axes and sub-axes every group spans, in mesh order; None when they are not one
    progression per axis alike in every group (or name a device outside the mesh).

    >>> map_groups(((0, 1), (2, 3), (4, 5), (6, 7)), {"X": 2, "Y": 4})
    (SubAxis(axis='Y', members=2, stride=1, size=4),)
    >>> map_groups(((0, 4), (1, 5), (2, 6), (3, 7)), {"X": 2, "Y": 4})
    (SubAxis(axis='X', members=2, stride=1, size=2),)
    >>> map_groups(((0, 5), (1, 4), (2, 7), (3, 6)), {"X": 2, "Y": 4}) is None
    True
    """
    if not groups:
        return None
    names, sizes = list(mesh), list(mesh.values())
    total = math.prod(sizes)
    shape: tuple[SubAxis, ...] | None = None
    for group in groups:
        if any(d < 0 or d >= total for d in group) or len(set(group)) != len(group):
            return None
        cs = [coords(d, sizes) for d in group]
        parts = []
        for k, (name, n) in enumerate(zip(names, sizes, strict=True)):
            values = sorted({c[k] for c in cs})
            if len(values) == 1:
                continue
            step = values[1] - values[0]
            m = len(values)
            if values != list(range(values[0], values[0] + m * step, step)) or n % (m * step):
                return None
            parts.append(SubAxis(name, m, step, n))
        if math.prod(p.members for p in parts) != len(group):
            return None  # not a product of progressions: members differ on several axes at once
        if shape is None:
            shape = tuple(parts)
        elif shape != tuple(parts):
            return None
    return shape


def pair_coords(
    pairs: Groups, mesh: Mapping[str, int]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """A collective-permute's (source, target) pairs as mesh coordinates; None when a device is
    outside the mesh."""
    sizes = list(mesh.values())
    total = math.prod(sizes)
    if any(not 0 <= d < total for pair in pairs for d in pair):
        return None
    return [(coords(s, sizes), coords(t, sizes)) for s, t in pairs]


# ---- HLO spellings ------------------------------------------------------------------------------


def balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at `text[start]`."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = [pairs[text[start]]]
    i = start + 1
    while i < len(text) and stack:
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif c == stack[-1]:
            stack.pop()
        i += 1
    return i


def _iota(dims: list[int], perm: list[int] | None) -> np.ndarray:
    ids = np.arange(math.prod(dims)).reshape(dims)
    return ids.transpose(perm) if perm else ids


def _ints(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"\d+", text)]


_CHOSEN = re.compile(r"'([^']+)'(?::\((\d+)\)(\d+))?")


def _mesh_form(
    names: list[str], sizes: list[int], ids: np.ndarray, chosen_text: str
) -> Groups | None:
    """Groups of the mesh form: the devices that differ only along the chosen (sub-)axes."""
    chosen = _CHOSEN.findall(chosen_text)
    split_names: list[str] = []
    split_sizes: list[int] = []
    picked: list[int] = []
    for name, n in zip(names, sizes, strict=True):
        subs = [(int(p), int(s)) for c, p, s in chosen if c == name and s]
        whole = any(c == name and not s for c, _, s in chosen)
        if len(subs) > 1 or (subs and whole):
            return None  # several sub-axes of one axis: not spelled by this version
        if subs:
            pre, size = subs[0]
            if n % (pre * size):
                return None
            for part in (pre, size, n // (pre * size)):
                split_names.append(name)
                split_sizes.append(part)
            picked.append(len(split_sizes) - 2)
        else:
            split_names.append(name)
            split_sizes.append(n)
            if whole:
                picked.append(len(split_sizes) - 1)
    if any(c not in names for c, _, _ in chosen):
        return None
    grid = ids.reshape(split_sizes)
    keep = [k for k in range(len(split_sizes)) if k not in picked]
    group = math.prod(split_sizes[k] for k in picked)
    flat = grid.transpose(keep + picked).reshape(-1, group)
    return tuple(tuple(int(x) for x in row) for row in flat)


def parse_replica_groups(attrs: str, n_devices: int) -> tuple[Groups | None, str]:
    """The device groups of a collective's attributes, and their text as printed.

    >>> parse_replica_groups("replica_groups={{0,1},{2,3}}, dimensions={0}", 4)[0]
    ((0, 1), (2, 3))
    >>> parse_replica_groups("replica_groups=[2,2]<=[2,2]T(1,0), x", 4)[0]
    ((0, 2), (1, 3))
    >>> parse_replica_groups("replica_groups=mesh['a'=2,'b'=2] {'a'}, x", 4)[0]
    ((0, 2), (1, 3))
    >>> parse_replica_groups("replica_groups=mesh['a'=4] {'a':(1)2}, x", 4)[0]
    ((0, 2), (1, 3))
    """
    m = re.search(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", attrs)
    if m:
        pairs = re.findall(r"\{(\d+),(\d+)\}", m.group(1))
        return tuple((int(a), int(b)) for a, b in pairs), m.group(0)
    m = re.search(r"replica_groups=", attrs)
    if not m:
        return None, ""
    i = m.end()
    if attrs.startswith("{", i):
        end = balanced(attrs, i)
        text = attrs[i:end]
        groups = tuple(tuple(_ints(g)) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1]))
        if not groups:
            groups = (tuple(range(n_devices)),)
        return groups, text
    m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", attrs[i:])
    if m:
        shape = _ints(m.group(1))
        ids = _iota(_ints(m.group(2)), _ints(m.group(3)) if m.group(3) else None)
        return tuple(tuple(int(x) for x in row) for row in ids.reshape(shape[0], -1)), m.group(0)
    m = re.match(
        r"mesh\[([^\]]*)\](?:,\s*device_ids=\(\[([\d,]+)\](?:T\(([\d,]+)\))?\))?"
        r"\s*\{([^}]*)\}",
        attrs[i:],
    )
    if m:
        axes = re.findall(r"'([^']+)'=(\d+)", m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        if m.group(2):
            ids = _iota(_ints(m.group(2)), _ints(m.group(3)) if m.group(3) else None)
        else:
            ids = np.arange(math.prod(sizes))
        return _mesh_form(names, sizes, ids.reshape(-1), m.group(4)), m.group(0)
    return None, attrs[i : i + 40]
