"""``repro classify LOG...``: name the failure in a training log (signature, source, workaround).

Argument parsing and printing only; the matching is :mod:`repro.signatures.engine`. Logs are
streamed (``classify_stream``), so a 1 GB log or a pipe on stdin (``-``) is read in bounded
memory. Only regular files and stdin are read: a FIFO, device or directory given by name is a
clear error (exit 2), never a hang or an endless read.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from typing import Any

from repro.errors import EXIT_OK, ConfigError
from repro.signatures import engine


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``classify`` subcommand to ``subparsers`` (an ``add_subparsers()`` result), with
    ``handler`` set to :func:`run`."""
    parser = subparsers.add_parser(
        "classify", help="classify a training log: signature, public source, workaround"
    )
    parser.add_argument("logs", nargs="+", metavar="LOG", help="log files ('-' for standard input)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)
    return parser


def classify_log(name: str) -> engine.Classification:
    """Classify one log: a path to a regular file, or ``"-"`` for standard input.

    Raises ConfigError (exit 2) when the path is missing, unreadable or not a regular file.
    """
    if name == "-":
        return engine.classify_stream(sys.stdin.buffer)
    try:
        mode = os.stat(name).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigError(f"{name}: not a regular file (a log file, or '-' for standard input)")
        with open(name, "rb") as handle:
            return engine.classify_stream(handle)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    """Print each log's verdict (text, or ``--json``); cut lines and stopped reads go to stderr
    as notes. Returns the exit status (0); raises ConfigError for a log that cannot be read."""
    out = []
    for name in args.logs:
        found = classify_log(name)
        for note in found.notes:
            print(f"repro classify: note: {name}: {note}", file=sys.stderr)
        out.append(
            {
                "log": name,
                "signature": found.name,
                "message": found.message,
                "line": found.line_no,
                "source": found.source,
                "workaround": found.workaround,
                "notes": list(found.notes),
            }
        )
    if args.json:
        print(json.dumps(out if len(out) > 1 else out[0], indent=2))
        return EXIT_OK
    for item in out:
        where = f" (line {item['line']})" if item["line"] else ""
        print(f"{item['log']}: {item['signature']}{where}: {item['message']}")
        if item["source"]:
            print(f"  source: {item['source']}")
        if item["workaround"]:
            print(f"  workaround: {item['workaround']}")
    return EXIT_OK
