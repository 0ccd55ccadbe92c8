"""The case's side of the child protocol (ground floor: imported by the case process, the
scenarios and the runner alike): the environment variables the runner sets for a case, the case
spec it reads back (:func:`case_spec`), and the one writer of the events JSON lines
(:func:`append_event`). The runner's side (the environment it builds, the bounded reader) is
``repro.runner.protocol``.

Never imports torch, nor any package of repro.
"""

from __future__ import annotations

import faulthandler
import json
import math
import os
import signal
import sys
import time
from typing import Any

#: Environment variables the runner sets for a case.
CASE_VAR = "REPRO_CASE"  # JSON {"scenario", "module", "case_id", "params", "expect_accelerator"}
CASE_FILE_VAR = "REPRO_CASE_FILE"  # path of that JSON when too long for one environment string
EVENTS_VAR = "REPRO_EVENTS"  # path of the events file
WORKDIR_VAR = "REPRO_WORKDIR"  # the case's private temporary directory
REPORT_FD_VAR = "REPRO_REPORT_FD"  # harness -> runner: leftovers it killed (one JSON line)
RUNNER_PID_VAR = "REPRO_RUNNER_PID"  # the harness dies with this process (not whoever is parent)
THREADS_VAR = "REPRO_CASE_THREADS"  # torch intra-op threads of a case under ``repro run -j N``

#: Largest spec file read back (bytes): a script entry's arguments are capped far below it.
CASE_FILE_MAX_BYTES = 8 * 1024 * 1024


def case_spec(environ: dict[str, str] | os._Environ = os.environ) -> dict[str, Any]:
    """The case spec ``repro.runner.protocol.case_env`` passed: ``REPRO_CASE``, else the file named by
    ``REPRO_CASE_FILE`` (at most :data:`CASE_FILE_MAX_BYTES`). Raises KeyError when neither is
    set, ValueError when the spec is not a JSON object or the file is too large."""
    if CASE_VAR in environ:
        spec = json.loads(environ[CASE_VAR])
    else:
        with open(environ[CASE_FILE_VAR], "rb") as handle:
            data = handle.read(CASE_FILE_MAX_BYTES + 1)
        if len(data) > CASE_FILE_MAX_BYTES:
            raise ValueError(f"{environ[CASE_FILE_VAR]}: over {CASE_FILE_MAX_BYTES} bytes")
        spec = json.loads(data)
    if not isinstance(spec, dict):
        raise ValueError("the case spec is not a JSON object")
    return spec


def append_event(path: str, started: float, event: str, fields: dict[str, Any]) -> None:
    """Append one event line ``{"event": ..., "t": seconds since ``started``, **fields}``.

    ``started`` is a ``time.monotonic()`` reading. O_APPEND and one ``write`` per line, so lines
    from forked workers never interleave mid-line. Raises OSError when the file cannot be written.
    """
    record = {"event": event, "t": round(time.monotonic() - started, 6), **fields}
    line = json.dumps(record, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def positive_seconds(value: Any) -> bool:
    """Whether ``value`` is a finite positive number of seconds (an int or a float, not a bool):
    what a heartbeat's ``budget_s`` must be, checked where it is written and where it is read."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


#: The signal the watchdog sends every process of a hung case for its threads' stacks, answered
#: by :func:`arm_stack_dump` so DataLoader workers and torchrun ranks can answer too.
DUMP_SIGNAL = signal.SIGUSR1


def arm_stack_dump() -> None:
    """Print every thread's Python stack to stderr on SIGUSR1, and on fatal signals."""
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True, chain=False)
