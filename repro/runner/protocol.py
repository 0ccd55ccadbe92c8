"""The child protocol between the runner and a case: the environment the case starts with, and
the events JSON-lines it reports through. Written in one place (:func:`append_event`, used by
``repro.case_api.Context.emit``; the case's side lives in ``repro.case_protocol``) and read in one place (:class:`EventReader`, used by
the watchdog while the case runs and by the executor when it ends).

The events file lives in the case's private workdir, so the case can replace it with anything:
a FIFO, a symlink to ``/dev/zero``, a multi-gigabyte line. The reader opens it with
``O_NONBLOCK | O_NOFOLLOW``, reads regular files only, in bounded chunks, up to a bounded total;
a bad record becomes :attr:`Events.problem` (the case's ``error``, signature
``events_protocol``), never an exception in the runner (issue 9, item 2).

Never imports torch.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import repro
from repro import proctree
from repro.case_protocol import (  # noqa: F401 (the case's side, re-exported for the runner)
    CASE_FILE_MAX_BYTES,
    CASE_FILE_VAR,
    CASE_VAR,
    EVENTS_VAR,
    REPORT_FD_VAR,
    RUNNER_PID_VAR,
    THREADS_VAR,
    WORKDIR_VAR,
    append_event,
    case_spec,
    positive_seconds,
)

#: Outcomes a ``result`` event may carry (the values of ``repro.outcomes.Outcome`` a case may
#: report itself; ``crashed`` and ``hung`` are decided by the runner only).
CASE_OUTCOMES = frozenset({"passed", "failed", "error", "skipped"})
#: A longer line is a protocol error (bytes). Real records are under 1 KiB.
MAX_LINE_BYTES = 64 * 1024
#: The reader stops after this many bytes of one events file (a case spamming events).
MAX_EVENTS_BYTES = 16 * 1024 * 1024
#: One read's size (bytes): memory stays bounded whatever the file is.
CHUNK_BYTES = 256 * 1024
#: A case spec longer than this (bytes) goes to a file (:data:`CASE_FILE_VAR`) instead of
#: ``REPRO_CASE``: Linux refuses any one environment string over 128 KiB (MAX_ARG_STRLEN,
#: execve(2): E2BIG), and every process of the case inherits the environment (issue 25: a
#: script entry's 40 x 4,000-character arguments).
CASE_ENV_MAX_BYTES = 16 * 1024


def case_env(
    base: dict[str, str],
    extra: dict[str, str],
    spec: dict[str, Any],
    events: Path,
    workdir: Path,
    token: str,
) -> dict[str, str]:
    """The environment of a case's harness: ``base`` (the runner's), then the variant's
    ``extra``, then the protocol variables (which always win).

    ``spec`` is the ``REPRO_CASE`` JSON object, written to ``workdir/case.json``
    (``REPRO_CASE_FILE``) instead when longer than :data:`CASE_ENV_MAX_BYTES` (raises OSError
    when it cannot be written); :func:`case_spec` reads either. ``token`` tags every process of
    the case (``repro.proctree.TOKEN_VAR``) so leftovers can be found by environment.
    """
    env = dict(base)
    env.update(extra)
    # The harness must import this very repro (same version as the runner), installed or not.
    package_root = str(Path(repro.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"  # spawned workers and ranks print stacks on fatal signals too
    text = json.dumps(spec)
    env.pop(CASE_FILE_VAR, None)
    env.pop(CASE_VAR, None)
    if len(text.encode()) <= CASE_ENV_MAX_BYTES:
        env[CASE_VAR] = text
    else:
        path = workdir / "case.json"
        path.write_text(text, encoding="utf-8")
        env[CASE_FILE_VAR] = str(path)
    env[EVENTS_VAR] = str(events)
    env[WORKDIR_VAR] = str(workdir)
    env[proctree.TOKEN_VAR] = token
    env[RUNNER_PID_VAR] = str(os.getpid())
    return env


@dataclass
class Events:
    """What a case reported through its events file.

    ``problem`` is the first protocol violation (a one-line description) or None; records after
    it are still read, but the case's verdict becomes ``error``/``events_protocol``.
    """

    result: dict[str, Any] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    last_phase: str | None = None
    last_step: int | None = None
    problem: str | None = None

    def add(self, record: Any) -> dict[str, Any] | None:
        """Take one decoded JSON line; returns it when it is a valid heartbeat, else None."""
        if not isinstance(record, dict):
            return self._bad(f"expected a JSON object per line, got {type(record).__name__}")
        kind = record.get("event")
        if kind == "heartbeat":
            phase, step = record.get("phase"), record.get("step")
            if not isinstance(phase, str) or not (
                step is None or (isinstance(step, int) and not isinstance(step, bool))
            ):
                return self._bad(f"heartbeat with phase {phase!r}, step {step!r}")
            budget = record.get("budget_s")
            if budget is not None and not positive_seconds(budget):
                return self._bad(f"heartbeat budget_s {budget!r}: expected finite positive seconds")
            self.last_phase, self.last_step = phase[:200], step
            return record
        if kind == "metric":
            name, value = record.get("name"), record.get("value")
            if (
                not isinstance(name, str)
                or isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                return self._bad(f"metric {name!r}: expected a finite number, got {value!r}")
            self.metrics[name[:200]] = float(value)
        elif kind == "property":
            name, value = record.get("name"), record.get("value")
            if not isinstance(name, str) or not isinstance(value, str):
                return self._bad(f"property {name!r}: expected string name and value")
            self.properties[name[:200]] = value[:4000]
        elif kind == "result":
            outcome = record.get("outcome")
            if outcome not in CASE_OUTCOMES:
                return self._bad(f"result with unknown outcome {str(outcome)[:100]!r}")
            if self.result is None:
                self.result = {
                    "outcome": outcome,
                    "message": str(record.get("message") or "")[:4000],
                    "signature": _optional_str(record.get("signature")),
                }
        return None

    def _bad(self, what: str) -> None:
        if self.problem is None:
            self.problem = what[:300]
        return None


def _optional_str(value: Any) -> str | None:
    return str(value)[:200] if value else None


class EventReader:
    """Reads a case's events file incrementally, defensively and with bounded memory.

    Each :meth:`poll` consumes the complete lines appended since the last one and returns the
    valid heartbeat records among them; :attr:`events` accumulates everything. Never blocks
    (``O_NONBLOCK``, regular files only) and never raises for what the case did to the file.
    """

    def __init__(self, path: Path):
        self.path = path
        self.events = Events()
        self._offset = 0
        self._partial = b""
        self._done = False  # stop reading: the file broke the protocol or its size bound

    def poll(self, final: bool = False) -> list[dict[str, Any]]:
        """Read what was appended; ``final`` also takes a last line without a newline (a case
        that crashed mid-write leaves a cut line: it is dropped, not a protocol error)."""
        if self._done:
            return []
        data = self._read_new()
        if data is None:
            return []
        beats = []
        buffer = self._partial + data
        lines = buffer.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            beat = self._line(line)
            if beat is not None:
                beats.append(beat)
        if len(self._partial) > MAX_LINE_BYTES:
            self._stop(f"a line longer than {MAX_LINE_BYTES} bytes")
        if final:
            self._partial = b""
        return beats

    def _line(self, line: bytes) -> dict[str, Any] | None:
        if not line.strip():
            return None
        if len(line) > MAX_LINE_BYTES:
            self._stop(f"a line longer than {MAX_LINE_BYTES} bytes")
            return None
        try:
            record = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            self.events._bad(f"a line that is not JSON ({str(exc)[:100]})")
            return None
        return self.events.add(record)

    def _read_new(self) -> bytes | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a symlink; EACCES...
            self._stop(f"events file cannot be opened ({exc.strerror})")
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self._stop("events file is not a regular file")
                return None
            os.lseek(fd, self._offset, os.SEEK_SET)
            chunks, budget = [], MAX_EVENTS_BYTES - self._offset
            while budget > 0:
                chunk = os.read(fd, min(CHUNK_BYTES, budget))
                if not chunk:
                    break
                chunks.append(chunk)
                budget -= len(chunk)
                if sum(map(len, chunks)) >= 4 * CHUNK_BYTES:
                    break  # the rest on the next poll: one poll's memory stays bounded
            data = b"".join(chunks)
            self._offset += len(data)
            if budget <= 0:
                self._stop(f"events file larger than {MAX_EVENTS_BYTES} bytes")
            return data
        except OSError as exc:
            self._stop(f"events file cannot be read ({exc.strerror})")
            return None
        finally:
            os.close(fd)

    def _stop(self, why: str) -> None:
        self.events._bad(why)
        self._done = True
        self._partial = b""

    def read_all(self) -> Events:
        """Read the rest of the file (bounded) and return the accumulated :class:`Events`."""
        while not self._done:
            before = self._offset
            self.poll(final=False)
            if self._offset == before:
                break
        self.poll(final=True)
        return self.events


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def read_events(path: Path) -> Events:
    """Everything a finished case reported in ``path`` (see :class:`EventReader`)."""
    return EventReader(path).read_all()
