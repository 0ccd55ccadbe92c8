"""The `repro` command line: argument parsing and printing only, one error boundary
(``repro.cli.main.main``; each command module exposes ``register(subparsers)``)."""
