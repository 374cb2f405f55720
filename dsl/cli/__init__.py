"""The `shardc` command line: argparse and dispatch only (one module per command group); results
on stdout, diagnostics on stderr."""

from shardc.cli.app import main

__all__ = ["main"]
