"""The hardware package: every shipped chip loads with the book's figures; user chip files load;
bad chip files fail with the file and field in the message; dtype fallbacks; wraparound rules.
"""

from __future__ import annotations

import dataclasses
import doctest
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from shardc import hardware
from shardc.hardware import Chip, HardwareError, available, describe, load, summary_line
from shardc.hardware import chip as chip_module
from shardc.hardware import schema as schema_module
from shardc.hardware import text as text_module
from tests.paths import ROOT

SHIPPED = [
    "a100",
    "b200",
    "gb200-nvl72",
    "h100",
    "h200",
    "tpu-v4p",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
]
TPUS = [name for name in SHIPPED if name.startswith("tpu-")]
GPUS = [name for name in SHIPPED if not name.startswith("tpu-")]

REQUIRED_NUMBERS = [
    "hbm_bytes",
    "hbm_bw",
    "link_bw_uni",
    "link_bw_bidi",
    "links_per_axis",
    "axis_bw",
    "hop_latency_s",
    "ici_axes",
]
OPTIONAL_NUMBERS = [
    "dcn_bw_per_chip",
    "chips_per_host",
    "ib_bw_per_gpu",
    "ib_latency_s",
    "nvlink_domain",
    "pcie_bw",
]


def shipped_text(name: str) -> str:
    return files("shardc.hardware").joinpath(f"{name}.toml").read_text(encoding="utf-8")


# --- shipped chips ---------------------------------------------------------------------------


def test_available_lists_the_shipped_chips() -> None:
    assert available() == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_chip_loads_and_is_named_after_its_file(name: str) -> None:
    chip = load(name)
    assert chip.name == name
    assert Path(chip.path).name == f"{name}.toml"
    assert chip.vendor in ("google", "nvidia")
    assert chip.family == ("tpu" if name in TPUS else "gpu")
    assert chip.display_name and chip.wraparound_note and chip.sources


@pytest.mark.parametrize("name", SHIPPED)
def test_figures_are_positive(name: str) -> None:
    chip = load(name)
    for attr in REQUIRED_NUMBERS:
        assert getattr(chip, attr) > 0, attr
    for attr in OPTIONAL_NUMBERS:
        value = getattr(chip, attr)
        assert value is None or value > 0, attr
    assert "bf16" in chip.flops and all(rate > 0 for rate in chip.flops.values())


@pytest.mark.parametrize("name", SHIPPED)
def test_link_figures_are_consistent(name: str) -> None:
    chip = load(name)
    assert chip.link_bw_bidi == pytest.approx(2 * chip.link_bw_uni)
    # W_ici is what one chip pushes into one mesh axis: all its links on that axis, one way each.
    assert chip.axis_bw == pytest.approx(chip.links_per_axis * chip.link_bw_uni)


@pytest.mark.parametrize("name", TPUS)
def test_tpu_w_ici_is_the_bidirectional_link_figure(name: str) -> None:
    chip = load(name)
    assert chip.link_kind == "ici" and chip.links_per_axis == 2
    assert chip.axis_bw == chip.link_bw_bidi
    assert chip.wraparound in ("full-axis-16", "cube-multiple-4")
    assert chip.ici_axes in (2, 3) and chip.dcn_bw_per_chip is not None


@pytest.mark.parametrize("name", GPUS)
def test_gpu_is_a_switched_nvlink_domain(name: str) -> None:
    chip = load(name)
    assert (chip.link_kind, chip.wraparound, chip.ici_axes) == ("nvlink", "switched", 1)
    assert chip.nvlink_domain == (72 if name == "gb200-nvl72" else 8)
    # One 400 Gb/s ConnectX-7 per Hopper/Blackwell GPU, one 200 Gb/s HDR ConnectX-6 per A100.
    assert chip.ib_bw_per_gpu == (2.5e10 if name == "a100" else 5e10)
    assert chip.ib_latency_s == 1e-6
    assert chip.scaleout_bw == chip.ib_bw_per_gpu


BOOK_FIGURES = [
    ("tpu-v5e", {"bf16": 1.97e14, "int8": 3.94e14}, 16e9, 8.1e11, 4.5e10, 9e10),
    ("tpu-v4p", {"bf16": 2.75e14, "int8": 2.75e14}, 32e9, 1.2e12, 4.5e10, 9e10),
    ("tpu-v5p", {"bf16": 4.59e14, "int8": 9.18e14}, 96e9, 2.8e12, 9e10, 1.8e11),
    ("tpu-v6e", {"bf16": 9.2e14, "int8": 1.84e15}, 32e9, 1.6e12, 9e10, 1.8e11),
]


@pytest.mark.parametrize(("name", "flops", "hbm", "hbm_bw", "uni", "bidi"), BOOK_FIGURES)
def test_tpu_figures_are_the_scaling_books(
    name: str, flops: dict[str, float], hbm: float, hbm_bw: float, uni: float, bidi: float
) -> None:
    chip = load(name)
    assert {d: chip.flops[d] for d in flops} == flops
    assert (chip.hbm_bytes, chip.hbm_bw, chip.link_bw_uni, chip.link_bw_bidi) == (
        hbm,
        hbm_bw,
        uni,
        bidi,
    )
    assert chip.hop_latency_s == 1e-6


def test_the_books_critical_intensities() -> None:
    assert load("tpu-v5e").hbm_intensity() == pytest.approx(243, abs=0.5)  # the TPU chapter
    assert load("tpu-v5e").hbm_intensity("int8") == pytest.approx(486, abs=0.5)  # the book
    assert load("tpu-v5p").ici_intensity() == pytest.approx(
        2550
    )  # the training chapter and its revision, W_ici = 1.8e11
    assert load("tpu-v5p").ici_intensity("int8") == pytest.approx(5100)  # the book
    assert load("tpu-v6e").hbm_intensity() == pytest.approx(575)
    assert load("h100").hbm_intensity() == pytest.approx(295, abs=0.5)  # the book's 298 uses 1e15
    assert load("tpu-v5e").dcn_intensity() == pytest.approx(1.97e14 / 3.125e9)


def test_latency_bound_message_size() -> None:
    assert load("tpu-v5e").latency_bound_bytes == pytest.approx(45e3)  # the sharding chapter: 45kB


# --- names and aliases -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("tpu-v5e", "tpu-v5e"),
        ("TPU-V5E", "tpu-v5e"),
        ("tpu_v5e", "tpu-v5e"),
        ("TPU v5e", "tpu-v5e"),
        ("v5e", "tpu-v5e"),
        ("TPUv5e", "tpu-v5e"),
        ("v4", "tpu-v4p"),
        ("v5p", "tpu-v5p"),
        ("Trillium", "tpu-v6e"),
        ("H100", "h100"),
        ("h100_sxm", "h100"),
        ("H200", "h200"),
        ("B200", "b200"),
        ("GB200 NVL72", "gb200-nvl72"),
        ("nvl72", "gb200-nvl72"),
    ],
)
def test_names_are_case_insensitive_and_aliases_work(given: str, name: str) -> None:
    assert load(given).name == name


def test_unknown_chip_lists_the_known_ones() -> None:
    with pytest.raises(
        HardwareError, match=r"unknown chip 'tpu-v9'; known: a100, b200, gb200-nvl72"
    ):
        load("tpu-v9")


def test_unknown_chip_suggests_a_near_name() -> None:
    with pytest.raises(HardwareError, match=r"did you mean 'tpu-v6e'\?"):
        load("tpu-v6")


# --- user chip files -------------------------------------------------------------------------


def write_chip(directory: Path, stem: str, text: str) -> Path:
    path = directory / f"{stem}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def mine(text: str = "", stem: str = "mychip") -> str:
    """The v5e file renamed to `stem`, with `text` edits applied by the caller."""
    return (text or shipped_text("tpu-v5e")).replace('name = "tpu-v5e"', f'name = "{stem}"', 1)


def test_user_toml_loads_by_path(tmp_path: Path) -> None:
    path = write_chip(tmp_path, "mychip", mine())
    chip = load(str(path))
    assert chip.name == "mychip" and chip.path == str(path)
    v5e = load("tpu-v5e")
    assert dataclasses.replace(chip, name="tpu-v5e") == v5e  # `path` is not compared
    assert load(path) == chip  # a PathLike works too


def test_user_toml_relative_to_base(tmp_path: Path) -> None:
    write_chip(tmp_path, "mychip", mine())
    assert load("mychip.toml", base=tmp_path).name == "mychip"


def test_minimal_user_toml(tmp_path: Path) -> None:
    text = """
name = "tiny"
display_name = "Tiny"
vendor = "acme"
family = "tpu"
[flops]
bf16 = 1e12
[memory]
hbm_bytes = 1_000_000_000
hbm_bw = 1e11
[ici]
kind = "ici"
link_bw_uni = 1e9
link_bw_bidi = 2e9
links_per_axis = 2
axis_bw = 2e9
hop_latency_s = 1e-6
axes = 2
wraparound = "full-axis-16"
wraparound_note = "made up"
"""
    chip = load(write_chip(tmp_path, "tiny", text))
    assert chip.hbm_bytes == 1e9 and isinstance(chip.hbm_bytes, float)
    assert chip.dcn_bw_per_chip is None and chip.pod_shape is None and chip.sources == ()
    assert chip.flops_for("int4") == (1e12, "bf16")
    assert "C / W_dcn" not in describe(chip)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HardwareError, match="nope.toml: no such chip file"):
        load(tmp_path / "nope.toml")


V5E = shipped_text("tpu-v5e")


def edit(old: str, new: str) -> str:
    assert re.search(old, V5E, flags=re.M), old
    return re.sub(old, new, V5E, count=1, flags=re.M)


BAD_FILES = [
    (
        "missing field",
        edit(r"^hbm_bw = .*$", ""),
        "[memory].hbm_bw",
        "missing field [memory].hbm_bw",
    ),
    (
        "string for number",
        edit(r"^hbm_bw = .*$", 'hbm_bw = "fast"'),
        "[memory].hbm_bw",
        "field [memory].hbm_bw must be a number, got string 'fast'",
    ),
    (
        "float for int",
        edit(r"^links_per_axis = .*$", "links_per_axis = 2.0"),
        "[ici].links_per_axis",
        "must be an integer",
    ),
    (
        "bool for int",
        edit(r"^links_per_axis = .*$", "links_per_axis = true"),
        "[ici].links_per_axis",
        "must be an integer, got boolean True",
    ),
    ("negative", edit(r"^hbm_bw = .*$", "hbm_bw = -1.0"), "[memory].hbm_bw", "must be positive"),
    (
        "bad choice",
        edit(r"^wraparound = .*$", 'wraparound = "sometimes"'),
        "[ici].wraparound",
        "expected one of full-axis-16, cube-multiple-4, switched",
    ),
    (
        "misspelt key",
        edit(r"^hbm_bw = ", "hbm_bandwith = "),
        "[memory].hbm_bandwith",
        "unknown field [memory].hbm_bandwith (did you mean 'hbm_bw'?)",
    ),
    ("unknown table", V5E + "\n[hbm]\nx = 1\n", "[hbm]", "unknown table [hbm]"),
    (
        "unknown top-level key",
        edit(r"^vendor = ", "vendr = "),
        "vendr",
        "unknown field 'vendr' (did you mean 'vendor'?)",
    ),
    ("no bf16", edit(r"^bf16 = .*$", ""), "[flops].bf16", "missing field [flops].bf16"),
    (
        "unknown dtype",
        edit(r"^int8 = ", "fp16 = "),
        "[flops].fp16",
        "unknown dtype [flops].fp16 (did you mean 'f16'?)",
    ),
    (
        "bidi not 2 uni",
        edit(r"^link_bw_bidi = .*$", "link_bw_bidi = 1e11"),
        "[ici].link_bw_bidi",
        "must be twice [ici].link_bw_uni",
    ),
    (
        "tpu with nvlink",
        edit(r'^kind = "ici"', 'kind = "nvlink"'),
        "[ici].kind",
        "a tpu chip needs 'ici'",
    ),
    (
        "misspelt table",
        edit(r"^\[memory\]$", "[memory_]"),
        "[memory_]",
        "unknown table [memory_] (did you mean 'memory'?)",
    ),
    (
        "not a table",
        re.sub(
            r"^\[dcn\]\n(?:.*\n)*?(?=^\[pod\])",
            "",
            V5E.replace('family = "tpu"', 'family = "tpu"\ndcn = 3'),
            flags=re.M,
        ),
        "[dcn]",
        "[dcn] must be a table, got integer 3",
    ),
    (
        "aliases not strings",
        edit(r"^aliases = .*$", "aliases = [1]"),
        "aliases",
        "field aliases must be a list of strings",
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "field", "message"), BAD_FILES, ids=[case[0] for case in BAD_FILES]
)
def test_bad_chip_file_names_file_and_field(
    tmp_path: Path, case: str, text: str, field: str, message: str
) -> None:
    path = write_chip(tmp_path, "mychip", mine(text))
    with pytest.raises(HardwareError) as info:
        load(str(path))
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
    assert info.value.path == str(path) and info.value.field == field


def test_missing_required_table(tmp_path: Path) -> None:
    text = mine(V5E.split("[ici]")[0])  # everything from [ici] on is gone
    with pytest.raises(HardwareError, match=r"mychip.toml: missing table \[ici\]"):
        load(write_chip(tmp_path, "mychip", text))


def test_name_must_equal_file_stem(tmp_path: Path) -> None:
    path = write_chip(tmp_path, "other", mine())
    with pytest.raises(
        HardwareError,
        match=r"other.toml: field name is 'mychip' but the file is "
        r"other.toml",
    ) as info:
        load(path)
    assert info.value.field == "name"


def test_invalid_toml_syntax(tmp_path: Path) -> None:
    path = write_chip(tmp_path, "mychip", mine() + "\nthis is not toml\n")
    with pytest.raises(HardwareError, match=r"mychip.toml: not valid TOML: .*line"):
        load(path)


def test_gpu_needs_an_nvlink_domain(tmp_path: Path) -> None:
    text = shipped_text("h100").replace('name = "h100"', 'name = "mygpu"')
    text = re.sub(r"^domain_size = .*$", "", text, flags=re.M)
    with pytest.raises(HardwareError, match=r"missing field \[ib\].domain_size") as info:
        load(write_chip(tmp_path, "mygpu", text))
    assert info.value.field == "[ib].domain_size"


# --- Chip behaviour --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "dtype", "expected"),
    [
        ("tpu-v5e", "bf16", (1.97e14, "bf16")),
        ("tpu-v5e", "int8", (3.94e14, "int8")),
        ("tpu-v5e", "int4", (3.94e14, "int8")),
        ("tpu-v5e", "fp8", (1.97e14, "bf16")),
        ("tpu-v5e", "f16", (1.97e14, "bf16")),
        ("tpu-v5e", "f32", (6.144e12, "f32")),
        ("tpu-v5p", "fp8", (4.59e14, "fp8")),
        ("h200", "int8", (1.979e15, "int8")),
        ("h200", "int4", (1.979e15, "int8")),
        ("h100", "int4", (1.979e15, "int8")),
    ],
)
def test_flops_for_fallbacks(name: str, dtype: str, expected: tuple[float, str]) -> None:
    assert load(name).flops_for(dtype) == expected


def test_flops_for_unknown_dtype() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'f64'"):
        load("tpu-v5e").flops_for("f64")


def test_fallbacks_cover_every_dtype_and_end_at_bf16() -> None:
    assert set(hardware.FALLBACKS) == set(hardware.RATES)
    assert all(chain[-1] == "bf16" for d, chain in hardware.FALLBACKS.items() if d != "bf16")


def test_chip_is_frozen_hashable_and_equal_across_loads() -> None:
    a, b = load("v5e"), load("tpu-v5e")
    assert a == b and hash(a) == hash(b) and len({a, b, load("h100")}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.hbm_bw = 1.0  # type: ignore[misc]


def test_chip_accepts_a_plain_dict_of_rates() -> None:
    chip = dataclasses.replace(load("tpu-v5e"), flops={"int8": 4e14, "bf16": 2e14})
    assert isinstance(chip.flops, hardware.FlopsTable) and list(chip.flops) == ["bf16", "int8"]
    assert chip.flops == {"bf16": 2e14, "int8": 4e14}
    hash(chip)


@pytest.mark.parametrize(
    ("name", "shape", "expected"),
    [
        ("tpu-v5e", (8, 16), (False, True)),  # the TPU chapter: an 8x16 wraps on the long axis
        ("tpu-v5e", (16, 16), (True, True)),
        ("tpu-v5e", (4, 4), (False, False)),  # the TPU chapter's Question 5
        ("tpu-v6e", (16, 8), (True, False)),
        ("tpu-v4p", (4, 4, 4), (True, True, True)),  # the sharding chapter: a full 4x4x4 cube
        ("tpu-v5p", (4, 4, 8), (True, True, True)),  # the TPU chapter: any multiple of a full cube
        ("tpu-v5p", (2, 2, 4), (False, False, False)),  # the TPU chapter footnote 6
        ("h100", (8,), (True,)),
        ("gb200-nvl72", (8, 9), (True, True)),
    ],
)
def test_wraparound_rules(name: str, shape: tuple[int, ...], expected: tuple[bool, ...]) -> None:
    assert load(name).wraps(shape) == expected


def test_wraps_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="positive integers"):
        load("tpu-v5e").wraps((0, 16))


@pytest.mark.parametrize(
    ("name", "shape", "expected", "why"),
    [
        # A slice with fewer axes than the torus is one plane of it: no whole 4x4x4 cube.
        ("tpu-v5p", (4, 4), (False, False), "tpu-v5p: wraps when the slice 4x4x1 is a multiple"),
        ("tpu-v5p", (16,), (False,), "tpu-v5p: wraps when the slice 16x1x1 is a multiple"),
        ("tpu-v5e", (16,), (True,), "tpu-v5e: wraps only on an axis of 16"),
        ("h100", (8, 2), (True, True), "h100: switched"),
    ],
)
def test_wraps_on_part_of_the_torus(
    name: str, shape: tuple[int, ...], expected: tuple[bool, ...], why: str
) -> None:
    chip = load(name)
    assert chip.wraps(shape) == expected and chip.wraps_why(shape).startswith(why)


def test_level_figures_come_from_the_chip_file() -> None:
    from shardc.hardware.levels import LEVELS, PER_HOP

    for name in available():
        chip = load(name)
        assert chip.bandwidth(chip.link_kind) == chip.axis_bw
        assert {lv for lv in LEVELS if chip.has_level(lv)} >= {chip.link_kind}
        assert all(chip.latency(lv) == chip.hop_latency_s for lv in PER_HOP)
        assert chip.bandwidth("ib") == chip.ib_bw_per_gpu
        assert chip.latency("dcn") == chip.dcn_latency_s


def test_levels_have_one_home() -> None:
    """The level vocabulary is defined in hardware/levels.py and imported everywhere else."""
    root = ROOT
    spelled = re.compile(r"""\(\s*["']ici["'],\s*["']nvlink["']""")
    copies = [
        str(p.relative_to(root))
        for d in ("hardware", "passes", "dsl")
        for p in (root / d).rglob("*.py")
        if p.name != "levels.py" and spelled.search(p.read_text(encoding="utf-8"))
    ]
    assert copies == []


# --- text for `shardc hw` --------------------------------------------------------------------


def test_describe_v5e_shows_the_books_numbers() -> None:
    text = describe(load("tpu-v5e"))
    for fragment in [
        "TPU v5e",
        "bf16        1.97e14 FLOP/s",
        "int8        3.94e14 OP/s",
        "16 GB",
        "8.1e11 B/s",
        "4.5e10 B/s one way, 9e10 B/s both ways",
        "2 links per mesh axis",
        "W_ici       9e10 B/s",
        "W_uni * t_hop = 4.5e10 * 1e-6 = 45 kB",
        "full-axis-16",
        "3.125e9 B/s per chip",
        "C / W_hbm   1.97e14 / 8.1e11 = 243",
        "C / W_ici   1.97e14 / 9e10 = 2189",
        "C / W_dcn   1.97e14 / 3.125e9 = 63040",
        "int4 at the int8 rate",
    ]:
        assert fragment in text, fragment


def test_describe_gpu_shows_infiniband() -> None:
    text = describe(load("h100"))
    assert "NVLink domain of 8" in text and "InfiniBand  5e10 B/s per GPU one way" in text
    assert "C / W_ib    9.89e14 / 5e10 = 19780" in text


@pytest.mark.parametrize("name", SHIPPED)
def test_summary_line_is_one_line(name: str) -> None:
    line = summary_line(load(name))
    fast = "W_ici" if load(name).link_kind == "ici" else "W_nvlink"  # the symbol --set binds
    assert "\n" not in line and line.startswith(name) and f" {fast} " in line


# --- packaging and house rules ---------------------------------------------------------------


def test_import_is_stdlib_only() -> None:
    code = (
        "import sys, hardware; hardware.describe(hardware.load('v5e')); "
        "print(sorted(m for m in ('sympy', 'numpy', 'lark', 'networkx', 'dsl') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", SHIPPED)
def test_every_number_in_a_shipped_file_says_where_it_comes_from(name: str) -> None:
    lines = shipped_text(name).splitlines()
    number = re.compile(r"^\w+\s*=\s*[-+]?[0-9][0-9_.eE+-]*\s*(#.*)?$")
    for i, line in enumerate(lines):
        match = number.match(line)
        if match and not match.group(1):
            assert i > 0 and lines[i - 1].startswith("#"), f"{name}.toml:{i + 1}: {line}"


@pytest.mark.parametrize("module", [chip_module, text_module, schema_module])
def test_doctests(module: object) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE  # as tests/project/test_doctests.py
    result = doctest.testmod(module, optionflags=flags)  # type: ignore[arg-type]
    assert result.failed == 0 and result.attempted > 0


def test_chip_type_is_exported() -> None:
    assert Chip is chip_module.Chip and hardware.describe is text_module.describe


def test_the_old_report_path_names_the_same_functions():
    """`shardc.hardware.report` moved to `shardc.hardware.text`; the old path re-exports it."""
    from shardc.hardware import report, text

    assert report.describe is text.describe and report.summary_line is text.summary_line
    assert report.describe(load("h100")) == text.describe(load("h100"))
