"""The pieces behind issue 10 items 1, 4 and 6: GPU selection rules, per-GPU NVML modes, the
probe's CUDA-init capture (with a stand-in torch), CUDA error diagnosis, the kernel log note and
the container's GPU selection."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from repro.containers import spec
from repro.containers.options import ResolvedDockerRun
from repro.host import cuda_init, hostkind, kernel_log, nvidia_modes, selection, torch_probe
from repro.model import Fingerprint, Gpu, MigDevice

CAPTURED = Path(__file__).parent / "fixtures" / "captured"


def gpus(*names: str) -> list[Gpu]:
    return [
        Gpu(index=i, vendor="nvidia", name=n, uuid=f"GPU-{i}aaaa-{i}") for i, n in enumerate(names)
    ]


# --------------------------------------------------------------------------------------------
# selection


def test_no_selection_and_no_mig_is_all_gpus():
    assert selection.select(gpus("H100", "H100"), {}) is None


def test_cuda_visible_devices_by_index_and_uuid_prefix():
    found = selection.select(gpus("H100", "H100", "H100"), {"CUDA_VISIBLE_DEVICES": "2,GPU-0aa"})
    assert [g.index for g in found.devices] == [2, 0]
    assert found.variables == (("CUDA_VISIBLE_DEVICES", "2,GPU-0aa"),)


def test_cuda_stops_at_the_first_entry_it_cannot_resolve():
    found = selection.select(gpus("H100", "H100", "H100"), {"CUDA_VISIBLE_DEVICES": "1,7,0"})
    assert [g.index for g in found.devices] == [1]
    assert "'7' names no GPU" in found.notes[0]


def test_empty_cuda_visible_devices_hides_every_gpu():
    assert selection.select(gpus("H100"), {"CUDA_VISIBLE_DEVICES": ""}).devices == ()


def test_fastest_first_on_mixed_gpus_is_noted():
    found = selection.select(gpus("H100", "RTX 4090"), {"CUDA_VISIBLE_DEVICES": "1"})
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in found.notes[0]
    ordered = selection.select(
        gpus("H100", "RTX 4090"), {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    )
    assert ordered.notes == ()


def test_mig_gpu_without_instances_gives_cuda_nothing():
    gpu = Gpu(index=0, vendor="nvidia", name="A100", uuid="GPU-x", mig_mode="Enabled")
    found = selection.select([gpu], {})
    assert found.devices == ()
    assert "without MIG instances" in found.notes[0]


def test_one_mig_instance_per_process():
    migs = (MigDevice(0, "MIG-a", "A100 MIG 1g.10gb"), MigDevice(1, "MIG-b", "A100 MIG 1g.10gb"))
    gpu = Gpu(
        index=0, vendor="nvidia", name="A100", uuid="GPU-x", mig_mode="Enabled", mig_devices=migs
    )
    found = selection.select([gpu], {"CUDA_VISIBLE_DEVICES": "MIG-a,MIG-b"})
    assert [g.uuid for g in found.devices] == ["MIG-a"]
    assert found.devices[0].mig_parent == 0
    assert "enumerates only the first" in found.notes[-1]


def test_rocr_then_hip_compose():
    amd = [Gpu(index=i, vendor="amd", name="AMD gfx90a", gfx_target="gfx90a") for i in range(4)]
    found = selection.select(amd, {"ROCR_VISIBLE_DEVICES": "1,3", "HIP_VISIBLE_DEVICES": "1"})
    assert [g.index for g in found.devices] == [3]
    alias = selection.select(amd, {"CUDA_VISIBLE_DEVICES": "2"})  # HIP honours CUDA's name too
    assert [g.index for g in alias.devices] == [2]


def test_environment_records_selection_gfx_override_and_nccl_only():
    env = {
        "CUDA_VISIBLE_DEVICES": "0",
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET",
        "TORCH_NCCL_BLOCKING_WAIT": "1",
        "HSA_OVERRIDE_GFX_VERSION": "10.3.0",
        "AWS_SECRET_ACCESS_KEY": "x",
        "HOME": "/root",
    }
    assert [k for k, _ in selection.environment(env)] == [
        "CUDA_VISIBLE_DEVICES",
        "HSA_OVERRIDE_GFX_VERSION",
        "NCCL_DEBUG",
        "NCCL_DEBUG_SUBSYS",
        "TORCH_NCCL_BLOCKING_WAIT",
    ]


@pytest.mark.parametrize(
    ("environ", "accelerator", "expected"),
    [
        ({}, "cuda", "all"),
        ({"CUDA_VISIBLE_DEVICES": "2,3"}, "cuda", "2,3"),
        ({"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, "cuda", "GPU-a,GPU-b"),
        ({"NVIDIA_VISIBLE_DEVICES": "all"}, "cuda", "all"),
        ({"CUDA_VISIBLE_DEVICES": ""}, "cuda", "none"),
        ({"ROCR_VISIBLE_DEVICES": "0,2"}, "rocm", "0,2"),
        ({"ROCR_VISIBLE_DEVICES": "0,2", "HIP_VISIBLE_DEVICES": "1"}, "rocm", "2"),
        ({"HIP_VISIBLE_DEVICES": "1"}, "rocm", "1"),
        ({"CUDA_VISIBLE_DEVICES": "1"}, "cpu", "all"),
    ],
)
def test_container_gpus(environ, accelerator, expected):
    assert selection.container_gpus(environ, accelerator) == expected


def test_container_spec_with_an_empty_selection_passes_no_gpu(tmp_path):
    host = hostkind.load_fixture(Path(__file__).parent / "fixtures" / "hosts" / "nvidia-linux")
    options = spec.ContainerRun(
        image="img",
        variant_id="cu128-torch2.8",
        run_dir=str(tmp_path / "run"),
        config_file=str(tmp_path / "matrix.yaml"),
        host_fingerprint_dir=str(tmp_path / "fp"),
        resolved=ResolvedDockerRun(),
        gpus="none",
    )
    run = spec.docker_run_spec(host, "cuda", options)
    assert "device_requests" not in run.kwargs and "--gpus" not in run.argv
    two = spec.docker_run_spec(
        host, "cuda", spec.ContainerRun(**{**options.__dict__, "gpus": "2,3"})
    )
    assert two.kwargs["device_requests"] == [{"DeviceIDs": ["2", "3"], "Capabilities": [["gpu"]]}]


def test_parity_compares_the_selected_gpus():
    host_fp = {
        "gpus": [{"name": "H100"}] * 8,
        "selection": {"devices": [{"name": "H100"}, {"name": "H100"}]},
    }
    ok, text = spec.gpu_parity(
        Fingerprint.from_json(host_fp), {"accelerator_count": 2, "devices": [{"name": "H100"}] * 2}
    )
    assert ok, text


# --------------------------------------------------------------------------------------------
# NVML modes


class NotSupported(Exception):
    value = 3


class ModesNVML:
    def nvmlDeviceGetPciInfo(self, handle):
        return SimpleNamespace(busId=b"00000000:18:00.0")

    def nvmlDeviceGetComputeMode(self, handle):
        return 3

    def nvmlDeviceGetMigMode(self, handle):
        return [0, 1]  # current disabled, pending enabled (needs a GPU reset)

    def nvmlDeviceGetPersistenceMode(self, handle):
        raise RuntimeError("Insufficient Permissions")

    def nvmlDeviceGetEccMode(self, handle):
        raise NotSupported("Not Supported")


def test_modes_in_nvidia_smi_words_and_not_supported_is_silent():
    unreadable: list = []
    modes = nvidia_modes.read_modes(ModesNVML(), "h", "nvml.device.0", unreadable)
    assert modes["bus_id"] == "00000000:18:00.0"
    assert modes["compute_mode"] == "Exclusive_Process"
    assert modes["mig_mode"] == "Disabled"  # the current mode, not the pending one
    assert modes["ecc_mode"] is None and modes["fabric_state"] is None  # unsupported / no binding
    assert unreadable == [
        {"what": "nvml.device.0.persistence_mode", "why": "Insufficient Permissions"}
    ]


def test_fabric_service_state_only_where_the_unit_is_installed(tmp_path):
    calls = []

    def systemctl(argv, **kwargs):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 3, "inactive\n", "")

    assert nvidia_modes.fabric_service_state(tmp_path, systemctl) is None
    assert calls == []
    unit = tmp_path / "lib/systemd/system/nvidia-fabricmanager.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Unit]\n")
    assert nvidia_modes.fabric_service_state(tmp_path, systemctl) == "service inactive"
    assert calls == [["systemctl", "is-active", "nvidia-fabricmanager"]]


# --------------------------------------------------------------------------------------------
# the probe's CUDA-init capture, with a stand-in torch


def fake_torch(count: int, warning: str | None, zeros_error: str | None, available: bool):
    def is_available():
        if warning:
            warnings.warn(warning, UserWarning, stacklevel=1)
        return available

    def zeros(*args, **kwargs):
        if zeros_error:
            raise RuntimeError(zeros_error)
        return [0.0]

    cuda = SimpleNamespace(is_available=is_available, device_count=lambda: count)
    return SimpleNamespace(cuda=cuda, zeros=zeros)


def test_probe_records_cudas_own_words_when_nvml_counts_gpus():
    line = (CAPTURED / "cuda-802-runtime-error.log").read_text().strip()
    warning = (
        (CAPTURED / "cuda-802-fabric-manager.log")
        .read_text()
        .splitlines()[0]
        .split("UserWarning: ")[1]
    )
    torch = fake_torch(8, warning, line.removeprefix("RuntimeError: "), available=False)
    errors: list = []
    said: list = []
    available = torch_probe._available(torch, errors, said)
    assert available is False and "Error 802" in said[0]
    assert torch_probe._init_error(torch, 8, available, said, errors) == line
    assert errors[-1]["what"] == "torch.cuda.init"


def test_probe_busy_gpu_is_caught_by_the_tiny_tensor():
    line = (CAPTURED / "cuda-busy-runtime-error.log").read_text().strip()
    torch = fake_torch(2, None, line.removeprefix("RuntimeError: "), available=True)
    assert torch_probe._init_error(torch, 2, True, [], []) == line


def test_probe_has_nothing_to_say_without_devices_or_when_cuda_works():
    assert torch_probe._init_error(fake_torch(0, None, "x", False), 0, False, ["w"], []) is None
    assert torch_probe._init_error(fake_torch(1, None, None, True), 1, True, [], []) is None


# --------------------------------------------------------------------------------------------
# diagnosis and kernel log


@pytest.mark.parametrize(
    ("text", "code", "fix"),
    [
        ((CAPTURED / "cuda-802-samples.log").read_text(), 802, "nvidia-fabricmanager"),
        ((CAPTURED / "cuda-803-mismatch.log").read_text(), 803, "reboot"),
        ((CAPTURED / "cuda-busy-exclusive-process.log").read_text(), 46, "-c DEFAULT"),
        (
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
            "run some cuda functions before calling NumCudaDevices() that might have already set an "
            "error? Error 804: forward compatibility was attempted on non supported HW",
            804,
            "cuda-compat",
        ),
        ((CAPTURED / "wsl2-error-2-out-of-memory.log").read_text(), 2, "deviceQuery"),
    ],
)
def test_diagnose_names_the_error_number_and_the_fix(text, code, fix):
    found = cuda_init.diagnose(text)
    assert found.code == code
    assert fix in found.summary


def test_dmesg_restrict_is_named():
    said = (CAPTURED / "dmesg-restricted.txt").read_text()
    note = kernel_log.reading_failed(1, said, None)
    assert note.startswith("(kernel log not readable (dmesg_restrict): dmesg: read kernel buffer")
    assert "dmesg_restrict" in kernel_log.reading_failed(1, "", True)
    assert "dmesg_restrict" not in kernel_log.reading_failed(1, "dmesg: not found", False)


def test_kernel_log_keeps_evidence_not_audit_noise():
    noise = '[81234.5] audit: type=1400 apparmor="ALLOWED" operation="open" profile="snap.code"'
    xid = "[81240.1] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."
    assert kernel_log.evidence("\n".join([noise] * 50 + [xid, noise])) == xid
    assert kernel_log.evidence(noise).startswith("(kernel log: no GPU driver")


# --------------------------------------------------------------------------------------------
# matrix.yaml runners.<kind>.gpus


def load_matrix(tmp_path, runners_yaml: str):
    from repro import config

    text = (Path(__file__).resolve().parent.parent / "matrix.yaml").read_text()
    start = text.index("\nrunners:")
    end = text.index("\n\n", start + 1)
    path = tmp_path / "matrix.yaml"
    path.write_text(text[:start] + "\nrunners:\n" + runners_yaml + text[end:])
    return config.load(path)


def test_runner_entry_may_name_its_gpu_count(tmp_path):
    from repro.config import runners

    matrix = load_matrix(
        tmp_path,
        "  cpu: [ubuntu-latest]\n  cuda: {labels: [self-hosted, gpu, nvidia], gpus: 2}\n",
    )
    assert matrix.runners["cuda"] == ("self-hosted", "gpu", "nvidia")
    assert matrix.runner_gpus == {"cuda": 2}
    assert runners.expected_gpus(matrix.runner_gpus, "cuda", wsl2=False) == 2
    assert runners.expected_gpus(matrix.runner_gpus, "cuda", wsl2=True) is None  # cuda-wsl2
    assert runners.expected_gpus(matrix.runner_gpus, "cpu", wsl2=False) is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{labels: [gpu], gpus: 0}", "runners.cuda.gpus: expected a whole number of GPUs from 1"),
        (
            "{labels: [gpu], gpus: true}",
            "runners.cuda.gpus: expected a whole number of GPUs from 1",
        ),
        ("{labels: [], gpus: 2}", "runners.cuda.labels: expected a non-empty list"),
        ("{label: [gpu]}", "runners.cuda.label: expected one of the keys labels, gpus"),
    ],
)
def test_bad_runner_gpu_count_is_a_one_line_config_error(tmp_path, entry, message):
    from repro.errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        load_matrix(tmp_path, f"  cuda: {entry}\n")
    assert message in str(raised.value)
    assert str(raised.value).count("\n") == 0
