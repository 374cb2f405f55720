"""`shardc limits`: streams, exit codes, the JSON schema, presets, the plot."""

from __future__ import annotations

import json
import sys

import pytest

from shardc.cli.app import main


def run(capsys, *args):
    code = main(["limits", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_unknown_preset_is_a_usage_error(capsys):
    code, out, err = run(capsys, "--preset", "h100", "--preset", "tpu")
    assert code == 2 and out == ""
    assert err.startswith("shardc: error: unknown preset 'tpu'; known: v100, a100, h100,")


def test_json_schema(capsys):
    code, out, err = run(capsys, "--preset", "h100", "v100", "--format", "json")
    assert code == 0 and err == ""  # not a terminal: no progress
    doc = json.loads(out)
    assert [r["preset"] for r in doc["closed_form"]] == ["h100", "v100"]
    assert set(doc["closed_form"][0]) == {
        "preset",
        "d_prime",
        "b_prime",
        "t_crit_flop",
        "t_latency_flop",
        "t_wall_flop",
    }
    assert set(doc["simulated"][0]) == {
        "preset",
        "scenario",
        "dense_threshold_flop",
        "sparse_threshold_flop",
    }
    h100 = doc["closed_form"][0]
    assert h100["d_prime"] == pytest.approx(26.4e3, rel=0.01)
    assert h100["t_wall_flop"] == pytest.approx(9 * h100["t_latency_flop"], rel=1e-3)
    assert doc["paper"]["simulated"][1] == {
        "preset": "v100",
        "scenario": "baseline",
        "dense_threshold_flop": 3e27,
        "sparse_threshold_flop": 2e27,
    }
    sim = doc["simulated"][0]
    assert 2e28 / 3 <= sim["dense_threshold_flop"] <= 2e28 * 3


def test_infinite_values_are_null_in_json():
    from shardc.tools.epoch import results as report
    from shardc.tools.epoch.presets import get

    doc = json.loads(report.to_json(report.compute([get("h100-inf-ll")], [])))
    assert doc["closed_form"][0]["t_crit_flop"] is None  # no bandwidth cliff
    assert doc["closed_form"][0]["t_wall_flop"] == pytest.approx(2.3e33, rel=0.01)
    assert doc["simulated"] == []


def test_text_tables_and_progress(capsys):
    code, out, err = run(capsys, "--preset", "a100", "--progress")
    assert code == 0
    assert "closed form (Table 2 analogue" in out and "simulated (Tables 3 and 4" in out
    assert "16.6k / 16.7k" in out and "401 / 401" in out
    assert "a100 dense" in err and "a100 sparse" in err


def test_plot_without_matplotlib(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises ImportError
    code, out, err = run(capsys, "--preset", "h100", "--plot", str(tmp_path / "u.png"))
    assert code == 2 and out == ""
    assert "pip install 'shardc[plot]'" in err
    assert not (tmp_path / "u.png").exists()


def test_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "u.png"
    code, out, err = run(capsys, "--preset", "h100", "h100-gnvl", "--plot", str(target))
    assert code == 0 and "simulated" in out
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {target}" in err


def test_every_plot_panel_names_presets_that_exist():
    """A renamed preset would drop out of its panel without a word."""
    pytest.importorskip("matplotlib")
    from shardc.tools.epoch.plot import PANELS
    from shardc.tools.epoch.presets import PRESETS

    assert PANELS and all(names for _, names in PANELS)
    missing = [n for _, names in PANELS for n in names if n not in PRESETS]
    assert not missing, missing
