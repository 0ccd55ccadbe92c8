"""Host-kind detection and pre-flight from captured host trees (tests/fixtures/hosts/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.cli.main import main as repro_main
from repro.host import hostkind as host_mod
from repro.host import nvidia

HOSTS = Path(__file__).resolve().parent / "fixtures" / "hosts"


def fixture_host(name: str) -> host_mod.Host:
    return host_mod.load_fixture(HOSTS / name)


@pytest.mark.parametrize(
    ("name", "kind", "wsl2"),
    [
        ("nvidia-linux", host_mod.NVIDIA, False),
        ("nvidia-linux-no-runtime", host_mod.NVIDIA, False),
        ("nvidia-linux-cdi", host_mod.NVIDIA, False),
        ("nvidia-linux-driver-broken", host_mod.NVIDIA, False),
        ("nvidia-wsl2", host_mod.NVIDIA_WSL2, True),
        ("nvidia-wsl2-docker-desktop", host_mod.NVIDIA_WSL2, True),
        ("rocm-linux", host_mod.ROCM, False),
        ("rocm-linux-no-kfd", host_mod.CPU, False),
        ("rocm-wsl2", host_mod.ROCM_WSL2, True),
        ("cpu", host_mod.CPU, False),
        ("daemon-down", host_mod.CPU, False),
    ],
)
def test_host_kind_is_detected_from_what_is_there(name, kind, wsl2):
    host = fixture_host(name)
    assert (host.kind, host.wsl2) == (kind, wsl2)


def test_nvidia_linux_evidence_devices_and_driver_query():
    host = fixture_host("nvidia-linux")
    assert "/dev/nvidia0" in host.nvidia_devices and "/dev/nvidiactl" in host.nvidia_devices
    assert host.nvidia_query.ok and host.nvidia_query.gpus == ("NVIDIA H100 80GB HBM3",) * 2
    assert host.nvidia_query.driver == "570.86.15"
    assert "docker runtime 'nvidia'" in host.nvidia_container_runtime
    assert any("nvidia-container-runtime-hook" in item for item in host.nvidia_container_runtime)


def test_wsl2_evidence_names_the_kernel_dxg_and_the_windows_driver_libraries():
    host = fixture_host("nvidia-wsl2")
    text = " ".join(host.evidence)
    assert "Microsoft" in text and "/dev/dxg" in text and "/usr/lib/wsl/lib" in text
    assert host.nvidia_wsl_libs and host.dxg and not host.nvidia_devices
    assert not host.daemon.docker_desktop
    assert fixture_host("nvidia-wsl2-docker-desktop").daemon.docker_desktop


def test_rocm_host_reads_gfx_targets_and_the_device_groups():
    host = fixture_host("rocm-linux")
    assert host.kfd and "/dev/dri/renderD128" in host.dri_devices
    assert host.amd_query.ok and host.amd_query.gpus == ("gfx90a",)
    assert host.device_gids == (44, 992)  # video and render from /etc/group; never group 0


def test_cdi_spec_devices_are_fully_qualified_names():
    host = fixture_host("nvidia-linux-cdi")
    assert "nvidia.com/gpu=all" in host.cdi_devices and "nvidia.com/gpu=0" in host.cdi_devices
    assert host.nvidia_container_runtime == ("CDI nvidia.com/gpu=0",)


@pytest.mark.parametrize(
    ("name", "accelerator"),
    [
        ("nvidia-linux", "cuda"),
        ("nvidia-linux-cdi", "cuda"),
        ("nvidia-wsl2", "cuda"),
        ("nvidia-wsl2-docker-desktop", "cuda"),
        ("rocm-linux", "rocm"),
        ("rocm-wsl2", "rocm"),
        ("cpu", "cpu"),
        ("nvidia-linux", "cpu"),
        ("rocm-linux", "cpu"),
    ],
)
def test_preflight_passes_where_the_host_can_run_the_variant(name, accelerator):
    check = host_mod.preflight(fixture_host(name), "v", accelerator)
    assert check.ok, check.problems


@pytest.mark.parametrize(
    ("name", "accelerator", "expected"),
    [
        ("cpu", "cuda", "needs an NVIDIA GPU"),
        ("nvidia-linux-no-runtime", "cuda", "no NVIDIA container runtime"),
        (
            "nvidia-linux-driver-broken",
            "cuda",
            "driver query failed (nvidia-smi: Failed to initialize NVML: Driver/library version mismatch)",
        ),
        ("rocm-linux-no-kfd", "rocm", "/dev/kfd does not exist"),
        ("nvidia-linux", "rocm", "/dev/kfd does not exist"),
        ("nvidia-wsl2", "rocm", "no ROCm user space"),
        ("daemon-down", "cpu", "docker daemon unreachable"),
    ],
)
def test_preflight_says_why_the_host_cannot_run_the_variant(name, accelerator, expected):
    check = host_mod.preflight(fixture_host(name), "some-variant", accelerator)
    assert not check.ok
    line = check.line()
    assert expected in line and "\n" not in line
    assert line.startswith("cannot run some-variant on this host (host kind ")


def test_no_runtime_message_lists_what_docker_has():
    check = host_mod.preflight(fixture_host("nvidia-linux-no-runtime"), "cu128-torch2.8", "cuda")
    assert check.problems == (
        "no NVIDIA container runtime: `docker info` lists runtimes io.containerd.runc.v2, io.containerd.runtime.v1.linux, runc, no nvidia-container-runtime-hook and no CDI spec for nvidia.com/gpu",
    )
    assert "NVIDIA Container Toolkit" in host_mod.hint_for(
        check, fixture_host("nvidia-linux-no-runtime")
    )


def test_cdi_gpu_mode_needs_a_cdi_spec():
    check = host_mod.preflight(fixture_host("nvidia-linux"), "v", "cuda", gpu_mode="cdi")
    assert not check.ok and "no CDI spec" in check.line()


def test_passthrough_kind_follows_the_variant_not_the_host():
    assert host_mod.passthrough_kind(fixture_host("nvidia-linux"), "cpu") == host_mod.CPU
    assert host_mod.passthrough_kind(fixture_host("nvidia-wsl2"), "cuda") == host_mod.NVIDIA_WSL2
    assert host_mod.passthrough_kind(fixture_host("rocm-wsl2"), "rocm") == host_mod.ROCM_WSL2
    assert host_mod.passthrough_kind(fixture_host("rocm-linux"), "rocm") == host_mod.ROCM


@pytest.mark.parametrize(
    ("stdout", "rc", "ok", "detail"),
    [
        ("0, NVIDIA A100-SXM4-40GB, 535.183.01\n", 0, True, "NVIDIA A100-SXM4-40GB"),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
            9,
            False,
            "couldn't communicate",
        ),
        ("No devices were found\n", 6, False, "No devices were found"),
        ("", 0, False, "no GPU listed"),
    ],
)
def test_nvidia_smi_replies_are_parsed(stdout, rc, ok, detail):
    query = nvidia.parse_smi(stdout, rc)
    assert query.ok is ok
    assert detail in (query.gpus[0] if ok else query.error)


def test_daemon_info_from_a_real_capture():
    info = json.loads((HOSTS / "cpu" / "docker-info.json").read_text())
    daemon = host_mod.DaemonInfo.from_info(info)
    assert daemon.reachable and daemon.runtimes == (
        "io.containerd.runc.v2",
        "io.containerd.runtime.v1.linux",
        "runc",
    )
    assert not daemon.docker_desktop and not daemon.rootless


def test_detect_on_this_machine_never_raises():
    host = host_mod.detect(daemon=host_mod.DaemonInfo.unreachable("not asked in this test"))
    assert host.kind in host_mod.KINDS
    assert json.dumps(host.as_dict())


def test_repro_host_command_prints_kind_and_preflight(tmp_path, capsys):
    code = repro_main(
        [
            "host",
            "--fixture",
            str(HOSTS / "nvidia-linux-no-runtime"),
            "--config",
            str(_matrix(tmp_path)),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "host kind     nvidia" in out
    assert "cu128-torch2.8         NO" in out and "no NVIDIA container runtime" in out
    assert "cpu-torch2.13          ok" in out


def test_docker_run_stops_in_preflight_with_one_line_and_writes_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    (results / "earlier-run").mkdir()
    code = repro_main(
        [
            "docker-run",
            "--variant",
            "cu128-torch2.8",
            "--config",
            str(_matrix(tmp_path)),
            "--results-dir",
            str(results),
            "--fixture",
            str(HOSTS / "nvidia-linux-no-runtime"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("\n") == 1 and err.startswith(
        "repro: error: cannot run cu128-torch2.8 on this host (host kind nvidia): no NVIDIA container runtime"
    )
    assert [p.name for p in results.iterdir()] == ["earlier-run"]


def _matrix(directory: Path) -> Path:
    path = directory / "matrix.yaml"
    path.write_text(
        "version: 1\n"
        "defaults: {results_dir: results}\n"
        "variants:\n"
        '  - {runtime: cu128, torch: "2.8.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"}\n'
        '  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\n'
        "scenarios:\n"
        "  noop: {}\n"
    )
    return path
