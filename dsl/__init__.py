"""shardc: a symbolic cost-model compiler for sharded tensor programs.

`shardc.compile(program, options=None, **overrides)` returns a cost report (`shardc.Options`
declares every option), `shardc.parse(program)` the validated program; both raise
`shardc.CompileError` with positioned diagnostics. The layers below are
`shardc.hardware`, `shardc.lang`, `shardc.passes`, `shardc.driver`, `shardc.tools` and
`shardc.cli` (imports go one way only; tests/project/test_layers.py).

>>> import shardc
>>> r = shardc.compile("mesh X=2\\ndim B=8, D=4, F=6\\nA: bf16[B, D_X]\\n"
...                    "W: bf16[D_X, F]\\nC[B, F] = A ·_D W\\n", hw="tpu-v5e")
>>> [c.op for c in r.ops]
['AllGather', 'AllGather', 'einsum']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["CompileError", "Options", "compile", "parse"]

if TYPE_CHECKING:
    from shardc.driver.api import compile, parse
    from shardc.lang.diagnostics import CompileError
    from shardc.passes.context import Options


def __getattr__(name: str) -> Any:
    """The public API, imported on first use so that `import shardc.hardware` (or the CLI's
    start-up) does not load the compiler."""
    if name in ("compile", "parse"):
        from shardc.driver import api

        return getattr(api, name)
    if name == "CompileError":
        from shardc.lang.diagnostics import CompileError

        return CompileError
    if name == "Options":  # every compile option, declared once
        from shardc.passes.context import Options

        return Options
    raise AttributeError(f"module 'shardc' has no attribute {name!r}")
