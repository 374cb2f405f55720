"""The documented limits on what shardc accepts (docs/language.md, "Limits"). Each one turns a
hostile or runaway input into a diagnostic instead of a hang, a blow-up or a RecursionError; each
is far above what a real program needs.
"""

from __future__ import annotations

MAX_SOURCE_BYTES = 4 * 2**20
"""A program (file or standard input) is read up to this many bytes; a larger one is refused."""
MAX_CONFIG_BYTES = 1 * 2**20
"""A chip TOML or a model card is read up to this many bytes."""
MAX_STATEMENTS = 20_000
"""Statements in one program, counting those inside `repeat` blocks once."""
MAX_NESTING = 100
"""Depth of an expression (operators, parentheses and calls stacked inside one another) and of
`repeat` blocks."""
MAX_DERIVED_NAME = 240
"""Characters of the name an intermediate value is shown by (`exp(A-max_S(A))`); a longer one is
elided in the middle with `…` (not an error: names of nested expressions grow with each level)."""
MAX_MESH_AXES = 32
"""Mesh axes in one program."""
MAX_MESH_DEVICES = 2**32
"""Devices in one mesh (the product of its axes' sizes, with `--set` applied): 4,294,967,296, as
many as 32 axes of 2 (MAX_MESH_AXES), far above any machine built (the largest published
training runs used 16,384 H100s and 6,144 TPU v4 chips). On a TPU the axes on ICI are held
further, to the chip's largest slice (its pod)."""
MAX_SLICE_STEPS = 100_000
"""Candidate shapes the slice search (`passes/topology.py`) looks at for one device count; a
count a pod can hold has far fewer (8,960 chips on a v5p: 165 three-sided shapes)."""
MAX_AXES_PER_DIM = 8
"""Mesh axes sharding one dimension (and so taking part in one contraction's plan search)."""
MAX_SWEEP_POINTS = 1_000_000
"""Points in one sweep (the product of its grid sizes)."""
MAX_XLA_DEVICES = 1024
"""Fake CPU devices `xla-check --max-devices` may ask XLA for: XLA:CPU starts a thread per
device and its compiles slow down with each (a 32x32 mesh checks in about 3 s)."""
MAX_PLAN_CHIPS = 2**18
"""Chips in one `shardc plan`: 262,144, above the largest published training runs (LLaMA 3 405B
trained on 16,384 H100s). Plan compiles every candidate layout, and a candidate at this size
already has six mesh axes; `shardc limits` covers larger hypothetical runs."""
SOLVE_SECONDS = 2.0
"""CPU-time budget for one SymPy `solve` in `shardc derive`; past it: "no closed form"."""
MAX_REGIONS = 16
"""Regions (`compile --regions`, `Report.regions`) of one program; past it the report keeps the
default plans and says so."""
REGIONS_STATEMENTS = 160
"""Statements lowered to find a program's regions, counting each lowering of the program (one per
region, and one per choice that branches) as its statements; past it, as past MAX_REGIONS. A
count, not a time, so a report is the same on every machine: 16 regions of a 10-statement
training step, or a 160-statement program once (a few milliseconds a statement)."""
REGIONS_SECONDS = 3.0
"""CPU budget for the work on a program's regions after they are found: `shardc derive`'s closed
forms by region, the points of a sweep compiled one by one."""
REGIONS_NET_SECONDS = 20.0
"""CPU time past which the search for a program's regions stops whatever `REGIONS_STATEMENTS`
leaves: a net for statements that each take long to lower, which no shipped or generated
program comes near (the count stops them first)."""
LSP_COMPILE_SECONDS = 10.0
"""CPU budget for one compile of a document in the language server (`shardc lsp
--time-budget`); past it the compile is stopped and the document gets a diagnostic."""
LSP_COMPILE_BYTES = 2 * 2**30
"""Address space of the language server's compile worker: ten times the peak of a 5,000-einsum
compile (about 200 MB); past it the compile is stopped and the document gets a diagnostic."""
