"""Moved to `shardc.passes.lower` (walk.py); this re-export stays until nothing imports it."""
from shardc.passes.lower.walk import InsertCollectives, insert_collectives  # noqa: F401
