"""`shardc plan`: slices, layouts, the LLaMA 3 70B plan of the LLaMA 3 chapter, JSON, bad input.

One full plan (LLaMA 3 70B on a v5p pod, 8 candidates compiled, a few seconds) is shared by
the tests that need it; the CLI tests reuse it rather than compiling again.
"""

from __future__ import annotations

import json

import pytest

from shardc import hardware
from shardc.cli.app import main
from shardc.tools import models
from shardc.tools import plan as P
from shardc.tools.models.sharding import Axis

V5P = hardware.load("tpu-v5p")
MB4 = 4 * 2**20  # the LLaMA 3 chapter: "4M token batch size (1024 sequences of length 4096)"


@pytest.fixture(scope="module")
def llama70b() -> P.Plan:
    return P.plan(models.load("llama3-70b"), V5P, 8960, MB4, 4096)


# ---- slices and layouts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chips, pods, per_pod, shape, idle",
    [
        (8960, 1, 8192, (16, 16, 32), 768),  # a whole pod runs its largest power of two
        (4096, 1, 4096, (16, 16, 16), 0),
        (64, 1, 64, (4, 4, 4), 0),
        (17920, 2, 8192, (16, 16, 32), 1536),  # two pods over DCN
        (16384, 2, 8192, (16, 16, 32), 0),
    ],
)
def test_slices(chips, pods, per_pod, shape, idle):
    assert P.choose_slice(V5P, chips) == P.Slice(pods, per_pod, shape, idle)


def test_counts_that_are_not_powers_of_two_make_slices_of_whole_cubes():
    """PaLM's 6144 TPU v4 chips are two pods of 16x16x12 (Chowdhery et al. 2022); 3072 v5p
    chips one slice of 12x16x16 (each axis a multiple of 4, within the 16x20x28 pod)."""
    assert P.choose_slice(hardware.load("tpu-v4p"), 6144) == P.Slice(2, 3072, (12, 16, 16), 0)
    assert P.choose_slice(V5P, 3072) == P.Slice(1, 3072, (12, 16, 16), 0)
    assert P.choose_slice(V5P, 8960 * 2) == P.Slice(2, 8192, (16, 16, 32), 768 * 2)


@pytest.mark.parametrize("chips", [1000, 12000, 0])
def test_chip_counts_that_make_no_slice(chips):
    with pytest.raises(P.PlanError):
        P.choose_slice(V5P, chips)


def test_gpus_take_any_chip_count():
    """A switched network has no slice shapes: 1,920 GPUs (Narayanan et al. 2021, Table 1) are
    all used, and the search tries the tensor degrees that divide them."""
    h100 = hardware.load("h100")
    assert P.choose_slice(h100, 64) == P.Slice(1, 64, (), 0)
    assert P.choose_slice(h100, 1920) == P.Slice(1, 1920, (), 0)
    with pytest.raises(P.PlanError):
        P.choose_slice(h100, 0)


def test_fsdp_tp_layouts_give_tp_and_the_sequence_their_own_axes():
    card = models.load("llama3-70b")
    sl = P.choose_slice(V5P, 8960)
    by_t = {c.tp: c for c in P.layouts(card, V5P, sl, 1024, 4096) if c.strategy == "fsdp-tp"}
    four = by_t[4].layout
    assert four.degree("data", "seq") == 2048 and four.degree("tp") == 4
    assert (
        four.degree("seq") == 2
    )  # 1024 sequences: the LLaMA 3 chapter's "2-way sequence parallelism"
    assert [a for a in four.axes if a.role == "tp"] == [Axis("Y", 4, "tp", "@ici(z)")]
    eight = by_t[8].layout
    assert eight.mesh_text() == "X=1024 @ici(x, y), Y=8 @ici(z)"
    # 16-way TP: 8 KV heads x 2 query groups, two axes sharing one physical axis
    assert [(a.name, a.size) for a in by_t[16].layout.of("tp")] == [("Y1", 8), ("Y2", 2)]
    assert "do not split 128 ways" in by_t[128].reason


def test_pods_shard_only_the_batch():
    card = models.load("llama3-70b")
    sl = P.choose_slice(V5P, 17920)
    fsdp = next(c for c in P.layouts(card, V5P, sl, 2048, 4096) if c.strategy == "fsdp")
    assert fsdp.layout.axes[0] == Axis("P", 2, "pod", "@dcn")


# ---- the LLaMA 3 70B plan (the LLaMA 3 chapter "How to shard LLaMA 3-70B for training") ----------


def test_llama3_70b_picks_fsdp_tp_and_pure_fsdp_is_communication_bound(llama70b):
    best = llama70b.best
    assert best.strategy == "fsdp-tp" and best.fits
    fsdp = next(c for c in llama70b.candidates if c.strategy == "fsdp")
    assert fsdp.figures["bound"] == "comms" and fsdp.figures["bound_level"] == "ici"
    assert fsdp.figures["t_comms_s"] > fsdp.figures["t_math_s"]
    assert fsdp.t_step > best.t_step
    dp = next(c for c in llama70b.candidates if c.strategy == "dp")
    assert not dp.fits  # 70e9 x (2 + 2 + 8) bytes replicated on every chip
    assert any(
        c.strategy == "pp-dp-tp" and "GPU clusters only" in (c.reason or "")
        for c in llama70b.candidates
    )


def test_llama3_70b_fsdp_axis_within_2x_of_the_books_1618(llama70b):
    assert 1618 / 2 <= llama70b.best.data_degree <= 1618 * 2


def test_2048_x_4_is_within_a_few_percent_of_the_best(llama70b):
    book = next(c for c in llama70b.candidates if c.strategy == "fsdp-tp" and c.tp == 4)
    assert book.data_degree == 2048 and book.fits
    assert book.t_step <= 1.03 * llama70b.best.t_step
    # with every communication overlapped (the book's max(T_math, T_comms)) it is the best
    fits = [c for c in llama70b.ranked() if c.fits]
    assert min(fits, key=lambda c: c.figures["t_lower_s"]) is book


def test_book_figures(llama70b):
    b = P.book_figures(llama70b)
    assert round(b["alpha"]) == 2550 and b["tokens_per_chip"] == 512
    assert b["x_opt"] == pytest.approx((2 * MB4 * 8192 / 28672) ** 0.5)
    assert b["x_opt_power_of_two"] == 2048
    assert (
        round(b["fsdp_min_tokens_per_chip"]) == 850
    )  # the LLaMA 3 chapter: 468 < 850 -> comms-bound


def test_step_is_n_layers_layers_plus_the_embedding(llama70b):
    f = llama70b.best.figures
    layer, head = f["parts"]["layer"], f["parts"]["head"]
    assert layer["count"] == 80 and head["count"] == 1
    assert f["t_step_s"] == pytest.approx(80 * layer["t_step_s"] + head["t_step_s"])
    assert f["memory_per_device_bytes"] == pytest.approx(sum(f["memory"].values()))
    assert f["memory_per_device_bytes"] < V5P.hbm_bytes


def test_plan_json_shape(llama70b, monkeypatch, capsys):
    monkeypatch.setattr(P, "plan", lambda *a, **k: llama70b)
    assert (
        main(
            [
                "plan",
                "--card",
                "llama3-70b",
                "--hw",
                "tpu-v5p",
                "--chips",
                "8960",
                "--batch",
                "4Mi",
                "--format",
                "json",
            ]
        )
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    assert set(d) >= {"candidates", "best"}
    for c in d["candidates"]:
        assert {"strategy", "mesh", "t_step_s", "bound", "memory_per_device_bytes", "fits"} <= set(
            c
        )
    assert d["best"]["strategy"] == "fsdp-tp" and d["best"]["why"]
    assert d["best"]["t_step_s"] == min(c["t_step_s"] for c in d["candidates"] if c["fits"])
    assert d["slice"]["chips_used"] == 8192 and d["sequences"] == 1024
    evaluated = [c for c in d["candidates"] if c["evaluated"]]
    assert all(isinstance(c["mesh"], dict) for c in evaluated)


def test_plan_text(llama70b, monkeypatch, capsys):
    monkeypatch.setattr(P, "plan", lambda *a, **k: llama70b)
    assert main(["plan", "--card", "llama3-70b", "--hw", "tpu-v5p", "--chips", "8960"]) == 0
    out = capsys.readouterr().out
    assert "best: fsdp-tp" in out and "pure FSDP (fsdp (X=8192)) is communication-bound" in out
    assert "X_opt = sqrt(2 B N / F) = 1548 (the LLaMA 3 chapter" in out


def test_plan_progress_names_each_candidate_on_stderr(capsys):
    """`--progress` off a terminal: one line per candidate compiled, on stderr; stdout is the
    same plan."""
    args = ["plan", "--card", "llama3-8b", "--hw", "tpu-v5e", "--chips", "16", "--batch", "64Ki"]
    assert main([*args, "--progress"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert lines and all(
        line.startswith("[") and ("] compiling " in line or "] compiled " in line) for line in lines
    )  # one process: before each; several: after each
    evaluated = [line for line in out.splitlines() if " s " in line and "not evaluated" not in line]
    assert len(lines) >= len(evaluated) > 0
    assert main(args) == 0
    assert capsys.readouterr().out == out


@pytest.mark.parametrize(
    "tty, requested, json_out, shown",
    [
        (True, False, False, True),  # a person at a terminal: after a second
        (True, False, True, False),  # JSON for a program: none unless asked
        (True, True, True, True),
        (False, False, False, False),  # a pipe: none unless asked
        (False, True, False, True),
    ],
)
def test_progress_shows_on_terminals_and_stays_off_for_json(
    monkeypatch, tty, requested, json_out, shown
):
    from shardc.cli.progress import for_command

    monkeypatch.setattr("sys.stderr.isatty", lambda: tty)
    assert (for_command(requested, machine_output=json_out) is not None) is shown


# ---- bad input -------------------------------------------------------------------------------

BASE = ["plan", "--card", "llama3-70b", "--hw", "tpu-v5p", "--chips", "8960", "--batch", "4Mi"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--card": "llama-9"}, "unknown model 'llama-9'"),
        ({"--batch": "4Q"}, "--batch '4Q' is not a token count"),
        ({"--batch": "4e6"}, "not a whole number of 4096-token sequences"),
        ({"--chips": "1000"}, "neither a power of two, a whole number of tpu-v5p pods"),
        ({"--chips": "many"}, "--chips 'many' is not a positive whole number"),
        ({"--hw": "tpu-v9"}, "tpu-v9"),
        ({"--seq": "0"}, "--seq '0' is not a whole number of tokens"),
        ({"--layout": "zz"}, "--layout 'zz': the strategy is one of dp, fsdp, tp, fsdp-tp"),
        (
            {"--layout": "fsdp-tp: X=1024, Y=4"},
            "1024 x 4 devices, but the slice for --chips 8960 has 8192 chips per pod",
        ),
        (
            {"--layout": "fsdp-tp: Y=3"},
            "--layout: fsdp-tp on 8192 chips per pod needs a tensor "
            "degree between 2 and 4096 that divides 8192 (got 3)",
        ),
        (
            {"--layout": "fsdp-tp: X=8192 @ici(x), Y=4 @ici(z)"},
            "the mesh has 32768 devices, --chips is 8960",
        ),
        ({"--layout": "fsdp-tp: X=8192"}, "needs a tensor axis named Y"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(capsys, change, message):
    argv = list(BASE)
    for flag, value in change.items():
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert message in err, err
    assert "\n" not in err and "Traceback" not in err and err.startswith("shardc plan: error:")


def test_the_old_model_flag_still_names_the_card(capsys, monkeypatch):
    """`--card` names the model card; `--model`, its old spelling, works with a note (in compile
    and derive `--model` is the cost model: one meaning per flag)."""
    from shardc.cli.app import main

    args = ["--hw", "tpu-v5e", "--chips", "16", "--batch", "64Ki", "--format", "json"]
    assert main(["plan", "--model", "llama3-8b", *args]) == 0
    old = capsys.readouterr()
    assert "--model is deprecated here, write --card" in old.err
    assert main(["plan", "--card", "llama3-8b", *args]) == 0
    new = capsys.readouterr()
    assert new.out == old.out and "deprecated" not in new.err


# ---- one layout --------------------------------------------------------------------------------

SMALL = [
    "plan",
    "--card",
    "llama3-8b",
    "--hw",
    "tpu-v5p",
    "--chips",
    "64",
    "--batch",
    "128Ki",
    "--format",
    "json",
]


@pytest.fixture(scope="module")
def searched() -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(SMALL) == 0
    return json.loads(out.getvalue())


def _same(a: dict, b: dict, skip: tuple[str, ...] = ("rank",)) -> bool:
    return {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip
    }


@pytest.mark.parametrize(
    "spec", ["fsdp-tp: X=16, Y=4", "fsdp-tp: Y=4", "fsdp: X1=16 @ici(x, y), X2=4 @ici(z)"]
)
def test_layout_evaluates_one_candidate_as_the_search_does(searched, capsys, spec):
    """`--layout` gives the search's candidate for that layout, figure for figure, as the only
    candidate: by sizes (placed on the slice as the search places them) or with the links the
    search chose, written out."""
    strategy = spec.split(":")[0]
    want = next(
        c
        for c in searched["candidates"]
        if c["strategy"] == strategy
        and c["evaluated"]
        and (strategy != "fsdp-tp" or c["mesh"].get("Y") == 4)
    )
    assert main([*SMALL, "--layout", spec]) == 0
    one = json.loads(capsys.readouterr().out)
    # Written out, every data axis is a data axis: the search's split of them between the
    # batch and the sequence shows in `degrees` only.
    skip = ("rank", "degrees") if "@" in spec else ("rank",)
    assert len(one["candidates"]) == 1 and _same(one["candidates"][0], want, skip)
    assert one["best"]["t_step_s"] == want["t_step_s"]


def test_layout_with_other_links_gives_other_numbers(searched, capsys):
    """The same sizes placed otherwise (the data axis on one physical axis as a line) cost
    otherwise: the links written are the ones compiled."""
    want = next(c for c in searched["candidates"] if c["strategy"] == "fsdp")
    assert main([*SMALL, "--layout", "fsdp: X1=4 @ici(x), X2=16 @ici(y, z)"]) == 0
    one = json.loads(capsys.readouterr().out)["candidates"][0]
    assert one["strategy"] == "fsdp" and one["t_step_s"] != want["t_step_s"]


def test_the_search_finds_palms_layout():
    """PaLM 540B on 6144 TPU v4 (Chowdhery et al. 2022): two pods over DCN, 256-way FSDP and
    12-way tensor parallelism on the slice's axis of 12, found without --layout (12 is a
    physical axis's length, so the search tries it)."""
    p = P.plan("palm-540b", "tpu-v4p", 6144, 2048 * 2048, options=P.Options(remat="block"))
    best = p.best
    assert best is not None and best.label() == "fsdp-tp (P=2 X=256 Y=12)"
    assert "Y=12 @ici(z)" in best.layout.mesh_text()


def test_compiling_in_several_processes_gives_the_same_plan():
    """In fresh processes (this one may have imported JAX, where plan does not fork)."""
    import subprocess
    import sys

    args = [
        sys.executable,
        "-m",
        "shardc",
        "plan",
        "--card",
        "llama3-8b",
        "--hw",
        "h100",
        "--chips",
        "16",
        "--batch",
        "64Ki",
        "--format",
        "json",
    ]
    one, two = (
        subprocess.run([*args, "--jobs", j], capture_output=True, text=True, timeout=300)
        for j in ("1", "2")
    )
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout and '"pp-dp-tp"' in one.stdout


def test_no_fork_where_threads_run(monkeypatch):
    """A process with JAX imported (or any second thread) compiles one candidate after another:
    a fork would copy its threads' locks."""
    from shardc.tools.plan import evaluation

    monkeypatch.setitem(__import__("sys").modules, "jax", object())
    assert not evaluation._can_fork()


def test_a_written_replica_axis_is_the_split_evaluated(capsys):
    """On GPUs `--layout 'fsdp: P=14, X=80'` evaluates 14 replicas of 80 shards, as written: the
    search's own placement (the fewest replicas that let the weights split: P=7, X=160) once
    replaced the split silently, so a published row run as 160 shards x 14 replicas was
    costed as 320 x 7."""
    args = ["plan", "--card", "mt-nlg-530b", "--hw", "a100", "--chips", "1120"]
    args += ["--batch", str(1120 * 2048), "--format", "json"]
    assert main([*args, "--layout", "fsdp: P=14, X=80"]) == 0
    (one,) = json.loads(capsys.readouterr().out)["candidates"]
    assert one["mesh"] == {"P": 14, "X": 80}
    assert main([*args, "--layout", "fsdp: X=1120"]) == 0
    (placed,) = json.loads(capsys.readouterr().out)["candidates"]
    assert placed["mesh"] == {"P": 7, "X": 160}
