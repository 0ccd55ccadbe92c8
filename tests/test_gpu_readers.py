"""repro.host.nvidia and repro.host.amd: the one reader per vendor, its order and its failures,
with captured nvidia-smi / rocm-smi replies (tests/fixtures/doctor) and fixture trees."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from repro.host import amd, fingerprint, hostkind, nvidia

FIXTURES = Path(__file__).parent / "fixtures"
SMI_REPLIES = FIXTURES / "doctor"
NATIVE = FIXTURES / "fingerprint" / "native"
ROCM = FIXTURES / "fingerprint" / "rocm"


class NoNVML:
    """pynvml on a host whose driver library is missing."""

    def nvmlInit(self):
        raise RuntimeError("NVML Shared Library Not Found")


class OneGpuNVML:
    """pynvml with one healthy A100."""

    def __init__(self):
        self.shutdowns = 0

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        return b"535.183.01"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12020

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return "NVIDIA A100-SXM4-40GB"

    def nvmlDeviceGetUUID(self, handle):
        return "GPU-0"

    def nvmlDeviceGetMemoryInfo(self, handle):
        return type("Memory", (), {"total": 42949672960})()

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return (8, 0)


class Tools:
    """A command runner replaying ``{tool base name: (rc, stdout, stderr) | exception}``; a tool
    not listed does not exist."""

    def __init__(self, **replies):
        self.replies = {name.replace("_", "-"): reply for name, reply in replies.items()}
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, capture_output, text, timeout, stdin):
        self.calls.append(list(argv))
        reply = self.replies.get(os.path.basename(argv[0]))
        if reply is None:
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        if isinstance(reply, BaseException):
            raise reply
        rc, stdout, stderr = reply
        return subprocess.CompletedProcess(argv, rc, stdout, stderr)


def reply(name: str) -> str:
    return (SMI_REPLIES / name).read_text()


# --- one driver-version function for every source ------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ((NATIVE / "proc/driver/nvidia/version").read_text(), "570.86.15"),
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 23 2025", "570.86.15"),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release",
            "580.65.06",
        ),
        ("581.57", "581.57"),  # nvidia-smi's driver_version column on WSL2
        (b"535.183.01", "535.183.01"),  # old pynvml returns bytes
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module", None),
        ("", None),
        (None, None),
    ],
)
def test_driver_version_is_read_by_one_regex_from_every_source(text, version):
    assert nvidia.driver_version(text) == version


# --- the NVIDIA chain: NVML, then nvidia-smi, then /proc ------------------------------------


def test_nvml_answer_means_nvidia_smi_is_not_run():
    tools = Tools(nvidia_smi=(0, reply("nvidia-smi/ok.txt"), ""))
    unreadable: list = []
    reading = nvidia.read(NATIVE, unreadable, nvml=OneGpuNVML(), run=tools)
    assert [g.name for g in reading.gpus] == ["NVIDIA A100-SXM4-40GB"]
    assert (reading.driver, reading.cuda_driver_api) == ("535.183.01", "12.2")
    assert tools.calls == [] and unreadable == []


def test_nvidia_smi_lists_gpus_and_driver_where_nvml_cannot():
    tools = Tools(nvidia_smi=(0, reply("nvidia-smi/ok.txt"), ""))
    unreadable: list = []
    reading = nvidia.read(Path("/nonexistent-root"), unreadable, nvml=NoNVML(), run=tools)
    assert [(g.index, g.name, g.memory_bytes, g.source) for g in reading.gpus] == [
        (0, "NVIDIA H100 80GB HBM3", 81559 * 2**20, "nvidia-smi"),
        (1, "NVIDIA H100 80GB HBM3", 81559 * 2**20, "nvidia-smi"),
    ]
    assert reading.driver == "570.86.15"
    assert reading.cuda_driver_api is None  # only NVML knows it
    assert unreadable == [{"what": "nvml", "why": "NVML Shared Library Not Found"}]


def test_failing_nvidia_smi_is_recorded_and_proc_gives_the_driver():
    tools = Tools(nvidia_smi=(9, reply("nvidia-smi/no-driver-9.txt"), ""))
    unreadable: list = []
    reading = nvidia.read(NATIVE, unreadable, nvml=NoNVML(), run=tools)
    assert reading.gpus == ()
    assert reading.driver == "570.86.15"  # /proc/driver/nvidia/version
    [entry] = [u for u in unreadable if u["what"] == "nvidia-smi"]
    assert entry["why"].startswith("NVIDIA-SMI has failed because it couldn't communicate")


def test_hung_nvidia_smi_is_recorded_with_its_timeout():
    hung = subprocess.TimeoutExpired(["nvidia-smi"], 0.5)
    unreadable: list = []
    nvidia.read(NATIVE, unreadable, nvml=NoNVML(), run=Tools(nvidia_smi=hung), timeout_s=0.5)
    assert {"what": "nvidia-smi", "why": "no answer within 0.5 s"} in unreadable


def test_wsl2_nvidia_smi_is_found_under_usr_lib_wsl_lib(tmp_path):
    (tmp_path / "usr/lib/wsl/lib").mkdir(parents=True)
    wsl_smi = tmp_path / "usr/lib/wsl/lib/nvidia-smi"
    wsl_smi.write_text("")
    calls = []

    def run(argv, **kwargs):
        calls.append(argv[0])
        if argv[0] == str(wsl_smi):
            return subprocess.CompletedProcess(argv, 0, reply("nvidia-smi/wsl2-ok.txt"), "")
        raise FileNotFoundError(2, "No such file or directory", argv[0])  # not on PATH

    reading = nvidia.read(tmp_path, [], nvml=NoNVML(), run=run)
    assert calls == ["nvidia-smi", str(wsl_smi)]
    assert [g.name for g in reading.gpus] == ["NVIDIA GeForce RTX 3060"]
    assert reading.driver == "581.57"


def test_query_accepts_infoROM_exit_14_and_reports_the_smi_failure_line():
    ok = nvidia.query(
        NATIVE, nvml=NoNVML(), run=Tools(nvidia_smi=(14, reply("nvidia-smi/inforom-14.txt"), ""))
    )
    assert (ok.ok, ok.tool, ok.gpus, ok.driver) == (True, "nvidia-smi", ("Tesla T4",), "535.183.01")
    broken = nvidia.query(
        NATIVE, nvml=NoNVML(), run=Tools(nvidia_smi=(9, reply("nvidia-smi/no-driver-9.txt"), ""))
    )
    assert (broken.ok, broken.tool) == (False, "nvidia-smi")
    assert "couldn't communicate with the NVIDIA driver" in broken.error
    nothing = nvidia.query(NATIVE, nvml=NoNVML(), run=Tools())
    assert (nothing.ok, nothing.tool, nothing.error) == (
        False,
        "nvml",
        "NVML Shared Library Not Found",
    )


def test_hostkind_detect_uses_the_same_nvidia_reader():
    root = FIXTURES / "hosts" / "nvidia-linux" / "root"
    daemon = hostkind.DaemonInfo.unreachable("not asked")
    found = hostkind.detect(
        root,
        daemon=daemon,
        nvidia_query=lambda r: nvidia.query(r, nvml=OneGpuNVML(), run=Tools()),
        environ={},
    )
    assert found.nvidia_query is not None
    assert (found.nvidia_query.tool, found.nvidia_query.driver) == ("nvml", "535.183.01")


def test_collect_takes_gpus_from_nvidia_smi_when_nvml_fails():
    tools = Tools(nvidia_smi=(0, reply("nvidia-smi/ok.txt"), ""))
    fp = fingerprint.collect(
        "/nonexistent/python", 10.0, NATIVE, environ={}, nvml=NoNVML(), run=tools
    )
    assert [g.source for g in fp.gpus] == ["nvidia-smi", "nvidia-smi"]
    assert fingerprint.host_key(fp) == (
        "NVIDIA H100 80GB HBM3 ×2 · driver 570.86.15 · Ubuntu 22.04.4 LTS"
    )


# --- AMD: KFD topology, then rocm-smi / amd-smi ---------------------------------------------


def test_kfd_topology_is_read_without_any_tool():
    tools = Tools(rocm_smi=(0, reply("rocm-smi/showproductname.txt"), ""))
    gpus = amd.read(ROCM, [], run=tools)
    assert [(g.gfx_target, g.source) for g in gpus] == [("gfx90a", "sysfs")]
    assert tools.calls == []
    assert amd.query_kfd(ROCM).gpus == ("gfx90a",)


def test_rocm_smi_names_the_gpus_when_dev_kfd_has_no_topology(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kfd").write_text("")
    tools = Tools(rocm_smi=(0, reply("rocm-smi/showproductname.txt"), ""))
    gpus = amd.read(tmp_path, [], run=tools)
    assert [(g.vendor, g.name, g.source) for g in gpus] == [
        ("amd", "AMD Instinct MI210", "rocm-smi")
    ]
    failing = Tools(rocm_smi=(2, "", "ERROR: GPU[0] : Unable to open device\n"))
    unreadable: list = []
    assert amd.read(tmp_path, unreadable, run=failing) == ()
    assert unreadable == [{"what": "rocm-smi", "why": "ERROR: GPU[0] : Unable to open device"}]
    assert not amd.query_kfd(tmp_path).ok


def test_amd_smi_list_when_rocm_smi_is_absent(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kfd").write_text("")
    tools = Tools(amd_smi=(0, reply("rocm-smi/amd-smi-list.txt"), ""))
    gpus = amd.read(tmp_path, [], run=tools)
    assert [(g.name, g.source) for g in gpus] == [("GPU 0", "amd-smi")]
    assert [call[0] for call in tools.calls] == ["rocm-smi", "amd-smi"]
