"""The `insert-collectives` pass, by part: walk (statements and the recursion over expressions),
contract, elementwise, explicit collectives, resharding, chain (planning a chain of products),
explain (the prose of op reasons), state (the one state object the parts are passed)."""

from shardc.passes.lower.walk import insert_collectives

__all__ = ["insert_collectives"]
