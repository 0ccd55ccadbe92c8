"""CDI passthrough needs CDI switched on in the Docker daemon: opt-in with
``"features": {"cdi": true}`` on Engine 25 to 28.1, on by default from 28.2. Without it the
container dies with a bare 'could not select device driver "cdi" with capabilities: []'
(tests/fixtures/captured/docker-cdi-off.txt, NixOS/nixpkgs#305312); the preflight says so first,
with the line that fixes it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from repro import config as matrix_mod
from repro.containers import start_failure
from repro.host import hostkind as host_mod

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOSTS = FIXTURES / "hosts"
CDI_OFF = (FIXTURES / "captured/docker-cdi-off.txt").read_text()
VARIANT = matrix_mod.Variant(
    "cu128-torch2.8", "cu128", "cuda", "2.8.0", "", "nvidia/cuda:12.8.1-runtime", "3.12"
)


def test_engine_27_without_cdi_enabled_fails_preflight_with_the_fix_line():
    host = host_mod.load_fixture(HOSTS / "nvidia-linux-cdi-engine27")
    result = host_mod.preflight(host, VARIANT.id, "cuda")
    assert not result.ok
    [problem] = result.problems
    assert "Docker Engine 27.5.1: CDI is off" in problem
    assert 'add "features": {"cdi": true} to /etc/docker/daemon.json' in problem
    assert 'add "features": {"cdi": true}' in result.line()


def test_engine_28_2_lists_its_cdi_dirs_and_passes():
    host = host_mod.load_fixture(HOSTS / "nvidia-linux-cdi")
    assert host.daemon.server_version == "28.2.2" and host.daemon.cdi_spec_dirs
    assert host_mod.preflight(host, VARIANT.id, "cuda").ok


@pytest.mark.parametrize(
    ("version", "dirs", "says"),
    [
        ("24.0.7", (), "has no CDI support (added in 25.0)"),
        ("25.0.3", (), 'add "features": {"cdi": true}'),
        ("28.1.1", (), 'add "features": {"cdi": true}'),
        ("28.2.2", (), 'remove "cdi": false'),  # on by default: someone switched it off
        ("29.1.0", (), 'remove "cdi": false'),
        ("26.1.4", ("/etc/cdi", "/var/run/cdi"), None),  # enabled by hand
        ("28.3.0", ("/etc/cdi", "/var/run/cdi"), None),
    ],
)
def test_cdi_problem_by_engine_release(version, dirs, says):
    daemon = host_mod.DaemonInfo(reachable=True, server_version=version, cdi_spec_dirs=dirs)
    problem = host_mod.cdi_problem(daemon)
    if says is None:
        assert problem is None
    else:
        assert problem is not None and says in problem


def test_a_host_with_the_nvidia_runtime_does_not_need_cdi_in_auto_mode():
    cdi_host = host_mod.load_fixture(HOSTS / "nvidia-linux-cdi-engine27")
    daemon = replace(cdi_host.daemon, runtimes=(*cdi_host.daemon.runtimes, "nvidia"))
    host = replace(cdi_host, daemon=daemon)
    assert host_mod.preflight(host, VARIANT.id, "cuda").ok  # --gpus through the runtime
    assert not host_mod.preflight(host, VARIANT.id, "cuda", gpu_mode="cdi").ok


def test_the_daemons_bare_cdi_error_is_explained_in_the_red_cell():
    host = host_mod.load_fixture(HOSTS / "nvidia-linux-cdi-engine27")
    failure = start_failure.from_exception(
        RuntimeError(CDI_OFF), host, VARIANT, "the run container"
    )
    assert failure.signature == "container_gpu_setup"
    assert 'could not select device driver "cdi"' in failure.message
    assert 'add "features": {"cdi": true} to /etc/docker/daemon.json' in failure.message
