"""`shardc.passes.regions`, the old name of `shardc.passes.symbolic_plans`, still imports and
names the same objects (docs/language.md cites it)."""

from __future__ import annotations

import shardc.passes.regions as old
import shardc.passes.symbolic_plans as new


def test_the_old_name_reexports_the_same_objects() -> None:
    names = [n for n in dir(old) if not n.startswith("_") and n not in ("annotations",)]
    assert {"AtPoint", "Candidate", "RegionFinder", "winners", "symbolic_time"} <= set(names)
    for n in names:
        if hasattr(new, n) and not isinstance(getattr(old, n), type(old)):
            assert getattr(old, n) is getattr(new, n), n
