"""`plan`: the parallelism strategies for training a model on N chips, each compiled and ranked.

The training chapter ("How to Parallelize a Transformer for Training") and the LLaMA 3 chapter: data
parallelism, FSDP, tensor parallelism, FSDP + TP (for every power-of-two split of the chips) and
DP + TP, with pure data parallelism over DCN across pods (the training chapter "Scaling Between
Pods"); on GPUs, pipelines of DP + TP stages (Narayanan et al. 2021, module `pipeline`). Each
candidate's layer and embedding programs (`shardc.tools.models.programs`) are compiled for the chip;
the step time is the report's scheduled T_step of the layer times n_layers plus the embedding's, and
a candidate fits when its memory per device (parameters, gradients, optimizer state and kept
activations, per layer times n_layers) fits in HBM.

Modules: `candidates` (what a plan holds), `strategies` (the chips, the strategies, the mesh
axes each gets), `evaluation` (every candidate evaluated, in parallel processes, and ranked),
`accounting` (compiling and summing a candidate's programs), `pipeline` (stages, microbatches
and schedules), `stages` (which stage counts, schedules and ZeRO stages the search compiles),
`explanation` (why the best wins, and the book's closed-form conditions).
"""

from __future__ import annotations

from shardc.tools.plan.candidates import Candidate, Options, Plan, PlanError, Slice
from shardc.tools.plan.evaluation import evaluate, plan
from shardc.tools.plan.explanation import book_figures, explain
from shardc.tools.plan.strategies import choose_slice, layouts

__all__ = [
    "Candidate",
    "Options",
    "Plan",
    "PlanError",
    "Slice",
    "book_figures",
    "choose_slice",
    "evaluate",
    "explain",
    "layouts",
    "plan",
]
