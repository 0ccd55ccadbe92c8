"""``repro check`` (issue 14 item 5): does a torch build exist, and would it run on this host?

Hosts are fingerprint.json files written per test (``--fingerprint``), so the answers do not
depend on the machine the tests run on; one test runs against this machine's own fingerprint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from repro.cli import main as cli_main
from repro.compat import check as check_mod
from repro.compat import pip_command
from repro.compat.results import FAIL, PASS
from repro.errors import ConfigError


def fingerprint(
    tmp_path: Path,
    *,
    driver: str | None = None,
    gpu: str | None = None,
    capability: str | None = None,
    python: str = "3.12.3",
) -> Path:
    data = {
        "schema": 1,
        "host": {"os": "Ubuntu 24.04", "python": python, "wsl2": False},
        "gpus": [],
        "driver": {"nvidia": driver},
        "runtime": {"torch": "2.13.0+cu130", "cuda": "13.0", "arch_list": ["sm_90"]},
    }
    if gpu:
        data["gpus"] = [
            {"index": 0, "vendor": "nvidia", "name": gpu, "compute_capability": capability}
        ]
    path = tmp_path / "fingerprint.json"
    path.write_text(json.dumps(data))
    return path


def run_check(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_main.main(["check", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------------------------------
# Reading the pip command


@pytest.mark.parametrize(
    "command, torch, runtime, source",
    [
        ("pip install torch==2.7.0+cu121", "2.7.0", "cu121", "+cu121"),
        (
            "python -m pip install -U torch==2.8.0 torchvision "
            "--index-url https://download.pytorch.org/whl/cu126",
            "2.8.0",
            "cu126",
            "--index-url",
        ),
        (
            "uv pip install --index-url=https://download.pytorch.org/whl/nightly/rocm6.4 torch==2.9.0",
            "2.9.0",
            "rocm6.4",
            "--index-url",
        ),
        ("pip3 install 'torch==2.13.0'", "2.13.0", None, None),
        ("torch==2.15.0 -i https://download.pytorch.org/whl/cpu", "2.15.0", "cpu", "--index-url"),
        ("pip install -i https://pypi.org/simple torch==2.8.0", "2.8.0", None, None),
    ],
)
def test_pip_commands_name_version_and_runtime(command, torch, runtime, source):
    request = pip_command.parse(command)
    assert (request.torch, request.runtime, request.runtime_from) == (torch, runtime, source)


@pytest.mark.parametrize(
    "command, message",
    [
        ("pip install torch", "pinned to one version"),
        ("pip install 'torch>=2.7'", "pinned to one version"),
        ("pip install numpy==2.0", "expected one torch requirement"),
        ("pip install torch==2.7.0+foo1", "+foo1 is not a runtime tag"),
        (
            "pip install 'torch==2.7.0+cu121' --index-url https://download.pytorch.org/whl/cu126",
            "but the index is cu126",
        ),
        ("pip install 'torch==2.7", "cannot split"),
        ("pip install torch==2.*", "pinned to one version"),
    ],
)
def test_bad_pip_commands_are_config_errors(command, message):
    with pytest.raises(ConfigError, match=message.replace("+", r"\+")):
        pip_command.parse(command)


def test_options_form_and_its_errors():
    assert pip_command.from_options("2.7.0", "cu121").runtime == "cu121"
    assert pip_command.from_options("2.7.0+cu118", None).runtime == "cu118"
    with pytest.raises(ConfigError, match="--runtime"):
        pip_command.from_options("2.7.0", "cuda12")
    with pytest.raises(ConfigError, match="names \\+cu118 but --runtime says cu121"):
        pip_command.from_options("2.7.0+cu118", "cu121")


# ------------------------------------------------------------------------------------------
# The acceptance cases


def test_an_unpublished_build_is_refused_naming_the_nearest_published(tmp_path, capsys):
    fp = fingerprint(tmp_path, driver="570.86.15", gpu="NVIDIA H100 80GB HBM3", capability="9.0")
    code, out, _ = run_check(capsys, "pip install torch==2.7.0+cu121", "--fingerprint", str(fp))
    assert code == 1
    assert (
        "fail: torch 2.7.0+cu121 was not published: torch 2.7 builds are cu118, cu126, cu128" in out
    )
    # Same release with the closest CUDA first, then the same runtime in the closest releases.
    assert (
        "nearest published: torch 2.7.0+cu126, torch 2.7.0+cu128, torch 2.7.0+cu118, torch 2.5.1+cu121"
        in out
    )
    assert out.rstrip().endswith("verdict: fail")


def test_a_cu130_build_on_a_570_driver_is_refused_with_the_minimum_driver(tmp_path, capsys):
    fp = fingerprint(tmp_path, driver="570.86.15", gpu="NVIDIA GeForce RTX 4090", capability="8.9")
    code, out, _ = run_check(
        capsys, "--torch", "2.13.0", "--runtime", "cu130", "--fingerprint", str(fp)
    )
    assert code == 1
    assert "driver 570.86.15 is older than 580, the minimum for CUDA 13.x" in out
    # What this host runs instead: the release's CUDA 12 build.
    assert "this host runs: torch 2.13.0+cu126" in out
    assert "forward-compatibility" not in out  # not for a GeForce card


def test_a_build_that_fits_exits_0(tmp_path, capsys):
    fp = fingerprint(tmp_path, driver="580.65.06", gpu="NVIDIA H100 80GB HBM3", capability="9.0")
    code, out, _ = run_check(capsys, "pip install torch==2.13.0+cu130", "--fingerprint", str(fp))
    assert code == 0, out
    assert "pass: torch 2.13.0+cu130 is published" in out
    assert "runs the sm_90 cubin" in out and out.rstrip().endswith("verdict: pass")


# ------------------------------------------------------------------------------------------
# The downgrades of the field reports (shared/field-reports.md), each caught before installing


def test_field_torch_downgrade_to_2_5_1_cu121_on_an_rtx_5090_is_caught(tmp_path, capsys):
    """Cross-cutting "no kernel image": RTX 5090 (sm_120) with torch==2.5.1 cu121
    (HybridRobotics/berkeley-humanoid-lite#49, pytorch#150733): no kernel image for sm_120."""
    fp = fingerprint(
        tmp_path, driver="570.133.07", gpu="NVIDIA GeForce RTX 5090", capability="12.0"
    )
    command = "pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu121"
    code, out, _ = run_check(capsys, command, "--fingerprint", str(fp))
    assert code == 1
    assert "fail: no kernel image for GPU 0 (NVIDIA GeForce RTX 5090), capability 12.0" in out
    # "fixed with cu128 builds": the nearest newer release with one that runs here.
    assert "this host runs: torch 2.7.1+cu128" in out


def test_field_cuda13_build_on_a_cuda_12_8_driver_is_caught(tmp_path, capsys):
    """F3-8: CUDA 13.0 builds on a 12.8 driver (pytorch PR #162531: "The NVIDIA driver on your
    system is too old (found version 12080)")."""
    fp = fingerprint(tmp_path, driver="570.124.06", gpu="NVIDIA A100-SXM4-80GB", capability="8.0")
    code, out, _ = run_check(capsys, "pip install torch==2.9.0+cu130", "--fingerprint", str(fp))
    assert code == 1
    assert "driver 570.124.06 is older than 580, the minimum for CUDA 13.x" in out
    assert "this host runs: torch 2.9.0+cu126, torch 2.9.0+cu128" in out
    # An A100 is a data-centre GPU: the forward-compatibility package is named as the alternative.
    assert "note: a data-centre GPU: NVIDIA's forward-compatibility package cuda-compat-13-0" in out


def test_field_gtx_1080_ti_with_a_cu128_wheel_is_pointed_at_cu126(tmp_path, capsys):
    """mmartial/ComfyUI-Nvidia-Docker#61: sm_61 with a cu128 wheel (arch list starts at 7.0);
    the warning suggests the cu126 build."""
    fp = fingerprint(
        tmp_path, driver="575.57.08", gpu="NVIDIA GeForce GTX 1080 Ti", capability="6.1"
    )
    code, out, _ = run_check(capsys, "pip install torch==2.8.0+cu128", "--fingerprint", str(fp))
    assert code == 1 and "no kernel image for GPU 0" in out
    assert "this host runs: torch 2.8.0+cu126" in out


# ------------------------------------------------------------------------------------------
# Other answers


def test_a_patch_release_that_never_existed_and_pythons_without_wheels(tmp_path):
    never = check_mod.check(pip_command.parse("pip install torch==2.7.5+cu128"), {})
    assert never.outcome == FAIL
    assert "2.7 releases: 2.7.0, 2.7.1" in never.prediction.reasons[0].text
    assert never.nearest == ("2.7.0+cu128", "2.7.1+cu128")
    py = check_mod.check(pip_command.parse("torch==2.8.0+cpu"), {"host.python": "3.14.0"})
    assert py.outcome == FAIL
    assert [r.check for r in py.prediction.deciding] == ["python"]
    plain = check_mod.check(pip_command.parse("torch==2.15.0"), {"host.python": "3.14.0"})
    assert plain.runtime == "cu132" and plain.outcome != FAIL  # PyPI's default build
    assert plain.prediction.reasons[0].verdict == PASS


def test_versions_outside_the_facts_are_unknown_not_refused():
    newer = check_mod.check(pip_command.parse("torch==2.16.0+cu132"), {})
    assert (
        newer.outcome != FAIL and "newer than the shipped facts" in newer.prediction.reasons[0].text
    )


def test_json_output(tmp_path, capsys):
    fp = fingerprint(tmp_path, driver="570.86.15", gpu="NVIDIA H100", capability="9.0")
    code, out, _ = run_check(capsys, "torch==2.7.0+cu121", "--fingerprint", str(fp), "--json")
    data = json.loads(out)
    assert code == 1 and data["outcome"] == FAIL and data["runtime"] == "cu121"
    assert data["nearest"][0] == "2.7.0+cu126"


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    code, _, err = run_check(capsys)
    assert code == 2 and err.count("\n") == 1
    bad = tmp_path / "fp.json"
    bad.write_text("{not json")
    code, _, err = run_check(capsys, "torch==2.8.0", "--fingerprint", str(bad))
    assert code == 2 and f"--fingerprint {bad}: expected a fingerprint JSON object" in err
    code, _, err = run_check(
        capsys, "torch==2.8.0", "--fingerprint", str(tmp_path / "missing.json")
    )
    assert code == 2 and "missing.json: cannot read: No such file or directory" in err
    code, _, err = run_check(capsys, "torch==2.8.0", "--torch", "2.8.0")
    assert code == 2 and "not both" in err


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_a_device_or_fifo_fingerprint_is_exit_2_at_once(tmp_path, kind):
    """Issue 25: /dev/zero grew to 3.8 GB and a FIFO hung; the capped reader refuses both."""
    path = "/dev/zero"
    if kind == "fifo":
        path = str(tmp_path / "fp.fifo")
        os.mkfifo(path)  # nobody ever writes: opening it for reading would block
    done = subprocess.run(
        [sys.executable, "-m", "repro", "check", "torch==2.8.0", "--fingerprint", path],
        cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert f"--fingerprint {path}: not a regular file" in line


def test_this_machine_is_checked_from_its_own_fingerprint(capsys):
    code, out, _ = run_check(capsys, "pip install torch==2.7.0+cu121")
    assert code == 1 and "was not published" in out and " on " in out.splitlines()[0]


def test_the_extra_facts_cover_every_release_of_the_shared_facts_with_their_marks():
    from repro import data
    from repro.compat.facts import default_facts, extra_facts

    facts, extra = default_facts(), extra_facts()
    assert data.COMPAT_EXTRA in data.ALL and data.COMPAT_EXTRA.is_file()
    assert set(extra.get("torch_releases")) == set(facts.get("torch_variants"))
    for minor, releases in extra.get("torch_releases").items():
        assert all(r.startswith(minor + ".") for r in releases), minor
    # The PyPI wheels checked on the index agree with the shared pypi_default.
    for release, wheel in extra.get("pypi_wheels").items():
        minor = ".".join(release.split(".")[:2])
        assert wheel["runtime"] == facts.get("torch_variants", minor, "pypi_default"), release
    assert extra.unverified("image_forward_compat_branches", "13.0")
    assert extra.unverified("compat_package_images", "carries")
    assert not extra.unverified("pypi_wheels", "2.15.0")
