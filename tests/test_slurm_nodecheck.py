"""``repro doctor --slurm``: the doctor as a Slurm HealthCheckProgram or Prolog (issue 33,
item 3): one line, exit 0 healthy / 1 failing, nothing written outside its log, fail open;
``--drain`` drains a failing node and resumes only a node it drained itself.

The real command runs here on this (healthy CPU) machine and with a planted failing check (a
captured host root without ``/dev/shm``); draining a real node is in
tests/test_slurm_cluster.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli_env

from repro.host.checks import FAIL, NA, OK, WARN, Finding
from repro.slurm import nodecheck

PLANTED_ROOT = REPO / "tests" / "fixtures" / "hosts" / "cpu"  # its root/ has no /dev/shm


def _f(check: str, status: str, detail: str = "d") -> Finding:
    return Finding(check, status, detail, "src")


def test_healthy_line_counts_statuses_and_names_the_first_warning():
    result = nodecheck.verdict(
        [_f("nvml", NA), _f("dev_shm", WARN, "64 MiB"), _f("cuda_init", OK)], "CPU only · X"
    )
    assert result.healthy and result.exit_status == 0 and result.reason == ""
    assert result.line == (
        "OK: repro doctor: 3 checks (1 ok, 1 warn, 1 n/a) on CPU only · X; warning dev_shm: 64 MiB"
    )


def test_a_failing_check_is_one_error_line_and_a_short_drain_reason():
    result = nodecheck.verdict(
        [_f("nvidia_smi", FAIL, "exit 9: " + "x" * 400), _f("nvml", FAIL), _f("dev_shm", OK)],
        "host",
    )
    assert not result.healthy and result.exit_status == 1
    assert result.line.startswith("ERROR: repro doctor: nvidia_smi: exit 9: ")
    assert result.line.endswith("(+1 more failed: nvml)") and "\n" not in result.line
    assert result.reason.startswith("repro-doctor: nvidia_smi: ")
    assert len(result.reason) <= nodecheck.MAX_REASON


class Scontrol:
    """A recording scontrol double: ``show node`` answers ``state``/``reason``."""

    def __init__(self, state: str = "IDLE", reason: str = ""):
        self.state, self.reason, self.calls = state, reason, []

    def __call__(self, argv, timeout):
        self.calls.append(argv)
        if argv[:3] == ["scontrol", "-o", "show"]:
            out = f"NodeName=n1 Arch=x86_64 State={self.state} Reason={self.reason} Comment=(null)"
            return subprocess.CompletedProcess(argv, 0, out, "")
        return subprocess.CompletedProcess(argv, 0, "", "")


def test_drain_on_failure_and_resume_only_what_it_drained():
    failing = nodecheck.verdict([_f("dev_shm", FAIL, "no /dev/shm")], "h")
    run = Scontrol()
    assert nodecheck.apply(failing, "n1", run) == "drained"
    assert run.calls[-1] == [
        "scontrol", "update", "NodeName=n1", "State=DRAIN",
        "Reason=repro-doctor: dev_shm: no /dev/shm",
    ]  # fmt: skip
    healthy = nodecheck.verdict([_f("dev_shm", OK)], "h")
    ours = Scontrol("IDLE+DRAIN", "repro-doctor: dev_shm: no /dev/shm [root@2026-11-27T04:00:00]")
    assert nodecheck.apply(healthy, "n1", ours) == "resumed"
    assert ours.calls[-1] == ["scontrol", "update", "NodeName=n1", "State=RESUME"]
    theirs = Scontrol("IDLE+DRAIN", "bad DIMM, ticket 4711")
    assert nodecheck.apply(healthy, "n1", theirs) == "unchanged"
    assert not any("update" in call for call in theirs.calls)
    unknown = Scontrol()
    assert nodecheck.apply(nodecheck.unknown("bug"), "n1", unknown) == "unchanged"
    assert unknown.calls == []


def test_node_name_prefers_slurmd_nodename():
    assert nodecheck.node_name({"SLURMD_NODENAME": "gpu07"}) == "gpu07"
    assert nodecheck.node_name({}) and "." not in nodecheck.node_name({})


def _tree(*roots: Path) -> set[str]:
    """Every path under ``roots``, the interpreter's bytecode caches left out (a first import
    from an editable install writes them; a pip-installed package has them already)."""
    return {str(p) for root in roots for p in root.rglob("*") if "__pycache__" not in p.parts}


def _node_check(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``repro doctor --slurm`` as slurmd would start it: its own HOME, TMPDIR and working
    directory (all empty), logging to a file; returns the result and every path written."""
    home, tmp, cwd = (tmp_path / name for name in ("home", "tmp", "cwd"))
    for path in (home, tmp, cwd):
        path.mkdir()
    log = tmp_path / "logs" / "node.log"
    log.parent.mkdir()
    env = {**cli_env(), "HOME": str(home), "TMPDIR": str(tmp)}
    before = _tree(home, tmp, cwd, REPO / "repro")
    done = subprocess.run(
        [sys.executable, "-m", "repro", "doctor", "--slurm", "--log", str(log), *extra],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    written = _tree(home, tmp, cwd, REPO / "repro") - before
    return done, written


@pytest.mark.slow
def test_a_healthy_cpu_node_is_one_ok_line_exit_0_and_only_its_log(tmp_path):
    done, written = _node_check(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("OK: repro doctor: 7 checks (")
    assert done.stderr == ""
    assert written == set(), written  # no results, fingerprint or cache
    log = (tmp_path / "logs" / "node.log").read_text().splitlines()
    assert len(log) == 1 and log[0].endswith(lines[0]) and log[0][:4].isdigit()


@pytest.mark.slow
def test_a_planted_failing_check_is_an_error_line_and_exit_1(tmp_path):
    done, written = _node_check(tmp_path, "--fixture", str(PLANTED_ROOT))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "ERROR: repro doctor: dev_shm: no /dev/shm: DataLoader workers and NCCL cannot share memory"
    ]
    assert done.stderr == "" and written == set()
    assert "ERROR: repro doctor: dev_shm" in (tmp_path / "logs" / "node.log").read_text()


def test_drain_and_log_need_the_slurm_mode(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "repro", "doctor", "--drain"],
        cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "add --slurm" in done.stderr
    assert os.listdir(tmp_path) == []
