"""What a Slurm submission runs: its tasks, grouped into job arrays, and its record on disk.

A **task** is one lane of one variant (the host lane: the nodes' own interpreter, whose torch
decides the variant) on one **target** (a node, a node group, or anywhere in the partition).
Slurm gives every task of a job array one resource request (sbatch(1): ``--array`` "multiple
jobs to be executed with identical parameters"), so tasks are grouped into one array per target
and GPU request: a cpu variant's task asks for no GPU, a cuda/rocm variant's (and the host
lane's) for ``gpus_per_task``. With one target and one kind of variant that is ONE array.

Every task writes one run directory under the shared results root, named
``<stamp>-slurm<array job>_<task>-<label>`` (a requeued task adds ``.r<restart count>``), so no
run directory is ever reused, even when a rebuilt cluster counts job ids from 1 again. The
submission's own files (batch scripts, task logs, ``submission.json``) live in
``<results root>/.slurm/<stamp>/``.

``submission.json`` (:class:`Submission`) is what ``repro slurm-status`` and ``repro
slurm-collect`` read: the plan and the job ids ``sbatch`` answered. Never imports torch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repro.config import Matrix, Variant
from repro.config.slurm import PATH_RE, SlurmSettings, SlurmTarget
from repro.errors import ConfigError
from repro.junit.writer import write_atomic

#: Where submissions live under the results root (hidden: ``repro report`` reads JUnit files).
SUBMISSIONS_DIR = ".slurm"
RECORD_NAME = "submission.json"
RECORD_SCHEMA = 1
HOST, VENV, CONTAINER = "host", "venv", "container"


@dataclass(frozen=True)
class Task:
    """One array task: ``index`` is its ``SLURM_ARRAY_TASK_ID``; ``variant`` is None for the
    host lane (its interpreter's torch names the variant when it runs)."""

    index: int
    lane: str
    variant: Variant | None = None

    @property
    def label(self) -> str:
        """``host``, ``venv-<variant id>`` or ``container-<variant id>``: the tail of its run
        directory's name."""
        return self.lane if self.variant is None else f"{self.lane}-{self.variant.id}"

    @property
    def wants_gpu(self) -> bool:
        """Whether it asks for the GPUs of ``gpus_per_task``: a cuda/rocm variant, or the host
        lane (it tests whatever torch the GPU nodes have)."""
        return self.variant is None or self.variant.accelerator != "cpu"


@dataclass(frozen=True)
class ArrayPlan:
    """One ``sbatch --array`` job: its ``name`` (job name ``repro-<name>``, script
    ``<name>.sbatch``), where it runs, the GPUs each task asks for (0: none) and its tasks."""

    name: str
    target: SlurmTarget
    gpus: int
    tasks: tuple[Task, ...]


@dataclass(frozen=True)
class TaskOptions:
    """What every task passes on: ``patterns`` (``-k``), ``venv_args`` (the venv lane's wheel
    sources as ``repro venv-run`` options, e.g. ``("--find-links", "/opt/wheels")``) and
    ``run_args`` (more ``repro run`` options, e.g. ``("-j", "1")``)."""

    patterns: tuple[str, ...] = ()
    venv_args: tuple[str, ...] = ()
    run_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlurmPlan:
    """Everything a submission needs, paths absolute: the settings (matrix.yaml's ``slurm:``
    with the command line's overrides), the matrix file, the results root every node shares,
    the submission directory and its ``stamp`` (UTC, ``20261127T034500Z``), the arrays, the
    options the tasks pass on, and whether the report warns about variants without results
    (``coverage``: only when every variant of the file was submitted)."""

    settings: SlurmSettings
    config: Path
    results_dir: Path
    submission_dir: Path
    stamp: str
    arrays: tuple[ArrayPlan, ...]
    options: TaskOptions = TaskOptions()
    coverage: bool = False

    @property
    def tasks(self) -> tuple[Task, ...]:
        return tuple(task for array in self.arrays for task in array.tasks)

    def run_dir_name(self, array_job_id: str, task: Task, restarts: int = 0) -> str:
        """The run directory a task writes (what the batch script computes at run time)."""
        name = f"{self.stamp}-slurm{array_job_id}_{task.index}-{task.label}"
        return f"{name}.r{restarts}" if restarts else name


def _array_name(target: SlurmTarget, gpu: bool, split: bool) -> str:
    return f"{target.name}-{'gpu' if gpu else 'cpu'}" if split else target.name


def build_plan(
    matrix: Matrix,
    settings: SlurmSettings,
    variants: list[Variant],
    *,
    stamp: str,
    results_dir: Path,
    options: TaskOptions = TaskOptions(),
) -> SlurmPlan:
    """The arrays of one submission: per target (``settings.targets()``), a host-lane task when
    ``host`` is among the lanes, then one task per variant for each of ``venv`` and
    ``container``; split into a GPU and a CPU array when the target has both kinds and
    ``gpus_per_task`` > 0. Raises ConfigError when nothing would run (no variant selected for
    a variant lane and no host lane)."""
    results_dir = results_dir.resolve()
    if not PATH_RE.match(str(results_dir)):
        raise ConfigError(
            f"results root {results_dir}: expected a path without spaces or shell characters "
            "(it is written into #SBATCH lines and batch scripts)"
        )
    arrays: list[ArrayPlan] = []
    for target in settings.targets():
        tasks: list[Task] = []
        if HOST in settings.lanes:
            tasks.append(Task(0, HOST))
        for lane in (VENV, CONTAINER):
            if lane in settings.lanes:
                tasks += [Task(0, lane, variant) for variant in variants]
        if not tasks:
            raise ConfigError(
                f"{matrix.path}: slurm: nothing to submit (lanes {', '.join(settings.lanes)} "
                "and no variant selected)",
                hint="select variants with --variant GLOB or add the host lane (--lane host)",
            )
        asks = bool(settings.gpus_per_task)
        groups = {gpu: [t for t in tasks if (t.wants_gpu and asks) == gpu] for gpu in (True, False)}
        groups = {gpu: ts for gpu, ts in groups.items() if ts}
        for gpu, group in groups.items():
            numbered = tuple(replace(task, index=i) for i, task in enumerate(group))
            arrays.append(
                ArrayPlan(
                    _array_name(target, gpu, len(groups) > 1),
                    target,
                    settings.gpus_per_task if gpu else 0,
                    numbered,
                )
            )
    submission_dir = results_dir / SUBMISSIONS_DIR / stamp
    return SlurmPlan(
        settings=settings,
        config=matrix.path.resolve(),
        results_dir=results_dir,
        submission_dir=submission_dir,
        stamp=stamp,
        arrays=tuple(arrays),
        options=options,
        coverage={v.id for v in variants} == {v.id for v in matrix.variants}
        and VENV in settings.lanes,
    )


# ---- the record -------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmittedTask:
    """One task as recorded: its index, lane, variant id (None for the host lane) and label."""

    index: int
    lane: str
    variant_id: str | None
    label: str


@dataclass(frozen=True)
class SubmittedArray:
    """One array as submitted: its name, ``sbatch``'s job id, its target's name and its tasks
    (index order)."""

    name: str
    job_id: str
    target: str
    tasks: tuple[SubmittedTask, ...]


@dataclass(frozen=True)
class Submission:
    """``submission.json``: the stamp, the matrix file, the results root, the arrays with their
    job ids and the report job's id (None before it is submitted). ``path`` is the submission
    directory it was read from."""

    path: Path
    stamp: str
    config: Path
    results_dir: Path
    arrays: tuple[SubmittedArray, ...] = ()
    report_job_id: str | None = None
    submitted_at: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def run_dir(self, array: SubmittedArray, index: int, restarts: int = 0) -> Path:
        """The run directory task ``index`` of ``array`` writes (``.r<restarts>`` after a
        requeue), per :meth:`SlurmPlan.run_dir_name`."""
        label = next(t.label for t in array.tasks if t.index == index)
        name = f"{self.stamp}-slurm{array.job_id}_{index}-{label}"
        return self.results_dir / (f"{name}.r{restarts}" if restarts else name)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": RECORD_SCHEMA,
            "stamp": self.stamp,
            "config": str(self.config),
            "results_dir": str(self.results_dir),
            "submitted_at": self.submitted_at,
            "settings": self.settings,
            "arrays": [
                {
                    "name": a.name,
                    "job_id": a.job_id,
                    "target": a.target,
                    "tasks": [
                        {
                            "index": t.index,
                            "lane": t.lane,
                            "variant": t.variant_id,
                            "label": t.label,
                        }
                        for t in a.tasks
                    ],
                }
                for a in self.arrays
            ],
            "report_job_id": self.report_job_id,
        }

    def write(self) -> None:
        """Atomically (re)write ``<path>/submission.json``. Raises OSError."""
        data = json.dumps(self.to_json(), indent=2, sort_keys=True).encode() + b"\n"
        write_atomic(self.path / RECORD_NAME, data)

    @classmethod
    def read(cls, path: Path) -> Submission:
        """The record in submission directory ``path`` (or the file itself). Raises ConfigError
        naming the file and the field when it is missing or malformed."""
        path = Path(path)
        file = path if path.name == RECORD_NAME else path / RECORD_NAME
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(
                f"{file}: no such submission record",
                hint="give the directory `repro slurm` printed (<results>/.slurm/<stamp>)",
            ) from None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{file}: unreadable submission record: {exc}") from None
        try:
            if data.get("schema") != RECORD_SCHEMA:
                raise ValueError(f"schema {data.get('schema')!r}, expected {RECORD_SCHEMA}")
            arrays = tuple(
                SubmittedArray(
                    name=str(a["name"]),
                    job_id=_job_id(a["job_id"]),
                    target=str(a["target"]),
                    tasks=tuple(
                        SubmittedTask(
                            int(t["index"]), str(t["lane"]), t["variant"], str(t["label"])
                        )
                        for t in a["tasks"]
                    ),
                )
                for a in data["arrays"]
            )
            report = data.get("report_job_id")
            return cls(
                path=file.parent,
                stamp=str(data["stamp"]),
                config=Path(data["config"]),
                results_dir=Path(data["results_dir"]),
                arrays=arrays,
                report_job_id=_job_id(report) if report is not None else None,
                submitted_at=str(data.get("submitted_at", "")),
                settings=dict(data.get("settings") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{file}: malformed submission record: {exc}") from None


_JOB_ID = re.compile(r"^\d{1,12}$")


def _job_id(value: Any) -> str:
    if not isinstance(value, str) or not _JOB_ID.match(value):
        raise ValueError(f"job id {value!r} is not a number")
    return value


def latest(results_dir: Path) -> Path:
    """The newest submission directory under ``results_dir`` (stamps sort by time). Raises
    ConfigError when there is none."""
    root = Path(results_dir) / SUBMISSIONS_DIR
    found = (
        sorted(p for p in root.glob("*") if (p / RECORD_NAME).is_file()) if root.is_dir() else []
    )
    if not found:
        raise ConfigError(f"{root}: no Slurm submission here", hint="submit one with `repro slurm`")
    return found[-1]
