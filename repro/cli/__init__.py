"""The `repro` command line: argument parsing and printing only, one error boundary."""

from repro.cli.main import main

__all__ = ["main"]
