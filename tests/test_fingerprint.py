"""repro.host.fingerprint: captured file trees, a fake NVML, and the real probe child process."""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.host import amd, fingerprint, nvidia, torch_probe
from repro.model import Fingerprint

FIXTURES = Path(__file__).parent / "fixtures" / "fingerprint"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
NO_PYTHON = "/nonexistent/bin/python3"  # fast probe failure for tests about files and NVML


class NVMLError(Exception):
    """Stands in for pynvml.NVMLError (its str() is the NVML message)."""


class FakeNVML:
    """The slice of pynvml that fingerprint uses; ``fail`` maps a function name to its error."""

    def __init__(self, devices=(), driver="570.86.15", cuda=12080, fail=None):
        self.devices = list(devices)
        self.driver = driver
        self.cuda = cuda
        self.fail = dict(fail or {})
        self.initialised = False
        self.shutdowns = 0

    def _check(self, name):
        if name in self.fail:
            raise NVMLError(self.fail[name])

    def nvmlInit(self):
        self._check("nvmlInit")
        self.initialised = True

    def nvmlShutdown(self):
        self.shutdowns += 1
        self.initialised = False

    def nvmlSystemGetDriverVersion(self):
        self._check("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):
        self._check("nvmlSystemGetCudaDriverVersion")
        return self.cuda

    def nvmlDeviceGetCount(self):
        self._check("nvmlDeviceGetCount")
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index):
        self._check("nvmlDeviceGetHandleByIndex")
        return self.devices[index]

    def nvmlDeviceGetName(self, handle):
        self._check("nvmlDeviceGetName")
        return handle["name"]

    def nvmlDeviceGetUUID(self, handle):
        self._check("nvmlDeviceGetUUID")
        return handle["uuid"]

    def nvmlDeviceGetMemoryInfo(self, handle):
        self._check("nvmlDeviceGetMemoryInfo")
        return type("Memory", (), {"total": handle["memory"], "free": 0, "used": 0})()

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        self._check("nvmlDeviceGetCudaComputeCapability")
        return handle["cc"]


H100 = {"name": "NVIDIA H100 80GB HBM3", "memory": 85520809984, "cc": (9, 0)}
TWO_H100 = [
    {**H100, "uuid": "GPU-4c1b0c2e-3f43-8c6c-1d3a-6a3f0f7a8b11"},
    {**H100, "uuid": "GPU-9e2d41a0-77f1-2b5e-c0a4-5d1e6c9b2f22"},
]
NO_NVML = FakeNVML(fail={"nvmlInit": "NVML Shared Library Not Found"})


def no_smi(argv, **kwargs):
    """A tool runner on a machine without nvidia-smi, rocm-smi or amd-smi."""
    raise FileNotFoundError(2, "No such file or directory", argv[0])


def collect_json(python, timeout_s, root, nvml, environ=None, run=no_smi) -> dict:
    """``collect`` on a captured tree, as the JSON written to fingerprint.json."""
    fp = fingerprint.collect(python, timeout_s, root, environ=environ or {}, nvml=nvml, run=run)
    return fp.to_json()


def fixture_fp(case: str, nvml=NO_NVML, environ=None, python=NO_PYTHON) -> dict:
    root = FIXTURES / case if isinstance(case, str) else case
    return collect_json(python, 30.0, root, nvml, environ)


# A fingerprint shaped like collect() output on a 2×H100 box (cu128 torch).
H100_FP = {
    "schema": 1,
    "collected_at": "2025-02-03T10:00:00+00:00",
    "host": {
        "hostname": "gpu-node-07",
        "os": "Ubuntu 22.04.4 LTS",
        "kernel": "5.15.0-131-generic",
        "arch": "x86_64",
        "glibc": "2.35",
        "python": "3.12.8",
        "python_executable": "/opt/venv/bin/python",
        "cpu": "Intel(R) Xeon(R) Platinum 8480+",
        "cpu_count": 224,
        "memory_bytes": 2164324438016,
        "container": "docker",
        "wsl2": False,
        "wsl_evidence": [],
    },
    "gpus": [
        {
            "index": i,
            "vendor": "nvidia",
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": TWO_H100[i]["uuid"],
            "memory_bytes": 85520809984,
            "compute_capability": "9.0",
            "gfx_target": None,
            "source": "nvml",
        }
        for i in range(2)
    ],
    "driver": {"nvidia": "570.86.15", "cuda_driver_api": "12.8", "rocm": None, "amdgpu": None},
    "runtime": {
        "torch": "2.8.0+cu128",
        "cuda": "12.8",
        "hip": None,
        "cudnn": "91002",
        "nccl": "2.27.3",
        "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
        "accelerator": "cuda",
        "accelerator_available": True,
        "accelerator_count": 2,
        "devices": [
            {
                "index": i,
                "name": "NVIDIA H100 80GB HBM3",
                "capability": "9.0",
                "total_memory_bytes": 85520809984,
                "gcn_arch": None,
            }
            for i in range(2)
        ],
        "start_methods": ["fork", "spawn", "forkserver"],
        "default_start_method": "fork",
    },
    "unreadable": [],
}


def wsl2_rtx3060_fp() -> dict:
    fp = copy.deepcopy(H100_FP)
    fp["host"].update(
        os="Ubuntu 22.04.5 LTS",
        kernel="5.15.167.4-microsoft-standard-WSL2",
        container=None,
        wsl2=True,
        wsl_evidence=["/dev/dxg exists", "$WSL_DISTRO_NAME=Ubuntu"],
    )
    fp["gpus"] = [
        {
            "index": 0,
            "vendor": "nvidia",
            "name": "NVIDIA GeForce RTX 3060",
            "uuid": "GPU-1a2b3c4d-0000-1111-2222-333344445555",
            "memory_bytes": 12884901888,
            "compute_capability": "8.6",
            "gfx_target": None,
            "source": "nvml",
        }
    ]
    fp["driver"] = {"nvidia": "581.57", "cuda_driver_api": "13.0", "rocm": None, "amdgpu": None}
    fp["runtime"].update(accelerator_count=1, devices=[])
    return fp


# --- pure helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "name"),
    [
        (90010, "gfx90a"),
        (90008, "gfx908"),
        (90402, "gfx942"),
        (90500, "gfx950"),
        (100300, "gfx1030"),
        (110000, "gfx1100"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
    ],
)
def test_gfx_target_version_maps_to_llvm_target(version, name):
    assert amd.gfx_name(version) == name


@pytest.mark.parametrize(
    ("raw", "text"), [(12080, "12.8"), (13000, "13.0"), (12020, "12.2"), (11080, "11.8")]
)
def test_cuda_driver_api_integer_becomes_major_minor(raw, text):
    assert nvidia.cuda_api(raw) == text


def test_last_json_object_skips_library_noise_on_stdout():
    out = 'some library banner\n{"not": json\n{"torch": "2.8.0"}\ntrailing words\n'
    assert torch_probe.last_json_object(out) == {"torch": "2.8.0"}
    assert torch_probe.last_json_object("no json here\n") is None


# --- file trees --------------------------------------------------------------------------------


def test_wsl2_tree_is_detected_with_evidence():
    fp = fixture_fp("wsl2")
    host = fp["host"]
    assert host["wsl2"] is True
    assert host["wsl_evidence"] == [
        "/proc/version: Linux version 5.15.167.4-microsoft-standard-WSL2",
        "/dev/dxg exists",
    ]
    assert host["os"] == "Ubuntu 22.04.5 LTS"
    assert host["cpu"] == "12th Gen Intel(R) Core(TM) i7-12700K"
    assert host["memory_bytes"] == 16303956 * 1024
    assert host["container"] is None
    assert fingerprint.host_key(Fingerprint.from_json(fp)) == "CPU only · Ubuntu 22.04.5 LTS · WSL2"


def test_wsl_lib_dir_and_environment_are_evidence(tmp_path):
    (tmp_path / "usr/lib/wsl/lib").mkdir(parents=True)
    (tmp_path / "usr/lib/wsl/lib/libdxcore.so").write_bytes(b"")
    fp = fixture_fp(tmp_path, environ={"WSL_DISTRO_NAME": "Ubuntu-22.04", "WSL_INTEROP": ""})
    assert fp["host"]["wsl2"] is True
    assert fp["host"]["wsl_evidence"] == [
        "/usr/lib/wsl/lib exists",
        "$WSL_DISTRO_NAME=Ubuntu-22.04",
    ]


def test_native_tree_is_neither_wsl_nor_container_and_reads_proc_driver():
    fp = fixture_fp("native")
    assert fp["host"]["wsl2"] is False
    assert fp["host"]["wsl_evidence"] == []
    assert fp["host"]["container"] is None
    assert fp["host"]["os"] == "Ubuntu 22.04.4 LTS"
    assert fp["host"]["memory_bytes"] == 2113598084 * 1024
    # NVML missing, yet the kernel module's version is known from /proc/driver/nvidia/version.
    assert fp["driver"]["nvidia"] == "570.86.15"
    assert fp["driver"]["cuda_driver_api"] is None
    assert {"what": "nvml", "why": "NVML Shared Library Not Found"} in fp["unreadable"]


def test_docker_tree_is_a_docker_container():
    fp = fixture_fp("docker")
    assert fp["host"]["container"] == "docker"
    assert fp["host"]["os"] == "Debian GNU/Linux 12 (bookworm)"
    assert fp["host"]["cpu"] is None  # no proc/cpuinfo in that tree: unknown, not an error
    assert not [u for u in fp["unreadable"] if u["what"].startswith("/")]
    assert (
        fingerprint.host_key(Fingerprint.from_json(fp))
        == "CPU only · Debian GNU/Linux 12 (bookworm)"
    )


@pytest.mark.parametrize(
    ("files", "environ", "expected"),
    [
        ({"run/.containerenv": ""}, {}, "podman"),
        ({"proc/1/cgroup": "0::/kubepods/besteffort/pod1234/abcd\n"}, {}, "kubernetes"),
        ({"proc/1/cgroup": "1:name=systemd:/docker/4f1c3d2b\n"}, {}, "docker"),
        ({"proc/1/cgroup": "0::/system.slice/containerd.service\n"}, {}, "containerd"),
        ({}, {"container": "systemd-nspawn"}, "systemd-nspawn"),
        ({".dockerenv": ""}, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, "kubernetes"),
        ({"proc/1/cgroup": "0::/init.scope\n"}, {}, None),
    ],
)
def test_container_detection(tmp_path, files, environ, expected):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert fixture_fp(tmp_path, environ=environ)["host"]["container"] == expected


def test_rocm_tree_lists_the_gpu_node_and_skips_the_cpu_node():
    fp = fixture_fp("rocm")
    assert fp["gpus"] == [
        {
            "index": 0,
            "vendor": "amd",
            "name": "AMD gfx90a",
            "uuid": "GPU-885e38ffab53aa55",  # ROCr's form of the node's unique_id
            "memory_bytes": 68702699520,
            "compute_capability": None,
            "gfx_target": "gfx90a",
            "source": "sysfs",
        }
    ]
    assert fp["driver"]["rocm"] == "6.4.1"
    assert fp["driver"]["amdgpu"] == "6.12.12"
    assert (
        fingerprint.host_key(Fingerprint.from_json(fp))
        == "AMD gfx90a · ROCm 6.4.1 · Ubuntu 24.04 LTS"
    )
    props = fingerprint.to_properties(Fingerprint.from_json(fp))
    assert props["host.gpu.0.gfx_target"] == "gfx90a"
    assert props["host.driver.rocm"] == "6.4.1"


def test_no_amd_gpu_is_not_unreadable():
    fp = fixture_fp("native")
    assert fp["driver"]["rocm"] is None
    assert not [u for u in fp["unreadable"] if "kfd" in u["what"] or "rocm" in u["what"]]


def test_file_that_exists_but_cannot_be_read_is_recorded(tmp_path):
    (tmp_path / "proc/cpuinfo").mkdir(parents=True)  # a directory where a file should be
    fp = fixture_fp(tmp_path)
    assert fp["host"]["cpu"] is None
    [entry] = [u for u in fp["unreadable"] if u["what"] == "/proc/cpuinfo"]
    assert "directory" in entry["why"].lower()


def test_fixture_fingerprints_are_json_round_trippable():
    for case in ("wsl2", "docker", "rocm", "native"):
        fp = fixture_fp(case)
        assert json.loads(json.dumps(fp)) == fp
        assert set(fp) == {
            "schema",
            "collected_at",
            "host",
            "gpus",
            "driver",
            "runtime",
            "unreadable",
        }


# --- NVML --------------------------------------------------------------------------------------


def test_nvml_two_h100s():
    nvml = FakeNVML(TWO_H100)
    fp = fixture_fp("native", nvml=nvml)
    assert [gpu["name"] for gpu in fp["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    assert fp["gpus"][1] == {
        "index": 1,
        "vendor": "nvidia",
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-9e2d41a0-77f1-2b5e-c0a4-5d1e6c9b2f22",
        "memory_bytes": 85520809984,
        "compute_capability": "9.0",
        "gfx_target": None,
        "source": "nvml",
    }
    assert fp["driver"]["nvidia"] == "570.86.15"
    assert fp["driver"]["cuda_driver_api"] == "12.8"
    assert not [u for u in fp["unreadable"] if u["what"].startswith("nvml")]
    assert nvml.shutdowns == 1
    assert (
        fingerprint.host_key(Fingerprint.from_json(fp))
        == "NVIDIA H100 80GB HBM3 ×2 · driver 570.86.15 · Ubuntu 22.04.4 LTS"
    )


def test_old_pynvml_bytes_are_decoded():
    device = {
        "name": b"NVIDIA A100-SXM4-40GB",
        "uuid": b"GPU-0",
        "memory": 42949672960,
        "cc": (8, 0),
    }
    fp = fixture_fp("native", nvml=FakeNVML([device], driver=b"535.183.01"))
    assert fp["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    assert fp["driver"]["nvidia"] == "535.183.01"


def test_partial_nvml_keeps_what_it_could_read():
    nvml = FakeNVML(
        [{"name": "NVIDIA GeForce RTX 3060", "uuid": "GPU-1", "memory": 12884901888, "cc": (8, 6)}],
        driver="581.57",
        fail={
            "nvmlSystemGetCudaDriverVersion": "Not Supported",
            "nvmlDeviceGetCudaComputeCapability": "Function Not Found",
        },
    )
    fp = fixture_fp("wsl2", nvml=nvml)
    assert fp["driver"]["nvidia"] == "581.57"
    assert fp["driver"]["cuda_driver_api"] is None
    assert fp["gpus"][0]["name"] == "NVIDIA GeForce RTX 3060"
    assert fp["gpus"][0]["memory_bytes"] == 12884901888
    assert fp["gpus"][0]["compute_capability"] is None
    assert {"what": "nvml.cuda_driver_version", "why": "Not Supported"} in fp["unreadable"]
    assert {"what": "nvml.device.0.compute_capability", "why": "Function Not Found"} in fp[
        "unreadable"
    ]
    assert nvml.shutdowns == 1
    assert (
        fingerprint.host_key(Fingerprint.from_json(fp))
        == "NVIDIA GeForce RTX 3060 · driver 581.57 · Ubuntu 22.04.5 LTS · WSL2"
    )


def test_nvml_that_fails_mid_way_is_still_shut_down():
    nvml = FakeNVML(TWO_H100, fail={"nvmlDeviceGetHandleByIndex": "GPU is lost"})
    fp = fixture_fp("native", nvml=nvml)
    assert fp["gpus"] == []
    assert {"what": "nvml.device.0", "why": "GPU is lost"} in fp["unreadable"]
    assert {"what": "nvml.device.1", "why": "GPU is lost"} in fp["unreadable"]
    assert nvml.shutdowns == 1


def test_pynvml_not_installed_is_recorded(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    fp = collect_json(NO_PYTHON, 30.0, FIXTURES / "docker", None)
    [entry] = [u for u in fp["unreadable"] if u["what"] == "nvml"]
    assert "nvidia-ml-py" in entry["why"]


# --- the probe child process -------------------------------------------------------------------


def test_collect_on_this_machine_runs_the_real_probe():
    try:
        expected_torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("torch is not installed in this interpreter")
    fp = fingerprint.collect().to_json()
    runtime = fp["runtime"]
    assert runtime["torch"] == expected_torch
    assert set(runtime["start_methods"]) >= {"spawn", "fork"}
    assert runtime["default_start_method"] in runtime["start_methods"]
    assert fp["host"]["python"] == platform.python_version()
    assert fp["host"]["glibc"] is None or fp["host"]["glibc"][0].isdigit()
    assert json.loads(json.dumps(fp)) == fp
    if "+cpu" in expected_torch:
        assert runtime["accelerator"] is None
        assert runtime["accelerator_count"] == 0
        assert runtime["arch_list"] == []
        assert fingerprint.runtime_tag(Fingerprint.from_json(fp)) == "cpu"
    if not any(gpu["source"] == "nvml" for gpu in fp["gpus"]):  # this machine: no libnvidia-ml
        [entry] = [u for u in fp["unreadable"] if u["what"] == "nvml"]
        assert entry["why"]


def test_python_without_torch_is_recorded_not_raised(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    fp = collect_json(python, 60.0, FIXTURES / "native", NO_NVML)
    assert {"what": "torch", "why": "No module named 'torch'"} in fp["unreadable"]
    assert fp["runtime"]["torch"] is None
    assert fp["runtime"]["accelerator_count"] == 0
    assert fp["runtime"]["start_methods"]  # the probe itself ran
    assert fp["host"]["python"] == platform.python_version()
    assert fingerprint.runtime_tag(Fingerprint.from_json(fp)) == "none"


def test_nonexistent_python_does_not_raise(tmp_path):
    missing = str(tmp_path / "no-such-python")
    fp = fingerprint.collect(python=missing, timeout_s=10).to_json()
    [entry] = [u for u in fp["unreadable"] if u["what"] == "torch"]
    assert entry["why"].startswith(f"cannot run {missing}")
    assert fp["host"]["python"] is None
    assert fp["host"]["python_executable"] == missing
    assert fp["runtime"]["torch"] is None
    assert fingerprint.runtime_tag(Fingerprint.from_json(fp)) == "none"


def fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_probe_that_hangs_is_killed_at_the_timeout(tmp_path):
    python = fake_python(tmp_path, "sleep 60 & sleep 60")  # a grandchild too: the group is killed
    start = time.monotonic()
    fp = collect_json(python, 0.5, FIXTURES / "native", NO_NVML)
    assert time.monotonic() - start < 10
    [entry] = [u for u in fp["unreadable"] if u["what"] == "torch"]
    assert "timed out after 0.5 s" in entry["why"]


def test_probe_that_crashes_names_the_signal(tmp_path):
    python = fake_python(
        tmp_path, "echo 'Fatal Python error: Segmentation fault' >&2; kill -SEGV $$"
    )
    fp = collect_json(python, 10.0, FIXTURES / "native", NO_NVML)
    [entry] = [u for u in fp["unreadable"] if u["what"] == "torch"]
    assert "killed by SIGSEGV" in entry["why"]
    assert entry["why"].endswith("Fatal Python error: Segmentation fault")


def test_probe_errors_become_unreadable_entries(tmp_path):
    reply = {
        "python": "3.12.8",
        "torch": "2.8.0+cu128",
        "cuda": "12.8",
        "accelerator": "cuda",
        "accelerator_available": False,
        "errors": [{"what": "torch.cuda", "why": "The NVIDIA driver on your system is too old"}],
    }
    python = fake_python(tmp_path, f"echo '{json.dumps(reply)}'")
    fp = collect_json(python, 10.0, FIXTURES / "native", NO_NVML)
    assert {"what": "torch.cuda", "why": "The NVIDIA driver on your system is too old"} in fp[
        "unreadable"
    ]
    assert fp["runtime"]["torch"] == "2.8.0+cu128"
    assert fp["host"]["python"] == "3.12.8"
    assert fingerprint.runtime_tag(Fingerprint.from_json(fp)) == "cu128"


def test_collect_never_imports_torch_in_the_calling_process():
    code = (
        "import sys, repro.host.fingerprint as f\n"
        "fp = f.collect()\n"
        "print(fp.runtime.torch is not None, 'torch' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[-1] == "False"
    if importlib.util.find_spec("torch") is not None:
        assert out[-2] == "True"  # the probe did see torch, in its own process


# --- keys, properties, text --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime", "tag"),
    [
        ({"torch": "2.8.0+cu128", "cuda": "12.8", "hip": None}, "cu128"),
        ({"torch": "2.10.0+cu130", "cuda": "13.0", "hip": None}, "cu130"),
        ({"torch": "2.4.1+cu118", "cuda": "11.8", "hip": None}, "cu118"),
        ({"torch": "2.8.0+rocm6.4", "cuda": None, "hip": "6.4.43482-0f2d60242"}, "rocm6.4"),
        ({"torch": "2.13.0+cpu", "cuda": None, "hip": None}, "cpu"),
        ({"torch": None, "cuda": None, "hip": None}, "none"),
    ],
)
def test_runtime_tag(runtime, tag):
    assert fingerprint.runtime_tag(Fingerprint.from_json({"runtime": runtime})) == tag


def test_host_key_examples():
    assert fingerprint.host_key(Fingerprint.from_json(H100_FP)) == (
        "NVIDIA H100 80GB HBM3 ×2 · driver 570.86.15 · Ubuntu 22.04.4 LTS"
    )
    assert fingerprint.host_key(Fingerprint.from_json(wsl2_rtx3060_fp())) == (
        "NVIDIA GeForce RTX 3060 · driver 581.57 · Ubuntu 22.04.5 LTS · WSL2"
    )
    assert fingerprint.host_key(
        Fingerprint.from_json(copy.deepcopy(H100_FP))
    ) == fingerprint.host_key(Fingerprint.from_json(H100_FP))


def test_host_key_counts_mixed_models_in_index_order():
    fp = copy.deepcopy(H100_FP)
    fp["gpus"].append({**fp["gpus"][0], "index": 2, "name": "NVIDIA L40S"})
    assert fingerprint.host_key(Fingerprint.from_json(fp)).startswith(
        "NVIDIA H100 80GB HBM3 ×2 + NVIDIA L40S · driver"
    )


def test_host_key_falls_back_to_torch_devices():
    fp = copy.deepcopy(H100_FP)
    fp["gpus"] = []  # NVML unreadable, torch saw the devices
    assert (
        fingerprint.host_key(Fingerprint.from_json(fp))
        == "NVIDIA H100 80GB HBM3 ×2 · driver 570.86.15 · Ubuntu 22.04.4 LTS"
    )
    rocm = copy.deepcopy(fp)
    rocm["driver"] = {"nvidia": None, "cuda_driver_api": None, "rocm": "6.4.1", "amdgpu": None}
    rocm["runtime"].update(
        accelerator="rocm",
        devices=[
            {
                "index": 0,
                "name": "AMD Radeon RX 7900 XTX",
                "capability": "11.0",
                "total_memory_bytes": 25753026560,
                "gcn_arch": "gfx1100",
            }
        ],
    )
    rocm["host"].update(os="Ubuntu 24.04 LTS", wsl2=True)
    assert (
        fingerprint.host_key(Fingerprint.from_json(rocm))
        == "AMD gfx1100 · ROCm 6.4.1 · Ubuntu 24.04 LTS · WSL2"
    )


def test_host_key_names_no_driver_without_that_vendors_gpu():
    fp = fixture_fp("rocm")
    fp["gpus"] = []  # a CPU host running a ROCm image: /opt/rocm exists, no GPU
    assert fingerprint.host_key(Fingerprint.from_json(fp)) == "CPU only · Ubuntu 24.04 LTS"


def test_to_properties_of_an_h100_fingerprint():
    props = fingerprint.to_properties(Fingerprint.from_json(H100_FP))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in props.items())
    assert props["host.key"] == fingerprint.host_key(Fingerprint.from_json(H100_FP))
    assert props["host.wsl2"] == "false"
    assert props["host.container"] == "docker"
    assert props["host.gpu_count"] == "2"
    assert props["host.gpu.1.name"] == "NVIDIA H100 80GB HBM3"
    assert props["host.gpu.1.compute_capability"] == "9.0"
    assert props["host.gpu.0.memory_bytes"] == "85520809984"
    assert props["host.memory_bytes"] == "2164324438016"
    assert props["host.driver.nvidia"] == "570.86.15"
    assert props["host.driver.cuda_driver_api"] == "12.8"
    assert props["runtime.torch"] == "2.8.0+cu128"
    assert props["runtime.arch_list"] == "sm_75,sm_80,sm_86,sm_90,sm_100,sm_120"
    assert props["runtime.accelerator_count"] == "2"
    assert props["runtime.default_start_method"] == "fork"
    # None values are left out, not written as "None".
    assert "host.driver.rocm" not in props
    assert "runtime.hip" not in props
    assert "host.gpu.0.gfx_target" not in props
    assert "None" not in props.values()
    assert all(k.startswith(("host.", "runtime.")) for k in props)


def test_to_properties_of_a_wsl2_fingerprint():
    props = fingerprint.to_properties(Fingerprint.from_json(wsl2_rtx3060_fp()))
    assert props["host.wsl2"] == "true"
    assert "host.container" not in props
    assert props["host.driver.nvidia"] == "581.57"
    assert props["host.key"].endswith(" · WSL2")


def test_format_text_shows_the_key_gpus_and_what_was_unreadable():
    fp = copy.deepcopy(H100_FP)
    fp["unreadable"] = [{"what": "nvml.cuda_driver_version", "why": "Not Supported"}]
    text = fingerprint.format_text(Fingerprint.from_json(fp))
    assert text.splitlines()[0] == "host key      " + fingerprint.host_key(
        Fingerprint.from_json(fp)
    )
    assert "[1] NVIDIA H100 80GB HBM3  sm 9.0  79.6 GiB  (nvml)" in text
    assert "2.8.0+cu128 [cu128]" in text
    assert "nvml.cuda_driver_version: Not Supported" in text
    assert "wsl2          no" in text


def test_format_text_of_a_fixture_tree():
    text = fingerprint.format_text(Fingerprint.from_json(fixture_fp("wsl2")))
    assert (
        "wsl2          yes (/proc/version: Linux version 5.15.167.4-microsoft-standard-WSL2" in text
    )
    assert "torch: cannot run /nonexistent/bin/python3" in text
    assert "  none found" in text


# --- the typed model and its JSON -------------------------------------------------------------


def test_json_round_trip_is_exact_for_every_fixture_and_example():
    for fp in [fixture_fp(case) for case in ("wsl2", "docker", "rocm", "native")] + [
        H100_FP,
        wsl2_rtx3060_fp(),
    ]:
        assert Fingerprint.from_json(fp).to_json() == fp


def test_collect_returns_typed_sections():
    fp = fingerprint.collect(
        NO_PYTHON, 30.0, FIXTURES / "native", environ={}, nvml=FakeNVML(TWO_H100), run=no_smi
    )
    assert isinstance(fp, Fingerprint)
    assert [gpu.compute_capability for gpu in fp.gpus] == ["9.0", "9.0"]
    assert (fp.driver.nvidia, fp.driver.cuda_driver_api) == ("570.86.15", "12.8")
    assert fp.host.os == "Ubuntu 22.04.4 LTS" and fp.host.wsl2 is False
    assert fp.runtime.torch is None and fp.container is None
    assert fingerprint.host_key(fp) == fingerprint.host_key(Fingerprint.from_json(fp.to_json()))


def test_an_old_fingerprint_with_missing_keys_still_loads():
    # What an early fingerprint.json (or a hand-written --host-fingerprint) may hold.
    old = {"host": {"os": "Ubuntu 20.04.6 LTS"}, "driver": {"nvidia": "470.256.02"}}
    fp = Fingerprint.from_json(old)
    assert fp.host.os == "Ubuntu 20.04.6 LTS"
    assert fp.host.cpu_count == 0 and fp.host.wsl_evidence == ()
    assert fp.gpus == () and fp.runtime.arch_list == () and fp.unreadable == ()
    assert fingerprint.host_key(Fingerprint.from_json(old)) == "CPU only · Ubuntu 20.04.6 LTS"
    assert fingerprint.runtime_tag(Fingerprint.from_json(old)) == "none"
    assert set(fp.to_json()) == set(H100_FP)
    assert fingerprint.to_properties(Fingerprint.from_json(old))["host.os"] == "Ubuntu 20.04.6 LTS"


def test_sections_of_the_wrong_type_read_as_empty_and_numbers_as_text():
    fp = Fingerprint.from_json(
        {
            "host": ["not", "a", "section"],
            "gpus": "none",
            "runtime": {"cudnn": 91002, "devices": [7, {"index": "1", "name": "X"}]},
            "unreadable": [{"what": "nvml"}],
        }
    )
    assert fp.host.os is None and fp.gpus == ()
    assert fp.runtime.cudnn == "91002"
    assert [(d.index, d.name) for d in fp.runtime.devices] == [(None, None), (1, "X")]
    assert fp.unreadable[0].what == "nvml" and fp.unreadable[0].why == "None"


def test_a_container_run_keeps_its_container_section():
    merged = dict(
        H100_FP,
        container={
            "os": "Debian GNU/Linux 12",
            "glibc": "2.36",
            "python": "3.11.2",
            "container": "docker",
        },
    )
    fp = Fingerprint.from_json(merged)
    assert fp.container is not None and fp.container.glibc == "2.36"
    assert fp.to_json() == merged


def test_a_fingerprint_file_option_reads_only_a_bounded_regular_json_file(tmp_path):
    """--fingerprint / --host-fingerprint: one reader; a FIFO never blocks, bad shapes are exit 2."""
    import os

    from repro.errors import ConfigError

    fifo = tmp_path / "fp.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"--host-fingerprint .*: not a regular file \(FIFO\)"):
        fingerprint.read_file(fifo, "--host-fingerprint")
    wrong = tmp_path / "wrong.json"
    wrong.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="with a 'host' section"):
        fingerprint.read_file(wrong, "--fingerprint")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="expected a fingerprint JSON object"):
        fingerprint.read_file(deep, "--fingerprint")
    good = tmp_path / "fingerprint.json"
    good.write_text('{"host": {"hostname": "box"}}')
    assert fingerprint.read_file(good, "--fingerprint").host.hostname == "box"
