"""ROCm selection by UUID and ROCm on WSL2 in a container.

``ROCR_VISIBLE_DEVICES`` takes indices or UUIDs (ROCm docs, "GPU isolation techniques"); ROCr
names a GPU "GPU-" + the KFD node's ``unique_id`` in 16 hex digits and matches an entry
beginning with G as a unique prefix, upper-cased (ROCR-Runtime ``amd_gpu_agent.cpp`` and
``amd_filter_device.cpp``). The MI210 KFD node of ``tests/fixtures/fingerprint/rocm`` has
``unique_id 9826354107711203925``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from repro.containers import spec as container_mod
from repro.containers.options import ResolvedDockerRun
from repro.host import amd, selection
from repro.host import hostkind as host_mod
from repro.model import Gpu

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_the_kfd_unique_id_is_rocrs_uuid():
    [gpu] = amd.read_gpus(FIXTURES / "fingerprint/rocm", [])
    assert gpu.uuid == "GPU-885e38ffab53aa55"
    assert amd.rocr_uuid(0) is None  # gfx8 / old thunk: ROCr says "GPU-XX", nothing to match


MI210 = [
    Gpu(index=i, vendor="amd", name="AMD gfx90a", gfx_target="gfx90a", uuid=uuid, source="sysfs")
    for i, uuid in enumerate(
        ["GPU-885e38ffab53aa55", "GPU-9a1c0d2e3f405162", "GPU-9a1c77aa00112233"]
    )
]


@pytest.mark.parametrize(
    ("value", "chosen", "noted"),
    [
        ("GPU-9a1c0d2e3f405162", [1], False),  # a full UUID
        ("gpu-885e38ffab53aa55", [0], False),  # ROCr upper-cases entries
        ("GPU-885e,2", [0, 2], False),  # a unique prefix, then an index
        (" 0x2 , GPU-885E", [2, 0], False),  # strtol base 0, trimmed
        ("GPU-9a1c,0", [], True),  # ambiguous prefix: ROCr stops at once
        ("1,GPU-0000000000000000,2", [1], True),  # unknown UUID ends the list
        ("0,GPU-885e38ffab53aa55", [0], True),  # the same GPU twice ends it too
    ],
)
def test_rocr_visible_devices_accepts_uuids_as_rocr_does(value, chosen, noted):
    found = selection.select(MI210, {"ROCR_VISIBLE_DEVICES": value})
    assert found is not None
    assert [g.index for g in found.devices] == chosen
    assert bool(found.notes) == noted


def test_hip_visible_devices_indexes_what_rocr_left_by_uuid():
    environ = {"ROCR_VISIBLE_DEVICES": "GPU-9a1c77,GPU-885e", "HIP_VISIBLE_DEVICES": "1"}
    found = selection.select(MI210, environ)
    assert [g.index for g in found.devices] == [0]


def test_a_container_on_a_rocm_host_gets_the_uuid_selection_unchanged():
    assert selection.container_gpus({"ROCR_VISIBLE_DEVICES": "GPU-885e"}, "rocm") == "GPU-885e"


def test_rocm_wsl2_container_gets_the_hosts_bridge_library():
    host = host_mod.load_fixture(FIXTURES / "hosts/rocm-wsl2")
    assert host.rocdxg_libs == ("/opt/rocm/lib/librocdxg.so",)
    options = container_mod.ContainerRun(
        image="repro:rocm",
        variant_id="rocm6.4-torch2.9",
        config_file="matrix.yaml",
        run_dir="/tmp/results/run-1",
        host_fingerprint_dir="/tmp/fp",
        resolved=ResolvedDockerRun(),
    )
    spec = container_mod.docker_run_spec(host, "rocm", options)
    assert spec.kwargs["volumes"]["/opt/rocm/lib/librocdxg.so"] == {
        "bind": "/opt/rocm/lib/librocdxg.so",
        "mode": "ro",
    }
    assert spec.kwargs["environment"]["LD_LIBRARY_PATH"] == "/usr/lib/wsl/lib:/opt/rocm/lib"
    assert "/opt/rocm/lib/librocdxg.so" in " ".join(
        host_mod.preflight(host, "rocm6.4-torch2.9", "rocm").warnings
    )
    # Without a bridge library on the host, nothing is mounted and the preflight says so.
    bare = replace(host, rocdxg_libs=())
    spec = container_mod.docker_run_spec(bare, "rocm", options)
    assert spec.kwargs["environment"]["LD_LIBRARY_PATH"] == "/usr/lib/wsl/lib"
    assert "the image must carry it" in " ".join(
        host_mod.preflight(bare, "rocm6.4-torch2.9", "rocm").warnings
    )
