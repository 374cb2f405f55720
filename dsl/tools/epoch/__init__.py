"""The data-movement limits model of the Epoch AI paper ("Data Movement Limits to Frontier Model
Training", Erdil and Schneider-Joseph 2024) for `shardc limits`.

`presets` holds the hardware, `closed_form` the SymPy equations of sections 4-5 and Appendix 8.3,
and `scaling`, `gemm`, `network`, `step`, `search`, `curves` the numpy simulator of Appendix
8.1; `results` and `plot` print the tables and Figures 6 and 8. Submodules are imported on use,
so that importing the package stays cheap (SymPy and matplotlib load only when asked for).
"""

from __future__ import annotations

__all__ = [
    "closed_form",
    "curves",
    "gemm",
    "network",
    "plot",
    "presets",
    "results",
    "scaling",
    "search",
    "step",
]
