"""The network levels a mesh axis can live on, and what each one is: the vocabulary the
validator, the topology pass, the cost model and the planner share (the TPU chapter, the sharding
chapter; docs/hardware.md).
"""

from __future__ import annotations

LEVELS = ("ici", "nvlink", "pcie", "ib", "dcn")
"""Network levels, innermost (fastest) first; a mesh axis says `@<level>`."""

FAST_LINKS = ("ici", "nvlink")
"""A chip's own fast link (`[ici].kind`): ICI on TPUs (a torus), NVLink on GPUs (a switch).
An axis without `@`, or with either of these, uses the chip's one."""

SWITCHED = ("nvlink", "pcie", "ib", "dcn")
"""Levels on which every chip reaches every other (no physical axes, no wraparound)."""

PER_HOP = ("ici", "nvlink", "pcie")
"""Levels whose latency is paid per hop (`t_hop`); the others pay `t_<level>` per step."""

LEVEL_NAMES = {"ici": "ICI", "nvlink": "NVLink", "pcie": "PCIe", "ib": "InfiniBand", "dcn": "DCN"}
"""Each level as prose writes it."""
