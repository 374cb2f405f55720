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
MAX_MESH_AXES = 32
"""Mesh axes in one program."""
MAX_AXES_PER_DIM = 8
"""Mesh axes sharding one dimension (and so taking part in one contraction's plan search)."""
MAX_SWEEP_POINTS = 1_000_000
"""Points in one sweep (the product of its grid sizes)."""
MAX_PLAN_CHIPS = 2**18
"""Chips in one `shardc plan`: 262,144, above the largest published training runs (LLaMA 3 405B
trained on 16,384 H100s). Plan compiles every candidate layout, and a candidate at this size
already has six mesh axes; `shardc limits` covers larger hypothetical runs."""
SOLVE_SECONDS = 2.0
"""Wall-clock budget for one SymPy `solve` in `shardc derive`; past it: "no closed form"."""
MAX_REGIONS = 16
"""Regions (`compile --regions`, `Report.regions`) of one program; past it the report keeps the
default plans and says so."""
REGIONS_SECONDS = 3.0
"""CPU budget for finding a program's regions (one lowering per region); past it, as past
MAX_REGIONS."""
LSP_COMPILE_SECONDS = 10.0
"""CPU budget for one compile of a document in the language server (`shardc lsp
--time-budget`); past it the compile is stopped and the document gets a diagnostic."""
LSP_COMPILE_BYTES = 2 * 2**30
"""Address space of the language server's compile worker: ten times the peak of a 5,000-einsum
compile (about 200 MB); past it the compile is stopped and the document gets a diagnostic."""
