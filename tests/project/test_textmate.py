"""The TextMate grammar (grammar/shard.tmLanguage.json) gives every token of every program in
programs/ (and the book's worked examples in tests/book/) a scope: a scan that applies its patterns
in order at each position, as a TextMate engine does within one line, leaves no character but
whitespace unmatched."""

from __future__ import annotations

import json
import re

import pytest

from tests.paths import ROOT

GRAMMAR = json.loads((ROOT / "grammar" / "shard.tmLanguage.json").read_text(encoding="utf-8"))
PATTERNS = [
    (
        GRAMMAR["repository"][p["include"][1:]]["name"],
        re.compile(GRAMMAR["repository"][p["include"][1:]]["match"], re.M),
    )
    for p in GRAMMAR["patterns"]
]


def scopes(line: str) -> list[tuple[str, str]]:
    """(text, scope) for each token of `line`; ("x", "unknown") where no pattern matches."""
    out, i = [], 0
    while i < len(line):
        if line[i].isspace():
            i += 1
            continue
        best = None
        for name, rx in PATTERNS:
            m = rx.match(line, i)
            if m and m.end() > i:
                best = (m.group(0), name)
                break
        if best is None:
            out.append((line[i], "unknown"))
            i += 1
        else:
            out.append(best)
            i += len(best[0])
    return out


PROGRAMS = sorted((ROOT / "programs").glob("*.shard")) + sorted(
    (ROOT / "tests" / "book").rglob("*.shard")
)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_token_has_a_scope(path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        unknown = [t for t, s in scopes(line) if s == "unknown"]
        assert not unknown, f"{path.name}:{n}: no scope for {unknown} in {line!r}"


def test_the_scopes_are_the_languages():
    got = dict((t, s) for t, s in scopes("Kc[B_X, S] = In[B_X, T->S] ·_D W   # keys"))
    assert got["Kc"] == "variable.other.shard" and got["B_X"] == "variable.other.sharded.shard"
    assert got["->"] == "keyword.operator.rename.shard"
    assert got["·_D"] == "keyword.operator.contraction.shard"
    assert got["# keys"] == "comment.line.number-sign.shard"
    got = dict(scopes("P = softmax_{S}(AllGather_X(Sc)){U_Y}"))
    assert got["softmax_{S}"] == "support.function.reduction.shard"
    assert got["AllGather_X"] == "support.function.collective.shard"
    assert got["{U_Y}"] == "storage.modifier.unreduced.shard"
    assert dict(scopes("hardware tpu-v5p"))["tpu-v5p"] == "constant.other.chip.shard"
    assert dict(scopes("dim B=4Ki, T"))["4Ki"] == "constant.numeric.shard"
