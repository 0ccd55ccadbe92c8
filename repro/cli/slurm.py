"""``repro slurm``, ``repro slurm-status`` and ``repro slurm-collect``: the Slurm lane
(options and printing only; the lane is :mod:`repro.slurm`).

- ``repro slurm [--variant GLOB] [--lane host|venv|container] [--partition P] ... [-- RUN_ARGS]``
  writes the batch scripts of matrix.yaml's ``slurm:`` section (command line first) into
  ``<results>/.slurm/<stamp>/``, submits the arrays and the report job, and prints that
  directory on standard output; ``--dry-run`` prints the scripts instead and writes nothing;
  ``--wait`` follows the report job to its end.
- ``repro slurm-status [SUBMISSION]``: every task's state (squeue, sacct, scontrol, the
  job-completion log), run directory and scheduler cell.
- ``repro slurm-collect [SUBMISSION]``: the report job's first step: a red cell for every task
  the scheduler ended (TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, CANCELLED...).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from repro import config as matrix_mod
from repro.cli import options
from repro.cli.venv import add_source_arguments
from repro.config.slurm import SlurmSettings
from repro.errors import EXIT_CASES_FAILED, EXIT_FATAL, EXIT_OK, ConfigError
from repro.slurm import cells, plan, script, submit
from repro.slurm.scheduler import Scheduler

PROG = "repro"
#: Seconds between two polls of ``--wait``.
WAIT_POLL_S = 2.0


def say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``slurm``, ``slurm-status`` and ``slurm-collect``."""
    sub = subparsers.add_parser(
        "slurm",
        help="submit the matrix to a Slurm cluster: job arrays (node x lane x variant) and a "
        "report job",
        description="Turn matrix.yaml into Slurm job arrays (one task per node or node group x "
        "lane x variant, each writing one run directory under a results root every node "
        "shares) and a report job that runs after them (afterany), names what the scheduler "
        "did to each task and builds the matrix. Settings: matrix.yaml's slurm: section, "
        "overridden by the options below. Arguments after -- go to every task's `repro run`.",
    )
    options.add(sub, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(sub, "variants", "patterns", "results_dir")
    group = sub.add_argument_group("Slurm (else matrix.yaml's slurm: section)")
    options.add(group, *(name for name in SETTING_OPTIONS if name != "image_repo"))
    options.add(group, "image_repo", default=None)
    add_source_arguments(sub)
    options.add(sub, "dry_run", "wait", "json", "run_args")
    sub.set_defaults(handler=cmd_slurm)

    status = subparsers.add_parser(
        "slurm-status",
        help="the state of every task of a Slurm submission",
        description="Every task of a submission: the scheduler's state (sacct, scontrol, the "
        "job-completion log, squeue), its node, run directory and scheduler cell, and the "
        "report job's state.",
    )
    options.add(status, "submission", "results_dir", "json")
    options.add(status, "config", default=matrix_mod.DEFAULT_FILE)
    status.set_defaults(handler=cmd_status)

    collect = subparsers.add_parser(
        "slurm-collect",
        help="write a red cell for every task of a submission the scheduler ended "
        "(the report job's first step)",
        description="Ask the scheduler what became of each task of a submission and write a "
        "scheduler cell (testsuite slurm, an infra.slurm_* signature, the job id) beside the "
        "run directory of each task it ended: TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, "
        "CANCELLED, BOOT_FAIL, DEADLINE, or ended without a result. Cells already written "
        "are kept.",
    )
    options.add(collect, "submission", "results_dir")
    options.add(collect, "config", default=matrix_mod.DEFAULT_FILE)
    collect.set_defaults(handler=cmd_collect)


#: The ``repro slurm`` options that override matrix.yaml's ``slurm:`` settings: option name
#: (``repro.cli.options``) -> :class:`~repro.config.slurm.SlurmSettings` field.
SETTING_OPTIONS = {
    "partition": "partition",
    "account": "account",
    "time_limit": "time_limit",
    "gpus_per_task": "gpus_per_task",
    "gpu_request": "gpu_request",
    "cpus_per_task": "cpus_per_task",
    "mem": "mem",
    "constraint": "constraint",
    "nodelist": "nodes",
    "lanes": "lanes",
    "node_python": "python",
    "container_runtime": "container_runtime",
    "image_repo": "image_repo",
}


def settings_from(args: argparse.Namespace, matrix: matrix_mod.Matrix) -> SlurmSettings:
    """matrix.yaml's ``slurm:`` (or the defaults) with the command line's values in place."""
    values = {field: getattr(args, name, None) for name, field in SETTING_OPTIONS.items()}
    values["lanes"] = tuple(dict.fromkeys(args.lanes)) if args.lanes else None
    settings = (matrix.slurm or SlurmSettings()).with_overrides(values)
    if "container" in settings.lanes and not settings.image_repo:
        raise ConfigError(
            "repro slurm: the container lane needs the repository the nodes pull images from",
            hint="set slurm.image_repo in matrix.yaml or pass --image-repo",
        )
    return settings


def _absolute(value: str) -> str:
    """A local path as an absolute one (the tasks run in the submission directory); URLs as
    they are."""
    return value if "://" in value else str(Path(value).expanduser().resolve())


def venv_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The venv lane's source options as ``repro venv-run`` arguments for the tasks."""
    out: list[str] = []
    if args.index_url:
        out += ["--index-url", args.index_url]
    for url in args.extra_index_urls:
        out += ["--extra-index-url", url]
    for link in args.find_links:
        out += ["--find-links", _absolute(link)]
    if args.wheelhouse:
        out += ["--wheelhouse", _absolute(args.wheelhouse)]
    if args.env_python:
        python = args.env_python
        out += ["--env-python", _absolute(python) if "/" in python else python]
    if args.env_cache:
        out += ["--env-cache", _absolute(args.env_cache)]
    return tuple(out)


def _run_args(args: argparse.Namespace) -> tuple[str, ...]:
    rest = list(args.run_args or ())
    return tuple(rest[1:] if rest[:1] == ["--"] else rest)


def plan_from(args: argparse.Namespace) -> plan.SlurmPlan:
    """The submission ``args`` describe (nothing written)."""
    matrix = matrix_mod.load(args.config)
    settings = settings_from(args, matrix)
    wants_variants = any(lane in settings.lanes for lane in (plan.VENV, plan.CONTAINER))
    variants = matrix.select_variants(args.variants) if wants_variants else []
    results = Path(args.results_dir or settings.results_dir or matrix.results_dir)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    options_ = plan.TaskOptions(
        patterns=tuple(args.patterns or ()), venv_args=venv_args(args), run_args=_run_args(args)
    )
    return plan.build_plan(
        matrix, settings, variants, stamp=stamp, results_dir=results, options=options_
    )


def _plan_json(p: plan.SlurmPlan, submission: plan.Submission | None) -> dict:
    return {
        "submission": str(p.submission_dir),
        "results_dir": str(p.results_dir),
        "config": str(p.config),
        "arrays": [
            {
                "name": a.name,
                "job_id": submission.arrays[i].job_id if submission else None,
                "gpus": a.gpus,
                "tasks": [
                    {
                        "index": t.index,
                        "lane": t.lane,
                        "variant": t.variant.id if t.variant else None,
                        "label": t.label,
                    }
                    for t in a.tasks
                ],
            }
            for i, a in enumerate(p.arrays)
        ],
        "report_job_id": submission.report_job_id if submission else None,
    }


def cmd_slurm(args: argparse.Namespace) -> int:
    """``repro slurm``: 0 once submitted (``--wait``: see :func:`_wait`), 2 for bad input, 3
    when sbatch refuses (the arrays already submitted are cancelled)."""
    p = plan_from(args)
    s = p.settings
    for name, value in (
        ("results", p.results_dir),
        ("lanes", ", ".join(s.lanes)),
        ("python", s.python),
        ("targets", ", ".join(a.name for a in p.arrays)),
        ("tasks", len(p.tasks)),
    ):
        say(f"{name:<8} {value}")
    if args.dry_run:
        if args.json:
            options.print_json(_plan_json(p, None))
            return EXIT_OK
        for array in p.arrays:
            print(f"# ---- {script.script_name(array)}")
            print(script.array_script(p, array))
        print(f"# ---- {script.REPORT_SCRIPT} (sbatch --dependency=afterany:<the arrays>)")
        print(script.report_script(p))
        return EXIT_OK
    p = submit.new_submission_dir(p)
    submit.write_scripts(p)
    scheduler = Scheduler()
    record = submit.submit(p, scheduler, say)
    say(f"follow it: repro slurm-status {record.path}")
    say(f"the matrix: {p.results_dir}/matrix.html once job {record.report_job_id} ends")
    if args.json:
        options.print_json(_plan_json(p, record))
    else:
        print(record.path)
    if args.wait:
        return _wait(record, scheduler, table_to_stderr=args.json)
    return EXIT_OK


def _wait(record: plan.Submission, scheduler: Scheduler, table_to_stderr: bool = False) -> int:
    """Follow the report job to its end; print every task's state. 0: the report job
    completed; 1: it failed (a red matrix once `repro report` exits 1 on problems, issue 29);
    3: it never ran to its end (cancelled, timed out, unknown)."""
    assert record.report_job_id is not None
    started = time.monotonic()
    final = scheduler.wait(record.report_job_id, poll_s=WAIT_POLL_S, say=say)
    say(f"report job {record.report_job_id}: {final.state if final else 'unknown'} after "
        f"{time.monotonic() - started:.1f} s")  # fmt: skip
    rows, _ = submit.task_rows(record, scheduler)
    _print_rows(rows, sys.stderr if table_to_stderr else sys.stdout)  # --json: stdout is JSON
    if final is not None and final.state == "COMPLETED":
        return EXIT_OK
    if final is not None and final.state == "FAILED":
        return EXIT_CASES_FAILED
    return EXIT_FATAL


def _print_rows(rows: list[submit.TaskRow], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    width = max([5, *(len(r.label) for r in rows)])
    head = f"{'task':<10} {'label':<{width}} {'state':<13} {'source':<8} {'node':<12} run directory"
    print(head, file=out)
    for r in rows:
        where = r.cell or r.run_dir or "-"
        line = f"{r.task:<10} {r.label:<{width}} {r.state:<13} {r.source:<8} {r.node or '-':<12}"
        print(f"{line} {where}", file=out)


def _submission(args: argparse.Namespace) -> plan.Submission:
    if args.submission:
        return plan.Submission.read(Path(args.submission))
    if args.results_dir:
        root = Path(args.results_dir)
    else:
        matrix = matrix_mod.load(args.config)
        root = Path((matrix.slurm and matrix.slurm.results_dir) or matrix.results_dir)
    return plan.Submission.read(plan.latest(root))


def cmd_status(args: argparse.Namespace) -> int:
    """``repro slurm-status``: always 0 (it reports)."""
    record = _submission(args)
    rows, report = submit.task_rows(record, Scheduler())
    if args.json:
        options.print_json(
            {
                "submission": str(record.path),
                "report": {
                    "job_id": record.report_job_id,
                    "state": report.state if report else "unknown",
                },
                "tasks": [
                    {
                        "task": r.task,
                        "label": r.label,
                        "state": r.state,
                        "source": r.source,
                        "node": r.node,
                        "run_dir": str(r.run_dir) if r.run_dir else None,
                        "cell": str(r.cell) if r.cell else None,
                    }
                    for r in rows
                ],
            }
        )
        return EXIT_OK
    print(f"submission {record.path}")
    _print_rows(rows)
    print(f"report job {record.report_job_id}: {report.state if report else 'unknown'}")
    return EXIT_OK


def cmd_collect(args: argparse.Namespace) -> int:
    """``repro slurm-collect``: 0 (the report decides what is red); 3 when a cell cannot be
    written."""
    record = _submission(args)
    try:
        variants = {v.id: v for v in matrix_mod.load(record.config).variants}
    except ConfigError:  # the file changed since: the cells still get their variant ids
        variants = {}
    found = cells.collect(record, Scheduler(), variants)
    for item in found:
        state = item.state.state if item.state else "unknown"
        if item.cell is not None:
            say(f"task {item.task} ({item.label}): {state} -> {item.verdict.signature} "  # type: ignore[union-attr]
                f"({item.cell})")  # fmt: skip
        elif item.verdict is not None:
            say(f"task {item.task} ({item.label}): {state}, cell already written")
        else:
            say(f"task {item.task} ({item.label}): {state}")
    return EXIT_OK
