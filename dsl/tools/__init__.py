"""Tools built on `compile()`: derive, sweep, the mesh simulator, the XLA check, model cards and
plans, and the Epoch AI data-movement limits."""
