"""``repro doctor --slurm``: the doctor as a Slurm node check (issue 33, item 3).

Admins check nodes with NHC (LBNL Node Health Check) as Slurm's ``HealthCheckProgram`` or in a
``Prolog`` (NVIDIA/deepops#660, awslabs/awsome-distributed-ai#952). This mode behaves like
one, from the contracts in slurm.conf(5) (Slurm 22.05):

- **One line** on standard output (``OK: repro doctor: ...`` / ``ERROR: repro doctor: CHECK:
  DETAIL``), nothing on standard error: "Standard output and error messages are normally not
  preserved" for prolog scripts, so the line also goes to ``--log FILE`` when given (appended,
  with a UTC time stamp). Nothing else is written: no results, no fingerprint, no bytecode.
- **Exit status**: 0 when no check fails (warnings included), 1 when one does. As a
  ``Prolog``, "If the prolog fails (returns a non-zero exit code), this will result in the
  node being set to a DRAIN state and the job being requeued in a held state". As a
  ``HealthCheckProgram`` the status is not read at all: "Any action to be taken must be
  explicitly performed by the program", hence ``--drain``.
- ``--drain``: a failing check drains the node (``scontrol update NodeName=N State=DRAIN
  Reason="repro-doctor: CHECK: ..."``); a healthy node that this mode drained earlier (its
  reason starts with :data:`REASON_PREFIX`) is resumed, one drained by anyone else is left
  alone (NHC's node-mark-online does the same with its own notes). The node is
  ``$SLURMD_NODENAME``, else the short host name.
- It **fails open**: when the checks themselves cannot run (a bug, a bad ``--python``), the
  line says ``UNKNOWN`` and the status is 0. A broken checker must not drain a whole cluster.

Time: the fingerprint (a child interpreter imports torch) and the SMI tools, bounded by
:data:`PROBE_TIMEOUT_S` and ``repro.host.smi``'s timeout, inside the 60 s Slurm allows a
HealthCheckProgram. Never imports torch.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.host.checks import FAIL, NA, OK, WARN, Finding

#: Every reason this mode sets starts with this, so it resumes only the nodes it drained.
REASON_PREFIX = "repro-doctor:"
#: Seconds the fingerprint's torch probe may take (Slurm kills a HealthCheckProgram at 60 s).
PROBE_TIMEOUT_S = 40.0
#: Longest drain reason (characters) written into the node's record.
MAX_REASON = 200
Runner = Callable[[list[str], float], subprocess.CompletedProcess]


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", str(exc))


@dataclass(frozen=True)
class NodeVerdict:
    """The node check's answer: ``healthy`` (no check failed), its one ``line`` and the drain
    ``reason`` (empty when healthy)."""

    healthy: bool
    line: str
    reason: str = ""

    @property
    def exit_status(self) -> int:
        return 0 if self.healthy else 1


def verdict(findings: Sequence[Finding], host_key: str) -> NodeVerdict:
    """The one line for ``findings``: the first failing check and its detail (``+N more``),
    else ``OK`` with the counts per status and the first warning."""
    failed = [f for f in findings if f.status == FAIL]
    if failed:
        first = failed[0]
        more = f" (+{len(failed) - 1} more failed: {', '.join(f.check for f in failed[1:])})"
        tail = more if len(failed) > 1 else ""
        reason = f"{REASON_PREFIX} {first.check}: {first.detail}"
        if len(reason) > MAX_REASON:
            reason = reason[: MAX_REASON - 1] + "…"
        return NodeVerdict(
            False, f"ERROR: repro doctor: {first.check}: {first.detail}{tail}", reason
        )
    counts = {status: sum(f.status == status for f in findings) for status in (OK, WARN, NA)}
    shown = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    warned = next((f for f in findings if f.status == WARN), None)
    note = f"; warning {warned.check}: {warned.detail}" if warned else ""
    return NodeVerdict(
        True, f"OK: repro doctor: {len(findings)} checks ({shown}) on {host_key}{note}"
    )


def unknown(why: str) -> NodeVerdict:
    """The checks could not run: fail open (status 0), said in the line."""
    return NodeVerdict(True, f"UNKNOWN: repro doctor: could not run the checks: {why}")


def node_name(environ: dict[str, str] | None = None) -> str:
    """``$SLURMD_NODENAME`` (set for prologs), else the short host name."""
    environ = dict(os.environ) if environ is None else environ
    return environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def node_reason(node: str, run: Runner = _run) -> tuple[str, str] | None:
    """``(State, Reason)`` of the node from ``scontrol -o show node``, None when unknown."""
    from repro.slurm.scheduler import key_values

    done = run(["scontrol", "-o", "show", "node", node], 10.0)
    if done.returncode != 0:
        return None
    kv = key_values(done.stdout.strip())
    return kv.get("State", ""), kv.get("Reason", "")


def apply(result: NodeVerdict, node: str, run: Runner = _run) -> str:
    """``--drain``: drain the node on a failure, resume it when healthy and drained by this
    mode. Returns what was done (for the log): ``drained``, ``resumed``, ``unchanged`` or why
    scontrol refused."""
    if not result.healthy:
        done = run(
            ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={result.reason}"],
            10.0,
        )
        return "drained" if done.returncode == 0 else f"drain refused: {done.stderr.strip()}"
    if result.line.startswith("UNKNOWN"):
        return "unchanged"
    found = node_reason(node, run)
    if found is None:
        return "unchanged (node unknown to scontrol)"
    state, reason = found
    if "DRAIN" in state and reason.startswith(REASON_PREFIX):
        done = run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], 10.0)
        return "resumed" if done.returncode == 0 else f"resume refused: {done.stderr.strip()}"
    return "unchanged"


def append_log(path: Path, line: str) -> None:
    """Append ``<UTC time> <line>`` to ``path`` (created if missing; its folder must exist).
    OSError is not raised: a full log disk must not drain the node."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {line}\n")
    except OSError:
        pass
