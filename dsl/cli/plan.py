"""`shardc model` (model cards: list, show, program) and `shardc plan` (the parallelism
strategies for training a model, compiled and ranked). Imports only argparse until a command
runs. Bad input (an unknown model or chip, a batch or chip count that makes no plan) is one
line on stderr and exit code 1."""

from __future__ import annotations

import argparse
import re
import sys
from typing import get_args

from shardc.cli.style import print_diagnostics
from shardc.cli.termwrap import write_result
from shardc.driver.json_text import strict_dumps
from shardc.lang.quoting import quoted
from shardc.lang.visible import visible, visible_lines
from shardc.passes.context import PipelineSchedule

STRATEGIES = ("single", "dp", "fsdp", "tp", "fsdp-tp", "dp-tp")
PIPELINED = ("pp-dp", "pp-dp-tp", "pp-fsdp", "pp-fsdp-tp")


class InputError(Exception):
    """A user error reported as one line, exit code 1."""


def add_parser(sub) -> None:
    from shardc.cli.inputs import COST_MODELS, add_option_flags, add_precision_flag

    m = sub.add_parser("model", help="model cards: list, show derived numbers, write programs")
    ms = m.add_subparsers(dest="model_command", required=True, metavar="ACTION")
    ms.add_parser("list", help="list the shipped model cards").set_defaults(run=run_list)
    show = ms.add_parser(
        "show",
        help="a card with its parameters, FLOPs and KV cache, read off its compiled programs",
    )
    show.add_argument("name", help="card name (see `shardc model list`) or path to a card TOML")
    show.add_argument(
        "--tokens", help="training tokens for the total FLOPs (default: the card's; 15e12, 15T)"
    )
    show.add_argument("--seq", help="sequence length for the attention FLOPs (default: the card's)")
    show.add_argument("--kv-dtype", choices=["bf16", "fp8", "int8", "f32"], default="bf16")
    show.add_argument("--format", choices=["text", "json"], default="text")
    show.set_defaults(run=run_show)
    ms.add_parser(
        "schema",
        help="print the JSON Schema of model card TOML files (for "
        "editors; docs/plan.md, 'Writing a card')",
    ).set_defaults(run=run_schema)
    imp = ms.add_parser(
        "import",
        help="write a card TOML from a Hugging Face config.json "
        "(LLaMA, Mistral, Qwen, Gemma, Mixtral, DeepSeek; local files only)",
    )
    imp.add_argument("config", help="path to a config.json")
    imp.add_argument("-o", "--output", help="write the card here (default: stdout)")
    imp.set_defaults(run=run_import)
    prog = ms.add_parser("program", help="write one generated .shard program of a model")
    prog.add_argument("name")
    prog.add_argument("--strategy", choices=STRATEGIES, default="fsdp-tp")
    prog.add_argument(
        "--mesh",
        help="mesh axes, e.g. 'X=2048, Y=4' or 'P=2 @dcn, X, Y=8'; "
        "Y* axes are tensor-parallel, P* axes pods (default: symbolic X and Y)",
    )
    prog.add_argument(
        "--batch", help="tokens per step (4Mi = 4*2^20, 4M = 4*10^6; default: the card's)"
    )
    prog.add_argument("--seq", help="sequence length (default: the card's)")
    prog.add_argument(
        "--part",
        default="layer",
        help="layer (default), head (embedding/unembedding), moe-layer, experts",
    )
    prog.add_argument("--hw", help="chip for the program's `hardware` line")
    prog.add_argument(
        "--no-sequence-parallel",
        dest="sequence_parallel",
        action="store_false",
        help="keep the residual stream replicated over the tensor axes (an "
        "AllReduce after each block) instead of sharded (AllGather + "
        "ReduceScatter)",
    )
    prog.add_argument(
        "--expert-parallel",
        action="store_true",
        help="MoE: shard the routed experts over the data axes that divide them, "
        "dispatching tokens by AllToAll (as plan lays MoE models out)",
    )
    prog.add_argument("-o", "--output", help="write the program here instead of stdout")
    prog.set_defaults(run=run_program)

    p = sub.add_parser(
        "plan",
        help="rank DP / FSDP / TP / FSDP+TP for training a model on N "
        "chips, each strategy compiled",
    )
    p.add_argument(
        "--card",
        "--model",
        dest="card",
        required=True,
        action=_CardFlag,
        help="model card name or path to a card TOML (`--model` is the old "
        "spelling, deprecated: elsewhere --model is short for --cost-model)",
    )
    p.add_argument("--hw", required=True, help="chip name or path to a chip TOML")
    p.add_argument(
        "--chips",
        required=True,
        help="number of chips (a power of two, or whole pods: 8960 for tpu-v5p)",
    )
    p.add_argument(
        "--batch",
        help="tokens per step (4Mi = 4*2^20 = 1024 sequences of 4096, "
        "4M = 4*10^6; default: the card's)",
    )
    p.add_argument("--seq", help="sequence length (default: the card's)")
    add_option_flags(p, "optimizer", "remat", "attention")
    p.add_argument(
        "--cost-model",
        dest="cost_model",
        choices=COST_MODELS,
        default="exact",
        help="collective costs: exact ring (default) or the book's formulas",
    )
    add_precision_flag(p)
    p.add_argument(
        "--layout",
        metavar="STRATEGY[: MESH]",
        help="evaluate one layout instead of searching: a strategy (dp, fsdp, tp, "
        "fsdp-tp, dp-tp; pipelined pp-dp, pp-dp-tp, pp-fsdp, pp-fsdp-tp with PP= "
        "stages: 'pp-dp-tp: PP=16, Y=8') and its mesh sizes, laid out on the slice "
        "as the search would "
        "('fsdp-tp: X=2048, Y=4'), or with each axis's links as `model program "
        "--mesh` takes them ('fsdp-tp: X1=1024 @ici(x, y), X2=2 @ici(z), Y=4 @ici(z)')",
    )
    p.add_argument(
        "--zero",
        type=int,
        choices=(0, 1, 2),
        default=0,
        help="ZeRO stage of the layouts that replicate the weights (dp, dp-tp, "
        "pp-*): 1 shards the optimizer state over the data axes (Megatron-LM's "
        "distributed optimizer), 2 the gradients too; FSDP is stage 3",
    )
    p.add_argument(
        "--pipeline-schedule",
        dest="schedule",
        choices=get_args(PipelineSchedule),
        default="1f1b",
        help="schedule of pipelined candidates (default 1f1b)",
    )
    p.add_argument(
        "--virtual-stages",
        dest="virtual_stages",
        default="2",
        metavar="V",
        help="model chunks per stage under --pipeline-schedule interleaved (default 2)",
    )
    p.add_argument(
        "--microbatch",
        dest="microbatch",
        default="1",
        metavar="SEQUENCES",
        help="sequences per data replica in one pipeline microbatch (default 1)",
    )
    p.add_argument(
        "--no-sequence-parallel",
        dest="sequence_parallel",
        action="store_false",
        help="tensor-parallel layouts keep the residual stream replicated over the "
        "tensor axes (an AllReduce after each block, Megatron-LM without sequence "
        "parallelism) instead of sharded",
    )
    p.add_argument(
        "--dropout",
        default="0",
        metavar="P",
        help="dropout rate of the residual additions and the attention "
        "probabilities, 0 to below 1 (default 0); above 0 the calibrated step pays "
        "the masks' memory passes (Megatron-LM's default is 0.1)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        default=None,
        metavar="N",
        help="compile candidates in N processes (default: the CPUs, at most 4; "
        "1 compiles them one after another); the plan is the same",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument(
        "--progress",
        action="store_true",
        help="report which candidate is being compiled on stderr even when it is not "
        "a terminal (on a terminal it shows after a second)",
    )
    p.set_defaults(run=run_plan)


class _CardFlag(argparse.Action):
    """`--card`, or its deprecated spelling `--model` with a note on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == "--model":
            print(
                "shardc plan: note: --model is deprecated here, write --card (in compile, "
                "derive and sweep --model is short for --cost-model)",
                file=sys.stderr,
            )
        setattr(namespace, self.dest, values)


def parse_tokens(text: str, what: str) -> int:
    """A token count: `4194304`, `4_194_304`, `4Mi` (4 * 2**20, the book's "4M tokens (1024
    sequences of length 4096)"), `4M` (4 * 10**6), `15T`, `1.5e13`. Read by
    `shardc.lang.numeric.parse_whole`, as `--set` and a program's `dim` read sizes: exact, and a
    positive whole number at most 2**63 - 1.

    >>> parse_tokens("4Mi", "--batch"), parse_tokens("4M", "--batch"), parse_tokens("2_048", "x")
    (4194304, 4000000, 2048)
    """
    from shardc.lang.numeric import NumberError, parse_decimal, whole

    try:
        value = parse_decimal(text)
    except NumberError:
        raise InputError(
            f"{what} {quoted(text)} is not a token count (try 4194304, 4Mi = 4*2^20, "
            "4M = 4*10^6, or 15e12)"
        ) from None
    try:
        return whole(value, what)
    except NumberError:
        raise InputError(
            f"{what} {quoted(text)} is not a whole number of tokens (from 1 to 2**63 - 1)"
        ) from None


def _count(text: str, what: str, limit: int) -> int:
    """A positive whole number at most `limit` for the option `what` (`--chips 8960`, `8_192`,
    `1e3`, `8Ki`); `what` is written before the text, so `--mesh X=` reads `--mesh X=0`."""
    from shardc.lang.numeric import NumberError, parse_whole

    short = text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"
    shown = f"{what}{short}" if what.endswith("=") else f"{what} {short!r}"
    try:
        n = parse_whole(text, what)
    except NumberError:
        raise InputError(f"{shown} is not a positive whole number (at most 2**63 - 1)") from None
    if n > limit:
        raise InputError(f"{shown} is more than the limit of {limit:,}")
    return n


def _card(name: str):
    from shardc.tools import models

    try:
        return models.load(name)
    except models.ModelError as exc:
        raise InputError(str(exc)) from None


def _chip(name: str):
    from shardc import hardware

    try:
        return hardware.load(name)
    except hardware.HardwareError as exc:
        raise InputError(f"{exc} (known chips: {', '.join(hardware.available())})") from None


def _guard(fn):
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except InputError as exc:
            print_diagnostics(f"shardc {args.command}: error: {visible_lines(str(exc))}")
            return 1

    return run


# ---- shardc model ------------------------------------------------------------------------------


@_guard
def run_list(args: argparse.Namespace) -> int:
    from shardc.tools import models

    for name in models.available():
        c = models.load(name)
        extra = (f", MoE {c.moe.n_experts} experts top-{c.moe.n_active}" if c.moe else "") + (
            ", MLA (approximated)" if c.mla else ""
        )
        print(
            f"{name:14s} {c.display_name:14s} L={c.n_layers} D={c.d_model} F={c.d_ff} "
            f"N={c.n_heads} K={c.n_kv_heads} H={c.d_head} V={c.vocab}{extra}"
        )
    return 0


def run_schema(args: argparse.Namespace) -> int:
    from shardc.tools.models.card_schema import card_json_schema_text

    sys.stdout.write(card_json_schema_text())
    return 0


@_guard
def run_show(args: argparse.Namespace) -> int:
    from shardc.lang.numeric import NumberError
    from shardc.tools.models.counts import count
    from shardc.tools.models.render import show_dict, show_text

    card = _card(args.name)
    seq = parse_tokens(args.seq, "--seq") if args.seq else None
    tokens = float(parse_tokens(args.tokens, "--tokens")) if args.tokens else card.tokens
    c = count(card, seq, args.kv_dtype)
    try:
        out = show_dict(c, tokens)
    except NumberError as exc:
        raise InputError(f"{card.path}: {exc}") from None
    if args.format == "json":
        sys.stdout.write(strict_dumps(out, indent=2) + "\n")
    else:
        write_result(show_text(c, out))
    return 0


@_guard
def run_import(args: argparse.Namespace) -> int:
    from shardc.driver.files import CliIOError, read_text, write_text
    from shardc.lang.input_limits import MAX_CONFIG_BYTES
    from shardc.tools.models.hf_config import ConfigError, card_document, card_toml

    try:
        text = read_text(args.config, what="config", limit=MAX_CONFIG_BYTES)
        doc = card_document(text, args.config)
    except (CliIOError, ConfigError) as exc:
        raise InputError(str(exc)) from None
    card = _card(args.config)  # the same checks as --card config.json
    toml = card_toml(doc, card.path)
    if not args.output:
        sys.stdout.write(toml)
        return 0
    try:
        write_text(args.output, toml, flag="-o", inputs=(args.config,))
    except CliIOError as exc:
        print_diagnostics(f"shardc: error: {visible_lines(str(exc))}")
        return 2
    return 0


@_guard
def run_program(args: argparse.Namespace) -> int:
    from shardc.driver.api import run_pipeline
    from shardc.lang.source import Source
    from shardc.tools.models.programs import part
    from shardc.tools.models.sharding import ShardingError

    card = _card(args.name)
    seq = parse_tokens(args.seq, "--seq") if args.seq else card.seq_len
    tokens = parse_tokens(args.batch, "--batch") if args.batch else card.batch_tokens or seq
    if tokens % seq:
        raise InputError(f"--batch {tokens} tokens is not a whole number of {seq}-token sequences")
    layout = mesh_layout(args.strategy, args.mesh)
    if not args.sequence_parallel or args.expert_parallel:
        import dataclasses

        layout = dataclasses.replace(
            layout, sequence_parallel=args.sequence_parallel, expert_parallel=args.expert_parallel
        )
    if args.hw:
        _chip(args.hw)
    try:
        prog = part(card, layout, tokens // seq, seq, args.part, args.hw)
    except ShardingError as exc:
        raise InputError(str(exc)) from None
    # The program must compile as far as the collectives, or it is not worth printing.
    result = run_pipeline(
        Source(f"<{card.name} {args.part}>", prog.text), hw=args.hw, stop_after="insert-collectives"
    )
    if result.diagnostics.has_errors:
        print_diagnostics(result.rendered())
        return 1
    for note in prog.notes:
        print(f"note: {visible(note)}", file=sys.stderr)
    if args.output:
        from shardc.driver.files import CliIOError, write_text

        try:
            chip = _chip(args.hw).path if args.hw else None
            write_text(args.output, prog.text, flag="-o", inputs=(card.path, chip))
        except CliIOError as exc:
            print_diagnostics(f"shardc: error: {visible_lines(str(exc))}")
            return 2
    else:
        sys.stdout.write(prog.text)
    return 0


def mesh_layout(strategy: str, mesh: str | None):
    """A `Layout` from `--strategy` and `--mesh`: axes named P* are pods (DCN, batch only),
    Y* tensor-parallel under fsdp-tp (every axis under tp), the rest data-parallel."""
    from shardc.lang.numeric import MAX_INTEGER, SIZE_PATTERN
    from shardc.tools.models.sharding import Axis, Layout

    if strategy == "single":
        if mesh:
            raise InputError("--strategy single takes no --mesh")
        return Layout("single")
    if mesh is None:
        mesh = {"dp": "X", "fsdp": "X", "tp": "Y", "fsdp-tp": "X, Y", "dp-tp": "X, Y"}[strategy]
    axes: list[Axis] = []
    for item in _split_mesh(mesh):
        # Parsed into values (a name, a whole number, a link level, physical axis names, a
        # wrap flag) and written back from them, so no text of the flag reaches the program.
        m = re.fullmatch(rf"\s*({_IDENT})\s*(?:=\s*({SIZE_PATTERN}))?\s*{_LINK}\s*", item)
        if not m:
            raise InputError(
                f"--mesh item {quoted(item.strip())} is not NAME=SIZE with an "
                "optional link (e.g. X=2048, Y=4 @ici(x), P=2 @dcn, Z=4 nowrap)"
            )
        name, size = m.group(1), m.group(2)
        link = _link_text(m.group(3), m.group(4), m.group(5))
        if name.startswith("P"):
            role = "pod"
        elif strategy == "tp" or (strategy in ("fsdp-tp", "dp-tp") and name.startswith("Y")):
            role = "tp"
        else:
            role = "data"
        n = _count(size, f"--mesh {name}=", MAX_INTEGER) if size else None
        if any(a.name == name for a in axes):
            raise InputError(f"--mesh: {name} is given twice")
        axes.append(Axis(name, n, role, link))
    if strategy in ("fsdp-tp", "dp-tp") and not any(a.role == "tp" for a in axes):
        raise InputError(f"--strategy {strategy} needs a tensor axis named Y... in --mesh")
    return Layout(strategy, tuple(axes), fsdp=strategy in ("fsdp", "fsdp-tp"))


_IDENT = r"[A-Za-z][A-Za-z0-9]*"
_LINK = (
    rf"(?:@\s*({_IDENT})\s*(?:\(\s*({_IDENT}(?:\s*,\s*{_IDENT})*)\s*\))?)?\s*"
    r"(?:\b(wrap|nowrap))?"
)
"""A mesh axis's link as `--mesh` takes it: `@level`, `@level(x, y)`, then `wrap` or `nowrap`."""


def _link_text(level: str | None, physical: str | None, flag: str | None) -> str:
    """A link written from its parsed parts (`@ici(x, y) nowrap`).

    >>> _link_text("ici", " x ,y", "nowrap"), _link_text(None, None, None)
    ('@ici(x, y) nowrap', '')
    """
    parts = []
    if level:
        axes = [a.strip() for a in physical.split(",")] if physical else []
        parts.append(f"@{level}" + (f"({', '.join(axes)})" if axes else ""))
    if flag:
        parts.append(flag)
    return " ".join(parts)


def _layout_flag(text: str, chip, chips: int):
    """`--layout`: ("fsdp-tp", 4) for sizes alone (the search's placement of that degree), or
    the `Layout` as written when any axis names its links or, on GPUs, a replica axis P."""
    from shardc.tools.plan.evaluation import tensor_degree
    from shardc.tools.plan.strategies import choose_slice

    strategy, _, mesh = text.partition(":")
    strategy = strategy.strip()
    if strategy in PIPELINED:
        return _pipelined_layout(text, strategy, mesh.strip(), chip, chips)
    if strategy not in STRATEGIES or strategy == "single":
        raise InputError(
            f"--layout {quoted(text)}: the strategy is one of dp, fsdp, tp, fsdp-tp, "
            "dp-tp, pp-dp, pp-dp-tp, pp-fsdp, pp-fsdp-tp, then ':' and the mesh "
            "('fsdp-tp: X=2048, Y=4', 'pp-dp-tp: PP=16, X=128, Y=8')"
        )
    mesh = mesh.strip()
    try:
        layout = mesh_layout(strategy, mesh or None)
    except InputError as exc:
        raise InputError(f"--layout: {exc}") from None
    sizes = [a.size for a in layout.axes]
    if mesh and any(n is None for n in sizes):
        raise InputError(f"--layout {quoted(text)}: give every axis a size (X=2048)")
    tp = tensor_degree(layout)
    if "@" in mesh:
        total = 1
        for n in sizes:
            total *= n or 1
        if total != chips:
            raise InputError(
                f"--layout {quoted(text)}: the mesh has {total} devices, --chips is {chips}"
            )
        return layout
    sl = choose_slice(chip, chips)
    per_pod = sl.chips_per_pod
    if not sl.shape and any(a.role == "pod" for a in layout.axes) and data_size(layout) == chips:
        # On GPUs a written replica axis (hybrid sharding: 'fsdp: P=14, X=160') is the
        # split the user asks for; the search's placement would choose its own.
        return layout
    if strategy == "tp" and not mesh:
        tp = per_pod
    data, data_axes = 1, False
    for a in layout.axes:
        if a.role != "tp" and a.size:
            data *= a.size
            data_axes = True
    if data_axes and data * tp != per_pod:
        raise InputError(
            f"--layout {quoted(text)}: {data} x {tp} devices, but the slice for "
            f"--chips {chips} has {per_pod} chips per pod (give sizes that multiply "
            f"to {per_pod}, or only the tensor axis: 'fsdp-tp: Y={tp}')"
            if strategy == "fsdp-tp"
            else f"--layout {quoted(text)}: {data * tp} devices, but the slice for --chips "
            f"{chips} has {per_pod} chips per pod"
        )
    return strategy, tp


def data_size(layout) -> int:
    """The devices a layout's sized axes multiply to."""
    total = 1
    for a in layout.axes:
        total *= a.size or 1
    return total


def _pipelined_layout(
    text: str, strategy: str, mesh: str, chip, chips: int
) -> tuple[str, int, int, int]:
    """`--layout 'pp-dp-tp: PP=16, X=128, Y=8'`: (strategy, tensor degree, stages,
    context-parallel degree). PP is required; X, if given, must be what is left of the chips
    (data x context ranks); CP= splits each sequence over that many of X's ranks."""
    from shardc.lang.numeric import MAX_INTEGER
    from shardc.tools.plan.strategies import choose_slice

    sizes: dict[str, int] = {}
    for item in _split_mesh(mesh):
        m = re.fullmatch(r"\s*(PP|X|Y|CP)\s*=\s*(\S+)\s*", item)
        if not m:
            raise InputError(
                f"--layout {quoted(text)}: a pipelined layout is written with PP=, X=, "
                "Y= and CP= sizes only ('pp-dp-tp: PP=16, X=128, Y=8', CP= "
                "splitting each sequence over X's ranks), got "
                f"{item.strip()!r}"
            )
        if m.group(1) in sizes:
            raise InputError(f"--layout {quoted(text)}: {m.group(1)} is given twice")
        sizes[m.group(1)] = _count(m.group(2), f"--layout {m.group(1)}=", MAX_INTEGER)
    if "PP" not in sizes:
        raise InputError(f"--layout {quoted(text)}: give the stages, PP=N")
    t = sizes.get("Y", 1)
    if t > 1 and not strategy.endswith("-tp"):
        raise InputError(
            f"--layout {quoted(text)}: {strategy} has no tensor axis; write {strategy}-tp for Y={t}"
        )
    per_pod = choose_slice(chip, chips).chips_per_pod
    if "X" in sizes and sizes["X"] * t * sizes["PP"] != per_pod:
        raise InputError(
            f"--layout {quoted(text)}: PP x X x Y = {sizes['PP'] * sizes['X'] * t} "
            f"devices, but --chips {chips} uses {per_pod}"
        )
    return strategy, t, sizes["PP"], sizes.get("CP", 1)


def _jobs(text: str | None) -> int:
    """`--jobs`: a positive whole number, at most 64; by default the CPUs, at most 4."""
    import os

    if text is None:
        return max(1, min(4, os.cpu_count() or 1))
    return _count(text, "--jobs", 64)


def _split_mesh(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x for x in out if x.strip()]


# ---- shardc plan -------------------------------------------------------------------------------


def _rate(text: str, flag: str) -> float:
    """A probability from 0 to below 1 (`--dropout 0.1`), or an InputError naming the flag."""
    import math

    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (0.0 <= x < 1.0):
        raise InputError(f"{flag} {text!r}: expected a rate from 0 to below 1, such as 0.1")
    return x


@_guard
def run_plan(args: argparse.Namespace) -> int:
    from shardc.lang.input_limits import MAX_PLAN_CHIPS
    from shardc.tools.plan import Options, PlanError, plan
    from shardc.tools.plan.render import plan_dict, plan_text

    card = _card(args.card)
    chip = _chip(args.hw)
    chips = _count(args.chips, "--chips", MAX_PLAN_CHIPS)
    seq = parse_tokens(args.seq, "--seq") if args.seq else None
    if args.batch:
        tokens = parse_tokens(args.batch, "--batch")
    elif card.batch_tokens:
        tokens = card.batch_tokens
    else:
        raise InputError(f"{card.name} has no batch size in its card; give --batch (e.g. 4Mi)")
    from shardc.cli.progress import for_command

    only = _layout_flag(args.layout, chip, chips) if args.layout is not None else None
    progress = for_command(args.progress, machine_output=args.format == "json")
    try:
        p = plan(
            card,
            chip,
            chips,
            tokens,
            seq,
            Options(
                args.optimizer,
                args.remat,
                args.cost_model,
                args.attention,
                zero=args.zero,
                schedule=args.schedule,
                virtual_stages=_count(args.virtual_stages, "--virtual-stages", 1024),
                microbatch_sequences=_count(args.microbatch, "--microbatch", 1 << 20),
                sequence_parallel=args.sequence_parallel,
                matmul_precision=args.matmul_precision,
                dropout=_rate(args.dropout, "--dropout"),
            ),
            progress=progress,
            only=only,
            jobs=_jobs(args.jobs),
        )
    except PlanError as exc:
        raise InputError(("--layout: " if only is not None else "") + str(exc)) from None
    finally:
        if progress:
            progress.done()
    if args.format == "json":
        sys.stdout.write(strict_dumps(plan_dict(p), indent=2) + "\n")
    else:
        write_result(plan_text(p))
    return 0
