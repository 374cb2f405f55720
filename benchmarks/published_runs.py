"""Published training runs against `shardc plan --layout`: each run of
benchmarks/published_runs.toml evaluated in its published configuration on the default topology
and the chip's shipped calibration, with the measured MFU and step and shardc's roofline and
calibrated ones (docs/validation.md, "Published training runs").

    python -m benchmarks.published_runs            # the Markdown table of docs/validation.md
    python -m benchmarks.published_runs --json     # the rows as JSON

The ratio predicted / measured MFU is also the ratio of throughputs (the same chips and tokens);
the measured step is the roofline step x its MFU / the measured MFU (the same model FLOPs).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

RUNS = Path(__file__).with_name("published_runs.toml")


@dataclass(frozen=True)
class Row:
    set: str
    label: str
    source: str
    command: str
    measured_mfu: float
    predicted_mfu: float | None
    t_step_s: float | None
    fits: bool | None
    reason: str | None
    expected_mfu: float | None = None
    t_step_expected_s: float | None = None

    @property
    def ratio(self) -> float | None:
        """The roofline's MFU over the measured (at least 1: the roofline is a bound)."""
        return None if self.predicted_mfu is None else self.predicted_mfu / self.measured_mfu

    @property
    def measured_step_s(self) -> float | None:
        """The measured step: the roofline step x its MFU / the measured MFU."""
        if self.t_step_s is None or self.predicted_mfu is None:
            return None
        return self.t_step_s * self.predicted_mfu / self.measured_mfu

    @property
    def expected_ratio(self) -> float | None:
        """The calibrated step over the measured step (1 is exact)."""
        m = self.measured_step_s
        return None if m is None or self.t_step_expected_s is None else self.t_step_expected_s / m


def runs() -> list[dict]:
    return tomllib.loads(RUNS.read_text())["run"]


def evaluate(run: dict) -> Row:
    """One run through the Python API, exactly as the `command` it reports would run it."""
    from shardc import hardware
    from shardc.cli.plan import _layout_flag
    from shardc.tools import models
    from shardc.tools.plan import Options, plan

    card = models.load(run["card"])
    chip = hardware.load(run["hw"])
    options = Options(
        remat=run.get("remat", "none"),
        attention=run.get("attention", "materialized"),
        zero=run.get("zero", 0),
        schedule=run.get("schedule", "1f1b"),
        virtual_stages=run.get("virtual_stages", 2),
        sequence_parallel=run.get("sequence_parallel", True),
        dropout=run.get("dropout", 0.0),
    )
    only = _layout_flag(run["layout"], chip, run["chips"])
    seq = run.get("seq", card.seq_len)
    p = plan(card, chip, run["chips"], run["sequences"] * seq, seq, options=options, only=only)
    (c,) = p.candidates
    peak = chip.flops_for("bf16")[0]
    if "mfu" in run:
        measured = run["mfu"]
    else:
        scale = 0.75 if run.get("recompute") else 1.0
        measured = run["tflops_per_gpu"] * 1e12 * scale / peak
    flags = [
        f"--{k} {run[k]}" for k in ("seq", "remat", "attention", "zero", "dropout") if k in run
    ]
    if "schedule" in run:
        flags.append(f"--pipeline-schedule {run['schedule']}")
    if "virtual_stages" in run:
        flags.append(f"--virtual-stages {run['virtual_stages']}")
    if not run.get("sequence_parallel", True):
        flags.append("--no-sequence-parallel")
    command = (
        f"shardc plan --card {run['card']} --hw {run['hw']} --chips {run['chips']} "
        f"--batch {run['sequences'] * seq} --layout '{run['layout']}' " + " ".join(flags)
    ).strip()
    f = c.figures
    return Row(
        run["set"],
        run["label"],
        run["source"],
        command,
        measured,
        f.get("mfu") if c.evaluated else None,
        f.get("t_step_s"),
        f.get("fits") if c.evaluated else None,
        c.reason,
        f.get("mfu_expected") if c.evaluated else None,
        f.get("t_step_expected_s"),
    )


def table(rows: list[Row]) -> str:
    out = [
        "| set | run | measured MFU | roofline MFU | calibrated MFU | measured step | "
        "roofline step | calibrated step | calibrated / measured | fits | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    def sec(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f} s"

    for r in rows:
        er = r.expected_ratio
        ratio = (
            "-" if er is None else f"{er:.2f}" + (" (within 15%)" if abs(er - 1) <= 0.15 else "")
        )
        fits = {True: "yes", False: "no", None: "-"}[r.fits]
        out.append(
            f"| {r.set} | {r.label} | {r.measured_mfu:.1%} | {pct(r.predicted_mfu)} | "
            f"{pct(r.expected_mfu)} | {sec(r.measured_step_s)} | {sec(r.t_step_s)} | "
            f"{sec(r.t_step_expected_s)} | {ratio} | {fits} | `{r.command}` |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = [evaluate(r) for r in runs()]
    if args.json:
        json.dump(
            [
                {
                    **r.__dict__,
                    "ratio": r.ratio,
                    "measured_step_s": r.measured_step_s,
                    "expected_ratio": r.expected_ratio,
                }
                for r in rows
            ],
            sys.stdout,
            indent=2,
        )
        print()
    else:
        sys.stdout.write(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
