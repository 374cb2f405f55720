"""Testing helpers for users' own sharding rules: Hypothesis strategies that draw meshes, layouts
and whole `.shard` programs (`shardc.testing.strategies`), and the optimality oracle that
compiles every hand-written plan of a statement against the compiler's own
(`shardc.testing.oracle`). Needs `hypothesis`."""
