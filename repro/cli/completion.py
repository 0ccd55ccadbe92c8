"""``repro completion bash|zsh|fish``: print the shell's completion script.

The scripts come from argcomplete (one library for the three shells; shtab has no fish): they
call ``repro`` on TAB, and :func:`repro.cli.main.parse` answers from the same parser the command
line uses, so completion knows every flag of :mod:`repro.cli.options`, hides the deprecated
spellings, and completes ``--variant``/``--as-variant`` with matrix.yaml's variant ids and
``-k`` with its scenario names. Install, e.g.::

    repro completion bash > ~/.local/share/bash-completion/completions/repro
    repro completion zsh > "${fpath[1]}/_repro"
    repro completion fish > ~/.config/fish/completions/repro.fish
"""

from __future__ import annotations

import argparse
from typing import Any

import argcomplete

from repro.cli import options
from repro.errors import EXIT_OK

PROG = "repro"


def register(subparsers: Any) -> None:
    """Add the ``completion`` subcommand (handler :func:`run`)."""
    parser = subparsers.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    options.add(parser, "shell_name")
    parser.set_defaults(handler=run)


def script(shell: str) -> str:
    """The completion script for ``shell`` (bash, zsh or fish) of the ``repro`` command."""
    return argcomplete.shellcode([PROG], shell=shell)


def run(args: argparse.Namespace) -> int:
    """Print the script; returns 0."""
    print(script(args.shell_name), end="")
    return EXIT_OK
