"""``repro classify LOG...``: name the failure in a training log (signature, source, workaround).

Argument parsing and printing only; the matching is :mod:`repro.signatures.engine`. Logs are
streamed (``classify_stream``), so a 1 GB log or a pipe on stdin (``-``) is read in bounded
memory. Only regular files and stdin are read: a FIFO, device or directory given by name is a
clear error (exit 2), never a hang or an endless read. Standard input is read up to
:data:`MAX_STDIN_BYTES` or :data:`MAX_STDIN_LINES`, whichever comes first; an endless pipe is
classified on what came before, with a note (``yes | repro classify -`` stops after about 3 s).

Some texts name different causes on different hosts ("Unexpected error from cudaGetDeviceCount()"
is a WSL2 failure on WSL2, Fabric Manager or a driver mismatch on native Linux):
``--fingerprint FILE`` (a run's ``fingerprint.json``) or ``--wsl2`` / ``--native`` say which host
the log came from (:mod:`repro.signatures.hostfacts`); without them the log's own host evidence
(``uname`` kernel strings, ``/usr/lib/wsl`` paths, the nvidia-smi header) decides, and with none
the verdict names the alternatives instead of assuming WSL2.

Exit status: 0 when every log is named or clean ("no failure found": nothing in it looks like a
failure, and it shows a run: progress, epoch/step lines, logging lines, NCCL INFO lines, an
nvidia-smi table, ...), 1 when some log holds a failure no row names (``unknown``, with its
decisive line, "no row matched" said plainly, and the coarse family the text still shows: a ROCm
runtime error, a process killed by signal N, a C++ abort, ...; issue 30). A text with neither a
failure line nor a run (a few command lines, an environment listing, a person's words) is
``unknown`` too, coarse family "no failure line and no run output in the text: the failure is cut
off or only described" (issue 30, round eight): an excerpt cut before its failure is not a
healthy run.
``--signatures FILE`` adds a team's own rows (same schema as repro/data/signatures.yaml).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any, BinaryIO

from repro.cli import options
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.junit.files import InputRefused, open_capped
from repro.signatures import engine, table
from repro.signatures.hostfacts import HostFacts

#: Largest log file classified (bytes): far past any real job's log, streamed in bounded memory.
MAX_LOG_BYTES = 1 << 40
#: Bytes of standard input classified at most (a pipe may never end; a 1 GiB log is far past
#: any real job's output).
MAX_STDIN_BYTES = 1 << 30
#: Lines of standard input classified at most: what bounds the time of an endless pipe of short
#: lines (issue 32: ``yes |`` reached the byte cap only after about 100 s, 512 million lines;
#: this many take about 3 s). A 1 GiB log of 64-character lines has this many.
MAX_STDIN_LINES = 1 << 24


class _Head:
    """The first ``limit`` bytes, and at most ``lines`` lines, of a binary stream; ``cut`` tells
    whether more was there, ``by_lines`` whether the line cap ended it."""

    def __init__(self, stream: BinaryIO, limit: int, lines: int):
        self.stream, self.left, self.lines_left = stream, limit, lines
        self.cut = self.by_lines = False

    def read(self, size: int = -1) -> bytes:
        if self.left <= 0 or self.lines_left <= 0:
            self.cut = self.cut or bool(self.stream.read(1))
            return b""
        data = self.stream.read(min(size, self.left) if size >= 0 else self.left)
        breaks = data.count(b"\n")
        if breaks >= self.lines_left:  # end after the last line allowed
            end = -1
            for _ in range(self.lines_left):
                end = data.index(b"\n", end + 1)
            self.cut = self.cut or end + 1 < len(data)
            data, self.by_lines = data[: end + 1], True
            breaks = self.lines_left
        self.lines_left -= breaks
        self.left -= len(data)
        return data


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``classify`` subcommand to ``subparsers`` (an ``add_subparsers()`` result), with
    ``handler`` set to :func:`run`; options from :mod:`.options`."""
    parser = subparsers.add_parser(
        "classify", help="classify a training log: signature, public source, workaround"
    )
    options.add(parser, "logs", "json", "signatures")
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


#: What ``repro classify`` prints for a log with no failure in it.
NO_FAILURE = "no failure found"


def classify_log(
    name: str, host: HostFacts | None = None, rows: table.Table | None = None
) -> engine.Classification:
    """Classify one log: a path to a regular file, or ``"-"`` for standard input; ``host``: the
    facts of the host it came from; ``rows``: the table (default: the active one).

    Raises ConfigError (exit 2) when the path is missing, unreadable or not a regular file.
    """
    if name == "-":
        head = _Head(sys.stdin.buffer, MAX_STDIN_BYTES, MAX_STDIN_LINES)
        found = engine.classify_stream(head, host=host, table=rows)  # type: ignore[arg-type]
        if head.cut:
            what = f"{MAX_STDIN_LINES} lines" if head.by_lines else f"{MAX_STDIN_BYTES} bytes"
            note = f"standard input read to its first {what} only (the cap)"
            found = dataclasses.replace(found, notes=(*found.notes, note))
        return found
    try:  # the one capped reader: the type is checked on the open descriptor (no race)
        with open_capped(name, MAX_LOG_BYTES) as handle:
            return engine.classify_stream(handle, host=host, table=rows)
    except InputRefused as exc:
        if str(exc).startswith("not a regular file"):
            raise ConfigError(
                f"{name}: not a regular file (a log file, or '-' for standard input)"
            ) from None
        raise ConfigError(f"{name}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Print each log's verdict (text, or ``--json``); cut lines and stopped reads go to stderr
    as notes. Returns the exit status: 0 when every log is named or clean (no failure line, a
    run shown), 1 when some log holds an unrecognised failure or shows neither a failure nor a
    run. Raises ConfigError for a log or signature file that cannot be read."""
    out = []
    host = host_facts(args)
    rows = table.with_user_rows(args.signatures) if getattr(args, "signatures", None) else None
    for name in args.logs:
        found = classify_log(name, host, rows)
        for note in found.notes:
            print(f"repro classify: note: {name}: {note}", file=sys.stderr)
        out.append(
            {
                "log": name,
                "signature": None if found.clean else found.name,
                "verdict": NO_FAILURE if found.clean else found.name,
                "message": found.message,
                "line": found.line_no,
                "source": found.source,
                "workaround": found.workaround,
                "host_evidence": list(found.host_evidence),
                "notes": list(found.notes),
                "coarse_family": found.coarse or None,
            }
        )
    status = (
        EXIT_CASES_FAILED if any(item["verdict"] == engine.UNKNOWN for item in out) else EXIT_OK
    )
    if args.json:
        options.print_json({"logs": out})  # one shape for one log or many
        return status
    for item in out:
        if item["signature"] is None:
            print(f"{item['log']}: {NO_FAILURE}")
            continue
        where = f" (line {item['line']})" if item["line"] else ""
        said = f": {item['message']}" if item["message"] else ""  # an empty text has no line
        print(f"{item['log']}: {item['signature']}{where}{said}")
        if item["verdict"] == engine.UNKNOWN:
            # Issue 30, item 3: say plainly that no row matched, and what the text still shows.
            coarse = item["coarse_family"]
            print(f"  no row matched{f'; coarse family: {coarse}' if coarse else ''}")
        if item["source"]:
            print(f"  source: {item['source']}")
        if item["workaround"]:
            print(f"  workaround: {item['workaround']}")
        if item["host_evidence"]:
            print(f"  host evidence: {' | '.join(item['host_evidence'])}")
    return status
