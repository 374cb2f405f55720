"""Pipelines, DP + TP and ZeRO in `plan`: the schedules' closed forms, the stage split, the
estimates that decide what is compiled, and the CLI's `--layout` for pipelined layouts."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc import hardware
from shardc.cli.app import main
from shardc.tools import models
from shardc.tools import plan as P
from shardc.tools.plan.candidates import Options, Pipeline
from shardc.tools.plan.pipeline_parallel import balanced, bubble_fraction, in_flight, split_layers
from shardc.tools.plan.strategies import replicated_memory

H100 = hardware.load("h100")
CARD = models.load("llama2-13b")
TOKENS = 64 * 4096  # 64 sequences of 4096


def _one(layout, **options):
    return P.plan(CARD, H100, 64, TOKENS, options=Options(**options), only=layout).candidates[0]


@pytest.fixture(scope="module")
def one_f_one_b():
    return _one(("pp-dp-tp", 8, 4))


# ---- closed forms ------------------------------------------------------------------------------


@given(st.integers(2, 200), st.integers(2, 64), st.floats(0.01, 10), st.floats(0, 50))
def test_the_stage_split_places_every_layer_and_beats_even_splitting(n, p, t_layer, t_head):
    p = min(p, n)
    first, last = split_layers(n, p, 1, t_layer, t_head)
    assert first * (p - 1) + last >= n  # every layer on some stage
    cost = max(first * t_layer, last * t_layer + t_head)
    even = math.ceil(n / p)
    assert cost <= even * t_layer + t_head + 1e-9  # never worse than the head on top of L/p


@given(st.integers(2, 64), st.integers(1, 512), st.integers(2, 8))
def test_interleaving_keeps_less_than_gpipe_and_idles_less_than_1f1b(p, m, v):
    gpipe, f1b = Pipeline(p, m, "gpipe"), Pipeline(p, m, "1f1b")
    inter = Pipeline(p, m, "interleaved", v)
    assert in_flight(f1b) <= in_flight(inter) <= max(in_flight(gpipe), 2 * in_flight(f1b))
    assert in_flight(f1b) <= in_flight(gpipe)
    assert bubble_fraction(inter) < bubble_fraction(f1b) == bubble_fraction(gpipe)
    assert 0 <= bubble_fraction(Pipeline(p, m + 1, "1f1b")) < bubble_fraction(f1b)


@given(st.integers(2, 64), st.integers(1, 512), st.integers(2, 8))
def test_interleaving_keeps_korthikantis_count_but_never_more_microbatches_than_there_are(p, m, v):
    """Korthikanti et al. 2022, section 4.2.3: the first stage keeps p (1 + (p - 1) / (p v))
    microbatches of its layers once m is large enough; Megatron-LM's schedule never runs more
    than the m v chunk forward passes a step has, so at m <= p every microbatch, as 1F1B."""
    inter = Pipeline(p, m, "interleaved", v)
    korthikanti = p * (1 + (p - 1) / (p * v))
    assert in_flight(inter) == pytest.approx(min(m, korthikanti))
    if m <= p:
        assert in_flight(inter) == in_flight(Pipeline(p, m, "1f1b")) == m
    ranks = [in_flight(inter, r) for r in range(p)]
    assert ranks == sorted(ranks, reverse=True) and ranks[-1] >= min(m, 1)


@given(st.integers(2, 200), st.integers(2, 32), st.integers(2, 8))
def test_the_balanced_interleaved_split_places_every_layer_and_costs_no_stage_a_layer(n, p, v):
    """Balanced (the LLaMA 3 paper): the first and last stages one layer fewer, the embedding
    and the output layer in their place; never more layers on a stage than the plain split."""
    if not balanced(n, p, v):
        return
    k, last = split_layers(n, p, v, 1.0, 1.0)
    assert last == k - 1 and 2 * (k - 1) + (p - 2) * k >= n
    assert k <= math.ceil(n / (p * v)) * v or p * v > n


def test_llama3_interleaved_split_is_the_papers():
    """126 layers, PP 16, 8 chunks a stage: chunks of one layer, 7 on the first and last stage
    (Dubey et al. 2024, section 3.3.2), which the plain split refuses (16 x 8 > 126)."""
    assert balanced(126, 16, 8) and split_layers(126, 16, 8, 1.0, 2.0) == (8, 7)
    assert not balanced(96, 12, 2)  # GPT-3's 96 layers: 4 a chunk already; 98 would need 5


# ---- one pipelined layout ----------------------------------------------------------------------


def test_a_pipelined_step_is_its_closed_form(one_f_one_b):
    c = one_f_one_b
    assert c.evaluated and c.label() == "pp-dp-tp (PP=4 X=2 Y=8)"
    f, pp = c.figures, c.figures["pipeline"]
    p, m = pp["stages"], pp["microbatches"]
    assert (p, m, pp["microbatch_sequences"]) == (4, 32, 2)  # 64 sequences, 2 replicas
    assert (
        pp["layers_first_stage"] == 10
        and pp["layers_first_stage"] * 3 + pp["layers_last_stage"] >= CARD.n_layers
    )
    t_stage, t_send, t_grad = pp["t_stage_s"], pp["t_send_s"], pp["t_grad_sync_s"]
    exposed = max(t_grad / pp["layers_first_stage"], t_grad - 2 / 3 * t_stage)
    assert f["t_step_s"] == pytest.approx(
        (m + p - 1) * max(t_stage, t_send) + (p - 1) * t_send + exposed, rel=1e-12
    )
    assert pp["bubble_fraction"] == pytest.approx(3 / 35)
    assert 0 < f["mfu"] <= f["hfu"] <= 1
    assert c.chips == 64 and f["chips"] == 64


def test_pipelining_does_not_change_the_model_flops(one_f_one_b):
    """MFU's numerator is the model's, however it is laid out: every layer's einsums over every
    microbatch equal the unpipelined step's."""
    fsdp_tp = _one(("fsdp-tp", 8))
    assert one_f_one_b.figures["model_flops"] == pytest.approx(
        fsdp_tp.figures["model_flops"], rel=1e-9
    )


def test_schedules_trade_memory_for_bubble(one_f_one_b):
    gpipe = _one(("pp-dp-tp", 8, 4), schedule="gpipe")
    inter = _one(("pp-dp-tp", 8, 4), schedule="interleaved", virtual_stages=2)
    act = {
        k: c.figures["memory"]["activations"]
        for k, c in (("gpipe", gpipe), ("1f1b", one_f_one_b), ("inter", inter))
    }
    assert act["gpipe"] > act["inter"] > act["1f1b"]
    assert gpipe.t_step == pytest.approx(one_f_one_b.t_step)  # the same ticks, more memory
    assert (
        inter.figures["pipeline"]["bubble_fraction"]
        < one_f_one_b.figures["pipeline"]["bubble_fraction"]
    )


def test_zero_1_divides_the_optimizer_state_over_the_data_replicas(one_f_one_b):
    zero = _one(("pp-dp-tp", 8, 4), zero=1)
    n = one_f_one_b.layout.degree("data", "seq")
    assert zero.figures["memory"]["optimizer"] == pytest.approx(
        one_f_one_b.figures["memory"]["optimizer"] / n
    )
    assert zero.figures["memory"]["gradients"] == one_f_one_b.figures["memory"]["gradients"]
    assert zero.t_step == one_f_one_b.t_step  # the same traffic (ReduceScatter + AllGather)


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_the_dp_tp_estimate_is_the_compiled_memory(zero):
    """plan skips DP + TP when FSDP + TP's figures say it cannot fit; the estimate is the
    memory compiling DP + TP gives."""
    fsdp_tp = _one(("fsdp-tp", 8))
    dp_tp = _one(("dp-tp", 8), zero=zero)
    assert replicated_memory(fsdp_tp, zero) == pytest.approx(
        dp_tp.figures["memory_per_device_bytes"], rel=1e-9
    )


def test_the_search_pipelines_on_gpus_and_says_why_not_on_tpus():
    gpu = P.plan(CARD, H100, 64, TOKENS)
    pipes = [c for c in gpu.candidates if c.pipeline is not None]
    assert pipes and all(c.evaluated for c in pipes)
    assert {c.tp for c in pipes} <= {1, 2, 4, 8}  # tensor axes inside the NVLink domain
    tpu = P.plan(CARD, "tpu-v5p", 64, TOKENS)
    (pp,) = [c for c in tpu.candidates if c.strategy == "pp-dp-tp"]
    assert not pp.evaluated and "GPU clusters only" in pp.reason


@pytest.fixture(scope="module")
def mt_nlg_on_1120():
    return P.plan("mt-nlg-530b", "a100", 1120, 2240 * 2048, options=Options(remat="block"))


def test_fsdp_over_a_count_no_weight_divides_is_hybrid_sharding(mt_nlg_on_1120):
    """MT-NLG 530B on 1,120 A100 (Narayanan et al. 2021, Table 2): 1,120 is a multiple of 7 and
    no weight dimension is, so FSDP shards the weights 160 ways and replicates them over a
    batch-only axis P=7 across nodes; its gradient AllReduce over P is data parallelism."""
    (fsdp,) = [c for c in mt_nlg_on_1120.candidates if c.strategy == "fsdp"]
    assert fsdp.evaluated and fsdp.figures["fits"]
    assert [(a.name, a.size, a.role) for a in fsdp.layout.axes] == [
        ("P", 7, "pod"),
        ("X", 160, "data"),
    ]
    assert set(fsdp.figures["t_comms_by_role_s"]) == {"fsdp", "dp"}
    for c in mt_nlg_on_1120.candidates:
        if c.strategy == "fsdp-tp" and c.evaluated:
            assert c.layout.degree("pod", "data", "tp") == 1120 and c.layout.degree("pod") == 7


def test_pipeline_stages_need_not_be_powers_of_two(mt_nlg_on_1120):
    """The paper's 35 stages are found; every stage is whole NVLink domains or part of one."""
    pipes = [c for c in mt_nlg_on_1120.candidates if c.pipeline is not None and c.evaluated]
    assert any(c.pipeline.stages == 35 and c.figures["fits"] for c in pipes)
    for c in pipes:
        stage = c.chips // c.pipeline.stages
        assert stage % 8 == 0 or 8 % stage == 0, c.label()


@pytest.fixture(scope="module")
def nemotron_on_6144():
    """Nemotron-4 340B on 6,144 H100, batch 2,304 x 4,096 (NVIDIA 2024, "Nemotron-4 340B
    Technical Report", Table 2), with Megatron-LM's flash attention; the ZeRO stage is the
    search's to choose."""
    return P.plan("nemotron4-340b", "h100", 6144, 2304 * 4096, options=Options(attention="flash"))


def _fits_by_estimate(p, t):
    """The stage counts at tensor degree t whose estimate fits, at ZeRO 0 or 1."""
    import dataclasses

    from shardc.tools.plan.stages import _bases, _stage_estimates

    base = next(b for b in _bases(p.candidates, 8) if b.tp == t)
    out = set()
    for zero in (0, 1):
        o = dataclasses.replace(p.options, zero=zero)
        est = _stage_estimates(p.card, p.chip, p.slice, base, t, p.sequences, o, "1f1b", 1, 1)
        out |= {n for n, e in est if e <= p.chip.hbm_bytes}
    return out


def test_every_stage_count_that_fits_is_tried(nemotron_on_6144):
    """The published PP 12 (TP 8, DP 64) is among the candidates and fits, with the optimizer
    state sharded (ZeRO-1, Megatron-LM's distributed optimizer); so do others, more stages as
    well as fewer: the search no longer stops at the fewest stages its estimate fits (which
    was PP 3, 85 GB compiled: no pipelined candidate fitted)."""
    p = nemotron_on_6144
    assert p.best is not None and p.best.pipeline is not None
    pipes = [c for c in p.candidates if c.pipeline is not None and c.evaluated]
    plain = [c for c in pipes if c.pipeline.schedule == "1f1b" and c.pipeline.micro_sequences == 1]
    pp12 = [c for c in plain if c.pipeline.stages == 12 and c.tp == 8 and c.fits]
    assert pp12 and pp12[0].layout.degree("data") == 64 and pp12[0].zero == 1
    assert "ZeRO-1" in pp12[0].label()
    assert {c.pipeline.stages for c in plain if c.tp == 8} == _fits_by_estimate(p, 8)
    assert len({c.pipeline.stages for c in plain if c.tp == 8 and c.fits}) >= 5


def test_a_zero_1_twin_has_the_same_step_and_less_state(nemotron_on_6144):
    """A pipelined candidate compiled at ZeRO 0 that does not fit gets a ZeRO-1 twin where
    that fits: the same step, the optimizer state over the stage's data replicas."""
    p = nemotron_on_6144
    for twin in (c for c in p.candidates if c.zero == 1 and c.evaluated):
        same = [
            c
            for c in p.candidates
            if c.zero is None and c.pipeline == twin.pipeline and c.tp == twin.tp and c.evaluated
        ]
        for c in same:
            assert c.t_step == twin.t_step and not c.fits and twin.fits
            assert twin.figures["memory"]["optimizer"] == pytest.approx(
                c.figures["memory"]["optimizer"] / c.layout.degree("data", "seq")
            )


def test_the_fastest_pipeline_is_tried_interleaved_and_with_larger_microbatches(nemotron_on_6144):
    """Around the fastest pipelined candidate that fits: interleaved 1F1B and microbatches of 2
    and 4 sequences a replica, each where its estimated memory fits."""
    p = nemotron_on_6144
    variants = [
        c
        for c in p.candidates
        if c.pipeline is not None
        and (c.pipeline.schedule == "interleaved" or c.pipeline.micro_sequences > 1)
    ]
    assert variants and all(c.evaluated for c in variants)
    inter = next(c for c in variants if c.pipeline.schedule == "interleaved")
    assert "v=2" in inter.label()
    plain = next(
        c
        for c in p.candidates
        if c.pipeline is not None
        and c.tp == inter.tp
        and c.pipeline.stages == inter.pipeline.stages
        and c.evaluated
        and c.pipeline.schedule == "1f1b"
        and c.pipeline.micro_sequences == 1
    )
    assert (
        inter.figures["pipeline"]["bubble_fraction"] < plain.figures["pipeline"]["bubble_fraction"]
    )


@given(
    st.sampled_from([16, 32, 64]),
    st.sampled_from([32, 64, 128]),
    st.sampled_from(["none", "selective", "block"]),
    st.sampled_from([0, 1]),
)
@settings(max_examples=6, deadline=None)
def test_what_the_search_reports_as_fitting_fits_and_what_it_prunes_does_not(
    chips, sequences, remat, zero
):
    """Every candidate the search reports as fitting fits in HBM by the model's own count (its
    memory summed), and every stage count the memory estimate pruned (at ZeRO 1 as well where
    the options say 0), compiled at ZeRO 1, does not fit: the estimate is a bound from below."""
    options = Options(remat=remat, zero=zero)
    p = P.plan(CARD, H100, chips, sequences * 4096, options=options)
    for c in p.candidates:
        if c.evaluated:
            total = sum(c.figures["memory"].values())
            assert c.fits == (total <= H100.hbm_bytes), c.label()
            assert c.figures["memory_per_device_bytes"] == pytest.approx(total)
    pruned = []
    from shardc.tools.plan.stages import _bases, _stage_estimates

    for base in _bases(p.candidates, 8):
        sharded = Options(remat=remat, zero=1)
        est = _stage_estimates(CARD, H100, p.slice, base, base.tp, sequences, sharded, "1f1b", 1, 1)
        if any(e <= H100.hbm_bytes for _, e in est):
            pruned += [(base.tp, n) for n, e in est if e > H100.hbm_bytes]
    for t, n in pruned[-2:]:
        strategy = "pp-dp-tp" if t > 1 else "pp-dp"
        c = P.plan(
            CARD,
            H100,
            chips,
            sequences * 4096,
            options=Options(remat=remat, zero=1),
            only=(strategy, t, n),
        ).candidates[0]
        assert c.evaluated and not c.fits, c.label()


@pytest.mark.parametrize(
    ("options", "hint"),
    [
        (Options(), "try --remat block"),
        (Options(remat="block"), "try --attention flash"),
        (Options(remat="block", attention="flash"), "try more chips"),
    ],
)
def test_when_nothing_fits_the_hint_is_an_option_not_yet_used(options, hint):
    from shardc.tools.plan.explanation import explain

    p = P.plan("mt-nlg-530b", "a100", 8, 8 * 2048, options=options)
    assert p.best is None
    (line,) = explain(p)
    assert hint in line, line


# ---- the CLI -----------------------------------------------------------------------------------


def _shardc(*args):
    """The installed command in a process of its own (one test: start-up, exit status, stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "shardc", *args], capture_output=True, text=True, timeout=120
    )


def _main(capsys, *args):
    """`shardc ARGS` in this process: (exit status, stdout, stderr), argparse's exit 2 included."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_evaluates_a_pipelined_layout_as_json(capsys):
    code, out, err = _main(
        capsys,
        "plan",
        "--card",
        "llama2-13b",
        "--hw",
        "h100",
        "--chips",
        "64",
        "--batch",
        "256Ki",
        "--layout",
        "pp-dp-tp: PP=4, X=2, Y=8",
        "--zero",
        "1",
        "--pipeline-schedule",
        "interleaved",
        "--virtual-stages",
        "2",
        "--format",
        "json",
    )
    assert code == 0, err
    d = json.loads(out)
    (c,) = d["candidates"]
    assert c["mesh"] == {"PP": 4, "X": 2, "Y": 8} and c["mesh_text"] == "PP=4, X=2, Y=8"
    assert c["degrees"]["pipeline"] == 4 and c["pipeline"]["virtual_stages"] == 2
    assert d["options"]["zero"] == 1 and d["options"]["pipeline_schedule"] == "interleaved"


@pytest.mark.parametrize(
    "layout, message",
    [
        ("pp-dp-tp: Y=8", "give the stages, PP=N"),
        ("pp-dp: PP=4, Y=8", "has no tensor axis"),
        ("pp-dp-tp: PP=3, Y=8", "3 stages do not split 64 chips"),
        ("pp-dp-tp: PP=4, X=3, Y=8", "PP x X x Y = 96 devices"),
        ("pp-dp-tp: PP=4, Z=2", "PP=, X=, Y= and CP= sizes only"),
        ("pp-dp-tp: PP=4, Y=8, CP=3", "context-parallel degree of 3 does not divide"),
        ("pp-dp-tp: PP=4, PP=2", "PP is given twice"),
        ("pp-dp-tp: PP=0", "--layout PP=0"),
        ("pp-dp-tp: PP=64", "64 stages for 40 layers"),
        ("fsdp: P=8 @ib, X=8 @ib, P=1", "P is given twice"),
    ],
)
def test_cli_refuses_bad_pipelined_layouts_in_one_line(capsys, layout, message):
    code, _, err = _main(
        capsys,
        "plan",
        "--card",
        "llama2-13b",
        "--hw",
        "h100",
        "--chips",
        "64",
        "--batch",
        "256Ki",
        "--layout",
        layout,
    )
    assert code == 1 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_installed_command_refuses_a_bad_layout_in_one_line():
    """The same refusal from `python -m shardc`, a process of its own."""
    r = _shardc(
        "plan", "--card", "llama2-13b", "--hw", "h100", "--chips", "64", "--batch", "256Ki",
        "--layout", "pp-dp-tp: PP=3, Y=8",
    )  # fmt: skip
    assert r.returncode == 1 and "3 stages do not split 64 chips" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "flag, value", [("--virtual-stages", "0"), ("--microbatch", "x"), ("--microbatch", "3")]
)
def test_cli_refuses_bad_pipeline_options(capsys, flag, value):
    code, _, err = _main(
        capsys,
        "plan",
        "--card",
        "llama2-13b",
        "--hw",
        "h100",
        "--chips",
        "64",
        "--batch",
        "256Ki",
        "--layout",
        "pp-dp-tp: PP=4, Y=8",
        flag,
        value,
    )
    assert code in (1, 2), err
    assert flag.lstrip("-").split("-")[0] in err and "Traceback" not in err


def test_without_sequence_parallelism_each_block_ends_in_an_allreduce():
    """--no-sequence-parallel: Megatron-LM's tensor parallelism (Shoeybi et al. 2019). Under
    selective recomputation it is a trade: the layer inputs kept replicated (more memory), so
    the backward pass need not gather them again (less exposed tensor-parallel communication
    in the calibrated step), while the norms and residual additions run on the whole stream on
    every rank, which sequence parallelism shards (Korthikanti et al. 2022, section 4.2.2)."""
    from shardc.tools.plan.accounting import compile_parts
    from shardc.tools.plan.framework import layer_seconds

    sp = _one(("fsdp-tp", 8), remat="selective")
    no_sp = _one(("fsdp-tp", 8), remat="selective", sequence_parallel=False)
    assert sp.layout.sequence_parallel and not no_sp.layout.sequence_parallel
    assert no_sp.figures["memory"]["activations"] > sp.figures["memory"]["activations"]
    exposed = [c.figures["t_exposed_by_role_s"]["tp"] for c in (sp, no_sp)]
    assert exposed[1] < exposed[0]
    passes = []
    for c in (sp, no_sp):
        ((_, r, _), *_) = compile_parts(
            CARD, H100, c.layout, TOKENS // 4096, 4096, Options(remat="selective")
        )
        passes.append(layer_seconds(r, H100, "selective", 0.0))
    assert passes[1] == pytest.approx(8 * passes[0])  # the stream is 8x wider on each rank


# ---- mixture of experts ------------------------------------------------------------------------


def test_a_moe_model_is_planned_with_expert_parallelism():
    """DeepSeek-V3 on 2048 H100: the routed experts sharded over a data axis that divides their
    256 (GShard's expert parallelism), each token dispatched there by an AllToAll and combined
    back by another, forward and backward."""
    from shardc.driver import api
    from shardc.tools.models.programs import part

    p = P.plan(
        "deepseek-v3",
        H100,
        2048,
        4 * 2**20,
        options=Options(remat="block", attention="flash"),
        only=("fsdp-tp", 4),
    )
    (c,) = p.candidates
    assert c.evaluated and c.fits and c.layout.expert_parallel
    assert set(c.figures["parts"]) == {"layer", "moe-layer", "experts", "head"}
    prog = part(p.card, c.layout, p.sequences, p.seq, "experts", "h100")
    assert "the dispatch: an AllToAll over X2" in prog.text
    assert "param W_e1: bf16[E_{X2}," in prog.text  # 256 experts, one a device of X2=256
    r = api.compile(prog.text, hw="h100")
    moves = [
        (op.op, op.axes)
        for op in r.ops
        if op.kind == "collective" and op.array in ("Xe", "Yd", "dYe", "dXd")
    ]
    # dispatch, combine, and their gradients: one AllToAll over X2 each. With idle axes (the
    # compile's default) the combine's product runs its tokens over Y and AllToAlls the model
    # dim back over Y first: a plan the whole-program search finds cheaper (T_lower 26.66
    # against 26.79 ms, scheduled step 30.26 against 30.79 ms); `plan` compiles without idle
    # axes, where the four AllToAlls are the only moves of these arrays.
    over_x2 = [(op.array, op.op) for op in r.ops if op.kind == "collective" and op.axes == ("X2",)]
    assert [a for a, _ in over_x2 if a in ("Xe", "Yd", "dYe", "dXd")] == ["Xe", "Yd", "dYe", "dXd"]
    assert all(m[0] == "AllToAll" and (m[1] == ("X2",) or m[1] == ("Y",)) for m in moves)
    planned = api.compile(prog.text, hw="h100", idle_axes=False, explain=False)
    plain = [
        (op.op, op.axes)
        for op in planned.ops
        if op.kind == "collective" and op.array in ("Xe", "Yd", "dYe", "dXd")
    ]
    assert plain == [("AllToAll", ("X2",))] * 4
    assert r.scheduled_step() <= planned.scheduled_step() * (1 + 1e-9)


def test_moe_pipelines_say_why_not():
    """The whole search for DeepSeek-V3: its pipelines are not planned, and the candidates it
    compiles include expert-parallel ones. On 64 H100s the search still compiles tensor degrees
    past the 8-GPU NVLink domain (Y = 16, 32) and gives plain TP its own reason (no data axis for
    the experts): 19 s of CPU where 256 chips took 33 s (their Y = 64, 128 most of it)."""
    p = P.plan("deepseek-v3", H100, 64, 2**20, options=Options(remat="block"))
    (pp,) = [c for c in p.candidates if c.strategy == "pp-dp-tp"]
    assert "mixture-of-experts" in pp.reason
    assert any(c.evaluated and c.layout.expert_parallel for c in p.candidates)
    assert any(c.evaluated and c.tp > 8 for c in p.candidates)


def test_context_parallelism_splits_each_sequence_over_its_ranks():
    """'pp-dp-tp: PP=4, Y=8, CP=2' on 64 H100: a stage's 2 data ranks are one replica whose
    sequences they split (a 2-way sequence axis), so a microbatch holds one sequence."""
    c = _one(("pp-dp-tp", 8, 4, 2))
    assert c.evaluated and c.layout.degree("seq") == 2 and c.layout.degree("data") == 1
    assert c.figures["pipeline"]["microbatch_sequences"] == 1
    assert c.figures["pipeline"]["microbatches"] == 64
