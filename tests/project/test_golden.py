"""Golden reports for every program in programs/: text and JSON, byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shardc.cli.app import main
from tests.paths import ROOT

PROGRAMS = sorted((ROOT / "programs").glob("*.shard"))
GOLDEN = ROOT / "tests" / "golden"


def _run(capsys, args: list[str]) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_golden_report(path: Path, fmt: str, capsys, in_repo_root) -> None:
    rel = path.relative_to(ROOT).as_posix()
    out = _run(capsys, ["compile", rel, "--format", fmt])
    ext = {"text": "txt", "json": "json", "md": "md"}[fmt]
    golden = GOLDEN / f"{path.stem}.{ext}"
    if os.environ.get("SHARDC_UPDATE_GOLDENS"):
        golden.write_text(out, encoding="utf-8")
    assert golden.exists(), f"missing golden {golden}; run pytest --update-goldens"
    assert out == golden.read_text(encoding="utf-8")
    assert str(ROOT) not in out


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_json_schema(path: Path, capsys, in_repo_root) -> None:
    """The pinned `shardc.report/1` shape other tools read."""
    rel = path.relative_to(ROOT).as_posix()
    d = json.loads(_run(capsys, ["compile", rel, "--format", "json"]))
    assert d["schema"] == "shardc.report/1"
    assert d["model"] in ("exact", "book")
    assert set(d) >= {
        "program",
        "hardware",
        "model",
        "mesh",
        "arrays",
        "ops",
        "totals",
        "conditions",
    }

    def is_q(q) -> bool:
        return set(q) == {"expr", "latex", "value"} and (
            q["value"] is None or isinstance(q["value"], float)
        )

    for a in d["arrays"]:
        assert set(a) >= {"name", "dtype", "layout", "bytes_per_device", "bytes_total"}
        assert is_q(a["bytes_per_device"]) and is_q(a["bytes_total"])
    for op in d["ops"]:
        assert op["kind"] in ("einsum", "collective", "elementwise")
        assert set(op) >= {
            "id",
            "line",
            "kind",
            "op",
            "axes",
            "array",
            "from",
            "to",
            "reason",
            "flops",
            "flops_per_device",
            "hbm_bytes",
            "bytes",
            "time_s",
            "t_math_s",
            "t_hbm_s",
        }
        for k in (
            "flops",
            "flops_per_device",
            "hbm_bytes",
            "bytes",
            "time_s",
            "t_math_s",
            "t_hbm_s",
        ):
            assert is_q(op[k])
        if op["kind"] == "collective":
            assert op["op"] in ("AllGather", "ReduceScatter", "AllReduce", "AllToAll") or (
                op["op"].startswith("Send_{")
            )  # a Send prints its entries: Send_{X: 0->3}
            assert op["reason"]
    for k in (
        "flops",
        "flops_per_device",
        "hbm_bytes",
        "comm_bytes",
        "t_math_s",
        "t_hbm_s",
        "t_comms_s",
        "t_lower_s",
        "t_upper_s",
    ):
        assert is_q(d["totals"][k])
    assert d["totals"]["bound"] in ("compute", "hbm", "comms", None)
    for c in d["conditions"]:
        assert set(c) >= {"text", "expr", "latex", "holds"}
