"""``repro doctor --deep``: this CPU host (every accelerator check n/a, exit 0), the fixture GPU
hosts of tests/fixtures/gpuhosts (NVML through the binding-checked double, Fabric Manager), the
child checks' verdicts (fork, smoke, /dev/shm) and the fork check's own logic with a torch
stand-in whose CUDA breaks only in a forked child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import test_gpu_hosts as gpuhosts
from conftest import run_cli

from repro.host import accel_probe, deep, doctor, fork_check
from repro.host.checks import FAIL, NA, OK, WARN

REPO = Path(__file__).resolve().parent.parent

#: The deep verdicts each fixture host must get from what it holds (NVML, modes, fabric).
EXPECT = {
    "driver-library-mismatch-803-nvml-fails": {
        deep.NVML_QUERIES: (FAIL, "RM has detected an NVML/RM version mismatch"),
        deep.FABRIC_MANAGER: (NA, "no NVSwitch"),
    },
    "driver-library-mismatch-803": {
        deep.NVML_QUERIES: (OK, "not supported by the GPU: nvmlDeviceGetEccMode"),
        deep.FABRIC_MANAGER: (NA, "no NVSwitch"),
    },
    "hgx-802-no-fabric-manager": {
        deep.NVML_QUERIES: (OK, "on 8 GPU(s)"),
        deep.FABRIC_MANAGER: (FAIL, "GPU 0,1,2,3,4,5,6,7: fabric Not Started"),
    },
    "two-of-eight": {
        deep.NVML_QUERIES: (OK, "on 8 GPU(s)"),
        deep.FABRIC_MANAGER: (OK, "GPU 2,3: fabric Completed"),
    },
    "wsl2-partial-nvml": {
        deep.NVML_QUERIES: (OK, "nvmlSystemGetCudaDriverVersion"),
        deep.FABRIC_MANAGER: (NA, "no NVSwitch"),
    },
    "rocm-hip-visible-devices": {
        deep.NVML_QUERIES: (NA, "no NVIDIA GPU on this host"),
        deep.FABRIC_MANAGER: (NA, "no NVSwitch"),
    },
}


def child_replies(**replies):
    """A ``run_bounded`` stand-in for the accel_probe children: ``replies`` maps the check
    (fork, smoke, shm) to a JSON reply dict, a negative exit status (killed by that signal) or
    an exception to raise."""
    calls = []

    def run(argv, *, timeout_s, env, cwd):
        assert argv[1:3] == ["-m", fork_check.CHILD_MODULE] and timeout_s > 0
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(REPO)
        calls.append(argv[3])
        reply = replies[argv[3]]
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, int):
            return subprocess.CompletedProcess(argv, reply, "", "")
        return subprocess.CompletedProcess(argv, 0, "noise\n" + json.dumps(reply) + "\n", "")

    run.calls = calls
    return run


NA_CHILDREN = child_replies(
    fork={"status": "n/a", "reason": "torch 2.8.0+cu128: no CUDA device"},
    smoke={"status": "n/a", "reason": "no cuda device visible to torch"},
    shm={"status": "ok", "reason": "wrote 256 MiB into a shared-memory segment"},
)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_fixture_hosts_get_the_right_deep_finding(name, tmp_path, monkeypatch):
    host = gpuhosts.load(gpuhosts.FIXTURES / "gpuhosts" / f"{name}.json")
    fp = gpuhosts.collect(host, tmp_path, monkeypatch)
    nvml = gpuhosts.FixtureNVML(host["nvml"]) if host["nvml"] else None
    if nvml is None:  # a host without the NVIDIA library: the binding's own error
        nvml = SimpleNamespace(nvmlInit=gpuhosts._no_nvml)
    findings = deep.run_deep_checks(
        fp,
        python=sys.executable,
        root=gpuhosts.host_root(host, tmp_path),
        run=gpuhosts.tools(host),
        runner=NA_CHILDREN,
        nvml=nvml,
        statvfs=gpuhosts.BIG_SHM,
        environ=host["environ"],
    )
    by_check = {f.check: f for f in findings}
    assert list(by_check) == [*doctor.CHECKS, *deep.DEEP_CHECKS]
    for check, (status, text) in EXPECT[name].items():
        assert by_check[check].status == status, by_check[check].detail
        assert text in by_check[check].detail, by_check[check].detail
    if by_check[deep.FABRIC_MANAGER].status == FAIL:  # Error 802 before any case runs
        assert by_check[deep.FABRIC_MANAGER].predicts == "cuda_init_failed"
        assert "nvidia-fabricmanager" in by_check[deep.FABRIC_MANAGER].detail
    # The findings are results of the doctor testsuite like the plain ones.
    results = {r.case_id: r for r in doctor.to_results(findings)}
    assert doctor.case_id(deep.FORK_CUDA) in results


@pytest.mark.parametrize(
    ("replies", "check", "status", "text"),
    [
        ({"fork": subprocess.TimeoutExpired("python", 180)}, deep.FORK_CUDA, FAIL, "hung past"),
        (
            {"fork": {"status": "failed", "reason": "cuda works here but not in a child forked"}},
            deep.FORK_CUDA,
            FAIL,
            "the zygote must start accelerator cases fresh",
        ),
        ({"fork": -11}, deep.FORK_CUDA, FAIL, "killed by SIGSEGV"),
        (
            {"smoke": {"status": "failed", "reason": "nccl: RuntimeError: NCCL error"}},
            deep.ACCELERATOR_SMOKE,
            FAIL,
            "nccl: RuntimeError",
        ),
        ({"shm": -7}, deep.SHM_WRITE, WARN, "killed by SIGBUS"),
        ({"shm": {"status": "ok", "reason": "wrote 256 MiB"}}, deep.SHM_WRITE, OK, "256 MiB"),
    ],
)
def test_child_verdicts(replies, check, status, text):
    what = {deep.FORK_CUDA: "fork", deep.ACCELERATOR_SMOKE: "smoke", deep.SHM_WRITE: "shm"}[check]
    runner = child_replies(**replies)
    finding = {
        deep.FORK_CUDA: deep.fork_cuda,
        deep.ACCELERATOR_SMOKE: deep.accelerator_smoke,
        deep.SHM_WRITE: deep.shm_write,
    }[check]("/usr/bin/python3", runner, 5.0)
    assert runner.calls == [what]
    assert (finding.status, finding.check) == (status, check)
    assert text in finding.detail
    if check == deep.SHM_WRITE and status == WARN:
        assert finding.predicts == "dataloader_shm_exhausted"


# ---------------------------------------------------------------------------------------------
# the fork check's own logic, with a torch whose CUDA is broken only in a forked child


def fake_torch(*, cuda="12.8", initialized=False, parent_ok=True, child_ok=True, error=None):
    parent = os.getpid()

    class Tensor:
        def __matmul__(self, other):
            return self

        def sum(self):
            return SimpleNamespace(item=lambda: 64.0**3)

    def ones_tensor(*shape, device=None):
        forked = os.getpid() != parent
        if (forked and not child_ok) or (not forked and not parent_ok):
            raise RuntimeError(
                error
                or "Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                "multiprocessing, you must use the 'spawn' start method"
            )
        return Tensor()

    return SimpleNamespace(
        __version__="2.8.0+cu128" if cuda else "2.8.0+cpu",
        version=SimpleNamespace(cuda=cuda, hip=None),
        ones=ones_tensor,
        cuda=SimpleNamespace(
            is_initialized=lambda: initialized,
            synchronize=lambda: None,
            get_device_name=lambda index: "NVIDIA H100 80GB HBM3",
        ),
    )


@pytest.mark.parametrize(
    ("torch", "status", "text"),
    [
        (fake_torch(), OK, "ok on NVIDIA H100 80GB HBM3"),
        (fake_torch(cuda=None), NA, "CPU build"),
        (fake_torch(initialized=True), FAIL, "initialised cuda in the parent"),
        (fake_torch(child_ok=False), FAIL, "Cannot re-initialize CUDA in forked subprocess"),
        (
            fake_torch(child_ok=False, parent_ok=False, error="No CUDA GPUs are available"),
            NA,
            "no cuda device",
        ),
        (
            fake_torch(child_ok=False, parent_ok=False, error="CUDA error: Error 803"),
            NA,
            "not a fork problem",
        ),
    ],
)
def test_fork_check_child(monkeypatch, torch, status, text):
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._dynamo", SimpleNamespace())
    result = accel_probe.fork_check(("torch._dynamo",), timeout_s=30)
    assert result["status"] == {OK: "ok", FAIL: "failed", NA: "n/a"}[status]
    assert text in result["reason"]


# ---------------------------------------------------------------------------------------------
# this machine, through the real CLI


@pytest.mark.slow
def test_deep_doctor_on_this_cpu_host_is_all_na_and_exit_0(tmp_path):
    done = run_cli("doctor", "--deep", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    findings = {f["check"]: f for f in json.loads(done.stdout)["findings"]}
    accelerator_checks = (
        doctor.NVIDIA_SMI,
        doctor.NVML,
        doctor.ROCM_SMI,
        doctor.CUDA_INIT,
        deep.NVML_QUERIES,
        deep.FORK_CUDA,
        deep.ACCELERATOR_SMOKE,
        deep.FABRIC_MANAGER,
    )
    for check in accelerator_checks:
        assert findings[check]["status"] == NA, findings[check]
        assert findings[check]["detail"].strip()
    assert findings[deep.SHM_WRITE]["status"] == OK  # this sandbox's /dev/shm is ~23.5 GiB
