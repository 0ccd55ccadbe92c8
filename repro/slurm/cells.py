"""A task the scheduler ended is a red cell, not a hole (issue 33, item 2).

A task killed at its time limit, on a node that failed, preempted, out of memory or cancelled
leaves at most a partial run directory (``repro run`` rewrites ``junit.xml`` after every case,
so the cases it finished are there and stay: a partial run adds its cases and hides nothing),
and often none at all (cancelled while pending). :func:`collect` asks the scheduler what became
of each task of a submission (:mod:`repro.slurm.scheduler`) and writes, beside the task's run
directory, a **scheduler cell**: ``<run dir>.scheduler/`` with one ``error`` case
``slurm_task`` in testsuite ``slurm`` whose signature names the state (:data:`SIGNATURES`,
rows of repro/data/signatures.yaml with their sources and workarounds) and whose properties
carry the job id, state, reason, exit code and node. It is keyed like the task's run (the
node's fingerprint, the variant, the lane), so the matrix shows a red cell where the column
would otherwise be missing, and a newer run of the same lane replaces it
(``repro.report.merge``: ``slurm`` cases are about how a run ended).

A task that ended on its own (COMPLETED, or FAILED with a run directory: red cases make ``repro
run`` exit 1) needs no cell: its run speaks. One that ended without writing any result (the
node has no ``uv``, the interpreter is missing) gets ``infra.slurm_task_failed`` with its log's
tail. A task no source knows any more (past ``MinJobAge``, no accounting) whose run did not
finish gets ``infra.slurm_state_unknown``. Writing is idempotent: an existing cell directory is
left as it is. Never imports torch.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import repro
from repro import properties
from repro.junit.sidecar import write_run_info
from repro.junit.writer import write_junit
from repro.model import Fingerprint, Machine, Variant, host_key
from repro.outcomes import CaseResult, Outcome
from repro.signatures import table
from repro.slurm.plan import HOST, Submission, SubmittedArray
from repro.slurm.scheduler import Scheduler, TaskState

SCENARIO = "slurm"
CASE_ID = "slurm_task"
CELL_SUFFIX = ".scheduler"
#: Scheduler states that end a task from outside -> the signature of its red cell.
SIGNATURES = {
    "TIMEOUT": "infra.slurm_timeout",
    "NODE_FAIL": "infra.slurm_node_fail",
    "PREEMPTED": "infra.slurm_preempted",
    "OUT_OF_MEMORY": "infra.slurm_out_of_memory",
    "CANCELLED": "infra.slurm_cancelled",
    "BOOT_FAIL": "infra.slurm_boot_fail",
    "DEADLINE": "infra.slurm_deadline",
}
TASK_FAILED = "infra.slurm_task_failed"
STATE_UNKNOWN = "infra.slurm_state_unknown"
#: What a state means, for the cell's message (squeue(1) JOB STATE CODES).
_MEANING = {
    "TIMEOUT": "killed at its time limit",
    "NODE_FAIL": "ended by the failure of its node",
    "PREEMPTED": "preempted by a higher-priority job",
    "OUT_OF_MEMORY": "killed for using more memory than it asked for",
    "CANCELLED": "cancelled (scancel, an admin, or a dependency)",
    "BOOT_FAIL": "never started: its node failed to boot",
    "DEADLINE": "ended at its deadline",
}
#: Lines of the task's log kept in the cell's detail.
LOG_TAIL_LINES = 40
#: The variant of a host-lane task that never wrote a run (its torch was never asked).
UNKNOWN_HOST_LANE = "host-lane"


@dataclass(frozen=True)
class Verdict:
    """Why a task gets a scheduler cell: its signature and one-line message."""

    signature: str
    message: str


@dataclass(frozen=True)
class TaskRun:
    """What a task left in the results root: its run directory (the last attempt's), and from
    it the fingerprint, the variant fields of ``run.json``, whether it finished, and how many
    of its cases were written (``cases_done`` of ``cases_total``)."""

    path: Path
    exists: bool
    fingerprint: Fingerprint | None = None
    variant: Variant | None = None
    finished: bool = False
    has_junit: bool = False
    cases_done: int = 0
    cases_total: int = 0

    @classmethod
    def read(cls, path: Path) -> TaskRun:
        """Read what is there; never raises (an unreadable file counts as absent)."""
        if not path.is_dir():
            return cls(path, False)
        fp = None
        with contextlib.suppress(OSError, ValueError, TypeError):
            fp = Fingerprint.from_json(json.loads((path / "fingerprint.json").read_text()))
        info: dict[str, Any] = {}
        try:
            loaded = json.loads((path / "run.json").read_text())
            info = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            pass
        return cls(
            path,
            True,
            fingerprint=fp,
            variant=Variant.from_key(info.get("variant")),
            finished=bool(info.get("finished")),
            has_junit=(path / "junit.xml").is_file(),
            cases_done=int(info.get("cases_done") or 0),
            cases_total=int(info.get("cases_total") or 0),
        )


def verdict(task: str, state: TaskState | None, run: TaskRun) -> Verdict | None:
    """The scheduler cell a task needs, or None (still queued or running, or its run speaks
    for it). ``task`` is its name (``12_3``) for messages."""
    done = f"{run.cases_done} of {run.cases_total or '?'} cases finished before and stay"
    if state is None:
        if run.finished:
            return None
        left = f"its run did not finish ({done})" if run.exists else "it left no run"
        return Verdict(
            signature=STATE_UNKNOWN,
            message=f"task {task}: the scheduler no longer knows it (past MinJobAge and no accounting "
            f"storage) and {left}",
        )
    if not state.final:
        return None
    where = f" on {state.node}" if state.node else ""
    if state.state in SIGNATURES:
        ran = done if run.exists else "no case had started"
        return Verdict(
            signature=SIGNATURES[state.state],
            message=f"{state.state}: task {task}{where} {_MEANING[state.state]}"
            f"{f' (Reason={state.reason})' if state.reason not in ('', 'None') else ''}; {ran}",
        )
    if run.has_junit:
        return None
    return Verdict(
        signature=TASK_FAILED,
        message=f"{state.state}: task {task}{where} ended (exit {state.exit_code or '?'}) without "
        "writing a result: see its log",
    )


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _minimal_fingerprint(node: str) -> Fingerprint:
    """A fingerprint naming only the node: for a task that never fingerprinted its host."""
    return Fingerprint(host=Machine(hostname=node or None, os=f"slurm node {node or '?'}"))


def write_cell(
    cell_dir: Path,
    *,
    verdict: Verdict,
    state: TaskState | None,
    task: str,
    lane: str,
    variant: Variant,
    fp: Fingerprint,
    log_path: Path | None,
    target: str,
    closes: str | None = None,
) -> Path:
    """Write ``cell_dir`` (created; must not exist): ``junit.xml`` with the one ``error`` case,
    ``fingerprint.json`` and ``run.json`` keyed by the host and ``variant``. Returns the JUnit
    path; raises FileExistsError when the cell exists, OSError when it cannot be written.
    ``closes``: the run_id of the task's own (partial) run, when it wrote one: run.json's
    ``closes``, so the report orders the cell after that run even within one second."""
    cell_dir.mkdir()
    # The variant as the task recorded it: id, runtime, torch, accelerator (no image fields).
    written = Variant(variant.id, variant.runtime, variant.accelerator, variant.torch, source="")
    suite = properties.suite(fp, written.in_lane(lane), cell_dir.name, repro.__version__)
    suite.update({"slurm.job_id": task, "slurm.target": target})
    props = {"slurm.job_id": task}
    if state is not None:
        props.update(
            {
                "slurm.state": state.state,
                "slurm.reason": state.reason,
                "slurm.exit_code": state.exit_code,
                "slurm.node": state.node,
                "slurm.state_source": state.source,
            }
        )
    row = table.row(verdict.signature)
    if row.source:
        props[properties.SOURCE] = row.source
    tail = _log_tail(log_path) if log_path is not None else ""
    detail = f"{verdict.message}\nworkaround: {row.workaround}\n"
    if tail:
        detail += f"\n--- last lines of {log_path}\n{tail}\n"
    result = CaseResult(
        scenario=SCENARIO,
        case_id=CASE_ID,
        outcome=Outcome.ERROR,
        signature=verdict.signature,
        message=verdict.message,
        detail=detail,
        properties={k: v for k, v in props.items() if v},
    )
    (cell_dir / "fingerprint.json").write_text(
        json.dumps(fp.to_json(), indent=2, sort_keys=True) + "\n"
    )
    junit = cell_dir / "junit.xml"
    write_junit(junit, [result], suite, hostname=fp.host.hostname or "")
    # The cell is as new as the task's end, so it is newer than the task's own partial run (in
    # the same second too: ``closes``) and older than any later run of the same lane (which
    # then replaces it).
    when = (state.end if state else None) or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_run_info(
        cell_dir,
        {
            "schema": 1,
            "run_id": cell_dir.name,
            "variant": {**written.key(), "source": "slurm"},
            "host_key": host_key(fp),
            "started": when,
            "finished": when,
            "repro_version": repro.__version__,
            "cases_total": 1,
            "cases_done": 1,
            **({"closes": closes} if closes else {}),
        },
    )
    return junit


@dataclass(frozen=True)
class Collected:
    """What :func:`collect` found for one task: its name (``12_3``), label, state (None:
    unknown), the cell it wrote (None: none needed, or it existed) and why."""

    task: str
    label: str
    state: TaskState | None
    cell: Path | None
    verdict: Verdict | None


def _log_file(submission: Submission, array: SubmittedArray, index: int) -> Path:
    from repro.slurm.script import LOGS_DIR

    return submission.path / LOGS_DIR / f"{array.name}-{array.job_id}_{index}.out"


def collect(
    submission: Submission, scheduler: Scheduler, variants: Mapping[str, Variant]
) -> list[Collected]:
    """Every task of ``submission``: its state, and a scheduler cell where :func:`verdict`
    asks for one (written next to the task's run directory in the results root).
    ``variants``: matrix.yaml's variants by id (a venv or container task that never wrote
    ``run.json`` is recorded under its matrix variant). Raises OSError when a cell cannot be
    written."""
    states = scheduler.states([a.job_id for a in submission.arrays])
    runs: dict[tuple[str, int], TaskRun] = {}
    for array in submission.arrays:
        for task in array.tasks:
            state = states.get((array.job_id, task.index))
            restarts = state.restarts if state else 0
            runs[(array.job_id, task.index)] = TaskRun.read(
                submission.run_dir(array, task.index, restarts)
            )
    by_node: dict[str, Fingerprint] = {}
    for (job_id, index), run in runs.items():
        state = states.get((job_id, index))
        if run.fingerprint is not None and state is not None and state.node:
            by_node.setdefault(state.node, run.fingerprint)

    out = []
    for array in submission.arrays:
        for task in array.tasks:
            index, lane, variant_id, label = task.index, task.lane, task.variant_id, task.label
            name = f"{array.job_id}_{index}"
            state = states.get((array.job_id, index))
            run = runs[(array.job_id, index)]
            found = verdict(name, state, run)
            cell = None
            if found is not None:
                cell_dir = run.path.with_name(run.path.name + CELL_SUFFIX)
                node = state.node if state else ""
                fp = run.fingerprint or by_node.get(node) or _minimal_fingerprint(node)
                variant = run.variant
                if variant is None and variant_id in variants:
                    variant = variants[variant_id]
                if variant is None:
                    unknown = variant_id or (UNKNOWN_HOST_LANE if lane == HOST else label)
                    variant = Variant(unknown, runtime="", accelerator="", torch="", source="")
                if not cell_dir.exists():
                    write_cell(
                        cell_dir,
                        verdict=found,
                        state=state,
                        task=name,
                        lane=lane,
                        variant=variant,
                        fp=fp,
                        log_path=_log_file(submission, array, index),
                        target=array.target,
                        closes=run.path.name if run.exists else None,
                    )
                    cell = cell_dir
            out.append(Collected(name, label, state, cell, found))
    return out
