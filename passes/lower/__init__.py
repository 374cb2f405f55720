"""The `insert-collectives` pass, by part: walk (statements), contract, elementwise, explicit
collectives, explain (the prose of op reasons), state (what the parts share)."""

from shardc.passes.lower.walk import insert_collectives

__all__ = ["insert_collectives"]
