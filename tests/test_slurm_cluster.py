"""The Slurm lane on a real scheduler (slow): a throwaway single-node Slurm 22.05 cluster in a
temporary directory (tests/slurm_cluster.py; started and stopped by the module's fixture,
skipped with the reason where it cannot start, a failure instead where ``REPRO_SLURM_REQUIRED=1``
as in CI).

Everything is submitted at once, so the cluster runs the submissions side by side (the node
claims 8 CPUs; the sleeping tasks cost nothing) and the module waits about as long as its
slowest part, the time limit (Slurm enforces a 1-minute limit 60-90 s in):

- the 2-task array: the host lane and the venv lane of cpu-torch2.13 (``-k
  'losses[device=cpu,case=empty_mask'``, 2 cases; torch 2.13.0+cpu from a find-links directory,
  as tests/test_venv_lane.py does) and the report job, followed with ``repro slurm --wait``;
- a task killed at its 1-minute time limit after 2 of its 3 script cases: ``infra.slurm_timeout``
  and the 2 cases;
- a task cancelled after its first case: ``infra.slurm_cancelled`` and that case;
- the ddp scenario's srun launchers inside an allocation: ranks started by srun pass, torchrun
  inside srun and a job without --ntasks-per-node reproduce their signatures;

then ``repro doctor --slurm --drain`` drains the node on a planted failing check and resumes it.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import slurm_cluster
from conftest import cli_env
from junitparser import JUnitXml

pytestmark = pytest.mark.slow

HOST_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "hosts" / "cpu"
#: Seconds the module waits for every submission to end.
WAIT_S = 900


def _fail_or_skip(why: str):
    if os.environ.get(slurm_cluster.REQUIRED_ENV) == "1":
        pytest.fail(f"{why} ({slurm_cluster.REQUIRED_ENV}=1: Slurm must start here)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def cluster():
    why = slurm_cluster.unavailable()
    if why:
        _fail_or_skip(why)
    instance = slurm_cluster.Cluster()
    try:
        instance.start()
    except Exception as exc:  # a refused stale cluster, a daemon that died: say which
        instance.stop()
        _fail_or_skip(f"a throwaway Slurm did not start: {str(exc)[:2000]}")
    try:
        yield instance
    finally:
        instance.stop()


def _wheels() -> str | None:
    for directory in filter(None, [os.environ.get("PIP_FIND_LINKS"), "/opt/wheels"]):
        if glob.glob(os.path.join(directory, "torch-2.13.0+cpu-*.whl")):
            return directory
    return None


MATRIX = """\
version: 1
defaults: {{results_dir: results, python: "3.11"}}
variants:
  - {{runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}}
scenarios:
  losses: {{timeout_s: 120}}
  quick: {{script: quick.py, timeout_s: 60}}
  quick_again: {{script: quick.py, timeout_s: 60}}
  slow: {{script: slow.py, timeout_s: 900}}
  ddp: {{timeout_s: 180}}
slurm:
  lanes: [host]
  python: {python}
"""


class Runs:
    """What the module submitted and where each result went."""

    def __init__(self, root: Path, cluster):
        self.root, self.cluster = root, cluster
        self.env = {**cli_env(), "SLURM_CONF": str(cluster.conf)}
        self.array: subprocess.Popen | None = None
        self.array_wall_s: float | None = None
        self.wheels = _wheels()

    def repro(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "repro", *argv], cwd=self.root, env=self.env,
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def submit(self, results: str, *argv: str) -> dict:
        done = self.repro("slurm", "--json", "--results-dir", str(self.root / results), *argv)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    root = tmp_path_factory.mktemp("slurm-lane")
    (root / "matrix.yaml").write_text(MATRIX.format(python=sys.executable))
    (root / "quick.py").write_text("print('quick case: done')\n")
    (root / "slow.py").write_text(
        "import time\nprint('sleeping past the time limit', flush=True)\ntime.sleep(900)\n"
    )
    r = Runs(root, cluster)
    no_doctor = ("--", "--no-doctor", "-j", "1")
    scripts = ("-k", "quick", "-k", "slow")
    r.timeout = r.submit("r-timeout", "--time-limit", "1", *scripts, *no_doctor)
    r.cancel = r.submit("r-cancel", "--time-limit", "10", *scripts, *no_doctor)
    ddp_out = root / "ddp.out"
    r.ddp_job = cluster.run(
        "sbatch", "--parsable", "--ntasks=1", f"--output={ddp_out}", f"--chdir={root}",
        "--wrap", f"{sys.executable} -m repro run --no-doctor --results-dir {root}/r-ddp "
        "-k 'gloo,world_size=2,workers=0,launcher=srun'",
    ).stdout.strip()  # fmt: skip
    if r.wheels:
        started = time.monotonic()
        r.array = subprocess.Popen(
            [sys.executable, "-m", "repro", "slurm", "--results-dir", str(root / "r-array"),
             "--lane", "host", "--lane", "venv", "-k", "losses[device=cpu,case=empty_mask",
             "--find-links", r.wheels, "--index-url", "https://pypi.org/simple",
             "--env-python", "3.11", "--env-cache", str(root / "envs"), "--wait"],
            cwd=root, env=r.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    # Cancel the second submission's task once its first case is written.
    cancel_job = r.cancel["arrays"][0]["job_id"]
    deadline = time.monotonic() + 300
    while not glob.glob(str(root / "r-cancel" / "*" / "junit.xml")):
        assert time.monotonic() < deadline, cluster.logs()
        time.sleep(0.5)
    cluster.run("scancel", cancel_job)
    if r.array is not None:
        r.array_out, r.array_err = r.array.communicate(timeout=WAIT_S)
        r.array_wall_s = time.monotonic() - started
    deadline = time.monotonic() + WAIT_S
    while cluster.run("squeue", "-h", check=False).stdout.strip():
        assert time.monotonic() < deadline, cluster.run("squeue", check=False).stdout
        time.sleep(1)
    r.ddp_log = ddp_out.read_text(errors="replace")
    return r


def _matrix(root: Path) -> dict:
    return json.loads((root / "matrix.json").read_text())


def _report_logs(root: Path) -> str:
    """The report job's log and every run.json of a results root: what a failure shows."""
    parts = [f"--- {p}\n{p.read_text(errors='replace')[-3000:]}"
             for p in sorted(root.glob(".slurm/*/logs/report-*.out")) + sorted(root.glob("*/run.json"))]  # fmt: skip
    return "\n".join(parts)


def _cases(matrix: dict) -> list[dict]:
    return [case for cell in matrix["cells"] for case in cell["cases"]]


def test_the_cluster_started_and_is_ours(cluster):
    assert cluster.start_s is not None and cluster.start_s < slurm_cluster.READY_TIMEOUT_S
    config = cluster.run("scontrol", "show", "config").stdout
    assert f"SlurmctldPort           = {cluster.ctld_port}" in config


def test_the_two_task_array_shows_the_host_and_the_venv_lane(runs):
    if runs.array is None:
        pytest.skip("no torch-2.13.0+cpu wheel in a find-links directory here")
    assert runs.array.returncode == 0, runs.array_err[-3000:]
    assert "report job" in runs.array_err and "COMPLETED" in runs.array_err
    results = runs.root / "r-array"
    matrix = _matrix(results)
    # The host and the venv lane of one variant are two columns (issue 31: cells are keyed by
    # host, variant and lane), each holding its own lane's runs.
    cells = {cell["lane"]: cell for cell in matrix["cells"]}
    assert set(cells) == {"host", "venv"} and len(matrix["cells"]) == 2
    lanes = {}
    for lane, cell in cells.items():
        assert cell["variant"] == "cpu-torch2.13" and cell["column"] == f"cpu-torch2.13 ({lane})"
        for path in cell["files"]:
            suite = next(iter(JUnitXml.fromfile(path)))
            props = {p.name: p.value for p in suite.properties()}
            assert props["variant.lane"] == lane, cell["files"]
            lanes[lane] = props
    assert set(lanes) == {"host", "venv"}
    assert {p["slurm.job_id"].split("_")[1] for p in lanes.values()} == {"0", "1"}
    # 2 cases from each lane (eps=0: the expected NaN, eps=1e-06: passes); neither hides the other
    for cell in cells.values():
        losses = [c for c in cell["cases"] if c["scenario"] == "losses"]
        assert sorted(c["outcome"] for c in losses) == ["failed", "passed"]
    table = (results / "matrix.md").read_text()
    assert "cpu-torch2.13 (host)" in table and "cpu-torch2.13 (venv)" in table
    status = runs.repro("slurm-status", "--results-dir", str(results))
    assert status.returncode == 0 and status.stdout.count(" reprotest ") == 2
    print(f"\nsubmit-to-matrix wall time of the 2-task array: {runs.array_wall_s:.1f} s")


def test_a_task_killed_at_its_time_limit_is_a_red_cell_with_the_cases_it_finished(runs):
    matrix = _matrix(runs.root / "r-timeout")
    cases = {c["case"]: c for c in _cases(matrix)}
    assert cases["quick"]["outcome"] == "passed" and cases["quick_again"]["outcome"] == "passed"
    assert "slow" not in cases  # killed while it ran
    cell = cases["slurm_task"]
    job = runs.timeout["arrays"][0]["job_id"]
    assert (cell["outcome"], cell["signature"]) == ("error", "infra.slurm_timeout")
    assert f"task {job}_0" in cell["message"] and "2 of 3 cases finished" in cell["message"]


def test_a_cancelled_task_is_infra_slurm_cancelled(runs):
    cases = {c["case"]: c for c in _cases(_matrix(runs.root / "r-cancel"))}
    assert "slurm_task" in cases, _report_logs(runs.root / "r-cancel")
    assert cases["slurm_task"]["signature"] == "infra.slurm_cancelled"
    assert cases["quick"]["outcome"] == "passed"


def test_ddp_ranks_started_by_srun_and_the_two_launcher_mistakes(runs):
    (junit,) = (runs.root / "r-ddp").glob("*/junit.xml")
    verdicts = {}
    for suite in JUnitXml.fromfile(str(junit)):
        for case in suite:
            result = case.result[0] if case.result else None
            verdicts[case.name] = (result._tag if result is not None else "passed",
                                   result.type if result is not None else None)  # fmt: skip
    assert verdicts == {
        "ddp[backend=gloo,world_size=2,workers=0,launcher=srun]": ("passed", None),
        "ddp[backend=gloo,world_size=2,workers=0,launcher=srun_torchrun]": (
            "failure",
            "slurm_double_launch",
        ),
        "ddp[backend=gloo,world_size=2,workers=0,launcher=srun_ntasks_missing]": (
            "failure",
            "slurm_ntasks_mismatch",
        ),
    }, runs.ddp_log[-4000:]


def test_a_task_on_a_node_that_fails_is_infra_slurm_node_fail(runs, cluster):
    """After the other submissions (taking the node down ends every job on it): the node goes
    DOWN under a running task (scontrol; the cluster runs JobRequeue=0), comes back (slurmd
    re-registers, ReturnToService=2), and the report job names the task's end."""
    sub = runs.submit("r-node", "--time-limit", "10", "-k", "quick", "-k", "slow",
                      "--", "--no-doctor", "-j", "1")  # fmt: skip
    deadline = time.monotonic() + 300
    while not glob.glob(str(runs.root / "r-node" / "*" / "junit.xml")):
        assert time.monotonic() < deadline, cluster.logs()
        time.sleep(0.5)
    cluster.run("scontrol", "update", f"NodeName={slurm_cluster.NODE}", "State=DOWN",
                "Reason=repro-test-node-failure")  # fmt: skip
    deadline = time.monotonic() + 300
    while cluster.run("squeue", "-h", "-j", sub["report_job_id"], check=False).stdout.strip():
        assert time.monotonic() < deadline, cluster.run("sinfo", check=False).stdout
        time.sleep(1)
    cases = {c["case"]: c for c in _cases(_matrix(runs.root / "r-node"))}
    assert "slurm_task" in cases, _report_logs(runs.root / "r-node")
    assert cases["slurm_task"]["signature"] == "infra.slurm_node_fail", cases["slurm_task"]
    assert "Reason=NodeDown" in cases["slurm_task"]["message"]
    assert cases["quick"]["outcome"] == "passed"


def _node(cluster) -> tuple[str, str]:
    from repro.slurm.scheduler import key_values

    kv = key_values(cluster.run("scontrol", "-o", "show", "node", slurm_cluster.NODE).stdout)
    return kv.get("State", ""), kv.get("Reason", "")


def test_doctor_slurm_drains_the_node_on_a_failing_check_and_resumes_it(runs, cluster):
    env = {**runs.env, "SLURMD_NODENAME": slurm_cluster.NODE}

    def node_check(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "repro", "doctor", "--slurm", "--drain", *argv],
            env=env, capture_output=True, text=True, timeout=120, cwd=runs.root,
        )  # fmt: skip

    try:
        failed = node_check("--fixture", str(HOST_FIXTURE))
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert (
            failed.stdout.startswith("ERROR: repro doctor: dev_shm") and "drained" in failed.stdout
        )
        state, reason = _node(cluster)
        assert "DRAIN" in state and reason.startswith("repro-doctor: dev_shm")
        healthy = node_check()
        assert healthy.returncode == 0 and "resumed" in healthy.stdout, healthy.stdout
        assert "DRAIN" not in _node(cluster)[0]
    finally:
        cluster.run("scontrol", "update", f"NodeName={slurm_cluster.NODE}", "State=RESUME",
                    check=False)  # fmt: skip
