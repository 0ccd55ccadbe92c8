"""Telling a hang from slow progress, and saying what a hang was stuck on.

Field reports, "Watchdog: telling a hang from slow progress": CPU or GPU utilisation cannot
separate hang from slow; progress markers can. A scenario emits heartbeats (phase + counter,
``repro.runner.case_api.Context.heartbeat``). Once a phase has a steady rhythm (``STEADY_BEATS`` beats),
its stall budget is ``max(STALL_FLOOR_S, STALL_FACTOR x median interval)``; silence past it is a
hang even before the case's hard timeout. A heartbeat may instead declare its phase's budget
(``budget_s``, scaled by ``--timeout-scale``): a scenario that knows a phase is short (a forked
child that only takes a lock) has its hang caught in seconds, not at the hard timeout. Before a
phase is called silent, the events file is read once more (``executor.confirmed_stall``), and a
case whose processes are runnable but waiting for a CPU (a loaded host) is starved, not stuck
(:class:`Starvation`): the early hang verdict waits while that lasts. A case
still beating when the hard timeout comes is *slow*, not hung. After a hang, the dumped stacks and each process's kernel wait channel give a
sub-type (``hang.dataloader_wait``, ``hang.nccl``...), and the tail of the kernel log is kept as
evidence (ROCm's ``hogged CPU`` lines appear there, never on stderr: O2, F1-4).

Never imports torch.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import proctree
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


#: Seconds between two samples of a silent case tree's run-queue wait (:class:`Starvation`).
STARVE_WINDOW_S = 0.5
#: The share of a window a silent tree must have spent runnable but off the CPU to be called
#: starved (a loaded host), not stuck: a deadlocked process sleeps and is never runnable.
STARVED_SHARE = 0.1


def run_queue_wait_ns(pids: list[int]) -> int | None:
    """Nanoseconds the threads of ``pids`` have spent runnable but waiting for a CPU, summed:
    field 2 of ``/proc/PID/task/TID/schedstat`` (Linux ``Documentation/scheduler/sched-stats.rst``;
    needs ``CONFIG_SCHED_INFO``, on in Debian, Ubuntu, RHEL and WSL2 kernels). Processes and
    threads that exit while being read are skipped; None when no schedstat was readable."""
    total, seen = 0, False
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
                    fields = handle.read().split()
                total += int(fields[1])
                seen = True
            except (OSError, IndexError, ValueError):
                continue
    return total if seen else None


@dataclass
class Starvation:
    """Tells a silent case that is starved of CPU (a loaded host: its processes runnable but
    waiting) from one that is stuck (asleep on a lock, a queue, a pipe), before a declared or
    rhythm budget calls it hung (issue 19, item 2: a 3 s fork budget called a passing
    ``fork_safety[...,mode=logger_pid_guard]`` hung at load 12 on 2 cores).

    ``tree``: returns the pids of the case's processes now. :meth:`starved` is asked while the
    case is silent past its budget; it samples the tree's run-queue wait every
    ``STARVE_WINDOW_S`` and answers True while the last window's wait was at least
    ``STARVED_SHARE`` of it (or the first window is still open). The case's hard timeout still
    holds: starvation only postpones the early hang verdict. Without schedstat it never
    postpones (the budget alone decides, as before).
    """

    tree: Callable[[], list[int]]
    beat_at: float | None = None  # the silence being judged: its last beat (monotonic)
    sampled_at: float | None = None
    sampled_ns: int | None = None
    postponed_s: float = 0.0  # seconds of hang verdict postponed, for the log

    def starved(self, beat_at: float | None, now: float) -> bool:
        if beat_at != self.beat_at:  # a new silence: start over
            self.beat_at, self.sampled_at, self.sampled_ns = beat_at, None, None
        if self.sampled_at is not None and now - self.sampled_at < STARVE_WINDOW_S:
            return True  # the window is still open
        waited = run_queue_wait_ns(self.tree())
        if waited is None:
            return False
        if self.sampled_at is None:
            self.sampled_at, self.sampled_ns = now, waited
            return True
        window = now - self.sampled_at
        share = (waited - (self.sampled_ns or 0)) / 1e9 / window if window > 0 else 0.0
        self.sampled_at, self.sampled_ns = now, waited
        if share >= STARVED_SHARE:
            self.postponed_s += window
            return True
        return False


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
        # run_bounded registers the tool as the runner's own child: no orphan sweep of a
        # parallel case takes it for a leftover (repro.proctree.spawning).
        done = proctree.run_bounded(["dmesg", "--ctime"], timeout_s=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(kernel log not readable: {exc})"
    if done.returncode != 0:  # dmesg_restrict named, not a bare failure (repro.host.kernel_log)
        return kernel_log.reading_failed(done.returncode, done.stderr, kernel_log.restricted())
    return kernel_log.evidence(done.stdout, lines)  # Xid/amdgpu/OOM lines only, not audit noise
