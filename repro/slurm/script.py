"""The batch scripts of a submission, as text: one per job array and one for the report job.

Readable on purpose (an admin reads them before a job runs on their cluster, and a user reruns
one task by hand): the ``#SBATCH`` lines say what each task asks for, a table in the header
says what each ``SLURM_ARRAY_TASK_ID`` runs, and each task's command is written out in full.
The scripts are pure functions of a :class:`repro.slurm.plan.SlurmPlan`
(``tests/fixtures/slurm/`` holds their golden copies).

Run time of a task, in order: pick its label, make its run directory under the shared results
root with ``mkdir`` (never ``-p``: a directory that exists is never reused, the task exits 3
instead; a requeued task, ``SLURM_RESTART_COUNT`` > 0, gets ``.r<count>``), then ``exec`` its
lane's command with the task's job id, node and target as testsuite properties
(``slurm.job_id``, ``slurm.node``, ``slurm.target``). Every value that reaches the script was
validated (``repro.config.slurm``) and is quoted with ``shlex.quote``; the only expansions are
the script's own variables and Slurm's.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from repro.slurm import containers
from repro.slurm.plan import CONTAINER, HOST, VENV, ArrayPlan, SlurmPlan, Task

#: Testsuite properties every task's run carries (``repro run --property``).
PROP_JOB_ID = "slurm.job_id"
PROP_NODE = "slurm.node"
PROP_TARGET = "slurm.target"
LOGS_DIR = "logs"
FINGERPRINTS_DIR = "fingerprints"
REPORT_SCRIPT = "report.sbatch"
#: `repro report`'s flag that makes it exit 1 on problems (issue 29), declared in
#: repro/cli/options.py: the report job's exit status (and so ``repro slurm --wait``'s) says
#: whether the matrix has an unexpected red, after the matrix is written.
REPORT_EXIT_ON_PROBLEMS_FLAG = "--fail-on-problems"


@dataclass(frozen=True)
class Var:
    """A shell variable in a command line: rendered ``"${NAME}"`` (``"${NAME[@]}"`` for an
    array), never quoted away."""

    name: str
    array: bool = False

    def render(self) -> str:
        return f'"${{{self.name}[@]}}"' if self.array else f'"${{{self.name}}}"'


Arg = str | Var
PYTHON, RUN_DIR, PROPS, HOST_FP = Var("PYTHON"), Var("RUN_DIR"), Var("PROPS", True), Var("HOST_FP")


def render(argv: list[Arg]) -> str:
    """A command line for bash: strings quoted by ``shlex.quote``, variables expanded."""
    return " ".join(a.render() if isinstance(a, Var) else shlex.quote(a) for a in argv)


def script_name(array: ArrayPlan) -> str:
    return f"{array.name}.sbatch"


def _patterns(plan: SlurmPlan) -> list[Arg]:
    return [arg for pattern in plan.options.patterns for arg in ("-k", pattern)]


def task_command(plan: SlurmPlan, task: Task) -> list[list[Arg]]:
    """The command(s) of one task, the last one ``exec``-ed: the host lane's ``repro run``,
    the venv lane's ``repro venv-run``, or the host's fingerprint then the container lane's
    ``repro run`` inside the variant's image."""
    config = str(plan.config)
    run_tail: list[Arg] = [*plan.options.run_args, PROPS]
    if task.lane == HOST:
        return [
            [PYTHON, "-m", "repro", "run", "--config", config, "--run-dir", RUN_DIR,
             *_patterns(plan), *run_tail]
        ]  # fmt: skip
    assert task.variant is not None
    if task.lane == VENV:
        return [
            [PYTHON, "-m", "repro", "venv-run", task.variant.id, "--config", config,
             *_patterns(plan), *plan.options.venv_args, "--", "--run-dir", RUN_DIR, *run_tail]
        ]  # fmt: skip
    if task.lane == CONTAINER:
        assert plan.settings.image_repo is not None  # the loader requires it for this lane
        run = containers.ContainerRun(
            task.variant, plan.settings.image_repo, plan.results_dir, plan.config
        )
        inner: list[Arg] = [
            "python", "-m", "repro", "run", "--config", config, "--as-variant", task.variant.id,
            "--run-dir", RUN_DIR, "--fingerprint", HOST_FP, *_patterns(plan), *run_tail,
        ]  # fmt: skip
        fingerprint: list[Arg] = [PYTHON, "-m", "repro", "env", "--json"]
        return [fingerprint, containers.command(plan.settings.container_runtime, run, inner)]  # type: ignore[arg-type]
    raise ValueError(f"unknown lane {task.lane!r}")


def _sbatch_lines(
    plan: SlurmPlan, array: ArrayPlan | None, job_name: str, output: str
) -> list[str]:
    s = plan.settings
    lines = [f"--job-name={job_name}"]
    if array is not None:
        lines.append(f"--array=0-{len(array.tasks) - 1}")
    lines += ["--nodes=1", "--ntasks=1"]
    if s.partition:
        lines.append(f"--partition={s.partition}")
    if s.account:
        lines.append(f"--account={s.account}")
    if s.time_limit:
        lines.append(f"--time={s.time_limit}")
    if array is not None:
        if s.cpus_per_task:
            lines.append(f"--cpus-per-task={s.cpus_per_task}")
        if s.mem:
            lines.append(f"--mem={s.mem}")
        if array.gpus:
            gpus = f"--gres=gpu:{array.gpus}" if s.gpu_request == "gres" else f"--gpus={array.gpus}"
            lines.append(gpus)
        if array.target.constraint:
            lines.append(f"--constraint={array.target.constraint}")
        if array.target.nodelist:
            lines.append(f"--nodelist={array.target.nodelist}")
    lines += [
        f"--output={output}",
        "--open-mode=append",
        f"--chdir={plan.submission_dir}",
    ]
    # No quoting: sbatch reads these lines itself, and every value was checked to hold no
    # whitespace or shell character (repro.config.slurm, and the results root in build_plan).
    return [f"#SBATCH {line}" for line in lines]


def _describe(task: Task, python: str) -> str:
    if task.lane == HOST:
        return f"the host lane: {python} on the node (its torch decides the variant)"
    assert task.variant is not None
    pin = f"torch {task.variant.torch} ({task.variant.runtime})"
    if task.lane == VENV:
        return f"the venv lane: a uv environment with {pin}"
    return f"the container lane: the image of {task.variant.id}, {pin}"


def array_script(plan: SlurmPlan, array: ArrayPlan) -> str:
    """The batch script of ``array`` (bash, ``#SBATCH`` lines first)."""
    s = plan.settings
    width = max(len(task.label) for task in array.tasks)
    output = f"{plan.submission_dir}/{LOGS_DIR}/{array.name}-%A_%a.out"
    where = (
        f"node {array.target.nodelist}"
        if array.target.nodelist
        else f"node group {array.target.name} ({array.target.constraint})"
        if array.target.constraint
        else "any node of the partition"
    )
    lines = [
        "#!/bin/bash",
        f"# repro-matrix Slurm lane: array {array.name!r} of submission {plan.stamp} "
        "(written by `repro slurm`).",
        f"# {len(array.tasks)} task(s) on {where}, {array.gpus or 'no'} GPU(s) each; each "
        "writes ONE run directory",
        f"# {plan.results_dir}/{plan.stamp}-slurm<job>_<task>-<label>, never reused "
        "(a requeued task gets .r<N>).",
        "#",
        f"#   {'task':<4}  {'label':<{width}}  what runs",
    ]
    lines += [
        f"#   {task.index:<4}  {task.label:<{width}}  {_describe(task, s.python)}"
        for task in array.tasks
    ]
    lines += _sbatch_lines(plan, array, f"repro-{array.name}", output)
    lines += [
        "set -u",
        "export PYTHONUNBUFFERED=1",
        f"PYTHON={shlex.quote(s.python)}",
        f"RESULTS={shlex.quote(str(plan.results_dir))}",
        f"SUBMISSION={shlex.quote(str(plan.submission_dir))}",
        'TASK="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
        'case "${SLURM_ARRAY_TASK_ID}" in',
    ]
    lines += [f"  {task.index}) LABEL={shlex.quote(task.label)} ;;" for task in array.tasks]
    lines += [
        '  *) echo "repro slurm: array task ${SLURM_ARRAY_TASK_ID} is not in this script" >&2; exit 2 ;;',
        "esac",
        f'RUN_DIR="${{RESULTS}}/{plan.stamp}-slurm${{TASK}}-${{LABEL}}"',
        'if [ "${SLURM_RESTART_COUNT:-0}" != 0 ]; then RUN_DIR="${RUN_DIR}.r${SLURM_RESTART_COUNT}"; fi',
        'mkdir -- "${RUN_DIR}" || { echo "repro slurm: cannot make ${RUN_DIR} (a run directory is never reused)" >&2; exit 3; }',
        f'HOST_FP="${{SUBMISSION}}/{FINGERPRINTS_DIR}/${{TASK}}.json"',
        "PROPS=(",
        f'  --property "{PROP_JOB_ID}=${{TASK}}"',
        f'  --property "{PROP_NODE}=${{SLURMD_NODENAME:-$(hostname -s)}}"',
        f"  --property {shlex.quote(f'{PROP_TARGET}={array.target.name}')}",
        ")",
        'echo "repro slurm: task ${TASK} (${LABEL}) on ${SLURMD_NODENAME:-$(hostname -s)} -> ${RUN_DIR}" >&2',
        'case "${SLURM_ARRAY_TASK_ID}" in',
    ]
    for task in array.tasks:
        commands = task_command(plan, task)
        body = []
        for command in commands[:-1]:  # the container lane's host fingerprint
            body.append(
                f'mkdir -p -- "${{SUBMISSION}}/{FINGERPRINTS_DIR}" && '
                f"{render(command)} > {HOST_FP.render()} || exit 3"
            )
        body.append(f"exec {render(commands[-1])}")
        lines.append(f"  {task.index})")
        lines += [f"    {line}" for line in body]
        lines.append("    ;;")
    lines += ["esac", ""]
    return "\n".join(lines)


def report_command(plan: SlurmPlan) -> list[str]:
    """``repro report RESULTS --output-dir RESULTS --config CONFIG`` (``--no-coverage`` when
    the submission ran a subset of the variants), plus :data:`REPORT_EXIT_ON_PROBLEMS_FLAG`."""
    root = str(plan.results_dir)
    argv = ["report", root, "--output-dir", root, "--config", str(plan.config)]
    if not plan.coverage:
        argv.append("--no-coverage")
    argv.append(REPORT_EXIT_ON_PROBLEMS_FLAG)
    return argv


def report_script(plan: SlurmPlan) -> str:
    """The report job's batch script. Its dependency (``afterany`` on every array) is given on
    the ``sbatch`` command line (:func:`report_sbatch_argv`): the job ids exist only then."""
    s = plan.settings
    output = f"{plan.submission_dir}/{LOGS_DIR}/report-%j.out"
    lines = [
        "#!/bin/bash",
        f"# repro-matrix Slurm lane: the report of submission {plan.stamp} "
        "(written by `repro slurm`).",
        "# Runs once every task of the submission's arrays has ended, whatever its state",
        "# (sbatch --dependency=afterany:<arrays>), names what the scheduler did to each task",
        "# (TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, CANCELLED: a red cell with an",
        "# infra.slurm_* signature; finished cases stay), then merges the results root.",
        *_sbatch_lines(plan, None, "repro-report", output),
        "set -u",
        "export PYTHONUNBUFFERED=1",
        f"PYTHON={shlex.quote(s.python)}",
        f"{render([PYTHON, '-m', 'repro', 'slurm-collect', str(plan.submission_dir)])} \\",
        '  || echo "repro slurm: slurm-collect exited $?; the report shows what there is" >&2',
        f"exec {render([PYTHON, '-m', 'repro', *report_command(plan)])}",
        "",
    ]
    return "\n".join(lines)


def array_sbatch_argv(plan: SlurmPlan, array: ArrayPlan) -> list[str]:
    """``sbatch --parsable SCRIPT`` for one array."""
    return ["sbatch", "--parsable", str(plan.submission_dir / script_name(array))]


def report_sbatch_argv(plan: SlurmPlan, array_job_ids: list[str]) -> list[str]:
    """``sbatch --parsable --dependency=afterany:ID[:ID...] report.sbatch``."""
    return [
        "sbatch",
        "--parsable",
        f"--dependency=afterany:{':'.join(array_job_ids)}",
        str(plan.submission_dir / REPORT_SCRIPT),
    ]
