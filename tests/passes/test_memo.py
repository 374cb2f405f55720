"""One cache layer: every process-wide memo is a named, bounded table of `passes.memo`, listed in
docs/benchmarks.md; `clear()` empties them all and `stats()` counts them.

The rule, as checked here: no module of `passes`, the driver, the tools, `shardc.testing` or the
CLI other than passes/memo.py uses `functools.lru_cache` or `functools.cache`, or binds a name
at module level (or in a module-level class body) to an empty dict, set or `OrderedDict` /
`defaultdict` / weak dictionary, the shape every module-level cache had. The language layer and
hardware/ sit below `passes` and cannot import it: their `lru_cache`s (the parsers built once,
the source's line split) must give a `maxsize`.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import shardc
from shardc.passes import memo
from tests.project.test_layers import MODULES, ROOT, layer_of

CACHE_DECORATORS = {"lru_cache", "cache"}
EMPTY_CONTAINERS = {
    "dict",
    "set",
    "OrderedDict",
    "defaultdict",
    "WeakKeyDictionary",
    "WeakValueDictionary",
}
MEMO = ROOT / "passes" / "memo.py"


def _decorator_name(d: ast.expr) -> str | None:
    if isinstance(d, ast.Call):
        d = d.func
    if isinstance(d, ast.Name):
        return d.id
    if isinstance(d, ast.Attribute) and isinstance(d.value, ast.Name) and d.value.id == "functools":
        return d.attr
    return None


def _empty_container(v: ast.expr | None) -> bool:
    if isinstance(v, ast.Dict) and not v.keys:
        return True
    if isinstance(v, ast.Call) and not v.keywords:
        f = v.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in EMPTY_CONTAINERS and (name == "defaultdict" or not v.args)
    return False


def caches_in(path: Path) -> list[str]:
    """Where `path` keeps a cache of its own: `lru_cache`/`cache` decorators and imports, and
    module-level names bound to an empty container."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if _decorator_name(d) in CACHE_DECORATORS:
                    found.append(f"line {d.lineno}: @{_decorator_name(d)} on {node.name}")
        elif isinstance(node, ast.ImportFrom) and node.module == "functools":
            found.extend(
                f"line {node.lineno}: imports functools.{a.name}"
                for a in node.names
                if a.name in CACHE_DECORATORS
            )
    bodies = [tree.body, *(c.body for c in tree.body if isinstance(c, ast.ClassDef))]
    for body in bodies:
        for node in body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and _empty_container(node.value):
                found.append(f"line {node.lineno}: a module-level empty container")
    return sorted(found, key=lambda f: int(f.split(":")[0].removeprefix("line ")))


def test_caches_in_finds_each_shape(tmp_path: Path) -> None:
    p = tmp_path / "m.py"
    p.write_text(
        "import functools\nfrom functools import lru_cache\n_A = {}\n_B: dict = dict()\n"
        "_C = set()\nTABLE = {'a': 1}\n@functools.cache\ndef f(): ...\n"
        "@lru_cache(maxsize=4)\ndef g(): ...\nclass K:\n    seen = {}\n"
        "def h():\n    local = {}\n",
        encoding="utf-8",
    )
    assert caches_in(p) == [
        "line 2: imports functools.lru_cache",
        "line 3: a module-level empty container",
        "line 4: a module-level empty container",
        "line 5: a module-level empty container",
        "line 7: @cache on f",
        "line 9: @lru_cache on g",
        "line 12: a module-level empty container",
    ]


def test_no_cache_outside_memo() -> None:
    found = []
    for name, path in MODULES:
        if layer_of(name) < 2 or path == MEMO:
            continue
        found.extend(f"{path.relative_to(ROOT)}: {c}" for c in caches_in(path))
    assert not found, (
        "a process-wide memo is a table of passes/memo.py (named, bounded, "
        "listed in docs/benchmarks.md):\n" + "\n".join(found)
    )


def test_caches_below_passes_are_bounded() -> None:
    unbounded = []
    for name, path in MODULES:
        if layer_of(name) >= 2:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in node.decorator_list:
                    if _decorator_name(d) in CACHE_DECORATORS and not (
                        isinstance(d, ast.Call)
                        and any(
                            k.arg == "maxsize"
                            and isinstance(k.value, ast.Constant)
                            and isinstance(k.value.value, int)
                            for k in d.keywords
                        )
                    ):
                        unbounded.append(f"{path.relative_to(ROOT)}:{d.lineno}: {node.name}")
    assert not unbounded, "give each a maxsize:\n" + "\n".join(unbounded)


def test_every_table_is_documented() -> None:
    docs = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    missing = [name for name in memo.TABLES if f"`{name}`" not in docs]
    assert not missing, f"list these in docs/benchmarks.md, 'What is cached': {missing}"
    assert all(t.maxsize > 0 and t.holds for t in memo.TABLES.values())


def test_clear_empties_every_table_and_stats_count() -> None:
    memo.clear()
    assert all(s.size == s.hits == s.misses == 0 for s in memo.stats())
    shardc.compile(ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard").to_text()
    first = {s.name: s for s in memo.stats()}
    assert first["cost_model.collective_time"].misses > 0
    assert all(s.size <= s.maxsize for s in first.values())
    shardc.compile(ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard").to_text()
    again = {s.name: s for s in memo.stats()}
    assert again["formulas.text"].hits > first["formulas.text"].hits
    assert memo.sizes() == {s.name: s.size for s in again.values()}
    memo.clear()
    assert not any(memo.sizes().values())


@given(st.integers(1, 25), st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=80))
def test_a_table_keeps_the_most_recently_used(maxsize: int, ops: list[tuple[bool, int]]) -> None:
    """Against a plain model of an LRU: a read or a write makes a key the most recent; past
    `maxsize` the least recent tenth (at least one) goes."""
    t: memo.Table[int, int] = memo.Table("test", maxsize, "a test's")
    model: OrderedDict[int, int] = OrderedDict()
    hits = misses = 0
    for write, k in ops:
        if write:
            t[k] = k
            model[k] = k
            model.move_to_end(k)
            if len(model) > maxsize:
                for _ in range(max(1, maxsize // 10)):
                    model.popitem(last=False)
        else:
            got = t.get(k)
            if k in model:
                hits += 1
                model.move_to_end(k)
                assert got == k
            else:
                misses += 1
                assert got is None
        assert set(t.data) == set(model)
        assert len(t) <= maxsize
    assert (t.hits, t.misses) == (hits, misses)


# ---- identity keys ------------------------------------------------------------------------------
def _plan_caches(text: str, hw: str):
    """The `PlanCaches` of one compile (lent to the lowering through a chooser's `shared`)."""
    from shardc.lang.source import Source
    from shardc.passes.context import Context, Options
    from shardc.passes.objective import Forced
    from shardc.passes.pipeline import PIPELINE, InsertCollectives, run_passes

    shared: dict = {}
    passes = tuple(
        InsertCollectives(Forced(shared=shared)) if isinstance(p, InsertCollectives) else p
        for p in PIPELINE
    )
    unit = run_passes(Context(Source("t", text), options=Options(hw=hw)), passes)
    assert unit.cost is not None
    return shared["caches"]


SYMBOLIC = (
    "mesh X=16\ndim B, D=8192, F=32768\nIn: bf16[B_X, D]\nparam W_in: bf16[D_X, F]\n"
    "param W_out: bf16[F, D_X]\nTmp[B_X, F] = In ·_D W_in\nOut[B_X, D] = Tmp ·_F W_out\nbackward\n"
)


def test_identity_keyed_plan_memos_hold_their_plan():
    """`PlanCaches.ranks` and `.measured` are keyed by `id(plan)` on purpose (value keys cost
    the planner about 7%, docs/benchmarks.md "What is cached"). That is safe only because each
    entry holds the plan itself: while the entry lives the plan cannot be freed, so its id
    cannot be reused by another object; and the lookup checks `entry[0] is plan`. A ranking's
    decision record is keyed by its plans' ids, which the shape's search holds."""
    train = (ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard").read_text()
    for text, hw in ((train, "tpu-v5p"), (SYMBOLIC, "tpu-v5p")):
        caches = _plan_caches(text, hw)
        entries = 0
        for table in (caches.ranks, caches.measured):
            for by_plan in table.values():
                for key, (plan, _) in by_plan.items():
                    assert key == id(plan)
                    entries += 1
        assert entries
        held = {id(p) for s in caches.searches.values() for p in (*s.ranked, *s.plans)}
        for shape, ids, _, _ in caches.rankings:
            assert set(ids) <= held, shape
