"""Moved to `shardc.tools.epoch.results` (`report` is the driver's Report); this re-export
stays until nothing imports the old path."""

from shardc.tools.epoch.results import (
    SCHEMA,
    Limits,
    SimulatedRow,
    compute,
    to_dict,
    to_json,
    to_text,
)

__all__ = ["SCHEMA", "Limits", "SimulatedRow", "compute", "to_dict", "to_json", "to_text"]
