"""`shardc.tools.derive_regions`, the old name of `shardc.tools.derive_by_region`, still imports
and names the same functions (docs/language.md cites it)."""

from __future__ import annotations

import shardc.tools.derive_by_region as new
import shardc.tools.derive_regions as old


def test_the_old_name_reexports_the_same_functions() -> None:
    for n in new.__all__:
        assert getattr(old, n) is getattr(new, n), n
