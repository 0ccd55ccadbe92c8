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
from repro.compat import install_line, pip_command
from repro.compat.install_check import check_line
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
# Reading the install line


@pytest.mark.parametrize(
    "command, tool, spec, indexes, extra, find_links, pre",
    [
        ("pip install torch==2.7.0+cu121", "pip", "==2.7.0+cu121", (), (), (), False),
        (
            "python -m pip install -U torch==2.8.0 torchvision "
            "--index-url https://download.pytorch.org/whl/cu126",
            "pip",
            "==2.8.0",
            ("https://download.pytorch.org/whl/cu126",),
            (),
            (),
            False,
        ),
        (
            "uv pip install --index-url=https://download.pytorch.org/whl/nightly/rocm6.4 torch==2.9.0",
            "uv",
            "==2.9.0",
            ("https://download.pytorch.org/whl/nightly/rocm6.4",),
            (),
            (),
            False,
        ),
        ("pip3 install 'torch==2.13.0'", "pip", "==2.13.0", (), (), (), False),
        (
            "torch==2.15.0 -i https://download.pytorch.org/whl/cpu",
            "requirements",
            "==2.15.0",
            ("https://download.pytorch.org/whl/cpu",),
            (),
            (),
            False,
        ),
        (
            "(venv) me@box:~$ pip3 install --pre torch -f https://x/torch_nightly.html",
            "pip",
            "",
            (),
            (),
            ("https://x/torch_nightly.html",),
            True,
        ),
        (
            "!pip install torch --extra-index-url https://download.pytorch.org/whl/cu118",
            "pip",
            "",
            (),
            ("https://download.pytorch.org/whl/cu118",),
            (),
            False,
        ),
        (
            "uv add torch --index pytorch=https://download.pytorch.org/whl/cu128",
            "uv",
            "",
            (),
            ("https://download.pytorch.org/whl/cu128",),
            (),
            False,
        ),
        (
            "sudo apt update && pip install 'torch>=2.1,<2.3'  # pin",
            "pip",
            "<2.3,>=2.1",
            (),
            (),
            (),
            False,
        ),
    ],
)
def test_install_lines_are_read_with_their_indexes(
    command, tool, spec, indexes, extra, find_links, pre
):
    line = install_line.parse(command)
    assert line.tool == tool and str(line.torch.specifier) == spec
    assert (line.indexes, line.extra_indexes, line.find_links, line.pre) == (
        indexes,
        extra,
        find_links,
        pre,
    )


def test_conda_wheel_and_requirements_forms():
    conda = install_line.parse(
        "conda install pytorch==1.12.1 torchvision cudatoolkit=11.3 -c pytorch -c conda-forge"
    ).conda
    assert (conda.spec, conda.cuda, conda.cuda_package, conda.channels) == (
        "==1.12.1",
        "11.3",
        "cudatoolkit",
        ("pytorch", "conda-forge"),
    )
    assert (
        install_line.parse("mamba install pytorch=1.8 cuda100 -c pytorch").conda.spec == "==1.8.*"
    )
    old = install_line.parse("conda install pytorch==1.0.0 torchvision==0.2.1 cuda90 -c pytorch")
    assert old.conda.cuda == "9.0"
    assert install_line.parse("conda install pytorch cpuonly -c pytorch").conda.cpu_only
    wheel = install_line.parse(
        "pip install https://download.pytorch.org/whl/cu118/torch-2.0.0%2Bcu118-cp310-cp310-linux_x86_64.whl"
    ).wheel
    assert (str(wheel.version), wheel.runtime, wheel.pythons, wheel.platforms) == (
        "2.0.0+cu118",
        "cu118",
        ("3.10",),
        ("linux",),
    )
    no_label = install_line.wheel_of(
        "https://download.pytorch.org/whl/cu90/torch-1.0.1-cp36-cp36m-win_amd64.whl"
    )
    assert (no_label.runtime, no_label.platforms) == ("cu90", ("windows",))
    requirements = install_line.parse(
        "--extra-index-url https://download.pytorch.org/whl/cu118\ntorch==2.0.1+cu118\ntorchvision"
    )
    assert requirements.tool == "requirements" and "torchvision" in requirements.companions


def test_requirements_files_are_read_through_the_callback(tmp_path):
    files = {"reqs.txt": "numpy\n-r more.txt\n", "more.txt": "torch==1.13.1  # the GPU one\n"}
    line = install_line.parse("pip install -r reqs.txt -r missing.txt", files.get)
    assert str(line.torch.specifier) == "==1.13.1" and line.unread == ("missing.txt",)


@pytest.mark.parametrize(
    "command, message",
    [
        ("pip install numpy==2.0", "installs no torch"),
        ("python train.py --epochs 3", "is no install command"),
        ("hello world", "is no install command"),
        ("pip install 'torch==2.7", "cannot split"),
    ],
)
def test_text_that_is_no_torch_install_is_a_config_error(command, message):
    with pytest.raises(ConfigError, match=message):
        install_line.parse(command)


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
    assert "fail: torch 2.7.0+cu121 was not published: 2.7.0 builds are cu118, cu126, cu128" in out
    # Same release with the closest CUDA first, then the same runtime in the closest releases.
    assert (
        "nearest that would install: torch 2.7.0+cu126, torch 2.7.0+cu128, torch 2.7.0+cu118, "
        "torch 2.5.1+cu121" in out
    )
    assert "the line that works: pip install torch==2.7.0 --index-url " in out
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
    line = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu130"
    code, out, _ = run_check(capsys, line, "--fingerprint", str(fp))
    assert code == 0, out
    assert "pass: pip gets torch 2.13.0+cu130 from https://download.pytorch.org/whl/cu130" in out
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
    line = "pip install torch==2.9.0 --index-url https://download.pytorch.org/whl/cu130"
    code, out, _ = run_check(capsys, line, "--fingerprint", str(fp))
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


def test_a_patch_release_that_never_existed_and_pythons_without_wheels():
    never = check_line(install_line.parse("pip install torch==2.7.5+cu128"), {})
    assert never.outcome == FAIL and never.nearest == ("2.7.0", "2.7.1")
    assert "2.7 releases are 2.7.0, 2.7.1" in never.prediction.reasons[0].text
    cpu = "pip install torch==2.8.0 --index-url https://download.pytorch.org/whl/cpu"
    py = check_line(install_line.parse(cpu), {"host.python": "3.14.0"})
    assert py.outcome == FAIL and [r.check for r in py.prediction.deciding] == ["python"]
    # The nearest releases with a Python 3.14 wheel, and the line that installs one.
    assert py.nearest == ("2.9.0",)
    assert py.fix == "pip install torch==2.9.0 --index-url https://download.pytorch.org/whl/cpu"
    plain = check_line(install_line.parse("torch==2.15.0"), {"host.python": "3.14.0"})
    assert plain.runtime == "cu132" and plain.outcome == PASS  # PyPI's default build


def test_versions_outside_the_facts_are_unknown_not_refused():
    newer = check_line(install_line.parse("torch==2.16.0+cu132"), {})
    assert newer.outcome == "unknown"
    assert "newer than the facts know" in newer.prediction.reasons[0].text


def test_json_output(tmp_path, capsys):
    fp = fingerprint(tmp_path, driver="570.86.15", gpu="NVIDIA H100", capability="9.0")
    code, out, _ = run_check(capsys, "torch==2.7.0+cu121", "--fingerprint", str(fp), "--json")
    data = json.loads(out)
    assert code == 1 and data["outcome"] == FAIL and data["summary"] == "will not install"
    assert data["nearest"][0] == "2.7.0+cu126" and data["python"] == "3.12"
    assert data["fix"].startswith("pip install torch==2.7.0 --index-url ")


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
    assert code == 1 and "was not published" in out and out.splitlines()[1].startswith("  on ")


def test_the_extra_facts_cover_every_release_of_the_shared_facts_with_their_marks():
    from repro import data
    from repro.compat.facts import default_facts, extra_facts

    facts, extra = default_facts(), extra_facts()
    assert data.COMPAT_EXTRA in data.ALL and data.COMPAT_EXTRA.is_file()
    known = set(extra.get("torch_releases")) | set(facts.get("torch_releases"))
    assert known == set(facts.get("torch_variants"))
    for minor, releases in extra.get("torch_releases").items():
        assert all(r.startswith(minor + ".") for r in releases), minor
    # The PyPI wheels checked on the index agree with the shared pypi_default.
    for release, wheel in extra.get("pypi_wheels").items():
        minor = ".".join(release.split(".")[:2])
        assert wheel["runtime"] == facts.get("torch_variants", minor, "pypi_default"), release
    # Every value names its source (issue 30): none carries an ``# unverified`` mark any more.
    text = data.COMPAT_EXTRA.read_text(encoding="utf-8")
    assert not [
        line for line in text.splitlines() if "unverified" in line and not line.startswith("#")
    ]
    assert not extra.unverified("image_forward_compat_branches", "13.0")
    assert not extra.unverified("compat_package_images", "carries")
    assert not extra.unverified("pypi_wheels", "2.15.0")


def test_a_cuda_index_on_a_mac_is_refused_with_the_pypi_line():
    """liva#4, rohitg00/ai-engineering-from-scratch#316: a CUDA index has no macOS wheels."""
    line = install_line.parse(
        "pip3 install torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cu118"
    )
    intel = check_line(line, {}, "3.12", "macos")
    assert intel.outcome == FAIL and [r.check for r in intel.prediction.deciding] == ["platform"]
    assert "has no macOS wheels" in intel.prediction.deciding[0].text
    # The newest PyPI release with a wheel for an Intel Mac, with its torchvision/torchaudio.
    assert intel.fix == "pip install torch==2.2.2 torchvision==0.17.2 torchaudio==2.2.2"
    arm = check_line(line, {"host.arch": "arm64"}, "3.12", "macos")
    assert arm.fix.startswith("pip install torch==") and arm.nearest != intel.nearest
    # Beside PyPI (--extra-index-url) the Mac gets PyPI's build: it installs, with a note.
    extra = "pip install torch --extra-index-url https://download.pytorch.org/whl/cu124"
    on_mac = check_line(install_line.parse(extra), {"host.arch": "arm64"}, "3.12", "macos")
    assert on_mac.outcome == PASS and on_mac.runtime == "cpu"
    assert any(
        r.check == "accelerator" and "macOS has none" in r.text for r in on_mac.prediction.reasons
    )


def test_uv_with_values_are_split_as_uv_splits_them():
    """uv-cli comma.rs: commas split requirements unless a version operator follows."""
    assert install_line.split_with("moshi,torch==2.5.1+cu124") == ["moshi", "torch==2.5.1+cu124"]
    assert install_line.split_with("torch>=2.5, <2.7,numpy") == ["torch>=2.5, <2.7", "numpy"]
    assert install_line.split_with("psycopg[binary,pool],torch@2.5.1") == [
        "psycopg[binary,pool]",
        "torch==2.5.1",
    ]
    line = install_line.parse(
        "uvx --with moshi,torch==2.5.1+cu124 --index-url https://download.pytorch.org/whl/cu124 "
        "python tts.py"
    )
    assert line.tool == "uv" and str(line.torch.specifier) == "==2.5.1+cu124"


# ------------------------------------------------------------------------------------------
# Issue 22's acceptance lines, each from the corpus (tests/fixtures/install-lines/corpus.yaml)

CU = "https://download.pytorch.org/whl"


def test_a_local_version_without_its_index_is_refused_with_the_line_that_works(tmp_path, capsys):
    """OpenSQZ/MiniCPM-V-CookBook#40: torch==2.7.1+cu128 from PyPI, 'No matching distribution'."""
    code, out, _ = run_check(
        capsys, "pip install torch==2.7.1+cu128", "--fingerprint", str(fingerprint(tmp_path))
    )
    assert code == 1 and "answer: will not install" in out
    assert "fail: PyPI serves no local versions: there is no torch==2.7.1+cu128 on PyPI" in out
    assert f"the line that works: pip install torch==2.7.1 --index-url {CU}/cu128" in out


def test_an_unpinned_line_with_a_cuda_index_gets_the_newest_build_that_index_serves(
    tmp_path, capsys
):
    """The selector's form (pytorch.org): the cu118 index stops at 2.7.1; with no GPU here the
    verdict says what the build needs; on an RTX 5090 (sm_120) its kernels do not run."""
    line = f"pip install torch torchvision torchaudio --index-url {CU}/cu118"
    code, out, _ = run_check(capsys, line, "--fingerprint", str(fingerprint(tmp_path)))
    assert code == 0, out
    assert f"pass: pip gets torch 2.7.1+cu118 from {CU}/cu118" in out
    assert (
        "needs an NVIDIA driver >= 450.80.02 (linux) and a GPU of compute capability 3.7-9.0" in out
    )
    fp = fingerprint(
        tmp_path, driver="570.133.07", gpu="NVIDIA GeForce RTX 5090", capability="12.0"
    )
    code, out, _ = run_check(capsys, line, "--fingerprint", str(fp))
    assert code == 1 and "fail: no kernel image for GPU 0 (NVIDIA GeForce RTX 5090)" in out
    assert "this host runs: torch 2.7.1+cu128" in out


def test_nightly_lines_name_the_nightly_line_or_why_it_is_gone(tmp_path, capsys):
    """Scarfy-sysu/rtx5060-pytorch-cuda129#3: the cu129 nightly index has no builds any more."""
    fp = str(fingerprint(tmp_path))
    gone = f"pip install --pre torch torchvision torchaudio --index-url {CU}/nightly/cu129"
    code, out, _ = run_check(capsys, gone, "--fingerprint", fp)
    assert code == 1
    # 2.13.0 is the newest release with a cu129 build (torch 2.13.0's PYTORCH_RELEASES_CODE_CC)
    assert "fail: no cu129 nightlies any more: the newest release with cu129 is 2.13.0" in out
    works = f"the line that works: pip install --pre torch torchvision torchaudio --index-url {CU}/nightly/cu"
    assert works in out
    live = f"pip install --pre torch --index-url {CU}/nightly/cu126"
    code, out, _ = run_check(capsys, live, "--fingerprint", fp)
    assert code == 0 and " nightly (cu126) from " in out and "judged by torch " in out


def test_a_conda_cudatoolkit_the_channel_never_built_installs_the_cpu_build(tmp_path, capsys):
    """pytorch#69202: 'There is no version 11.3 at all, so installer get you CPU only version'."""
    line = "conda install -c pytorch pytorch=1.9.0 torchvision cudatoolkit=11.3"
    fp = str(fingerprint(tmp_path))
    code, out, _ = run_check(capsys, line, "--fingerprint", fp, "--python-version", "3.8")
    assert code == 1 and "answer: installs a CPU-only build: the GPU stays unused" in out
    assert "no pytorch 1.9.0 build for CUDA 11.3 (its builds: CUDA 10.2, 11.1)" in out
    assert "the line that works: conda install pytorch==1.9.0 cudatoolkit=11.1 -c pytorch" in out


def test_a_wheel_url_is_judged_by_its_python_tag_and_its_cuda(tmp_path, capsys):
    """pytorch#4546 (a cu100 wheel on an R390 driver: 'found version 9010') and pytorch#29434
    (a cp35 wheel on Python 3.6; the cp36 wheel of the same URL installed)."""
    url = f"{CU}/cu100/torch-1.0.1.post2-cp35-cp35m-linux_x86_64.whl"
    fp = fingerprint(
        tmp_path, driver="390.116", gpu="NVIDIA GeForce GTX 1080", capability="6.1", python="3.5.2"
    )
    code, out, _ = run_check(capsys, f"pip3 install {url}", "--fingerprint", str(fp))
    assert code == 1 and "answer: installs but will not run" in out
    assert "fail: driver 390.116 is older than 410.48, the minimum for CUDA 10.x (linux)" in out
    code, out, _ = run_check(capsys, url, "--fingerprint", str(fp), "--python-version", "3.6")
    assert code == 1 and "the wheel is for Python 3.5; the host has Python 3.6" in out
    assert f"the line that works: pip install {url.replace('cp35-cp35m', 'cp36-cp36m')}" in out


def test_a_rocm_index_on_windows_is_refused_naming_the_platform():
    """'ROCM ... (Linux only)' (previous-versions page): the rocm6.2 index has 2.5.1+rocm6.2, but
    not for Windows; the same line passes on Linux."""
    line = install_line.parse(f"pip install torch==2.5.1 --index-url {CU}/rocm6.2")
    windows = check_line(line, {}, "3.12", "windows")
    assert windows.outcome == FAIL and [r.check for r in windows.prediction.deciding] == [
        "platform"
    ]
    assert (
        "has no Windows wheels: ROCm builds are Linux only" in windows.prediction.deciding[0].text
    )
    assert windows.fix == "pip install torch==2.5.1"
    linux = check_line(line, {}, "3.12", "linux")
    assert linux.outcome == PASS and linux.torch == "2.5.1+rocm6.2"


def test_a_wheel_for_another_platform_points_at_the_same_release_for_this_one():
    """A win_amd64 wheel on Linux: the same release and CUDA from its index; a Linux wheel on a
    Mac (render-examples/fastai-v3#4): the same release from PyPI."""
    windows_wheel = install_line.parse("pip install torch-2.1.0+cu121-cp310-cp310-win_amd64.whl")
    on_linux = check_line(windows_wheel, {}, "3.10", "linux")
    assert on_linux.outcome == FAIL and on_linux.nearest[0] == "2.1.0"
    assert on_linux.fix == f"pip install torch==2.1.0 --index-url {CU}/cu121"
    linux_wheel = install_line.parse("torch-1.0.0-cp37-cp37m-linux_x86_64.whl")
    on_mac = check_line(linux_wheel, {}, "3.7", "macos")
    assert on_mac.outcome == FAIL and on_mac.fix == "pip install torch==1.0.0"


def test_a_nightly_index_serves_only_the_nightly_line():
    """A release pin finds nothing on a nightly index; an unpinned torch gets the nightly even
    without --pre when nothing else fits (packaging SpecifierSet.filter), but PyPI's final
    release when PyPI is searched too."""
    nightly = f"{CU}/nightly/cu126"
    pinned = check_line(
        install_line.parse(f"pip install --pre torch==2.15.0 --index-url {nightly}"),
        {},
        "3.12",
        "linux",
    )
    assert (
        pinned.outcome == FAIL
        and "serves only nightly builds" in pinned.prediction.deciding[0].text
    )
    assert pinned.fix == f"pip install torch==2.15.0 --index-url {CU}/cu126"
    alone = check_line(
        install_line.parse(f"pip install torch --index-url {nightly}"), {}, "3.12", "linux"
    )
    assert alone.outcome == PASS and alone.torch.endswith(" nightly")
    beside = check_line(
        install_line.parse(f"pip install torch --extra-index-url {nightly}"), {}, "3.12", "linux"
    )
    assert beside.outcome == PASS and beside.torch == "2.15.0"


def test_conda_keeps_the_environments_python():
    """conda does not change the environment's Python minor version (conda core/solve.py): an
    unpinned pytorch gets the newest release with a build for it (conda/conda#11001: Python 3.6
    got pytorch 1.10), a pin without one will not install."""
    unpinned = install_line.parse("conda install pytorch cpuonly -c pytorch")
    py36 = check_line(unpinned, {}, "3.6", "linux")
    assert py36.outcome == PASS and py36.torch.startswith("1.10.")
    pinned = install_line.parse("conda install pytorch=1.9 cudatoolkit=11.1 -c pytorch")
    py310 = check_line(pinned, {}, "3.10", "linux")
    assert py310.outcome == FAIL and [r.check for r in py310.prediction.deciding] == ["python"]
    assert py310.nearest == ("1.11.0",)


def test_a_torchvision_pin_for_another_torch_gets_the_pair_released_together():
    """Akegarasu/lora-scripts#375: torchvision 0.16.1+cu118 depends on torch==2.1.1; the line
    that works keeps torch and takes its own torchvision."""
    line = install_line.parse(
        f"pip install torch==2.2.1+cu118 torchvision==0.16.1+cu118 --extra-index-url {CU}/cu118"
    )
    result = check_line(line, {}, "3.10", "windows")
    assert result.outcome == FAIL and [r.check for r in result.prediction.deciding] == ["companion"]
    assert result.fix == f"pip install torch==2.2.1 torchvision==0.17.1 --index-url {CU}/cu118"
    pypi = check_line(install_line.parse("torch==1.13.0\ntorchvision==0.15.2"), {}, "3.9", "linux")
    assert pypi.fix == "pip install torch==1.13.0 torchvision==0.14.0"


def test_the_find_links_pages_stopped_before_2_4():
    """pytorch#136939: no 2.4.x on torch_stable.html; the index line installs it."""
    page = f"{CU}/torch_stable.html"
    late = check_line(
        install_line.parse(f"pip install torch==2.4.1+cu121 -f {page}"), {}, "3.12", "linux"
    )
    assert late.outcome == FAIL and "stopped with torch" in late.prediction.deciding[0].text
    assert late.fix == f"pip install torch==2.4.1 --index-url {CU}/cu121"
    early = check_line(
        install_line.parse(f"pip install torch==2.3.1+cu121 -f {page}"), {}, "3.12", "linux"
    )
    assert early.outcome == PASS and early.torch == "2.3.1+cu121"
    # Beside PyPI an unpinned torch is PyPI's newest, not a page build.
    plain = check_line(install_line.parse(f"pip install torch -f {page}"), {}, "3.12", "linux")
    assert plain.outcome == PASS and "+" not in plain.torch


def test_uv_index_strategies():
    """uv takes torch from the first index that has it (first-index), from the first with a
    fitting version (unsafe-first-match), or the best of all, as pip does (unsafe-best-match)."""
    base = f"uv pip install torch==2.9.0 --extra-index-url {CU}/cu118"
    first = check_line(install_line.parse(base), {}, "3.12", "linux")
    assert first.outcome == FAIL and "uv does not look there" in first.prediction.deciding[0].text
    assert first.fix == f"{base} --index-strategy unsafe-best-match"
    for strategy in ("unsafe-first-match", "unsafe-best-match"):
        line = install_line.parse(f"{base} --index-strategy {strategy}")
        assert line.index_strategy == strategy
        assert check_line(line, {}, "3.12", "linux").torch == "2.9.0"  # PyPI's
    unpinned = f"uv pip install torch --extra-index-url {CU}/cu118"
    assert check_line(install_line.parse(unpinned), {}, "3.12", "linux").torch == "2.7.1+cu118"
    best = install_line.parse(f"{unpinned} --index-strategy unsafe-best-match")
    assert "+" not in check_line(best, {}, "3.12", "linux").torch  # PyPI's newest is higher


def test_an_index_that_never_existed_is_named_with_the_nearest_cuda_build():
    """pytorch#90845 (a cu114 index: pip took PyPI's CPU wheel on Windows) and
    visualbruno/ComfyUI-Trellis2#131 (cu131: 'from versions: none'; cu130 worked)."""
    extra = install_line.parse(
        f"pip3 install torch torchvision torchaudio --extra-index-url {CU}/cu114"
    )
    cpu = check_line(extra, {}, "3.10", "windows")
    assert cpu.outcome == FAIL and "no release has cu114 builds" in cpu.prediction.deciding[0].text
    assert cpu.fix.startswith("pip install torch==") and cpu.fix.endswith(
        f"torchvision torchaudio --index-url {CU}/cu126"
    )
    only = install_line.parse(
        f"pip install torch==2.10.0 torchvision torchaudio --index-url {CU}/cu131"
    )
    none = check_line(only, {}, "3.13", "windows")
    assert (
        none.outcome == FAIL and "no release has cu131 builds" in none.prediction.deciding[0].text
    )
    assert none.fix == f"pip install torch==2.10.0 torchvision torchaudio --index-url {CU}/cu130"


def test_the_environment_python_a_line_names_is_the_one_checked():
    """`conda create -n x python=3.8 && ... pip install` installs into Python 3.8, whatever the
    host's; `--python` still wins; a conda command of another package is no torch install."""
    text = (
        "conda create -n lora python=3.8 -y && conda activate lora && "
        f"pip install torch==2.2.0+cu118 --index-url {CU}/cu118"
    )
    line = install_line.parse(text)
    assert line.tool == "pip" and line.python == "3.8" and line.text == text
    assert check_line(line, {"host.python": "3.12.1"}).host.python == "3.8"
    assert check_line(line, {}, "3.11").host.python == "3.11"
    assert install_line.parse("uv pip install torch --python 3.13").python == "3.13"
    assert install_line.parse("uv venv -p 3.13 && uv pip install torch").python == "3.13"
    venv = "python3.8 -m venv .venv && . .venv/bin/activate && pip install torch==2.5.0"
    assert check_line(install_line.parse(venv), {}).outcome == FAIL  # 2.5.0 has no Python 3.8
    conda = install_line.parse(
        "conda create -n x python=3.9 pytorch=1.9 cudatoolkit=11.1 -c pytorch"
    )
    assert conda.python == "3.9" and conda.conda.spec == "==1.9.*"
    with pytest.raises(ConfigError, match="installs no torch"):
        install_line.parse("conda install -c conda-forge ffmpeg")


def test_a_line_that_works_is_checked_too_and_bad_conda_versions_are_bad_input():
    """No endless loop when the line that works is the line itself, no line that works that
    would not install here; `pytorch=abc` is a clear exit-2 error."""
    line = install_line.parse(f"pip install torch==1.0.0 -f {CU}/cu100/torch_stable.html")
    for platform in ("linux", "windows", "macos"):
        result = check_line(line, {}, "3.10", platform)
        assert result.outcome == FAIL
        if result.fix:
            fixed = check_line(install_line.parse(result.fix), {}, "3.10", platform)
            assert fixed.installs is not False, result.fix
    with pytest.raises(ConfigError, match="is no version"):
        install_line.parse("conda install pytorch=abc -c pytorch")


def test_a_cuda_nightly_index_on_a_mac_points_at_the_cpu_nightlies():
    line = install_line.parse(f"pip install --pre torch torchvision --index-url {CU}/nightly/cu128")
    result = check_line(line, {"host.arch": "arm64"}, "3.12", "macos")
    assert result.outcome == FAIL and result.prediction.deciding[0].check == "platform"
    assert result.fix == f"pip install --pre torch torchvision --index-url {CU}/nightly/cpu"
    # An Intel Mac has no PyPI wheel of 2.8.0 (the last was 2.2.2): no line that works for it.
    wheel = install_line.parse(
        f"pip install {CU}/cu128/torch-2.8.0%2Bcu128-cp310-cp310-linux_x86_64.whl"
    )
    assert check_line(wheel, {}, "3.10", "macos").fix is None


def test_the_nearest_builds_listed_would_install_on_this_host():
    """'nearest that would install' lists only builds whose pip line installs for the host's
    Python and platform (was: 1.9.0+cu111 for a Mac, 1.10.1+cu124 that was never built)."""
    mac = check_line(install_line.parse("pip install torch==1.9.0+cu130"), {}, "3.10", "macos")
    assert mac.outcome == FAIL and not any("+cu" in n for n in mac.nearest)
    wheel = install_line.parse(
        f"pip install {CU}/cu124/torch-1.10.1%2Bcu124-cp310-cp310-linux_x86_64.whl"
    )
    old_python = check_line(wheel, {}, "3.6", "linux")
    assert "1.10.1+cu124" not in old_python.nearest and not (old_python.fix or "").endswith(".whl")


def test_a_line_that_works_runs_on_this_hosts_gpu(tmp_path, capsys):
    """An unpublished build's nearest one may not run here: the line given is one whose build
    runs (this host's driver and GPU)."""
    fp = fingerprint(
        tmp_path, driver="570.133.07", gpu="NVIDIA GeForce RTX 5090", capability="12.0"
    )
    code, out, _ = run_check(
        capsys, f"pip install torch==2.13.0 --index-url {CU}/cu124", "--fingerprint", str(fp)
    )
    assert code == 1 and "with torch 2.13.0+cu126: no kernel image for GPU 0" in out
    # 2.13.0's cu129 build (sm_75-sm_120, CUDA 12.9: driver >= 525) runs on sm_120 with driver
    # 570; its cu130/cu132 builds need R580 (torch 2.13.0 PYTORCH_RELEASES_CODE_CC lists 12.9).
    assert f"the line that works: pip install torch==2.13.0 --index-url {CU}/cu129" in out
    old = fingerprint(tmp_path, driver="470.57.02", gpu="NVIDIA GeForce RTX 3090", capability="8.6")
    code, out, _ = run_check(
        capsys, f"pip install torch==2.3.0 --index-url {CU}/cu126", "--fingerprint", str(old)
    )
    assert (
        code == 1 and f"the line that works: pip install torch==2.3.0 --index-url {CU}/cu118" in out
    )


def test_this_host_runs_lists_only_builds_for_its_python(tmp_path, capsys):
    """An RTX 5090 needs a cu128 build (2.7 or newer): none has a Python 3.8 wheel, so none is
    offered to a Python 3.8 environment."""
    fp = fingerprint(
        tmp_path, driver="570.133.07", gpu="NVIDIA GeForce RTX 5090", capability="12.0"
    )
    code, out, _ = run_check(
        capsys, "torch==2.1.2+cu118", "--fingerprint", str(fp), "--python-version", "3.8"
    )
    assert code == 1 and "this host runs" not in out
    code, out, _ = run_check(
        capsys, "torch==2.1.2+cu118", "--fingerprint", str(fp), "--python-version", "3.10"
    )
    assert code == 1 and "this host runs: torch 2.7.1+cu128" in out


def test_a_conda_build_the_driver_cannot_run_points_at_one_it_can():
    """pytorch#28321: pytorch 1.3.0 cuda10.1 on driver 410.104 (CUDA 10.1 needs 418.39); the
    channel's CUDA 10.0 build of 1.3.0 runs on 410 (>= 410.48)."""
    t4 = {
        "host.gpu.0.vendor": "nvidia",
        "host.gpu.0.name": "Tesla T4",
        "host.gpu.0.compute_capability": "7.5",
        "host.driver.nvidia": "410.104",
    }
    line = install_line.parse("conda install pytorch=1.3.0 torchvision cudatoolkit=10.1 -c pytorch")
    result = check_line(line, t4, "3.7", "linux")
    assert result.outcome == FAIL and [r.check for r in result.prediction.deciding] == ["driver"]
    assert result.fix == "conda install pytorch==1.3.0 cudatoolkit=10.0 -c pytorch"
    cuda11 = install_line.parse(
        "conda install pytorch=1.13.1 pytorch-cuda=11.7 -c pytorch -c nvidia"
    )
    assert (
        check_line(cuda11, t4, "3.7", "linux").fix
        == "conda install pytorch==1.13.1 cpuonly -c pytorch"
    )


def test_a_python_without_the_pinned_release_gets_the_nearest_release_with_its_closest_cuda():
    """AUTOMATIC1111/stable-diffusion-webui#5535: 1.12.1+cu113 on Python 3.11 (Windows); the
    nearest release with a cp311 wheel, 2.0.0, has no cu113 build: its closest, cu117."""
    line = install_line.parse(
        "python.exe -m pip install torch==1.12.1+cu113 torchvision==0.13.1+cu113 "
        f"--extra-index-url {CU}/cu113"
    )
    result = check_line(line, {}, "3.11", "windows")
    assert result.outcome == FAIL and result.nearest == ("2.0.0",)
    assert result.fix == f"pip install torch==2.0.0 torchvision==0.15.1 --index-url {CU}/cu117"
