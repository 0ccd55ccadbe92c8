"""Telling a hang from slow progress, and saying what a hang was stuck on.

Field reports, "Watchdog: telling a hang from slow progress": CPU or GPU utilisation cannot
separate hang from slow; progress markers can. A scenario emits heartbeats (phase + counter,
``repro.runner.case_api.Context.heartbeat``). Once a phase has a steady rhythm (``STEADY_BEATS`` beats),
its stall budget is ``max(STALL_FLOOR_S, STALL_FACTOR x median interval)``; silence past it is a
hang even before the case's hard timeout. A heartbeat may instead declare its phase's budget
(``budget_s``, scaled by ``--timeout-scale``): a scenario that knows a phase is short (a forked
child that only takes a lock) has its hang caught in seconds, not at the hard timeout. Before a
phase is called silent, the events file is read once more (``executor.confirmed_stall``). A case
still beating when the hard timeout comes is *slow*, not hung. After a hang, the dumped stacks and each process's kernel wait channel give a
sub-type (``hang.dataloader_wait``, ``hang.nccl``...), and the tail of the kernel log is kept as
evidence (ROCm's ``hogged CPU`` lines appear there, never on stderr: O2, F1-4).

Never imports torch.
"""

from __future__ import annotations

import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.host import kernel_log
from repro.runner.protocol import EventReader
from repro.signatures import table

STEADY_BEATS = 3
STALL_FLOOR_S = 10.0
STALL_FACTOR = 20.0


@dataclass
class Heartbeats:
    """Keeps the heartbeat rhythm of a running case from its events file.

    ``reader`` is the case's :class:`repro.runner.protocol.EventReader` (the one place the
    events file is read); everything else it reads stays in ``reader.events``.
    """

    reader: EventReader
    #: ``repro run --timeout-scale``: multiplies declared phase budgets.
    scale: float = 1.0
    last_phase: str | None = None
    declared_budget_s: float | None = None  # the current phase's ``budget_s``, unscaled
    last_step: Any = None
    last_beat_at: float | None = None  # runner's monotonic clock
    beats_in_phase: int = 0
    intervals: list[float] = field(default_factory=list)

    def poll(self, now: float) -> None:
        """Consume new complete lines of the events file; ``now`` is time.monotonic()."""
        for record in self.reader.poll():
            self._beat(record.get("phase"), record.get("step"), now, record.get("budget_s"))

    def _beat(self, phase: str | None, step: Any, now: float, budget_s: Any = None) -> None:
        if phase != self.last_phase:
            self.beats_in_phase, self.intervals = 0, []
            self.declared_budget_s = None
        if budget_s is not None:  # validated by protocol.Events
            self.declared_budget_s = float(budget_s)
        elif self.last_beat_at is not None:
            self.intervals = (self.intervals + [now - self.last_beat_at])[-50:]
        self.last_phase, self.last_step, self.last_beat_at = phase, step, now
        self.beats_in_phase += 1

    def stall_budget_s(self) -> float | None:
        """Seconds of silence tolerated in the current phase: its declared budget (scaled), else
        the rhythm's; None while it has neither."""
        if self.declared_budget_s is not None:
            return self.declared_budget_s * self.scale
        if self.beats_in_phase < STEADY_BEATS or not self.intervals:
            return None
        return max(STALL_FLOOR_S, STALL_FACTOR * statistics.median(self.intervals))

    def stalled(self, now: float) -> bool:
        """True when a phase has been silent past its budget (declared, or from a steady rhythm):
        a hang, not slowness."""
        budget = self.stall_budget_s()
        return (
            budget is not None
            and self.last_beat_at is not None
            and now - self.last_beat_at > budget
        )

    def progressing(self, now: float) -> bool:
        """True when the current phase has a rhythm (two beats or more) and its last beat is
        recent (within the phase's budget, or the floor): slow, not hung."""
        if self.last_beat_at is None or self.beats_in_phase < 2:
            return False
        return now - self.last_beat_at <= (self.stall_budget_s() or STALL_FLOOR_S)


def wchan(pid: int) -> str:
    """The kernel function a process sleeps in (``/proc/PID/wchan``), or "" if unreadable."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        return ""


def hang_subtype(stack_text: str, wchans: list[str]) -> tuple[str, str]:
    """``(signature, source)`` for a hang from its stack dump and the processes' wait channels;
    ``("hang_timeout", "")`` when no fingerprint matches.

    The fingerprints are the watchdog rows of the signature table (repro/data/signatures.yaml:
    ``wait_channels`` first, then ``stacks`` in the file's order; field reports, "Stack
    fingerprints for sub-typing hangs"), so a hang's JUnit message and its matrix row cite the
    same sources.
    """
    rows = table.active().hangs
    for row in rows:
        if any(channel in w for channel in row.wait_channels for w in wchans):
            return row.name, row.source
    for row in rows:
        if row.stacks is not None and row.stacks.search(stack_text):
            return row.name, row.source
    return table.HANG, ""


def kernel_log_tail(lines: int = 40, timeout_s: float = 3.0) -> str:
    """The last ``lines`` lines of the kernel log (``dmesg``), or a one-line reason it could not
    be read (unprivileged containers usually cannot)."""
    try:
        done = subprocess.run(
            ["dmesg", "--ctime"], capture_output=True, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(kernel log not readable: {exc})"
    if done.returncode != 0:  # dmesg_restrict named, not a bare failure (repro.host.kernel_log)
        return kernel_log.reading_failed(done.returncode, done.stderr, kernel_log.restricted())
    return kernel_log.evidence(done.stdout, lines)  # Xid/amdgpu/OOM lines only, not audit noise
