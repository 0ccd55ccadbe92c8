"""The Slurm lane without a cluster: matrix.yaml's ``slurm:`` section and its command-line
overrides (a test per knob), the batch scripts, the report job and the container command lines
against golden files (``REPRO_UPDATE_GOLDEN=1`` rewrites them), the scheduler's output parsers
on text captured from Slurm 22.05.8, and the scheduler cells written from task states.

The real scheduler runs in tests/test_slurm_cluster.py (slow)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from repro import config
from repro.cli.main import parse
from repro.cli.slurm import settings_from
from repro.config.slurm import SlurmSettings
from repro.errors import ConfigError, FatalError
from repro.report.merge import build_report
from repro.slurm import cells, containers, plan, scheduler, script, submit

GOLDEN = REPO / "tests" / "fixtures" / "slurm"
STAMP = "20261127T120000Z"
MATRIX_PATH = Path("/shared/repro/matrix.yaml")
RESULTS = Path("/shared/results")

BASE = {
    "version": 1,
    "defaults": {"results_dir": "results"},
    "variants": [
        {"runtime": "cpu", "torch": "2.13.0", "base_image": "python:3.12-slim"},
        {
            "runtime": "cu130",
            "torch": "2.13.0",
            "base_image": "nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04",
        },
        {"runtime": "rocm7.2", "torch": "2.13.0", "base_image": "ubuntu:24.04"},
    ],
    "scenarios": {"losses": {"timeout_s": 90}},
}


def matrix_with(slurm: dict | None) -> config.Matrix:
    data = json.loads(json.dumps(BASE))
    if slurm is not None:
        data["slurm"] = slurm
    return config.parse(data, MATRIX_PATH)


def problems(slurm) -> str:
    with pytest.raises(ConfigError) as err:
        matrix_with(slurm)
    return str(err.value)


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("REPRO_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), (
        f"{name} differs from its golden copy; rerun with REPRO_UPDATE_GOLDEN=1 if intended"
    )


# ---- matrix.yaml slurm: ---------------------------------------------------------------------


def test_no_slurm_section_is_none_and_defaults_are_one_venv_target():
    assert matrix_with(None).slurm is None
    settings = SlurmSettings()
    assert settings.lanes == ("venv",) and settings.python == "python3"
    assert [t.name for t in settings.targets()] == ["any"]


def test_every_key_of_the_section_is_read():
    s = matrix_with(
        {
            "partition": "gpu",
            "account": "proj-1",
            "time_limit": "1-02:00:00",
            "gpus_per_task": 2,
            "gpu_request": "gpus",
            "cpus_per_task": 16,
            "mem": "64G",
            "constraint": "a100|h100",
            "nodes": ["gpu01", "gpu02"],
            "groups": {"h100": "h100&nvlink"},
            "lanes": ["host", "venv", "container"],
            "python": "/shared/venv/bin/python",
            "container_runtime": "apptainer",
            "image_repo": "registry.example.com/team/repro-matrix",
            "results_dir": "/shared/results",
        }
    ).slurm
    assert s == SlurmSettings(
        partition="gpu",
        account="proj-1",
        time_limit="1-02:00:00",
        gpus_per_task=2,
        gpu_request="gpus",
        cpus_per_task=16,
        mem="64G",
        constraint="a100|h100",
        nodes=("gpu01", "gpu02"),
        groups=(("h100", "h100&nvlink"),),
        lanes=("host", "venv", "container"),
        python="/shared/venv/bin/python",
        container_runtime="apptainer",
        image_repo="registry.example.com/team/repro-matrix",
        results_dir="/shared/results",
    )
    assert [(t.name, t.nodelist, t.constraint) for t in s.targets()] == [
        ("gpu01", "gpu01", "a100|h100"),
        ("gpu02", "gpu02", "a100|h100"),
        ("h100", None, "h100&nvlink"),
    ]


@pytest.mark.parametrize(
    ("slurm", "expected"),
    [
        ({"partion": "gpu"}, "slurm.partion: expected one of the keys"),
        ({"partion": "gpu"}, "did you mean 'partition'"),
        ({"time_limit": 60}, "slurm.time_limit: expected a quoted sbatch time limit"),
        ({"time_limit": "1h"}, "slurm.time_limit: expected a quoted sbatch time limit"),
        ({"gpus_per_task": -1}, "slurm.gpus_per_task: expected a whole number of GPUs from 0"),
        ({"gpus_per_task": True}, "slurm.gpus_per_task: expected a whole number of GPUs"),
        ({"gpu_request": "gpu"}, "slurm.gpu_request: expected one of gres, gpus"),
        ({"cpus_per_task": 0}, "slurm.cpus_per_task: expected a whole number of CPUs"),
        ({"mem": "64 GB"}, "slurm.mem: expected a memory size like 64G"),
        ({"partition": "gpu; rm -rf /"}, "slurm.partition: expected a partition name"),
        ({"constraint": "a100 h100"}, "slurm.constraint: expected a node feature expression"),
        ({"nodes": "gpu01"}, "slurm.nodes: expected a non-empty list of distinct node names"),
        ({"nodes": ["a", "a"]}, "slurm.nodes: expected a non-empty list of distinct"),
        ({"groups": ["a100"]}, "slurm.groups: expected a mapping of group name"),
        ({"lanes": ["docker"]}, "slurm.lanes: expected a non-empty list of distinct lanes"),
        ({"python": "python3 -u"}, "slurm.python: expected an interpreter path"),
        ({"container_runtime": "docker"}, "slurm.container_runtime: expected one of pyxis"),
        ({"lanes": ["container"]}, "slurm.image_repo: expected the repository the nodes pull"),
        ({"results_dir": "/a b"}, "slurm.results_dir: expected a directory path"),
        ({"nodes": ["x"], "groups": {"x": "a100"}}, "slurm.groups: expected group names that"),
        ("gpu", "slurm: expected a mapping"),
    ],
)
def test_bad_values_name_the_file_the_key_and_the_expectation(slurm, expected):
    message = problems(slurm)
    assert expected in message
    assert message.startswith(f"{MATRIX_PATH}: slurm")


def test_the_checked_in_matrix_yaml_still_loads():
    config.load(REPO / "matrix.yaml")


# ---- one test per knob: matrix.yaml, then the command line over it --------------------------


def _script_for(argv: list[str], slurm: dict, tmp_path: Path) -> str:
    matrix_file = tmp_path / "matrix.yaml"
    data = json.loads(json.dumps(BASE))
    data["slurm"] = slurm
    matrix_file.write_text(yaml.safe_dump(data))
    args = parse(
        ["slurm", "--config", str(matrix_file), "--results-dir", str(tmp_path / "r"), *argv]
    )
    from repro.cli.slurm import plan_from

    p = plan_from(args)
    return "\n".join(script.array_script(p, a) for a in p.arrays) + script.report_script(p)


KNOBS = [
    # (knob, matrix.yaml value, the line it gives, command line, the line that wins)
    ("partition", {"partition": "gpu"}, "#SBATCH --partition=gpu",
     ["--partition", "debug"], "#SBATCH --partition=debug"),
    ("account", {"account": "proj"}, "#SBATCH --account=proj",
     ["--account", "other"], "#SBATCH --account=other"),
    ("time_limit", {"time_limit": "01:00:00"}, "#SBATCH --time=01:00:00",
     ["--time-limit", "5"], "#SBATCH --time=5"),
    ("gpus_per_task gres", {"gpus_per_task": 1}, "#SBATCH --gres=gpu:1",
     ["--gpus-per-task", "4"], "#SBATCH --gres=gpu:4"),
    ("gpu_request", {"gpus_per_task": 2, "gpu_request": "gpus"}, "#SBATCH --gpus=2",
     ["--gpu-request", "gres"], "#SBATCH --gres=gpu:2"),
    ("cpus_per_task", {"cpus_per_task": 8}, "#SBATCH --cpus-per-task=8",
     ["--cpus-per-task", "2"], "#SBATCH --cpus-per-task=2"),
    ("mem", {"mem": "64G"}, "#SBATCH --mem=64G", ["--mem", "8G"], "#SBATCH --mem=8G"),
    ("constraint", {"constraint": "a100"}, "#SBATCH --constraint=a100",
     ["--constraint", "h100|h200"], "#SBATCH --constraint=h100|h200"),
    ("nodes", {"nodes": ["gpu01"]}, "#SBATCH --nodelist=gpu01",
     ["--nodelist", "gpu07,gpu08"], "#SBATCH --nodelist=gpu08"),
    ("groups", {"groups": {"a100": "a100"}}, "#SBATCH --constraint=a100",
     ["--constraint", "ignored"], "#SBATCH --constraint=a100"),
    ("lanes", {"lanes": ["host"]}, "LABEL=host ;;",
     ["--lane", "venv"], "LABEL=venv-cu130-torch2.13 ;;"),
    ("python", {"python": "/opt/py/bin/python3"}, "PYTHON=/opt/py/bin/python3",
     ["--node-python", "/other/python"], "PYTHON=/other/python"),
    ("container_runtime", {"lanes": ["container"], "image_repo": "r.example.com/t/repro"},
     "exec srun --ntasks=1 '--container-image=r.example.com#t/repro:cu130-torch2.13'",
     ["--container-runtime", "apptainer"], "exec apptainer exec --cleanenv --no-home"),
    ("image_repo", {"lanes": ["container"], "image_repo": "r.example.com/t/repro"},
     "--container-image=r.example.com#t/repro:cu130-torch2.13",
     ["--image-repo", "ghcr.io/me/repro"], "--container-image=ghcr.io#me/repro:cu130-torch2.13"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("knob", "yaml_value", "yaml_line", "argv", "cli_line"), KNOBS, ids=[k[0] for k in KNOBS]
)
def test_each_knob_from_matrix_yaml_and_overridden_on_the_command_line(
    tmp_path, knob, yaml_value, yaml_line, argv, cli_line
):
    selected = ["--variant", "cu130-torch2.13"]
    from_yaml = _script_for(selected, yaml_value, tmp_path)
    assert yaml_line in from_yaml
    overridden = _script_for([*selected, *argv], yaml_value, tmp_path)
    assert cli_line in overridden
    if yaml_line.split("=")[0] == cli_line.split("=")[0] and yaml_line != cli_line:
        assert yaml_line not in overridden


def test_nodes_and_groups_give_one_array_each_and_gpu_tasks_apart_from_cpu_ones():
    m = matrix_with({"nodes": ["gpu01"], "groups": {"h100": "h100"}, "gpus_per_task": 1,
                     "lanes": ["host", "venv"]})  # fmt: skip
    p = plan.build_plan(m, m.slurm, list(m.variants), stamp=STAMP, results_dir=RESULTS)
    layout = {a.name: (a.gpus, [t.label for t in a.tasks]) for a in p.arrays}
    assert layout == {
        "gpu01-gpu": (1, ["host", "venv-cu130-torch2.13", "venv-rocm7.2-torch2.13"]),
        "gpu01-cpu": (0, ["venv-cpu-torch2.13"]),
        "h100-gpu": (1, ["host", "venv-cu130-torch2.13", "venv-rocm7.2-torch2.13"]),
        "h100-cpu": (0, ["venv-cpu-torch2.13"]),
    }
    assert [t.index for t in p.arrays[0].tasks] == [0, 1, 2]


def test_bad_command_line_values_are_usage_errors(capsys):
    for argv in (["--time-limit", "soon"], ["--gpus-per-task", "-1"], ["--nodelist", "a,a"],
                 ["--partition", "a b"], ["--lane", "docker"]):  # fmt: skip
        with pytest.raises(SystemExit) as exit_:
            parse(["slurm", *argv])
        assert exit_.value.code == 2, argv
        assert "repro slurm: error: argument" in capsys.readouterr().err


def test_container_lane_needs_an_image_repo_from_somewhere():
    args = parse(["slurm", "--lane", "container"])
    with pytest.raises(ConfigError, match="the container lane needs the repository") as err:
        settings_from(args, matrix_with(None))
    assert "slurm.image_repo" in err.value.hint and "--image-repo" in err.value.hint


def test_a_results_root_with_a_space_is_refused(tmp_path):
    m = matrix_with(None)
    with pytest.raises(ConfigError, match="without spaces"):
        plan.build_plan(m, SlurmSettings(), list(m.variants), stamp=STAMP,
                        results_dir=Path("/a b/results"))  # fmt: skip


# ---- golden: the batch scripts, the report job, the container lines -------------------------

GOLDEN_SLURM = {
    "partition": "gpu",
    "account": "ml-infra",
    "time_limit": "02:00:00",
    "gpus_per_task": 1,
    "cpus_per_task": 8,
    "mem": "64G",
    "nodes": ["gpu01"],
    "lanes": ["host", "venv", "container"],
    "python": "/shared/venvs/repro/bin/python",
    "image_repo": "registry.example.com/ml/repro-matrix",
}


def golden_plan(**changes) -> plan.SlurmPlan:
    m = matrix_with({**GOLDEN_SLURM, **changes})
    options = plan.TaskOptions(
        patterns=("losses[device=cpu",),
        venv_args=("--find-links", "/shared/wheels", "--env-python", "3.11"),
        run_args=("-j", "2"),
    )
    return plan.build_plan(
        m, m.slurm, list(m.variants), stamp=STAMP, results_dir=RESULTS, options=options
    )


def test_golden_array_scripts():
    p = golden_plan()
    assert [a.name for a in p.arrays] == ["gpu01-gpu", "gpu01-cpu"]
    for array in p.arrays:
        golden(script.script_name(array), script.array_script(p, array))


def test_golden_report_job_and_its_sbatch_line():
    p = golden_plan()
    argv = script.report_sbatch_argv(p, ["101", "102"])
    golden("report.sbatch", script.report_script(p))
    golden("report.argv", " ".join(argv) + "\n")
    assert argv[:3] == ["sbatch", "--parsable", "--dependency=afterany:101:102"]
    assert script.array_sbatch_argv(p, p.arrays[0]) == [
        "sbatch", "--parsable", f"{RESULTS}/.slurm/{STAMP}/gpu01-gpu.sbatch",
    ]  # fmt: skip


def test_the_report_job_fails_on_an_unexpected_red_after_the_matrix_is_written():
    p = golden_plan()
    argv = script.report_command(p)
    assert argv[-2:] == [str(MATRIX_PATH), "--fail-on-problems"]  # every variant: coverage on
    assert "--no-coverage" in script.report_command(golden_plan(lanes=["host"]))
    assert "--fail-on-problems" in script.report_script(p)
    # the flag is the one repro report declares
    from repro.cli.main import build_parser

    parsed = build_parser().parse_args(argv)
    assert parsed.fail_on_problems is True


def test_golden_container_command_lines():
    m = matrix_with(None)
    lines = []
    for variant in m.variants:
        run = containers.ContainerRun(
            variant, "registry.example.com/ml/repro-matrix", RESULTS, MATRIX_PATH
        )
        inner = ["python", "-m", "repro", "run", "--as-variant", variant.id]
        for runtime in containers.PYXIS, containers.APPTAINER:
            lines.append(
                f"{runtime} {variant.id}: " + script.render(containers.command(runtime, run, inner))
            )
    golden("containers.txt", "\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("image", "uri"),
    [
        ("registry.example.com/team/repro:cu128", "registry.example.com#team/repro:cu128"),
        ("localhost:5000/repro:cpu", "localhost:5000#repro:cpu"),
        ("localhost/repro:cpu", "localhost#repro:cpu"),
        ("team/repro:cu128", "team/repro:cu128"),
        ("repro-matrix:cpu-torch2.13", "repro-matrix:cpu-torch2.13"),
        ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io#nvidia/pytorch:24.01-py3"),
    ],
)
def test_enroot_uri_separates_the_registry_with_a_hash(image, uri):
    assert containers.enroot_uri(image) == uri


def test_a_config_inside_the_results_root_is_mounted_once():
    m = matrix_with(None)
    run = containers.ContainerRun(m.variants[0], "r/x", RESULTS, RESULTS / "matrix.yaml")
    line = containers.pyxis_command(run, ["true"])
    assert f"--container-mounts={RESULTS}:{RESULTS}" in line


def test_the_array_script_is_valid_bash_and_picks_each_tasks_run_directory(tmp_path):
    """The script runs with bash -n (syntax) and, with `exec` replaced by `echo`, prints the
    command and makes the run directory of each task id."""
    p = golden_plan()
    p = dataclasses.replace(p, results_dir=tmp_path, submission_dir=tmp_path / ".slurm" / STAMP)
    text = script.array_script(p, p.arrays[0])
    path = tmp_path / "array.sbatch"
    path.write_text(text.replace("    exec ", "    echo "))
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    for index, label in enumerate(["host", "venv-cu130-torch2.13"]):
        env = {**os.environ, "SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": str(index),
               "SLURMD_NODENAME": "gpu01"}  # fmt: skip
        done = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run_dir = tmp_path / f"{STAMP}-slurm77_{index}-{label}"
        assert run_dir.is_dir() and str(run_dir) in done.stdout
        assert "--property slurm.job_id=77_" + str(index) in done.stdout
        assert "--property slurm.node=gpu01" in done.stdout
        again = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True)
        assert again.returncode == 3 and "never reused" in again.stderr
        requeued = subprocess.run(
            ["bash", str(path)], env={**env, "SLURM_RESTART_COUNT": "1"}, capture_output=True
        )
        assert requeued.returncode == 0 and Path(f"{run_dir}.r1").is_dir()
    stray = subprocess.run(
        ["bash", str(path)], env={**os.environ, "SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "9"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert stray.returncode == 2 and "not in this script" in stray.stderr


# ---- the scheduler's output (captured from Slurm 22.05.8 on this project's machine) ----------

SCONTROL = (
    "JobId=5 ArrayJobId=4 ArrayTaskId=2 JobName=wrap UserId=root(0) JobState=FAILED "
    "Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 ExitCode=3:0 "
    "StartTime=2026-11-27T03:46:17 EndTime=2026-11-27T03:46:17 NodeList=reprotest "
    "StdOut=/tmp/o-4_2.out Power=\n"
    "JobId=6 ArrayJobId=4 ArrayTaskId=1 JobName=wrap UserId=root(0) JobState=TIMEOUT "
    "Reason=TimeLimit Restarts=0 ExitCode=0:15 StartTime=2026-11-27T03:46:17 "
    "EndTime=2026-11-27T03:47:44 NodeList=reprotest Power=\n"
    "JobId=4 ArrayJobId=4 ArrayTaskId=3-5 JobName=wrap JobState=PENDING Reason=Resources "
    "Restarts=0 ExitCode=0:0 StartTime=Unknown EndTime=Unknown NodeList=(null) Power=\n"
)
JOBCOMP = (
    "JobId=7 UserId=root(0) GroupId=root(0) Name=wrap JobState=CANCELLED Partition=debug "
    "TimeLimit=UNLIMITED StartTime=2026-11-27T03:46:19 EndTime=2026-11-27T03:46:20 "
    "NodeList=reprotest NodeCnt=1 ProcCnt=1 WorkDir=/work ReservationName= Tres=cpu=1 "
    "Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-27T03:46:18 "
    "EligibleTime=2026-11-27T03:46:18 ArrayJobId=4 ArrayTaskId=0 DerivedExitCode=0:0 "
    "ExitCode=0:0 \n"
)
SACCT = (
    "4_0|7|CANCELLED by 0|0:0|reprotest|2026-11-27T03:46:19|2026-11-27T03:46:20|None\n"
    "4_1|6|TIMEOUT|0:15|reprotest|2026-11-27T03:46:17|2026-11-27T03:47:44|TimeLimit\n"
    "4_[3-5]|4|PENDING|0:0|None assigned|Unknown|Unknown|Resources\n"
)


def test_scontrol_one_line_per_task_and_pending_ranges():
    states = scheduler.parse_scontrol(SCONTROL)
    assert states[("4", 2)].state == "FAILED" and states[("4", 2)].exit_code == "3:0"
    timeout = states[("4", 1)]
    assert (timeout.state, timeout.reason, timeout.node, timeout.job_id) == (
        "TIMEOUT", "TimeLimit", "reprotest", "6",
    )  # fmt: skip
    assert timeout.final and timeout.end and timeout.end.endswith("Z")
    assert [states[("4", i)].state for i in (3, 4, 5)] == ["PENDING"] * 3
    assert not states[("4", 3)].final and states[("4", 3)].node == ""


def test_sacct_and_the_job_completion_log_agree_with_scontrol():
    sacct = scheduler.parse_sacct(SACCT)
    assert sacct[("4", 0)].state == "CANCELLED"  # "CANCELLED by 0"
    assert sacct[("4", 1)].state == "TIMEOUT" and sacct[("4", 4)].state == "PENDING"
    log = scheduler.parse_scontrol(JOBCOMP, source=scheduler.JOBCOMP)
    assert log[("4", 0)].state == "CANCELLED" and log[("4", 0)].source == "jobcomp"


def test_sbatch_parsable_answer():
    assert scheduler.parse_job_id("12\n") == "12"
    assert scheduler.parse_job_id("12;cluster2\n") == "12"
    with pytest.raises(ValueError):
        scheduler.parse_job_id("sbatch: error: Batch job submission failed")


class Replay:
    """A Slurm client double: answers each command from captured output (argv[0] -> text, rc)."""

    def __init__(self, answers: dict[str, tuple[str, int]]):
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv, timeout):
        self.calls.append(argv)
        key = argv[0] if argv[0] != "scontrol" else f"scontrol {argv[1]}"
        out, rc = self.answers.get(key, ("", 1))
        return subprocess.CompletedProcess(argv, rc, out, "" if rc == 0 else "error")


def test_states_prefer_sacct_then_scontrol_then_the_completion_log(tmp_path):
    log = tmp_path / "jobcomp.txt"
    log.write_text(JOBCOMP)
    config_text = f"JobCompType             = jobcomp/filetxt\nJobCompLoc              = {log}\n"
    no_dbd = Replay(
        {"scontrol show": (config_text, 0), "scontrol -o": (SCONTROL, 0), "squeue": ("", 0)}
    )
    states = scheduler.Scheduler(run=no_dbd).states(["4"])
    assert states[("4", 1)].source == "scontrol" and states[("4", 0)].source == "jobcomp"
    assert not any(call[0] == "sacct" for call in no_dbd.calls)
    with_dbd = Replay(
        {
            "scontrol show": ("AccountingStorageType = accounting_storage/slurmdbd\n", 0),
            "sacct": (SACCT, 0),
            "scontrol -o": (SCONTROL, 0),
        }
    )
    states = scheduler.Scheduler(run=with_dbd).states(["4"])
    assert states[("4", 0)].source == "sacct" and states[("4", 2)].source == "scontrol"


def test_a_refused_submission_cancels_the_arrays_already_submitted(tmp_path):
    m = matrix_with({"nodes": ["a", "b"], "lanes": ["host"]})
    p = plan.build_plan(m, m.slurm, [], stamp=STAMP, results_dir=tmp_path)
    answers = iter([("41\n", 0), ("", 1)])
    calls = []

    def run(argv, timeout):
        calls.append(argv)
        if argv[0] == "scancel":
            return subprocess.CompletedProcess(argv, 0, "", "")
        out, rc = next(answers)
        return subprocess.CompletedProcess(argv, rc, out, "sbatch: error: invalid partition")

    said = []
    with pytest.raises(FatalError, match="invalid partition"):
        submit.submit(p, scheduler.Scheduler(run=run), said.append)
    assert ["scancel", "41"] in calls


# ---- scheduler cells --------------------------------------------------------------------------


def _submission(tmp_path: Path, lanes=("host", "venv")) -> plan.Submission:
    m = matrix_with({"lanes": list(lanes)})
    p = plan.build_plan(m, m.slurm, [m.variants[0]], stamp=STAMP, results_dir=tmp_path)
    p = submit.new_submission_dir(p)
    record = submit._record(p, ["4"], "9")
    record.write()
    return plan.Submission.read(p.submission_dir)


def _state(index, state, **kw):
    return scheduler.TaskState("4", index, state, "scontrol", node="n1", **kw)


class FixedStates(scheduler.Scheduler):
    def __init__(self, states):
        super().__init__(run=lambda argv, timeout: subprocess.CompletedProcess(argv, 1, "", ""))
        self._states = states

    def states(self, job_ids):
        return self._states


def _write_partial_run(run_dir: Path, lane: str, done: int, total: int, finished: bool):
    """A run directory as `repro run` leaves it: fingerprint, run.json, junit with `done` cases."""
    from repro.junit.sidecar import write_run_info
    from repro.junit.writer import write_junit
    from repro.outcomes import CaseResult, Outcome

    run_dir.mkdir(parents=True)
    fp = {"host": {"hostname": "n1", "os": "Debian GNU/Linux 12 (bookworm)"}}
    (run_dir / "fingerprint.json").write_text(json.dumps(fp))
    results = [CaseResult("quick", f"quick{i}", Outcome.PASSED) for i in range(done)]
    suite = {"host.key": "CPU only · Debian GNU/Linux 12 (bookworm)", "variant.id": "cpu-torch2.13",
             "variant.lane": lane}  # fmt: skip
    write_junit(run_dir / "junit.xml", results, suite)
    write_run_info(
        run_dir,
        {"schema": 1, "run_id": run_dir.name, "host_key": suite["host.key"],
         "started": "2026-11-27T12:00:05Z", "finished": "2026-11-27T12:01:00Z" if finished else None,
         "cases_total": total, "cases_done": done,
         "variant": {"id": "cpu-torch2.13", "runtime": "cpu", "torch": "2.13.0+cpu",
                     "accelerator": "cpu", "source": "host"}},
    )  # fmt: skip


_VARIANTS = {v.id: v for v in matrix_with(None).variants}


def test_a_timed_out_task_is_a_red_cell_beside_the_cases_it_finished(tmp_path):
    record = _submission(tmp_path)
    array = record.arrays[0]
    _write_partial_run(record.run_dir(array, 0), "host", 2, 3, finished=False)
    _write_partial_run(record.run_dir(array, 1), "venv", 3, 3, finished=True)
    states = {
        ("4", 0): _state(0, "TIMEOUT", reason="TimeLimit", end="2026-11-27T12:02:00Z"),
        ("4", 1): _state(1, "FAILED", exit_code="1:0", end="2026-11-27T12:01:00Z"),
    }
    found = cells.collect(record, FixedStates(states), _VARIANTS)
    assert [f.verdict.signature if f.verdict else None for f in found] == [
        "infra.slurm_timeout", None,
    ]  # fmt: skip
    cell = found[0].cell
    assert cell == record.run_dir(array, 0).with_name(record.run_dir(array, 0).name + ".scheduler")
    report = build_report([tmp_path])
    # One column per lane (issue 31: cells keyed by host, variant and lane).
    by_lane = {cell.lane: cell for cell in report.cells}
    assert sorted(by_lane) == ["host", "venv"] and len(report.cells) == 2
    cases = [case for cell in report.cells for case in cell.cases]
    outcomes = sorted((c.scenario, c.outcome.value, c.signature or "") for c in cases)
    assert outcomes.count(("quick", "passed", "")) == 5  # 2 finished by host + 3 by venv
    assert ("slurm", "error", "infra.slurm_timeout") in outcomes
    slurm_case = next(c for c in by_lane["host"].cases if c.scenario == "slurm")
    assert "4_0" in slurm_case.message and "2 of 3 cases finished" in slurm_case.message
    again = cells.collect(record, FixedStates(states), _VARIANTS)
    assert again[0].cell is None  # idempotent: the cell exists


@pytest.mark.parametrize(
    ("state", "signature"),
    [
        ("NODE_FAIL", "infra.slurm_node_fail"),
        ("PREEMPTED", "infra.slurm_preempted"),
        ("OUT_OF_MEMORY", "infra.slurm_out_of_memory"),
        ("CANCELLED", "infra.slurm_cancelled"),
        ("BOOT_FAIL", "infra.slurm_boot_fail"),
        ("DEADLINE", "infra.slurm_deadline"),
    ],
)
def test_every_scheduler_end_is_a_cell_even_without_a_run(tmp_path, state, signature):
    record = _submission(tmp_path, lanes=("venv",))
    found = cells.collect(record, FixedStates({("4", 0): _state(0, state)}), _VARIANTS)
    assert found[0].verdict.signature == signature
    report = build_report([tmp_path])
    (cell,) = report.cells
    (case,) = cell.cases
    assert (cell.variant, case.signature, case.outcome.value) == (
        "cpu-torch2.13",
        signature,
        "error",
    )
    assert "no case had started" in case.message


def test_a_task_that_wrote_nothing_and_one_the_scheduler_forgot(tmp_path):
    record = _submission(tmp_path)
    states = {("4", 0): _state(0, "FAILED", exit_code="127:0")}  # task 1: unknown to every source
    found = cells.collect(record, FixedStates(states), _VARIANTS)
    assert [f.verdict.signature for f in found] == [
        "infra.slurm_task_failed", "infra.slurm_state_unknown",
    ]  # fmt: skip
    assert found[0].cell is not None
    info = json.loads((found[0].cell / "run.json").read_text())
    assert info["variant"]["id"] == cells.UNKNOWN_HOST_LANE  # the host lane never said its torch


def test_running_and_completed_tasks_need_no_cell(tmp_path):
    record = _submission(tmp_path)
    _write_partial_run(record.run_dir(record.arrays[0], 1), "venv", 3, 3, finished=True)
    states = {("4", 0): _state(0, "RUNNING"), ("4", 1): _state(1, "COMPLETED")}
    assert [f.cell for f in cells.collect(record, FixedStates(states), _VARIANTS)] == [None, None]


def test_a_newer_run_of_the_same_lane_replaces_the_scheduler_cell_but_not_another_lanes(tmp_path):
    from repro.report.merge import RUN_SCOPED_SCENARIOS

    assert cells.SCENARIO in RUN_SCOPED_SCENARIOS
    record = _submission(tmp_path)
    _write_partial_run(record.run_dir(record.arrays[0], 0), "host", 1, 3, finished=False)
    _write_partial_run(record.run_dir(record.arrays[0], 1), "venv", 1, 3, finished=False)
    states = {("4", 0): _state(0, "TIMEOUT", end="2026-11-27T12:02:00Z"),
              ("4", 1): _state(1, "TIMEOUT", end="2026-11-27T12:02:00Z")}  # fmt: skip
    cells.collect(record, FixedStates(states), _VARIANTS)
    cases = [case for cell in build_report([tmp_path]).cells for case in cell.cases]
    assert sum(c.scenario == "slurm" for c in cases) == 2
    later = tmp_path / "20261127T130000Z-cpu-torch2.13"
    _write_partial_run(later, "host", 3, 3, finished=True)
    info = json.loads((later / "run.json").read_text())
    info["started"] = "2026-11-27T13:00:00Z"
    (later / "run.json").write_text(json.dumps(info))
    by_lane = {cell.lane: cell for cell in build_report([tmp_path]).cells}
    left = [c for cell in by_lane.values() for c in cell.cases if c.scenario == "slurm"]
    assert len(left) == 1 and "4_1" in left[0].message  # the venv lane's timeout stays
    assert left[0] in by_lane["venv"].cases


@pytest.mark.parametrize("state", ["NODE_FAIL", "CANCELLED"])
def test_a_cell_ending_its_run_in_the_second_it_started_still_shows(tmp_path, state):
    """run.json stamps have one-second resolution: a task cancelled or on a node that failed in
    the second its run started (seen in CI under load: the cell's ``started`` equalled the
    partial run's, and the path tie-break put the run after its own cell, hiding the cell)."""
    record = _submission(tmp_path, lanes=("host",))
    _write_partial_run(record.run_dir(record.arrays[0], 0), "host", 1, 3, finished=False)
    found = cells.collect(
        record, FixedStates({("4", 0): _state(0, state, end="2026-11-27T12:00:05Z")}), _VARIANTS
    )
    info = json.loads((found[0].cell / "run.json").read_text())
    assert info["started"] == "2026-11-27T12:00:05Z"  # the same second as the run's start
    assert info["closes"] == record.run_dir(record.arrays[0], 0).name
    (cell,) = build_report([tmp_path]).cells
    assert sorted(c.scenario for c in cell.cases) == ["quick", "slurm"]


def test_status_rows_name_state_run_directory_and_cell(tmp_path):
    record = _submission(tmp_path)
    _write_partial_run(record.run_dir(record.arrays[0], 0), "host", 1, 3, finished=False)
    states = {("4", 0): _state(0, "TIMEOUT"), ("4", None): None}
    states = {k: v for k, v in states.items() if v}
    cells.collect(record, FixedStates(states), _VARIANTS)
    rows, report = submit.task_rows(record, FixedStates(states))
    assert [(r.task, r.label, r.state) for r in rows] == [
        ("4_0", "host", "TIMEOUT"), ("4_1", "venv-cpu-torch2.13", "unknown"),
    ]  # fmt: skip
    assert rows[0].cell is not None and rows[0].run_dir is not None and report is None


def test_submission_record_round_trips_and_bad_ones_are_named(tmp_path):
    record = _submission(tmp_path)
    assert plan.latest(tmp_path) == record.path
    again = plan.Submission.read(record.path / "submission.json")
    assert again == record
    (record.path / "submission.json").write_text('{"schema": 1, "arrays": [{"job_id": "x"}]}')
    with pytest.raises(ConfigError, match="malformed submission record"):
        plan.Submission.read(record.path)
    with pytest.raises(ConfigError, match="no Slurm submission"):
        plan.latest(tmp_path / "elsewhere")


# ---- the ddp scenario's srun launchers (issue 33, item 4) --------------------------------------


def test_torch_env_from_an_srun_tasks_variables():
    from repro.scenarios._slurm_env import first_host, torch_env

    task = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
            "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_JOB_NODELIST": "gpu[07-09]"}  # fmt: skip
    assert torch_env(task, 29400) == {
        "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "gpu07",
        "MASTER_PORT": "29400",
    }  # fmt: skip
    assert torch_env({**task, "MASTER_ADDR": "10.0.0.1"}, 1)["MASTER_ADDR"] == "10.0.0.1"
    assert torch_env(task, 1, world_size=8)["WORLD_SIZE"] == "8"  # the script's own belief
    assert torch_env({**task, "SLURM_STEP_NUM_TASKS": "2"}, 1)["WORLD_SIZE"] == "2"
    for nodelist, host in [("gpu[03-05,09]", "gpu03"), ("a,b", "a"), ("node7", "node7"),
                           ("n[1,4]", "n1"), ("rack1-n[010-012]", "rack1-n010")]:  # fmt: skip
        assert first_host(nodelist) == host
    with pytest.raises(KeyError):
        torch_env({}, 1)


def test_srun_launcher_command_lines():
    from repro.scenarios import ddp

    params = {"backend": "gloo", "world_size": 2, "workers": 0, "fault": "none"}
    lines = {
        launcher: ddp.srun_command({**params, "launcher": launcher}, 29400, "/w/m", "/w/r")
        for launcher in ddp.SRUN_LAUNCHERS
    }
    srun = ["srun", "--nodes=1", "--overcommit", "--kill-on-bad-exit=1", "--unbuffered"]
    for command in lines.values():
        assert command[:5] == srun
    assert lines["srun"][5:7] == ["--ntasks=2", "--ntasks-per-node=2"]
    assert "--launcher" in lines["srun"] and "torch.distributed.run" not in lines["srun"]
    assert lines["srun_ntasks_missing"][5] == "--ntasks=1"
    assert lines["srun_ntasks_missing"][-2:] == ["--world-size", "2"]
    double = lines["srun_torchrun"]
    assert double[5:7] == ["--ntasks=2", "--ntasks-per-node=2"]
    assert "torch.distributed.run" in double and "--standalone" in double
    assert "--nproc-per-node=2" in double


def test_srun_cases_skip_with_a_reason_outside_an_allocation(monkeypatch):
    from repro.scenarios import ddp

    assert "SLURM_JOB_ID is not set" in ddp.slurm_allocation_missing({})
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "srun is not on PATH" in ddp.slurm_allocation_missing({"SLURM_JOB_ID": "5"})
    expect = {r.case: r.signature for r in config.load(REPO / "matrix.yaml").expectations}
    assert expect["ddp[backend=*,launcher=srun_torchrun]"] == "slurm_double_launch"
    assert expect["ddp[backend=*,launcher=srun_ntasks_missing]"] == "slurm_ntasks_mismatch"


@pytest.mark.slow
def test_the_srun_cases_of_a_real_run_are_skipped_here(tmp_path):
    """Slow: a real `repro run` of the gloo srun cases on a host outside any allocation."""
    from conftest import run_cli, write_matrix
    from junitparser import JUnitXml

    write_matrix(tmp_path, "ddp: {timeout_s: 120, params: {backend: [gloo]}}\n")
    env_keys = [k for k in os.environ if k.startswith("SLURM_")]
    if env_keys:
        pytest.skip("these tests run inside a Slurm allocation")
    done = run_cli("run", "--no-doctor", "-k", "launcher=srun", "--results-dir", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (junit,) = (tmp_path / "r").glob("*/junit.xml")
    cases = [c for suite in JUnitXml.fromfile(str(junit)) for c in suite]
    assert len(cases) == 4
    for case in cases:
        assert case.is_skipped and "SLURM_JOB_ID is not set" in case.result[0].message


def test_json_of_slurm_and_slurm_status_validate_against_their_schemas(
    tmp_path, capsys, monkeypatch
):
    import jsonschema

    from repro.cli import slurm as slurm_cli
    from repro.cli.main import main

    schemas = REPO / "repro" / "data" / "schemas"

    def validate(command: str) -> dict:
        data = json.loads(capsys.readouterr().out)
        schema = json.loads((schemas / f"{command}.json").read_text())
        jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
        return data

    matrix_file = tmp_path / "matrix.yaml"
    matrix_file.write_text(yaml.safe_dump(BASE))
    argv = ["slurm", "--config", str(matrix_file), "--results-dir", str(tmp_path / "r"),
            "--lane", "host", "--lane", "venv", "--dry-run", "--json"]  # fmt: skip
    assert main(argv) == 0
    plan_json = validate("slurm")
    assert [t["label"] for t in plan_json["arrays"][0]["tasks"]][:2] == [
        "host",
        "venv-cpu-torch2.13",
    ]
    assert not (tmp_path / "r").exists()  # --dry-run writes nothing

    record = _submission(tmp_path / "r2")
    states = {
        ("4", 0): _state(0, "TIMEOUT"),
        ("9", None): scheduler.TaskState("9", None, "COMPLETED", "scontrol"),
    }
    monkeypatch.setattr(slurm_cli, "Scheduler", lambda: FixedStates(states))
    assert main(["slurm-status", str(record.path), "--json"]) == 0
    status = validate("slurm-status")
    assert status["report"] == {"job_id": "9", "state": "COMPLETED"}
    assert [t["state"] for t in status["tasks"]] == ["TIMEOUT", "unknown"]
