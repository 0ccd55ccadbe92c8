"""The steps of ``repro slurm``: write the submission, submit it, follow it.

write (scripts + ``submission.json`` in a new ``<results>/.slurm/<stamp>/``) -> submit each
array (``sbatch --parsable``) -> submit the report job (``--dependency=afterany`` on every
array) -> record the job ids. If ``sbatch`` refuses anything, the arrays already submitted are
cancelled (a half submission would leave tasks whose report never runs) and the error says
what sbatch said. :func:`task_rows` is ``repro slurm-status``'s table. Never imports torch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repro.errors import FatalError
from repro.slurm import script
from repro.slurm.cells import CELL_SUFFIX
from repro.slurm.plan import SlurmPlan, Submission, SubmittedArray, SubmittedTask
from repro.slurm.scheduler import Scheduler, TaskState

Say = Callable[[str], None]


def new_submission_dir(plan: SlurmPlan) -> SlurmPlan:
    """Create the submission directory (and its ``logs/``); a second submission within the
    same second gets ``-2``, ``-3``... Returns the plan with the directory it got. Raises
    FatalError when the results root cannot be written."""
    parent = plan.submission_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 100):
            stamp = plan.stamp if attempt == 1 else f"{plan.stamp}-{attempt}"
            path = parent / stamp
            try:
                path.mkdir()
            except FileExistsError:
                continue
            (path / script.LOGS_DIR).mkdir()
            return dataclasses.replace(plan, submission_dir=path, stamp=stamp)
    except OSError as exc:
        raise FatalError(f"cannot write the submission under {parent}: {exc}") from None
    raise FatalError(f"cannot make a new submission directory under {parent}")


def write_scripts(plan: SlurmPlan) -> list[Path]:
    """Write every array's script and the report script into the submission directory."""
    paths = []
    for array in plan.arrays:
        path = plan.submission_dir / script.script_name(array)
        path.write_text(script.array_script(plan, array))
        paths.append(path)
    report = plan.submission_dir / script.REPORT_SCRIPT
    report.write_text(script.report_script(plan))
    return [*paths, report]


def _record(plan: SlurmPlan, job_ids: list[str], report: str | None) -> Submission:
    settings = dataclasses.asdict(plan.settings)
    return Submission(
        path=plan.submission_dir,
        stamp=plan.stamp,
        config=plan.config,
        results_dir=plan.results_dir,
        arrays=tuple(
            SubmittedArray(
                name=array.name,
                job_id=job_id,
                target=array.target.name,
                tasks=tuple(
                    SubmittedTask(t.index, t.lane, t.variant.id if t.variant else None, t.label)
                    for t in array.tasks
                ),
            )
            for array, job_id in zip(plan.arrays, job_ids, strict=True)
        ),
        report_job_id=report,
        submitted_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        settings={k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
    )


def submit(plan: SlurmPlan, scheduler: Scheduler, say: Say) -> Submission:
    """Submit every array, then the report job; write and return the record. Raises
    FatalError (after cancelling what was submitted) when sbatch refuses one."""
    job_ids: list[str] = []
    try:
        for array in plan.arrays:
            job_id = scheduler.submit(script.array_sbatch_argv(plan, array))
            job_ids.append(job_id)
            say(f"array {array.name}: job {job_id} ({len(array.tasks)} task(s))")
        report = scheduler.submit(script.report_sbatch_argv(plan, job_ids))
    except FatalError:
        if job_ids:
            scheduler.cancel(job_ids)
            say(f"cancelled the arrays already submitted: {', '.join(job_ids)}")
        raise
    say(f"report: job {report} (afterany:{':'.join(job_ids)})")
    record = _record(plan, job_ids, report)
    record.write()
    return record


@dataclass(frozen=True)
class TaskRow:
    """One line of ``repro slurm-status``: the task (``12_3``), its label, the scheduler's
    state (``unknown`` when no source knows it), where it came from, the node, its run
    directory (None when absent) and its scheduler cell (None when none was written)."""

    task: str
    label: str
    state: str
    source: str
    node: str
    run_dir: Path | None
    cell: Path | None


def task_rows(
    submission: Submission, scheduler: Scheduler
) -> tuple[list[TaskRow], TaskState | None]:
    """Every task of the submission with its state, and the report job's state."""
    ids = [a.job_id for a in submission.arrays]
    report = submission.report_job_id
    states = scheduler.states(ids + ([report] if report else []))
    rows = []
    for array in submission.arrays:
        for task in array.tasks:
            index, label = task.index, task.label
            state = states.get((array.job_id, index))
            run_dir = submission.run_dir(array, index, state.restarts if state else 0)
            cell = run_dir.with_name(run_dir.name + CELL_SUFFIX)
            rows.append(
                TaskRow(
                    task=f"{array.job_id}_{index}",
                    label=label,
                    state=state.state if state else "unknown",
                    source=state.source if state else "-",
                    node=state.node if state else "",
                    run_dir=run_dir if run_dir.is_dir() else None,
                    cell=cell if cell.is_dir() else None,
                )
            )
    return rows, states.get((report, None)) if report else None
