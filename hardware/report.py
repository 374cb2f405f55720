"""Moved to `shardc.hardware.text` (`report` is the driver's Report); this re-export stays
until nothing imports the old path."""

from shardc.hardware.text import describe, summary_line

__all__ = ["describe", "summary_line"]
