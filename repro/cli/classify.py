"""``repro classify LOG...``: name the failure in a training log (signature, source, workaround).

Argument parsing and printing only; the matching is :mod:`repro.signatures.engine`. Logs are
streamed (``classify_stream``), so a 1 GB log or a pipe on stdin (``-``) is read in bounded
memory. Only regular files and stdin are read: a FIFO, device or directory given by name is a
clear error (exit 2), never a hang or an endless read.

Some texts name different causes on different hosts ("Unexpected error from cudaGetDeviceCount()"
is a WSL2 failure on WSL2, Fabric Manager or a driver mismatch on native Linux):
``--fingerprint FILE`` (a run's ``fingerprint.json``) or ``--wsl2`` / ``--native`` say which host
the log came from (:mod:`repro.signatures.hostfacts`); without them the verdict is host-neutral.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import Any

from repro.cli import options
from repro.errors import EXIT_OK, ConfigError
from repro.signatures import engine
from repro.signatures.hostfacts import HostFacts


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``classify`` subcommand to ``subparsers`` (an ``add_subparsers()`` result), with
    ``handler`` set to :func:`run`; options from :mod:`.options`."""
    parser = subparsers.add_parser(
        "classify", help="classify a training log: signature, public source, workaround"
    )
    options.add(parser, "logs", "json")
    options.add(parser.add_mutually_exclusive_group(), "fingerprint", "wsl2", "native")
    parser.set_defaults(handler=run)
    return parser


def host_facts(args: argparse.Namespace) -> HostFacts | None:
    """The host facts ``--fingerprint`` / ``--wsl2`` / ``--native`` give (None: none given).

    Raises ConfigError (exit 2) for a fingerprint file that cannot be read or is not a JSON object.
    """
    if getattr(args, "wsl2", False):
        return HostFacts(wsl2=True)
    if getattr(args, "native", False):
        return HostFacts(wsl2=False)
    path = getattr(args, "fingerprint", None)
    if not path:
        return None
    from repro.host import fingerprint

    return HostFacts.from_fingerprint(fingerprint.read_file(path, "--fingerprint"))


def classify_log(name: str, host: HostFacts | None = None) -> engine.Classification:
    """Classify one log: a path to a regular file, or ``"-"`` for standard input; ``host``: the
    facts of the host it came from.

    Raises ConfigError (exit 2) when the path is missing, unreadable or not a regular file.
    """
    if name == "-":
        return engine.classify_stream(sys.stdin.buffer, host=host)
    try:
        mode = os.stat(name).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigError(f"{name}: not a regular file (a log file, or '-' for standard input)")
        with open(name, "rb") as handle:
            return engine.classify_stream(handle, host=host)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    """Print each log's verdict (text, or ``--json``); cut lines and stopped reads go to stderr
    as notes. Returns the exit status (0); raises ConfigError for a log that cannot be read."""
    out = []
    host = host_facts(args)
    for name in args.logs:
        found = classify_log(name, host)
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
    if args.json:  # one shape for one log or many
        options.print_json({"logs": out})
        return EXIT_OK
    for item in out:
        where = f" (line {item['line']})" if item["line"] else ""
        print(f"{item['log']}: {item['signature']}{where}: {item['message']}")
        if item["source"]:
            print(f"  source: {item['source']}")
        if item["workaround"]:
            print(f"  workaround: {item['workaround']}")
    return EXIT_OK
