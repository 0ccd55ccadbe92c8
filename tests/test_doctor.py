"""repro.host.doctor: the health pre-flight, with captured SMI replies, fixture roots and this machine."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from repro.cli.main import main as repro_main
from repro.errors import EXIT_CONFIG
from repro.host import doctor, smi
from repro.host.doctor import DEV_SHM, DRIVER_VS_RUNTIME, NVIDIA_SMI, NVML, ROCM_SMI, Finding
from repro.junit import writer as junit
from repro.model import Fingerprint
from repro.outcomes import Outcome
from repro.report import merge as report

FIXTURES = Path(__file__).parent / "fixtures" / "doctor"
REPO = Path(__file__).resolve().parent.parent
GIB = 1 << 30
MIB = 1 << 20


def smi_reply(name: str) -> str:
    return (FIXTURES / name).read_text()


class Tools:
    """A fake command runner: ``replies`` maps a tool's base name to ``(rc, stdout, stderr)`` or
    to an exception to raise; a tool not listed does not exist (FileNotFoundError)."""

    def __init__(self, **replies):
        self.replies = {name.replace("_", "-"): reply for name, reply in replies.items()}
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, capture_output, text, timeout, stdin):
        assert capture_output and text and timeout > 0
        self.calls.append(list(argv))
        reply = self.replies.get(os.path.basename(argv[0]))
        if reply is None:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        if isinstance(reply, BaseException):
            raise reply
        rc, stdout, stderr = reply
        return subprocess.CompletedProcess(argv, rc, stdout, stderr)


NO_TOOLS = Tools()


def amd_calls(tools: Tools) -> list[list[str]]:
    """The commands run other than nvidia-smi (which always runs)."""
    return [call for call in tools.calls if os.path.basename(call[0]) != "nvidia-smi"]


def shm(size: int, free: int | None = None):
    """A statvfs stand-in for a /dev/shm of ``size`` bytes (``free`` defaults to all of it)."""

    def statvfs(path):
        assert path.endswith("dev/shm"), path
        return SimpleNamespace(
            f_frsize=4096, f_blocks=size // 4096, f_bavail=(free or size) // 4096
        )

    return statvfs


BIG_SHM = shm(16 * GIB)


def make_root(tmp_path: Path, *files: str, dirs=("dev/shm",)) -> Path:
    """A host tree: empty files (device nodes are plain files here) and directories."""
    root = tmp_path / "root"
    for rel in dirs:
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    return root


def nvidia_root(tmp_path: Path) -> Path:
    return make_root(tmp_path, "dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm")


def wsl2_root(tmp_path: Path) -> Path:
    root = make_root(
        tmp_path, "dev/dxg", "usr/lib/wsl/lib/libcuda.so.1", "usr/lib/wsl/lib/nvidia-smi"
    )
    (root / "proc").mkdir()
    (root / "proc/version").write_text(
        "Linux version 6.6.87.2-microsoft-standard-WSL2 (root@439a258ad544) (gcc (GCC) 11.2.0) #1 SMP"
    )
    return root


def rocm_root(tmp_path: Path) -> Path:
    """/dev/kfd, a render node and a KFD topology with one CPU node and one gfx90a (MI210)."""
    root = make_root(tmp_path, "dev/kfd", "dev/dri/renderD128")
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    for node, version in (("0", "0"), ("1", "90010")):
        (nodes / node).mkdir(parents=True)
        (nodes / node / "properties").write_text(
            f"cpu_cores_count 0\ngfx_target_version {version}\n"
        )
    return root


def make_fp(
    *,
    torch="2.13.0+cpu",
    cuda=None,
    hip=None,
    nvidia=None,
    cuda_driver_api=None,
    gpus=(),
    wsl2=False,
    unreadable=(),
) -> dict:
    """A fingerprint shaped like repro.host.fingerprint.collect() output (only what the doctor reads)."""
    return {
        "schema": 1,
        "host": {"hostname": "box", "os": "Ubuntu 24.04.1 LTS", "wsl2": wsl2, "wsl_evidence": []},
        "gpus": [
            {
                "index": i,
                "vendor": "nvidia",
                "name": name,
                "uuid": None,
                "memory_bytes": None,
                "compute_capability": None,
                "gfx_target": None,
                "source": "nvml",
            }
            for i, name in enumerate(gpus)
        ],
        "driver": {
            "nvidia": nvidia,
            "cuda_driver_api": cuda_driver_api,
            "rocm": None,
            "amdgpu": None,
        },
        "runtime": {"torch": torch, "cuda": cuda, "hip": hip, "arch_list": []},
        "unreadable": [dict(u) for u in unreadable],
    }


CPU_FP = make_fp(unreadable=[{"what": "nvml", "why": "NVML Shared Library Not Found"}])
H100_FP = make_fp(
    torch="2.8.0+cu128",
    cuda="12.8",
    nvidia="570.86.15",
    cuda_driver_api="12.8",
    gpus=["NVIDIA H100 80GB HBM3"] * 2,
)


def checks(fp, root, tools=NO_TOOLS, statvfs=BIG_SHM, **kwargs) -> dict[str, Finding]:
    findings = doctor.run_checks(
        Fingerprint.from_json(fp), root=root, run=tools, statvfs=statvfs, environ={}, **kwargs
    )
    assert [f.check for f in findings] == list(doctor.CHECKS)
    return {f.check: f for f in findings}


# --------------------------------------------------------------------------------------------
# nvidia-smi


def test_nvidia_smi_exit_0_lists_gpus_driver_and_memory(tmp_path):
    tools = Tools(nvidia_smi=(0, smi_reply("nvidia-smi/ok.txt"), ""))
    found = checks(H100_FP, nvidia_root(tmp_path), tools)[NVIDIA_SMI]
    assert found.status == doctor.OK
    assert found.detail == "2 GPU(s): NVIDIA H100 80GB HBM3 (81559 MiB) ×2, driver 570.86.15"
    assert tools.calls == [
        [
            "nvidia-smi",
            "--query-gpu=index,name,driver_version,memory.total",
            "--format=csv,noheader",
        ]
    ]


def test_nvidia_smi_exit_14_infoROM_warning_is_accepted_as_warn(tmp_path):
    tools = Tools(nvidia_smi=(14, smi_reply("nvidia-smi/inforom-14.txt"), ""))
    fp = make_fp(
        torch="2.8.0+cu128",
        cuda="12.8",
        nvidia="535.183.01",
        cuda_driver_api="12.2",
        gpus=["Tesla T4"],
    )
    found = checks(fp, nvidia_root(tmp_path), tools)
    smi = found[NVIDIA_SMI]
    assert smi.status == doctor.WARN
    assert "exit 14 (infoROM is corrupted), accepted" in smi.detail
    assert "WARNING: infoROM is corrupted at gpu 0000:00:1E.0" in smi.detail
    assert "1 GPU(s): Tesla T4 (15360 MiB), driver 535.183.01" in smi.detail
    assert "pytorch/pytorch PR #87464" in smi.source
    assert found[NVML].status == doctor.OK
    [result] = doctor.to_results([smi])
    assert result.outcome is Outcome.PASSED
    assert result.properties[doctor.PROP_STATUS] == "warn"
    assert result.properties[doctor.PROP_DETAIL] == smi.detail


def test_nvidia_smi_exit_14_without_a_gpu_row_fails(tmp_path):
    tools = Tools(nvidia_smi=(14, "WARNING: infoROM is corrupted at gpu 0000:00:1E.0\n", ""))
    smi = checks(H100_FP, nvidia_root(tmp_path), tools)[NVIDIA_SMI]
    assert smi.status == doctor.FAIL
    assert smi.detail.startswith("nvidia-smi exit 14 (infoROM is corrupted): ")


def test_nvidia_smi_exit_9_fails_with_its_own_line(tmp_path):
    tools = Tools(nvidia_smi=(9, smi_reply("nvidia-smi/no-driver-9.txt"), ""))
    fp = make_fp(unreadable=[{"what": "nvml", "why": "Driver Not Loaded"}])
    found = checks(fp, nvidia_root(tmp_path), tools)
    smi = found[NVIDIA_SMI]
    assert smi.status == doctor.FAIL
    assert smi.detail == (
        "nvidia-smi exit 9 (NVIDIA driver is not loaded): NVIDIA-SMI has failed because it "
        "couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is "
        "installed and running."
    )
    assert found[NVML].status == doctor.FAIL
    assert (
        found[NVML].detail
        == "NVML does not initialise on a host with /dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl: "
        "Driver Not Loaded"
    )
    [result] = doctor.to_results([smi])
    assert result.outcome is Outcome.ERROR
    assert result.signature == "infra.nvidia_smi"
    assert result.case_id == "doctor[check=nvidia_smi]"
    assert result.message == smi.detail


def test_nvidia_smi_output_on_stderr_and_a_signature_line_is_linked(tmp_path):
    line = "Failed to initialize NVML: GPU access blocked by the operating system"
    tools = Tools(nvidia_smi=(255, "", line + "\n"))
    smi = checks(CPU_FP, wsl2_root(tmp_path), tools)[NVIDIA_SMI]
    assert smi.status == doctor.FAIL
    assert smi.detail == f"nvidia-smi exit 255 (other error or internal driver error): {line}"
    assert smi.predicts == "wsl_gpu_unavailable"
    assert "microsoft/WSL" in smi.source


def test_missing_nvidia_smi_is_na_without_nvidia_devices_and_warn_with_them(tmp_path):
    cpu = checks(CPU_FP, make_root(tmp_path / "cpu"))[NVIDIA_SMI]
    assert cpu.status == doctor.NA
    assert "no NVIDIA GPU on this host" in cpu.detail
    gpu = checks(H100_FP, nvidia_root(tmp_path / "gpu"))[NVIDIA_SMI]
    assert gpu.status == doctor.WARN
    assert (
        "nvidia-smi not found although this host has /dev/nvidia-uvm, /dev/nvidia0, /dev/nvidiactl"
        in gpu.detail
    )


def test_nvidia_smi_installed_on_a_host_without_nvidia_devices_is_na(tmp_path):
    tools = Tools(nvidia_smi=(9, smi_reply("nvidia-smi/no-driver-9.txt"), ""))
    smi = checks(CPU_FP, make_root(tmp_path), tools)[NVIDIA_SMI]
    assert smi.status == doctor.NA
    assert smi.detail.startswith("no NVIDIA GPU on this host; nvidia-smi is installed and says:")


def test_nvidia_smi_that_does_not_answer_fails(tmp_path):
    tools = Tools(nvidia_smi=subprocess.TimeoutExpired(["nvidia-smi"], 7))
    smi = checks(H100_FP, nvidia_root(tmp_path), tools, timeout_s=7)[NVIDIA_SMI]
    assert smi.status == doctor.FAIL
    assert smi.detail.startswith("nvidia-smi: no answer within 7 s, killed: the driver query hangs")


def test_wsl2_nvidia_smi_is_found_in_usr_lib_wsl_lib(tmp_path):
    root = wsl2_root(tmp_path)
    wsl_smi = str(root / "usr/lib/wsl/lib/nvidia-smi")
    calls = []

    def run(argv, **kwargs):  # not on PATH, but there under /usr/lib/wsl/lib
        calls.append(argv[0])
        if argv[0] != wsl_smi:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        return subprocess.CompletedProcess(argv, 0, smi_reply("nvidia-smi/wsl2-ok.txt"), "")

    fp = make_fp(
        torch="2.8.0+cu128",
        cuda="12.8",
        nvidia="581.57",
        gpus=["NVIDIA GeForce RTX 3060"],
        wsl2=True,
    )
    smi = checks(fp, root, run)[NVIDIA_SMI]
    assert smi.status == doctor.OK
    assert smi.detail == "1 GPU(s): NVIDIA GeForce RTX 3060 (12288 MiB), driver 581.57"
    assert calls[:2] == ["nvidia-smi", wsl_smi]


def test_run_command_kills_a_hung_tool_at_its_timeout(tmp_path):
    script = tmp_path / "fake-smi"
    script.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        smi.run_command([str(script)], timeout=0.5)
    assert time.monotonic() - started < 5
    with pytest.raises(FileNotFoundError):
        smi.run_command([str(tmp_path / "absent")], timeout=5)
    done = smi.run_command(["/bin/sh", "-c", "echo out; echo err >&2; exit 14"], timeout=5)
    assert (done.returncode, done.stdout, done.stderr) == (14, "out\n", "err\n")


# --------------------------------------------------------------------------------------------
# NVML


def test_nvml_ok_with_gpus_driver_and_cuda_api(tmp_path):
    nvml = checks(H100_FP, nvidia_root(tmp_path))[NVML]
    assert (nvml.status, nvml.detail) == (
        doctor.OK,
        "2 GPU(s), driver 570.86.15, CUDA driver API 12.8",
    )


def test_nvml_unreadable_on_a_cpu_host_is_na(tmp_path):
    assert checks(CPU_FP, make_root(tmp_path))[NVML].status == doctor.NA


def test_nvml_wsl2_blocked_fails_and_names_the_signature(tmp_path):
    fp = make_fp(
        torch="2.8.0+cu128",
        cuda="12.8",
        wsl2=True,
        unreadable=[{"what": "nvml", "why": "GPU access blocked by the operating system"}],
    )
    nvml = checks(fp, wsl2_root(tmp_path))[NVML]
    assert nvml.status == doctor.FAIL
    assert nvml.detail.endswith(": GPU access blocked by the operating system")
    assert nvml.predicts == "wsl_gpu_unavailable"


def test_pynvml_not_installed_is_a_warning(tmp_path):
    why = "pynvml not installed (No module named 'pynvml'); pip install nvidia-ml-py"
    fp = make_fp(nvidia="570.86.15", unreadable=[{"what": "nvml", "why": why}])
    nvml = checks(fp, nvidia_root(tmp_path))[NVML]
    assert nvml.status == doctor.WARN
    assert "pip install nvidia-ml-py" in nvml.detail


def test_partial_nvml_warns_and_a_lost_gpu_fails(tmp_path):
    partial = dict(
        H100_FP, unreadable=[{"what": "nvml.cuda_driver_version", "why": "Not Supported"}]
    )
    nvml = checks(partial, nvidia_root(tmp_path / "a"))[NVML]
    assert nvml.status == doctor.WARN
    assert "partial NVML: nvml.cuda_driver_version (Not Supported)" in nvml.detail
    lost = make_fp(unreadable=[{"what": "nvml.device.0", "why": "GPU is lost"}])
    nvml = checks(lost, nvidia_root(tmp_path / "b"))[NVML]
    assert (nvml.status, nvml.detail) == (doctor.FAIL, "NVML: nvml.device.0: GPU is lost")


def test_nvml_listing_no_gpu_on_an_nvidia_host_fails(tmp_path):
    nvml = checks(make_fp(nvidia="570.86.15"), nvidia_root(tmp_path))[NVML]
    assert nvml.status == doctor.FAIL
    assert nvml.detail.startswith("NVML lists no GPU although this host has /dev/")


# --------------------------------------------------------------------------------------------
# ROCm SMI


def test_rocm_smi_is_na_without_dev_kfd(tmp_path):
    tools = Tools(rocm_smi=(0, smi_reply("rocm-smi/showproductname.txt"), ""))
    rocm = checks(CPU_FP, make_root(tmp_path), tools)[ROCM_SMI]
    assert rocm.status == doctor.NA
    assert amd_calls(tools) == []


def test_rocm_smi_product_name_with_the_kfd_topology(tmp_path):
    tools = Tools(rocm_smi=(0, smi_reply("rocm-smi/showproductname.txt"), ""))
    rocm = checks(CPU_FP, rocm_root(tmp_path), tools)[ROCM_SMI]
    assert rocm.status == doctor.OK
    assert rocm.detail == "rocm-smi: 1 GPU(s): AMD Instinct MI210; KFD: gfx90a"
    assert amd_calls(tools) == [["rocm-smi", "--showproductname"]]


def test_amd_smi_list_when_rocm_smi_is_absent(tmp_path):
    tools = Tools(amd_smi=(0, smi_reply("rocm-smi/amd-smi-list.txt"), ""))
    rocm = checks(CPU_FP, rocm_root(tmp_path), tools)[ROCM_SMI]
    assert rocm.status == doctor.OK
    assert rocm.detail == "amd-smi: 1 GPU(s): GPU 0; KFD: gfx90a"
    assert [call[0] for call in amd_calls(tools)] == ["rocm-smi", "amd-smi"]


def test_rocm_smi_failure_and_missing_tools(tmp_path):
    tools = Tools(
        rocm_smi=(1, "", "ERROR:root:Driver not initialized (amdgpu not found in modules)\n")
    )
    rocm = checks(CPU_FP, rocm_root(tmp_path / "a"), tools)[ROCM_SMI]
    assert rocm.status == doctor.FAIL
    assert rocm.detail == (
        "rocm-smi exit 1: ERROR:root:Driver not initialized (amdgpu not found in modules); KFD: gfx90a"
    )
    missing = checks(CPU_FP, rocm_root(tmp_path / "b"))[ROCM_SMI]
    assert missing.status == doctor.WARN
    assert "neither rocm-smi nor amd-smi is installed" in missing.detail


# --------------------------------------------------------------------------------------------
# /dev/shm


def test_docker_default_64mb_dev_shm_warns_with_the_reason(tmp_path):
    found = checks(CPU_FP, make_root(tmp_path), statvfs=shm(64 * MIB))[DEV_SHM]
    assert found.status == doctor.WARN
    assert found.detail.startswith(
        "/dev/shm 64 MiB, 64 MiB free (< 1 GiB; Docker's default is 64 MB)"
    )
    assert "--shm-size=1g or --ipc=host" in found.detail
    assert found.predicts == "dataloader_shm_exhausted"
    assert "dataloader_shm_exhausted" in found.source and "nccl_shm (F5-3)" in found.source


def test_dev_shm_large_enough_is_ok_and_nearly_full_warns(tmp_path):
    root = make_root(tmp_path)
    ok = checks(CPU_FP, root, statvfs=shm(8 * GIB))[DEV_SHM]
    assert (ok.status, ok.detail) == (doctor.OK, "/dev/shm 8.0 GiB, 8.0 GiB free")
    full = checks(CPU_FP, root, statvfs=shm(8 * GIB, free=100 * MIB))[DEV_SHM]
    assert full.status == doctor.WARN
    assert "(< 1 GiB free)" in full.detail


def test_dev_shm_measured_with_the_real_statvfs_under_root(tmp_path):
    found = doctor.run_checks(
        Fingerprint.from_json(CPU_FP), root=make_root(tmp_path), run=NO_TOOLS, environ={}
    )
    shm_finding = found[doctor.CHECKS.index(DEV_SHM)]
    assert shm_finding.status in (doctor.OK, doctor.WARN)
    assert shm_finding.detail.startswith("/dev/shm ")


@pytest.mark.skipif(sys.platform != "linux", reason="/dev/shm is a Linux facility")
def test_missing_dev_shm_fails(tmp_path):
    found = checks(CPU_FP, make_root(tmp_path, dirs=()), statvfs=os.statvfs)[DEV_SHM]
    assert found.status == doctor.FAIL
    assert found.detail.startswith("no /dev/shm")


# --------------------------------------------------------------------------------------------
# driver vs runtime


def test_cpu_build_is_na(tmp_path):
    found = checks(CPU_FP, make_root(tmp_path))[DRIVER_VS_RUNTIME]
    assert (found.status, found.detail) == (
        doctor.NA,
        "CPU build (torch 2.13.0+cpu): no CUDA runtime",
    )


def test_cu130_torch_on_a_535_driver_is_driver_too_old(tmp_path):
    fp = make_fp(
        torch="2.9.0+cu130",
        cuda="13.0",
        nvidia="535.183.01",
        cuda_driver_api="12.2",
        gpus=["NVIDIA A100-SXM4-80GB"],
    )
    found = checks(fp, nvidia_root(tmp_path))[DRIVER_VS_RUNTIME]
    assert found.status == doctor.FAIL
    assert found.detail.startswith(
        "driver_too_old: torch 2.9.0+cu130 (CUDA 13.0) is newer than driver 535.183.01 (CUDA 12.2): "
        "driver 535.183.01 is older than 580, the minimum for CUDA 13.x (linux)"
    )
    assert found.predicts == "driver_too_old"
    assert found.source.startswith(
        "F3-8 pytorch/pytorch PR #162531; compat-facts cuda_min_driver.13.0.family_min.linux"
    )
    [result] = doctor.to_results([found])
    assert (result.outcome, result.signature) == (Outcome.ERROR, "infra.driver_vs_runtime")
    assert result.properties[doctor.PROP_PREDICTS] == "driver_too_old"


def test_wsl2_windows_driver_581_with_cu128_is_ok(tmp_path):
    fp = make_fp(
        torch="2.8.0+cu128",
        cuda="12.8",
        nvidia="581.57",
        gpus=["NVIDIA GeForce RTX 3060"],
        wsl2=True,
        unreadable=[{"what": "nvml.cuda_driver_version", "why": "Not Supported"}],
    )
    found = checks(fp, wsl2_root(tmp_path))[DRIVER_VS_RUNTIME]
    assert found.status == doctor.OK
    assert found.detail == (
        "torch 2.8.0+cu128 (CUDA 12.8) on driver 581.57: driver 581.57 >= 528.33, the minimum for "
        "CUDA 12.x (windows, WSL2 reports the Windows driver)"
    )
    assert "cuda_min_driver.12.8.family_min.windows" in found.source


def test_runtime_newer_only_in_minor_version_warns(tmp_path):
    fp = make_fp(
        torch="2.8.0+cu129",
        cuda="12.9",
        nvidia="550.54.14",
        cuda_driver_api="12.4",
        gpus=["NVIDIA L4"],
    )
    found = checks(fp, nvidia_root(tmp_path))[DRIVER_VS_RUNTIME]
    assert found.status == doctor.WARN
    assert "runs by minor-version compatibility" in found.detail
    assert "PTX newer than the driver cannot be JIT-compiled" in found.detail


def test_newer_driver_runs_older_runtime(tmp_path):
    fp = make_fp(
        torch="2.8.0+cu126",
        cuda="12.6",
        nvidia="580.65.06",
        cuda_driver_api="13.0",
        gpus=["NVIDIA L4"],
    )
    assert checks(fp, nvidia_root(tmp_path))[DRIVER_VS_RUNTIME].status == doctor.OK


def test_driver_from_nvidia_smi_when_nvml_is_not_readable(tmp_path):
    tools = Tools(nvidia_smi=(0, "0, Tesla T4, 535.183.01, 15360 MiB\n", ""))
    fp = make_fp(
        torch="2.9.0+cu130",
        cuda="13.0",
        unreadable=[{"what": "nvml", "why": "pynvml not installed (x)"}],
    )
    found = checks(fp, nvidia_root(tmp_path), tools)[DRIVER_VS_RUNTIME]
    assert found.status == doctor.FAIL
    assert "driver 535.183.01 is older than 580" in found.detail


def test_cuda_build_without_nvidia_gpu_and_rocm_build_are_na(tmp_path):
    cuda_on_cpu = make_fp(torch="2.8.0+cu128", cuda="12.8")
    found = checks(cuda_on_cpu, make_root(tmp_path / "a"))[DRIVER_VS_RUNTIME]
    assert found.status == doctor.NA
    assert "no NVIDIA GPU or driver on this host" in found.detail
    rocm = make_fp(torch="2.8.0+rocm6.4", hip="6.4.43482")
    assert checks(rocm, make_root(tmp_path / "b"))[DRIVER_VS_RUNTIME].status == doctor.NA
    no_torch = make_fp(torch=None)
    assert checks(no_torch, make_root(tmp_path / "c"))[DRIVER_VS_RUNTIME].status == doctor.NA


# --------------------------------------------------------------------------------------------
# to_results, JUnit and the report


FINDINGS = [
    Finding(NVIDIA_SMI, doctor.FAIL, "nvidia-smi exit 9 (NVIDIA driver is not loaded): x", "s1"),
    Finding(NVML, doctor.NA, "no NVIDIA GPU on this host", "s2"),
    Finding(ROCM_SMI, doctor.NA, "no /dev/kfd", "s3"),
    Finding(DEV_SHM, doctor.WARN, "/dev/shm 64 MiB", "s4", "dataloader_shm_exhausted"),
    Finding(DRIVER_VS_RUNTIME, doctor.OK, "fine", "s5"),
]


def test_to_results_maps_statuses_to_infra_outcomes_never_failed():
    results = doctor.to_results(FINDINGS)
    assert [(r.case_id, r.outcome, r.signature) for r in results] == [
        ("doctor[check=nvidia_smi]", Outcome.ERROR, "infra.nvidia_smi"),
        ("doctor[check=nvml]", Outcome.SKIPPED, ""),
        ("doctor[check=rocm_smi]", Outcome.SKIPPED, ""),
        ("doctor[check=dev_shm]", Outcome.PASSED, ""),
        ("doctor[check=driver_vs_runtime]", Outcome.PASSED, ""),
    ]
    assert all(r.scenario == "doctor" for r in results)
    assert results[1].message == "no NVIDIA GPU on this host"
    assert results[0].detail == "nvidia-smi exit 9 (NVIDIA driver is not loaded): x\nsource: s1\n"
    assert results[3].properties == {
        "doctor.status": "warn",
        "doctor.detail": "/dev/shm 64 MiB",
        "doctor.source": "s4",
        "doctor.predicts": "dataloader_shm_exhausted",
    }
    assert results[4].properties["doctor.status"] == "ok"
    with pytest.raises(ValueError, match="unknown status"):
        doctor.to_results([Finding(NVML, "broken", "", "")])


def test_doctor_suite_merges_into_the_report_with_the_usual_totals(tmp_path):
    run_dir = tmp_path / "results" / "run-1"
    run_dir.mkdir(parents=True)
    properties = {
        "host.key": "CPU only · Debian GNU/Linux 12 (bookworm)",
        "variant.id": "cpu-torch2.13",
    }
    junit.write_junit(run_dir / "junit.xml", doctor.to_results(FINDINGS), properties)
    merged = report.build_report([tmp_path / "results"], predict=False, coverage=False)
    assert merged.problems == []
    # Doctor checks are counted in their own place, apart from scenario cases; a failed check
    # is still a problem.
    assert report.totals_line(merged) == (
        "problems: 1 (1 failed doctor check) · expected reproductions: 0 · passed: 0"
        " · skipped: 0 · doctor checks: 5"
    )
    [cell] = merged.matrix["cells"]
    by_case = {c["case"]: c for c in cell["cases"]}
    assert by_case["doctor[check=nvidia_smi]"]["signature"] == "infra.nvidia_smi"
    assert by_case["doctor[check=nvidia_smi]"]["scenario"] == "doctor"


def test_doctor_results_writes_and_links_a_log_in_the_run_directory(tmp_path):
    run_dir = tmp_path / "results" / "run-1"
    results = doctor.doctor_results(
        Fingerprint.from_json(CPU_FP),
        run_dir,
        root=make_root(tmp_path),
        run=NO_TOOLS,
        statvfs=BIG_SHM,
        environ={},
    )
    assert {r.log_path for r in results} == {"logs/doctor.log"}
    log = (run_dir / "logs/doctor.log").read_text()
    assert log.splitlines()[0] == "# repro doctor"
    assert "dev_shm            ok      /dev/shm 16.0 GiB, 16.0 GiB free" in log


def test_doctor_results_runs_the_checks(tmp_path):
    results = doctor.doctor_results(
        Fingerprint.from_json(CPU_FP),
        root=make_root(tmp_path),
        run=NO_TOOLS,
        statvfs=BIG_SHM,
        environ={},
    )
    assert [r.outcome for r in results] == [
        Outcome.SKIPPED,
        Outcome.SKIPPED,
        Outcome.SKIPPED,
        Outcome.PASSED,
        Outcome.SKIPPED,
        Outcome.SKIPPED,  # cuda_init: no CUDA/ROCm build
        Outcome.SKIPPED,  # gpu_count: no expected count
    ]


def test_format_table_has_one_row_per_check_and_sources_under_problems():
    table = doctor.format_table(FINDINGS).splitlines()
    assert table[0].split() == ["check", "status", "detail"]
    assert table[1].startswith("nvidia_smi         fail    nvidia-smi exit 9")
    assert table[2].strip() == "source: s1"
    assert sum(line.strip().startswith("source:") for line in table) == 2


# --------------------------------------------------------------------------------------------
# main() on this machine


def test_main_on_this_machine(capsys):
    code = repro_main(["doctor"])
    out = capsys.readouterr().out
    rows = {
        line.split()[0]: line for line in out.splitlines()[3:] if line and not line.startswith(" ")
    }
    assert set(rows) == set(doctor.CHECKS)
    assert "/dev/shm " in rows["dev_shm"]
    if not any(Path("/dev").glob("nvidia[0-9]*")) and not Path("/dev/dxg").exists():
        assert code == 0
        assert rows["nvidia_smi"].split()[1] == "n/a"
        assert rows["nvml"].split()[1] == "n/a"
    if not Path("/dev/kfd").exists():
        assert rows["rocm_smi"].split()[1] == "n/a"


def test_main_json_and_bad_python(capsys, tmp_path):
    code = repro_main(["doctor", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [f["check"] for f in data["findings"]] == list(doctor.CHECKS)
    assert code == (1 if data["failed"] else 0)
    # --python is checked when the command line is parsed: a usage error, exit 2, one line.
    with pytest.raises(SystemExit) as stop:
        repro_main(["doctor", "--python", str(tmp_path / "no-such-python")])
    assert stop.value.code == EXIT_CONFIG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("repro doctor: error: argument --python: ")
    assert f"{tmp_path / 'no-such-python'}: no such file" in err[0]
    not_executable = tmp_path / "python3"
    not_executable.write_text("")
    with pytest.raises(SystemExit) as stop:
        repro_main(["doctor", "--python", str(not_executable)])
    assert stop.value.code == EXIT_CONFIG
    assert "python3: not executable" in capsys.readouterr().err


def test_doctor_never_imports_torch():
    code = (
        "import sys\n"
        "from repro.host import doctor\n"
        "from repro.model import Fingerprint\n"
        "fp = {'runtime': {'torch': '2.8.0+cu128', 'cuda': '12.8'}, 'driver': {'nvidia': '570.86.15'}}\n"
        "doctor.run_checks(Fingerprint.from_json(fp))\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
