"""The driver: `compile()` runs the passes and returns a `Report`; the report's printers; bounded
file reads; formulas typed by users."""
