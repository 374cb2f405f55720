"""Ground truth for shardc: compare its collectives with XLA's SPMD partitioner (`xla-check`)
and export a program to a runnable JAX script (`export-jax`). JAX is imported only when used."""
