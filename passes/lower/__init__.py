"""The `insert-collectives` pass, by part: walk (statements), contract, elementwise, explicit
collectives, explain (the prose of decisions), state (what the parts share)."""
