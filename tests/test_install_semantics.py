"""``repro check`` semantics of issue 30 item 4, each with install lines people really ran (the
train half of the install-line corpus or other public material, never the test half), on the day
and host their thread gives:

- ``uv add`` locks for every platform the project declares, ``uv pip install`` for this one;
- an index or ``-f`` page the facts do not cover answers ``unknown``, never another index's build;
- conda's ``pytorch-nightly`` channel (and the pre-1.0 ``pytorch-nightly`` package);
- ``--machine aarch64``: PyPI's CPU-only aarch64 torch, download.pytorch.org's sbsa CUDA builds,
  NVIDIA's Jetson wheels, no Windows on Arm wheels;
- ``--as-of``: the build an unpinned line really got that day, and that build's driver floor;
- round two (train half): conda's missing Python 3.11 builds and cudatoolkit channels, ``-f`` at
  an index root, download.pytorch.org's XPU index and Intel's own pages, a PyTorch-labelled pin
  beside unknown indexes, NVIDIA's JetPack 5 wheel folder;
- round five (studied files and public sources): a 32-bit interpreter (``--python-bits 32``), the
  unlabelled Windows wheels of the ``-f`` page before 1.7, the Windows driver floor for a line
  judged on Windows, a pin that was never released.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from benchmarks.install_corpus import host_properties
from repro.cli import main as cli_main
from repro.compat import install_line
from repro.compat.install_check import check_line
from repro.compat.install_result import host_of
from repro.compat.results import FAIL, PASS, UNKNOWN
from repro.errors import ConfigError

CU = "https://download.pytorch.org/whl"


def judge(text: str, day: str | None, **host):
    """The answer for ``text`` on the host of ``host`` (corpus host fields) on ``day``."""
    return check_line(
        install_line.parse(text),
        host_properties(host),
        host["python"],
        host["platform"],
        machine=host.get("arch"),
        as_of=date.fromisoformat(day) if day else None,
        bits=int(host.get("bits") or 64),
    )


def checks(result, verdict: str) -> set[str]:
    return {r.check for r in result.prediction.reasons if r.verdict == verdict}


def text_of(result) -> str:
    return "\n".join(r.line() for r in result.prediction.reasons)


# ------------------------------------------------------------------------------------------
# uv add vs uv pip install


def test_uv_add_locks_the_newest_torch_and_fails_where_it_has_no_wheel():
    # https://github.com/astral-sh/uv/issues/8358 (2024-10-19, Intel Mac, CPython 3.9.12):
    # "error: Distribution `torch==2.5.0 @ registry+https://pypi.org/simple` can't be installed
    # because it doesn't have a source distribution or wheel for the current platform".
    mac = {"python": "3.9", "platform": "macos", "arch": "x86_64"}
    added = judge("uv add torch", "2024-10-19", **mac)
    assert added.outcome == FAIL and "platform" in checks(added, FAIL)
    assert "torch 2.5.0 from PyPI" in text_of(added) and "universal" in text_of(added)
    assert added.fix == 'uv add "torch==2.2.2"'  # the last macOS x86_64 release
    # uv pip install resolves for this platform only: PyPI's 2.2.2 (astral-sh/uv#10085's
    # "but ... uv pip install torch works").
    pip = judge("uv pip install torch", "2024-10-19", **mac)
    assert pip.outcome == PASS and pip.torch == "2.2.2"


def test_uv_add_takes_the_local_build_another_platform_has():
    # https://github.com/astral-sh/uv/issues/5182 (2024-07-18, macOS ARM, Python 3.10): uv add
    # locks torch==2.3.1+cpu, which has no macOS wheel; uv pip install gets the plain 2.3.1.
    mac = {"python": "3.10", "platform": "macos", "arch": "arm64"}
    index = f'--extra-index-url="{CU}/cpu"'
    added = judge(f"uv add {index} -- torch", "2024-07-18", **mac)
    assert added.outcome == FAIL and "torch 2.3.1+cpu" in text_of(added)
    pip = judge(f"uv pip install {index} -- torch", "2024-07-18", **mac)
    assert pip.outcome == PASS and pip.torch == "2.3.1"


def test_uv_add_on_linux_installs_what_it_locks():
    # https://github.com/astral-sh/uv/issues/7202 (2024-10-30): "I actually can get Pytorch (with
    # the CUDA 12.4 runtime) working with just uv add torch torchvision torchaudio" on a Tesla T4.
    t4 = {"python": "3.12", "platform": "linux", "gpu": "Tesla T4", "capability": "7.5"}
    result = judge("uv add torch torchvision torchaudio", "2024-10-30", driver="550.90.07", **t4)
    assert result.outcome == PASS and result.torch == "2.5.1" and result.runtime == "cu124"


def test_uv_add_with_a_command_line_pytorch_index_fails_off_linux():
    # https://github.com/astral-sh/uv/issues/11532 (2025-02-15, Windows 11, CPython 3.10):
    # markupsafe==3.0.2 @ .../whl/cu126 "can't be installed"; the index is not explicit.
    line = f"uv add torch --index {CU}/cu126"
    windows = judge(line, "2025-02-15", python="3.10", platform="windows")
    assert windows.outcome == FAIL and "markupsafe" in text_of(windows)
    linux = judge(line, "2025-02-15", python="3.10", platform="linux")
    assert linux.outcome == PASS and linux.torch == "2.6.0+cu126"


# ------------------------------------------------------------------------------------------
# Indexes and -f pages the facts do not cover


def test_an_index_url_the_facts_do_not_know_answers_unknown():
    # https://github.com/ROCm/TheRock/pull/848 (2025-06-16): TheRock's gfx110X wheel index.
    index = "https://d2awnip2yjpvqn.cloudfront.net/v2/gfx110X-dgpu/"
    result = judge(
        f"python -m pip install --index-url {index} torch",
        "2025-06-16",
        python="3.12",
        platform="linux",
    )
    assert result.outcome == UNKNOWN
    assert f"the facts do not cover {index}: --index-url replaces PyPI" in text_of(result)
    assert result.torch is None and result.runtime is None  # never PyPI's (or another) build


def test_an_extra_index_the_facts_do_not_know_answers_unknown():
    # intel/intel-extension-for-pytorch#752 (train half): pip looked in PyPI and Intel's XPU
    # index for torch==2.5.1.post0+xpu.
    index = "https://pytorch-extension.intel.com/release-whl/stable/xpu/cn/"
    result = judge(
        f"pip install torch==2.5.1.post0+xpu --extra-index-url {index}",
        "2024-12-19",
        python="3.10",
        platform="linux",
    )
    assert result.outcome == UNKNOWN and f"the facts do not cover {index}" in text_of(result)


def test_a_find_links_page_the_facts_do_not_know_is_never_credited_with_a_build():
    # AMD's Radeon wheel pages (unslothai/unsloth#4770: uv pip install --find-links
    # https://repo.radeon.com/rocm/manylinux/rocm-rel-X.Y.Z/; shitagaki-lab/see-through#30 used
    # rocm-rel-7.2.1 and got torch 2.9.1+rocm7.2.1): not PyPI's CUDA build, not a guess.
    page = "https://repo.radeon.com/rocm/manylinux/rocm-rel-7.2.1/"
    host = {
        "python": "3.12",
        "platform": "linux",
        "gpu": "AMD Radeon AI PRO R9700",
        "gpu_vendor": "amd",
        "gfx": "gfx1201",
    }
    result = judge(f"uv pip install torch --find-links {page}", "2026-06-30", **host)
    assert result.outcome == UNKNOWN and result.torch is None
    assert f"the facts do not cover {page}" in text_of(result)
    # A PyPI mirror is PyPI (compat-extra pypi_hosts): judged like PyPI.
    mirror = judge(
        "pip install torch -i https://pypi.tuna.tsinghua.edu.cn/simple",
        "2025-06-16",
        python="3.12",
        platform="linux",
    )
    assert mirror.outcome == PASS and mirror.torch == "2.7.1"


# ------------------------------------------------------------------------------------------
# conda's nightly channel


def test_conda_nightly_channel_builds_the_next_line_for_its_cuda_versions():
    # https://github.com/pytorch/pytorch/issues/91009 (2022-12-16): pytorch-cuda=11.6 from
    # pytorch-nightly installed pytorch-2.0.0.dev20221216-py3.8_cpu_0.
    line = "conda install -y pytorch torchvision torchaudio pytorch-cuda=11.6 -c pytorch-nightly -c nvidia"
    result = judge(line, "2022-12-16", python="3.8", platform="linux")
    assert result.outcome == FAIL and "accelerator" in checks(result, FAIL)
    assert "2.0 nightlies for CUDA 11.7, 11.8, not 11.6" in text_of(result)
    assert result.summary.startswith("installs a CPU-only build")
    # The nightly command of pytorch/pytorch#65338's reply (2021-09-20): CUDA 11.1 is built.
    works = (
        "conda install pytorch torchvision torchaudio cudatoolkit=11.1 -c pytorch-nightly -c nvidia"
    )
    nightly = judge(works, "2021-09-20", python="3.9", platform="linux")
    assert (nightly.torch, nightly.runtime) == ("1.10 nightly", "cu111")
    # Its torchvision/torchaudio nightlies of that day are not in the facts (conda_coverage,
    # round ten): unknown; pytorch alone from the channel is judged.
    assert nightly.outcome == UNKNOWN and checks(nightly, UNKNOWN) == {"companion"}
    alone = judge(works.replace(" torchvision torchaudio", ""), "2021-09-20", python="3.9",
                  platform="linux")  # fmt: skip
    assert alone.outcome == PASS and alone.runtime == "cu111", text_of(alone)
    # The channel's nightlies ended with its deprecation (pytorch/pytorch#138506).
    today = judge(works, None, python="3.12", platform="linux")
    assert today.outcome == FAIL and "stopped" in text_of(today)


def test_the_pre_1_0_pytorch_nightly_package_is_not_on_the_default_channels():
    # https://github.com/facebookresearch/maskrcnn-benchmark/issues/1317 (2021-08-02):
    # PackagesNotFoundError: - pytorch-nightly (current channels: repo.anaconda.com only).
    line = "conda install pytorch-nightly cudatoolkit=${CUDA}   && conda clean -ya"
    result = judge(line, "2021-08-02", python="3.6", platform="linux")
    assert result.outcome == FAIL and "install" in checks(result, FAIL)
    assert "only on the pytorch channel" in text_of(result)


def test_conda_pytorch_channel_breaks_at_import_with_mkl_2024_1():
    # https://github.com/pytorch/pytorch/issues/139875 (2024-11-06, `import torch` failed after a
    # clean install) and #123097 (mkl 2024.1 dropped iJIT_NotifyEvent); the fix people posted:
    # "conda install mkl==2024.0" (Zhen-Dong/Magic-Me#15).
    line = (
        "conda create -n py312 python=3.12 pytorch torchvision torchaudio pytorch-cuda=12.4 "
        "-c pytorch -c nvidia -y"
    )
    host = {"python": "3.12", "platform": "linux", "gpu": "Tesla T4", "capability": "7.5"}
    broken = judge(line, "2024-11-06", driver="550.90.12", **host)
    assert broken.outcome == FAIL and "iJIT_NotifyEvent" in text_of(broken)
    pinned = judge(line.replace(" -y", " mkl==2024.0 -y"), "2024-11-06", driver="550.90.12", **host)
    assert pinned.outcome == PASS
    before = judge(line.replace("3.12", "3.11"), "2024-03-01", python="3.11", platform="linux")
    assert "iJIT_NotifyEvent" not in text_of(before)  # before mkl 2024.1 reached the channels


def test_the_mkl_break_follows_the_releases_with_the_itt_api():
    # The ITT API that references iJIT_NotifyEvent came with 1.13 (pytorch/tutorials#2072:
    # "PyTorch 1.13 or later"); #123097's oldest named release is 2.0.1 (2024-04-05 comment).
    host = {"python": "3.8", "platform": "linux"}
    old = judge("conda install pytorch==1.12.1 cpuonly -c pytorch", "2024-11-06", **host)
    assert old.outcome == PASS and "iJIT_NotifyEvent" not in text_of(old)
    between = judge("conda install pytorch==1.13.1 cpuonly -c pytorch", "2024-11-06", **host)
    assert between.outcome == UNKNOWN and "oldest release reported broken is 2.0.1" in text_of(
        between
    )
    reported = judge("conda install pytorch==2.0.1 cpuonly -c pytorch", "2024-11-06", **host)
    assert reported.outcome == FAIL and "iJIT_NotifyEvent" in text_of(reported)


def test_conda_on_linux_aarch64_has_no_old_pytorch_channel_builds():
    # https://github.com/mli0603/stereo-transformer/issues/32 (2021-08-09, Jetson Xavier NX):
    # PackagesNotFoundError for pytorch==1.5.0 on conda.anaconda.org/pytorch/linux-aarch64.
    host = {"python": "3.6", "platform": "linux", "arch": "aarch64"}
    old = judge("conda install pytorch==1.5.0 cpuonly -c pytorch", "2021-08-09", **host)
    assert old.outcome == FAIL and checks(old, FAIL) == {"platform"}
    newer = judge(
        "conda install pytorch cpuonly -c pytorch",
        "2024-06-01",
        python="3.10",
        platform="linux",
        arch="aarch64",
    )
    assert newer.outcome == UNKNOWN and "after 1.5.0 is not in the facts" in text_of(newer)


def test_a_patch_release_whose_builds_were_not_read_says_so():
    # pytorch/test-infra's release matrix at 2.12.1's go-live (087680185) lists 2.12.0's CUDA and
    # ROCm versions; 2.14.1 (2026-09-30) is after the snapshot, so its cu126 build is an inference.
    host = {"python": "3.12", "platform": "linux"}
    read = judge(f"pip install torch==2.12.1 --index-url {CU}/cu126", None, **host)
    assert read.outcome == PASS and not read.prediction.unverified
    unread = judge(f"pip install torch==2.14.1 --index-url {CU}/cu126", None, **host)
    assert unread.outcome == PASS and unread.prediction.unverified


def test_only_the_pypi_path_of_a_mirror_host_is_pypi():
    # mirrors.aliyun.com serves PyPI under /pypi (jiangyoupai.com's mirror list) and other things
    # beside it; pypi.python.org is not in the facts' list any more.
    from repro.compat import sources
    from repro.compat.facts import extra_facts

    assert sources.index_kind("https://mirrors.aliyun.com/pypi/simple/", extra_facts()) == "pypi"
    assert sources.index_kind("https://mirrors.aliyun.com/anaconda/", extra_facts()) == "unknown"
    assert sources.index_kind("https://pypi.tuna.tsinghua.edu.cn/simple", extra_facts()) == "pypi"


# ------------------------------------------------------------------------------------------
# The CPU architecture


def test_pypi_aarch64_torch_is_a_cpu_build_and_the_cu128_index_is_not():
    # https://github.com/pytorch/pytorch/issues/160162 (2025-08-08): "until pytorch 2.8, the pypi
    # wheel only has CPU version pytorch on aarch64 ... A workaround is to use pip install
    # torch==2.8 --index-url https://download.pytorch.org/whl/cu128".
    gh200 = {
        "python": "3.12",
        "platform": "linux",
        "arch": "aarch64",
        "gpu": "NVIDIA GH200",
        "capability": "9.0",
    }
    pypi = judge("pip install torch", "2025-08-08", driver="570.133.20", **gh200)
    assert pypi.outcome == FAIL and "accelerator" in checks(pypi, FAIL)
    assert (pypi.torch, pypi.runtime) == ("2.8.0", "cpu")
    assert pypi.fix == f"pip install torch==2.8.0 --index-url {CU}/cu129"
    index = judge(
        f"pip install torch==2.8 --index-url {CU}/cu128", "2025-08-08", driver="570.133.20", **gh200
    )
    assert index.outcome == PASS and index.torch == "2.8.0+cu128"
    assert any("aarch64.arch.cu128" in r.fact for r in index.prediction.reasons)
    # The same line on x86_64 gets PyPI's CUDA build.
    x86 = judge(
        "pip install torch", "2025-08-08", driver="570.133.20", **{**gh200, "arch": "x86_64"}
    )
    assert x86.outcome == PASS and x86.runtime == "cu128"


def test_aarch64_cuda_builds_start_with_2_7():
    # pytorch/pytorch#134790 (2024-08: no CUDA aarch64 wheel in 2.4.0); the pin below is
    # pytorch/pytorch#71473's kind (a +cuXYZ build on an aarch64 host).
    arm = {"python": "3.12", "platform": "linux", "arch": "aarch64"}
    result = judge(f"pip install torch==2.5.1+cu124 --index-url {CU}/cu124", None, **arm)
    assert result.outcome == FAIL and "platform" in checks(result, FAIL)
    assert "start with 2.7" in text_of(result)


def test_jetson_gets_cpu_from_pypi_and_no_kernels_from_the_sbsa_builds():
    # https://github.com/dusty-nv/jetson-inference/issues/1932 (2025-03-20, JetPack 5.1.2,
    # Python 3.10.16): pip3 install torch torchvision torchaudio -> is_available() False.
    orin = {
        "python": "3.10",
        "platform": "linux",
        "arch": "aarch64",
        "gpu": "NVIDIA Jetson AGX Orin",
        "capability": "8.7",
    }
    pypi = judge("pip3 install torch torchvision torchaudio", "2025-03-20", **orin)
    assert pypi.outcome == FAIL and pypi.runtime == "cpu"
    # download.pytorch.org's aarch64 CUDA builds are for sbsa GPUs: sm_80 cubins do not run on
    # Orin's 8.7 (torch's DEVICE_REQUIREMENT), so nothing runs there.
    sbsa = judge(f"pip install torch==2.8 --index-url {CU}/cu128", "2025-08-08", **orin)
    assert sbsa.outcome == FAIL and "kernel_image" in checks(sbsa, FAIL)


def test_nvidia_jetson_wheels_run_on_jetson_only():
    # https://github.com/JuliaPy/CondaPkg.jl/issues/97 (2023-07-07, Xavier, JetPack 5.1.1):
    # NVIDIA's documented wheel "works fine" with the system Python 3.8.
    wheel = (
        "python3 -m pip install --no-cache https://developer.download.nvidia.cn/compute/redist/"
        "jp/v511/pytorch/torch-2.0.0+nv23.05-cp38-cp38-linux_aarch64.whl"
    )
    xavier = {
        "python": "3.8",
        "platform": "linux",
        "arch": "aarch64",
        "gpu": "NVIDIA Jetson AGX Xavier",
        "capability": "7.2",
    }
    result = judge(wheel, "2023-07-07", **xavier)
    assert result.outcome == PASS and result.runtime == "jetson"
    gh200 = {**xavier, "gpu": "NVIDIA GH200", "capability": "9.0"}
    assert "kernel_image" in checks(judge(wheel, "2023-07-07", **gh200), FAIL)
    x86 = judge(wheel, "2023-07-07", python="3.8", platform="linux")
    assert x86.outcome == FAIL and "platform" in checks(x86, FAIL)
    # NVIDIA's Jetson AI Lab index (pypi.jetson-ai-lab.dev, vllm-project/vllm#16502): known
    # platform, unknown versions.
    lab = "pip3 install torch --index-url https://pypi.jetson-ai-lab.dev/jp6/cu126"
    assert judge(lab, "2025-04-12", **{**xavier, "python": "3.10"}).outcome == PASS
    assert judge(lab, "2025-04-12", python="3.10", platform="linux").outcome == FAIL


def test_windows_on_arm_has_no_wheels():
    # https://github.com/pytorch/pytorch/issues/133804 (2024-08, Snapdragon, Python 3.12.5).
    result = judge(
        "pip install torch", "2024-08-19", python="3.12", platform="windows", arch="arm64"
    )
    assert result.outcome == FAIL and "platform" in checks(result, FAIL)
    assert "windows-arm64" in text_of(result)


def test_the_machine_defaults_to_the_fingerprint_and_the_flag_overrides_it():
    props = {"host.python": "3.12.3", "host.arch": "aarch64"}
    assert host_of(props).wheel_platform == "linux-aarch64"
    assert host_of(props, machine="x86_64").wheel_platform == "linux"
    assert (
        host_of({"host.python": "3.12.3", "host.os": "macOS 15", "host.arch": "arm64"}).machine
        == "arm64"
    )
    assert host_of({"host.python": "3.12.3"}).machine == "x86_64"


# ------------------------------------------------------------------------------------------
# The day: the build the line got then, and its driver floor


def test_an_old_unpinned_line_is_judged_by_the_build_it_got_that_day():
    # https://github.com/pytorch/pytorch/issues/37320 (2020-04-26): pip3 install torch gave
    # PyTorch 1.5.0 (CUDA 10.2) on driver 410.104: "Is CUDA available: No".
    p100 = {
        "python": "3.6",
        "platform": "linux",
        "gpu": "Tesla P100-PCIE-16GB",
        "capability": "6.0",
    }
    then = judge("pip3 install torch", "2020-04-26", driver="410.104", **p100)
    assert then.outcome == FAIL and "driver" in checks(then, FAIL)
    assert then.torch == "1.5.0" and then.runtime == "cu102"
    assert "440.33" in text_of(then)  # CUDA 10.2's floor, not today's build's
    # Today the same driver meets a CUDA 13 build with another floor.
    today = judge("pip3 install torch", None, driver="410.104", **{**p100, "python": "3.12"})
    assert today.outcome == FAIL and "440.33" not in text_of(today)
    # https://github.com/pytorch/pytorch/pull/112882 (2023-11-16): python:3.12-slim, "torch 2.1.1
    # (released yesterday) ... (from versions: none)".
    slim = judge("pip install torch", "2023-11-16", python="3.12", platform="linux")
    assert slim.outcome == FAIL and "python" in checks(slim, FAIL)
    assert "2.1.1" in text_of(slim)


# ------------------------------------------------------------------------------------------
# The command line


def test_cli_machine_and_as_of(tmp_path: Path, capsys):
    fp = tmp_path / "fingerprint.json"
    fp.write_text(
        json.dumps(
            {
                "schema": 1,
                "host": {"os": "Ubuntu 24.04", "python": "3.12.3", "wsl2": False},
                "gpus": [
                    {
                        "index": 0,
                        "vendor": "nvidia",
                        "name": "NVIDIA GH200",
                        "compute_capability": "9.0",
                    }
                ],
                "driver": {"nvidia": "570.133.20"},
            }
        )
    )
    argv = ["check", "pip install torch", "--fingerprint", str(fp), "--machine", "aarch64"]
    code = cli_main.main([*argv, "--as-of", "2025-08-08", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and (data["machine"], data["as_of"]) == ("aarch64", "2025-08-08")
    assert (data["torch"], data["runtime"]) == ("2.8.0", "cpu")
    code = cli_main.main([*argv, "--as-of", "2025-08-08"])
    out = capsys.readouterr().out
    assert "linux-aarch64, as of 2025-08-08" in out and "GPU stays unused" in out
    with pytest.raises(SystemExit) as bad:
        cli_main.main([*argv, "--as-of", "08/08/2025"])
    assert bad.value.code == 2 and "expected a day YYYY-MM-DD" in capsys.readouterr().err


def test_a_pin_released_after_the_day_was_not_served_then():
    # pytorch/pytorch#160162's pin, on a day before 2.8.0 was out (2025-08-06).
    arm = {"python": "3.12", "platform": "linux", "arch": "aarch64"}
    result = judge(f"pip install torch==2.8 --index-url {CU}/cu128", "2025-06-01", **arm)
    assert result.outcome == FAIL and "released on 2025-08-06, after 2025-06-01" in text_of(result)


def test_pypi_builds_of_1_9_to_1_12_are_cuda_10_2():
    # pytorch/pytorch#37320's line and host without a day: Python 3.6's newest torch is 1.10.2,
    # PyPI's CUDA 10.2 build, which driver 410.104 (CUDA 10.0) cannot run (was: unknown runtime).
    p100 = {
        "python": "3.6",
        "platform": "linux",
        "gpu": "Tesla P100-PCIE-16GB",
        "capability": "6.0",
    }
    result = judge("pip3 install torch", None, driver="410.104", **p100)
    assert (result.torch, result.runtime) == ("1.10.2", "cu102")
    assert result.outcome == FAIL and "driver" in checks(result, FAIL)


# ------------------------------------------------------------------------------------------
# Issue 30 round two: rules from the train half and public sources


def test_conda_had_no_python_3_11_builds_through_2_0():
    # https://github.com/lxe/simple-llm-finetuner/pull/9 (2023-03-22): pytorch=1.13.1 on Python
    # 3.11 found no solution; PyTorch 2.0's release notes: no conda Python 3.11 binaries for 2.0.
    line = "conda install -y pytorch=1.13.1 pytorch-cuda=11.7 -c pytorch"
    result = judge(line, "2023-03-22", python="3.11", platform="linux")
    assert result.outcome == FAIL and checks(result, FAIL) == {"python"}
    assert "conda_python_gaps.3.11" in text_of(result)
    assert judge(line, "2023-03-22", python="3.10", platform="linux").outcome == PASS
    # https://github.com/pytorch/pytorch/issues/86566 (2022-11-05): the 2.0 nightlies neither.
    nightly = (
        "conda create -n x -c pytorch-nightly -c defaults -c conda-forge python==3.11.0 pytorch"
    )
    mac = {"python": "3.11", "platform": "macos", "arch": "arm64"}
    assert judge(nightly, "2022-11-05", **mac).outcome == FAIL


def test_cudatoolkit_comes_from_the_channels_that_have_it():
    # https://github.com/pytorch/pytorch/issues/53593 (2021-03-09): cudatoolkit=11.1 with -c
    # pytorch alone: PackagesNotFoundError; the previous-versions page adds -c conda-forge.
    win = {"python": "3.7", "platform": "windows"}
    line = "conda install pytorch torchvision torchaudio cudatoolkit=11.1 -c pytorch"
    result = judge(line, "2021-03-09", **win)
    assert result.outcome == FAIL and "PackagesNotFoundError" in text_of(result)
    assert judge(line + " -c conda-forge", "2021-03-09", **win).outcome == PASS
    # 11.3 is on the default channels.
    ok = "conda install pytorch==1.11.0 cudatoolkit=11.3 -c pytorch"
    assert judge(ok, "2022-04-01", python="3.9", platform="windows").outcome == PASS
    # https://github.com/myshell-ai/OpenVoice/issues/83 (2024-01-07): the nvidia channel's
    # cudatoolkit 11.7 is a Linux package only.
    nvidia = "conda install pytorch==1.13.1 cudatoolkit=11.7 -c pytorch -c nvidia"
    assert judge(nvidia, "2024-01-07", python="3.10", platform="windows").outcome == FAIL
    assert judge(nvidia, "2024-01-07", python="3.10", platform="linux").outcome != FAIL


def test_find_links_at_an_index_root_finds_no_wheels():
    # https://github.com/pytorch/pytorch/issues/114893 (2023-11-30): -f .../nightly/cu121 on
    # Python 3.12: "(from versions: none)"; pip's -f reads archive links only.
    line = "pip3 install --pre torch torchvision -f https://download.pytorch.org/whl/nightly/cu121"
    result = judge(line, "2023-11-30", python="3.12", platform="linux")
    assert result.outcome == FAIL and "index root" in text_of(result)
    as_index = line.replace(" -f ", " --index-url ")
    assert "index root" not in text_of(
        judge(as_index, "2023-11-30", python="3.12", platform="linux")
    )


def test_xpu_index_serves_intel_gpu_builds_on_linux_and_windows_from_2_5():
    linux = {"python": "3.12", "platform": "linux"}
    line = f"pip install torch==2.12 --index-url {CU}/xpu"
    # https://github.com/pytorch/pytorch/issues/185608 (2026-05-29): the release index lost
    # torch's dependency wheels; after the day the reports saw, unknown; before, the build.
    broken = judge(line, "2026-05-29", **linux)
    assert broken.outcome == FAIL and "intel-cmplr-lib-rt" in text_of(broken)
    assert judge(line, "2026-06-10", **linux).outcome == UNKNOWN
    fine = judge(line, "2026-05-20", **linux)
    assert fine.outcome == PASS and (fine.torch, fine.runtime) == ("2.12.0+xpu", "xpu")
    # No macOS wheels; no 2.4 xpu builds; 2.5's wheels needed oneAPI on the system.
    mac = judge(line, "2026-05-20", python="3.12", platform="macos")
    assert mac.outcome == FAIL and "XPU builds are Linux and Windows only" in text_of(mac)
    old = judge(f"pip install torch==2.4.0 --index-url {CU}/xpu", None, **linux)
    assert old.outcome == FAIL
    first = judge(f"pip install torch==2.5.1 --index-url {CU}/xpu", None, **linux)
    assert first.outcome == UNKNOWN and "oneAPI" in text_of(first)


def test_intel_pages_had_no_native_windows_wheels_before_2_0_1():
    # https://github.com/intel/intel-extension-for-pytorch/issues/304 (2023-02-22): "We don't
    # have wheel files for native Windows yet".
    line = (
        "python -m pip install torch==1.13.0a0 torchvision==0.14.1a0 "
        "intel_extension_for_pytorch==1.13.10+xpu -f https://developer.intel.com/ipex-whl-stable-xpu-idp"
    )
    win = judge(line, "2023-02-22", python="3.9", platform="windows")
    assert win.outcome == FAIL and checks(win, FAIL) == {"platform"}
    assert judge(line, "2023-02-22", python="3.9", platform="linux").outcome == UNKNOWN


def test_a_pytorch_labelled_pin_no_python_build_exists_for_fails_beside_unknown_indexes():
    # https://github.com/Verg-Avesta/CounTR/issues/46 (2024-05-22): torch==1.13.1+cu116 on
    # Windows Python 3.11 with pypi.ngc.nvidia.com among the indexes.
    line = (
        "pip install torch==1.13.1+cu116 --extra-index-url https://pypi.ngc.nvidia.com "
        f"--extra-index-url {CU}/cu116"
    )
    result = judge(line, "2024-05-22", python="3.11", platform="windows")
    assert result.outcome == FAIL and checks(result, FAIL) == {"python"}
    # For a Python PyTorch built it for, an unknown index keeps the answer unknown; NVIDIA's
    # NGC index serves no torch (no_torch_hosts), so beside it the cu116 build installs.
    other = line.replace("https://pypi.ngc.nvidia.com", "https://pypi.example.org/simple")
    assert judge(other, "2024-05-22", python="3.10", platform="windows").outcome == UNKNOWN
    assert judge(line, "2024-05-22", python="3.10", platform="windows").outcome == PASS


def test_nvidia_jetpack_5_folder_has_python_3_8_wheels_only():
    # https://github.com/pinokiocomputer/pinokio/issues/1027 (2025-12-31): HTTP 404.
    orin = {
        "python": "3.10",
        "platform": "linux",
        "arch": "aarch64",
        "gpu": "NVIDIA Jetson AGX Orin",
        "capability": "8.7",
    }
    url = "https://developer.download.nvidia.com/compute/redist/jp/v512/pytorch/torch-2.1.0a0+41361538.nv23.06-cp310-cp310-linux_aarch64.whl"
    result = judge(f"pip install {url}", "2025-12-31", **orin)
    assert result.outcome == FAIL and "HTTP 404" in text_of(result)
    cp38 = url.replace("cp310-cp310", "cp38-cp38")
    assert judge(f"pip install {cp38}", "2025-12-31", **{**orin, "python": "3.8"}).outcome != FAIL


# ------------------------------------------------------------------------------------------
# Round three (issue 30; rules from the train half and the first two test files, now studied)


def test_torch_1_3_from_pypi_is_the_cuda_10_1_build_and_needs_driver_418():
    # https://github.com/pytorch/pytorch/issues/30071 (2019-11-19, Python 3.6, driver 410.48):
    # `pip install torch` got 1.3.1 and "The NVIDIA driver on your system is too old". 1.3.x is
    # built with CUDA 10.1 under the plain version (pytorch/pytorch#30631).
    result = judge("pip install torch", "2019-11-19", python="3.6", platform="linux",
                   gpu="NVIDIA GPU", driver="410.48")  # fmt: skip
    assert result.outcome == FAIL and "driver" in checks(result, FAIL)
    assert "cu101" in text_of(result) and "418.39" in text_of(result)
    # The same line on a 418 driver runs.
    ok = judge("pip install torch", "2019-11-19", python="3.6", platform="linux",
               gpu="NVIDIA GPU", driver="418.87")  # fmt: skip
    assert ok.outcome == PASS


@pytest.mark.parametrize(
    ("line", "day"),
    [
        # https://github.com/pytorch/pytorch/issues/46794 (2020-10-24, RTX 3090, driver
        # 455.23.04): "conda install pytorch torchvision cudatoolkit=11 -c pytorch-nightly",
        # "I'm up and running now".
        ("conda install pytorch torchvision cudatoolkit=11 -c pytorch-nightly", "2020-10-24"),
        # The stable channel with the same fuzzy spec (it used to raise IndexError).
        ("conda install pytorch torchvision cudatoolkit=11 -c pytorch", "2021-01-10"),
    ],
    ids=["nightly", "stable"],
)
def test_conda_cudatoolkit_without_a_minor_is_a_fuzzy_match(line, day):
    # conda's package match specifications: "=11" matches 11.*, so the solver takes an 11.x
    # build; it is not "no CUDA 11 build, CPU instead".
    result = judge(line, day, python="3.8", platform="linux", gpu="GeForce RTX 3090",
                   capability="8.6", driver="455.23.04")  # fmt: skip
    assert "built for CUDA 11." in text_of(result) and not checks(result, FAIL), text_of(result)
    # The nightly channel's torchvision of that day is not in the facts (conda_coverage, round
    # ten): that line is unknown although #46794 ran; the stable channel's is judged.
    nightly = "pytorch-nightly" in line
    assert result.outcome == (UNKNOWN if nightly else PASS), text_of(result)
    if nightly:
        assert checks(result, UNKNOWN) == {"companion"}, text_of(result)


# ------------------------------------------------------------------------------------------
# Round four (issue 30; rules from the studied test-half-3.yaml and public sources)


@pytest.mark.parametrize(
    ("line", "day", "host"),
    [
        # https://github.com/Gouryella/ChatTTS-webui/issues/4 (2024-06-02, macOS 14.5, M2):
        # "PackagesNotFoundError: ... - pytorch-cuda=12.1*".
        (
            "conda install pytorch==2.2.2 torchvision==0.17.2 torchaudio==2.2.2 pytorch-cuda=12.1 "
            "-c pytorch -c nvidia",
            "2024-06-02",
            {"python": "3.10", "platform": "macos", "arch": "arm64"},
        ),
        # https://github.com/openai/jukebox/issues/8 (2020-04-30, osx-64 channels pytorch, main,
        # r, conda-forge): "PackagesNotFoundError: ... - cudatoolkit=10.0".
        (
            "conda install pytorch=1.4 torchvision=0.5 cudatoolkit=10.0 -c pytorch",
            "2020-04-30",
            {"python": "3.7", "platform": "macos"},
        ),
        # https://github.com/thuiar/TEXTOIR/issues/47 (2023-07-31, osx-64): cudatoolkit=11.0
        # is not available from pytorch, conda-forge, main or r.
        (
            "conda install pytorch torchvision torchaudio cudatoolkit=11.0 -c pytorch -c conda-forge",
            "2023-07-31",
            {"python": "3.9", "platform": "macos"},
        ),
        # https://github.com/HeliXonProtein/binding-ddg-predictor/issues/11 (2024-06-06, an M2,
        # osx-arm64): "PackagesNotFoundError: ... - cudatoolkit=11.3*".
        (
            "conda install pytorch=1.10.2 cudatoolkit=11.3 -c pytorch -y",
            "2024-06-06",
            {"python": "3.8", "platform": "macos", "arch": "arm64"},
        ),
    ],
    ids=["pytorch-cuda-m2", "cudatoolkit-10-0-osx-64", "cudatoolkit-11-0-osx-64", "cudatoolkit-m2"],
)
def test_conda_cuda_toolkit_packages_have_no_macos_build(line, day, host):
    result = judge(line, day, **host)
    assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
    assert "PackagesNotFoundError" in text_of(result)


def test_a_channel_not_read_may_have_a_macos_cudatoolkit():
    # openai/jukebox#8: a reply found a cudatoolkit 10.0 for osx-64 on the numba channel ("that
    # worked"): with a channel the facts did not read, the platform rule says nothing.
    line = "conda install pytorch=1.4 torchvision=0.5 cudatoolkit=10.0 -c pytorch -c numba"
    result = judge(line, "2020-04-30", python="3.7", platform="macos")
    assert "platform" not in checks(result, FAIL), text_of(result)
    # The line without the CUDA package is judged as before (the CPU build).
    plain = judge("conda install pytorch=1.4 torchvision=0.5 -c pytorch", "2020-04-30",
                  python="3.7", platform="macos")  # fmt: skip
    assert plain.outcome == PASS, text_of(plain)


def test_the_pytorch_channel_built_osx_arm64_from_1_12():
    # https://github.com/conda-forge/miniforge/issues/80 (2020-12-12, an M1): "conda install
    # -c pytorch pytorch" -> PackagesNotFoundError; rgommers: "There aren't any released
    # pytorch packages for osx-arm64 yet".
    m1 = {"python": "3.8", "platform": "macos", "arch": "arm64"}
    early = judge("conda install -c pytorch pytorch", "2020-12-12", **m1)
    assert early.outcome == FAIL and checks(early, FAIL) == {"platform"}, text_of(early)
    # https://github.com/conda-forge/miniforge/issues/101 (2021-01-17): conda-forge and
    # anaconda's main had none either.
    defaults = judge("conda install pytorch torchvision", "2021-01-17", **m1)
    assert defaults.outcome == FAIL and checks(defaults, FAIL) == {"platform"}, text_of(defaults)
    # https://github.com/pytorch/pytorch/issues/82428 (2022-07-28): the 1.12 osx-arm64 build
    # installs from the pytorch channel (ContinuumIO/anaconda-issues#13006: the files are there).
    later = judge("conda install pytorch -c pytorch", "2022-07-28", **m1)
    assert later.outcome == PASS and "pytorch 1.12.0" in text_of(later), text_of(later)
    # #82428's own line names torchvision and torchaudio and installed: judged like pytorch alone
    # (round thirteen dropped conda_coverage's osx-arm64 companion unknown; pytorch/pytorch#82483
    # got PackagesNotFoundError for torchaudio the next day, a day the facts do not list).
    both = judge("conda install pytorch torchvision torchaudio -c pytorch", "2022-07-28", **m1)
    assert both.outcome == PASS and "pytorch 1.12.0" in text_of(both), text_of(both)
    # A pin below 1.12 after the default channels got osx-arm64 builds (#82428 shows anaconda's
    # main with pytorch-1.10.2 cpu): whether conda finds one there is not in the facts.
    pinned = judge("conda install pytorch==1.10.2 -c pytorch", "2023-01-10", **m1)
    assert pinned.outcome == UNKNOWN and "default channels" in text_of(pinned)


@pytest.mark.parametrize(
    ("line", "wording"),
    [
        # https://github.com/FlagOpen/FlagData/issues/12 (2024-02-05): "No matching distribution
        # found for pytorch==2.0.1" (requirements.txt had torch==2.1.1 and pytorch==2.0.1).
        ("pip install pytorch==2.0.1", "no matching distribution"),
        # https://github.com/pgmpy/pgmpy/issues/1101 (2019-05-09): `pip install -r
        # requirements.txt` with `pytorch` -> 'Exception: You tried to install "pytorch". The
        # package named for PyTorch is "torch"'.
        ("pytorch", 'You tried to install "pytorch"'),
        # The same line beside a torch requirement still fails on the placeholder.
        ("torch==2.1.1\npytorch==2.0.1", "no matching distribution"),
    ],
    ids=["pinned", "requirements", "beside-torch"],
)
def test_pip_s_pytorch_is_pypi_s_placeholder_not_torch(line, wording):
    result = judge(line, "2024-02-05", python="3.10", platform="linux")
    assert result.outcome == FAIL and checks(result, FAIL) == {"install"}, text_of(result)
    assert wording in text_of(result)
    parsed = install_line.parse(line)
    assert parsed.pypi_pytorch is not None and parsed.pypi_pytorch.name == "pytorch"


def test_conda_s_pytorch_is_still_torch():
    # conda's package of torch is named pytorch (pytorch/pytorch#66785): the PyPI placeholder
    # rule is pip's and uv's only.
    parsed = install_line.parse("conda install pytorch==2.0.1 -c pytorch")
    assert parsed.pypi_pytorch is None and str(parsed.torch.specifier) == "==2.0.1"


# ------------------------------------------------------------------------------------------
# Round five (issue 30; rules from the studied files and public sources)


@pytest.mark.parametrize(
    ("line", "day", "python"),
    [
        # https://github.com/pytorch/pytorch/issues/41005 (2020-07-06, C:\Python\Python37-32):
        # "Could not find a version that satisfies the requirement torch==1.5.1+cpu (from
        # versions: 0.1.2, 0.1.2.post1, 0.1.2.post2)"; peterjc123: use a 64-bit Python.
        (
            "pip install torch==1.5.1+cpu torchvision==0.6.1+cpu -f "
            "https://download.pytorch.org/whl/torch_stable.html",
            "2020-07-06",
            "3.7",
        ),
        # https://github.com/pytorch/pytorch/issues/27815 (2019-10-13, python37-32): the
        # website's "pip3 install torch===1.3.0 torchvision===0.4.1 -f .../torch_stable.html".
        (
            "pip3 install torch===1.3.0 torchvision===0.4.1 -f "
            "https://download.pytorch.org/whl/torch_stable.html",
            "2019-10-13",
            "3.7",
        ),
        # pytorch/pytorch#39940: "after version 0.1.2, no x86 wheel for windows released", so an
        # unpinned line builds PyPI's 0.1.2.post2 sdist, which raises (a 64-bit Python got PyPI's
        # Windows wheel from 1.7 on); conda has no package.
        ("pip install torch", "2021-01-14", "3.8"),
        ("conda install pytorch torchvision cudatoolkit=10.1 -c pytorch", "2020-06-12", "3.8"),
    ],
    ids=["pytorch-41005", "pytorch-27815", "unpinned", "conda"],
)
def test_a_32_bit_python_gets_no_torch(line, day, python):
    result = judge(line, day, python=python, platform="windows", bits="32")
    assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
    assert "a 32-bit Python (win32)" in text_of(result) and result.host.bits == 32
    # The same line for a 64-bit Python of the same day is judged as before: no platform fail.
    wide = judge(line, day, python=python, platform="windows")
    assert "platform" not in checks(wide, FAIL) and wide.host.bits == 64, text_of(wide)


def test_cli_python_bits(tmp_path: Path, capsys):
    fp = tmp_path / "fingerprint.json"
    fp.write_text(json.dumps({"schema": 1, "host": {"os": "Windows 10", "python": "3.8.3"}}))
    argv = ["check", "pip install torch", "--fingerprint", str(fp), "--python-bits", "32"]
    code = cli_main.main([*argv, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["python_bits"] == 32 and data["outcome"] == FAIL, data
    with pytest.raises(SystemExit) as bad:
        cli_main.main([*argv[:-1], "16"])
    assert bad.value.code == 2 and "--python-bits" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "day", "build"),
    [
        # https://github.com/pytorch/pytorch/issues/31243 (2020-01-03, Windows 10, driver
        # 441.41): "pip3 install torch===1.3.1 torchvision===0.4.2 -f .../torch_stable.html"
        # -> "the cuda is work perfectly fine": === takes the page's unlabelled wheel.
        (
            "pip3 install torch===1.3.1 torchvision===0.4.2 -f "
            "https://download.pytorch.org/whl/torch_stable.html",
            "2020-01-03",
            ("1.3.1", "cu101"),
        ),
        # https://github.com/pytorch/pytorch/issues/54172 (2021-03-17, Windows, Python 3.8):
        # pip's candidates from the page include a bare "1.6.0" beside 1.6.0+cpu and +cu101.
        (
            "pip install torch===1.6.0 -f https://download.pytorch.org/whl/torch_stable.html",
            "2021-03-17",
            ("1.6.0", "cu102"),
        ),
    ],
    ids=["pytorch-31243", "pytorch-54172"],
)
def test_the_find_links_page_served_windows_its_default_build_unlabelled(line, day, build):
    host = {"python": "3.7", "platform": "windows", "gpu": "NVIDIA GPU", "driver": "441.41"}
    result = judge(line, day, **host)
    assert result.outcome == PASS and (result.torch, result.runtime) == build, text_of(result)
    assert "find_links_pages.windows_unlabelled" in text_of(result)


def test_a_line_judged_on_windows_has_the_windows_driver_floor():
    # https://github.com/pytorch/pytorch/issues/27745 (2019-10-11, Windows 10, GTX 1050, driver
    # 398.36): the conda line was judged against CUDA 10.x's Linux floor (418.39); a Windows
    # driver's floor is the windows column (418.96), as for a pip line judged on Windows.
    host = {"python": "3.7", "platform": "windows", "gpu": "GeForce GTX 1050",
            "capability": "6.1", "driver": "398.36"}  # fmt: skip
    conda = judge("conda install pytorch torchvision cudatoolkit=10.1 -c pytorch", "2019-10-11",
                  **host)  # fmt: skip
    assert "418.96, the minimum for CUDA 10.x (windows)" in text_of(conda), text_of(conda)
    # A driver between the two floors: Windows fails, Linux passes (pytorch/pytorch#31243's
    # line, 1.3.1's cu101 build).
    line = "pip install torch===1.3.1 -f https://download.pytorch.org/whl/torch_stable.html"
    between = {**host, "driver": "418.81"}
    on_windows = judge(line, "2020-01-03", **between)
    assert on_windows.outcome == FAIL and checks(on_windows, FAIL) == {"driver"}
    on_linux = judge(line, "2020-01-03", **{**between, "platform": "linux"})
    assert "driver" not in checks(on_linux, FAIL), text_of(on_linux)


def test_a_pin_never_released_fails_even_judged_on_an_old_day():
    # https://github.com/cheniison/e2e-coref-pytorch/issues/1 (2020-10-12): the README's
    # "torch==1.15.0" (a typo for 1.5.0) -> "Could not find a version ... (from versions: 0.1.2,
    # ..., 1.6.0)". On that day 1.15.0 is past the newest release, but the facts know every
    # release after it too and 1.x ended with 1.13.1: not "newer than the facts know".
    result = judge("pip install torch==1.15.0", "2020-10-12", python="3.6", platform="linux")
    assert result.outcome == FAIL and checks(result, FAIL) == {"install"}, text_of(result)
    assert "was never released" in text_of(result) and "1.x ended with 1.13.1" in text_of(result)
    # A pin past every release the facts know is still unknown.
    future = judge("pip install torch==9.1.0", "2020-10-12", python="3.6", platform="linux")
    assert future.outcome == UNKNOWN, text_of(future)


@pytest.mark.parametrize(
    ("line", "day"),
    [
        # https://github.com/elebumm/RedditVideoMakerBot/issues/2117 (2024-08-11, macOS 12.6.3,
        # an Intel Mac, Python 3.10): the whl/test/cpu line "doesn't work again".
        (
            "pip3 install torch==2.3.1 torchvision==0.18.1 torchaudio==2.3.1 "
            f"--index-url {CU}/test/cpu",
            "2024-08-11",
        ),
        # https://github.com/pytorch/pytorch/issues/127870 (2024-06-04, an x86_64 Mac): no
        # torch==2.3.0 on PyPI, "Also no build seems to exist in the index
        # https://download.pytorch.org/whl/torch/".
        (f"pip install torch==2.3.0 --index-url {CU}/cpu", "2024-06-04"),
    ],
    ids=["redditvideomakerbot-2117", "pytorch-127870"],
)
def test_the_indexes_have_no_intel_mac_wheel_pypi_lacks(line, day):
    intel = {"python": "3.10", "platform": "macos"}
    result = judge(line, day, **intel)
    assert result.outcome == FAIL and "no wheel for macos" in text_of(result), text_of(result)
    # Apple silicon has them (PyPI's macosx_11_0_arm64 wheels, the same on the cpu index).
    arm = judge(line, day, **intel, arch="arm64")
    assert arm.outcome == PASS, text_of(arm)


def test_torchvision_came_to_python_3_13_after_torch():
    # https://github.com/pytorch/pytorch/issues/144757 (2025-01-14, Arch Linux, Python 3.13.1):
    # "pip3 install torch torchvision torchaudio" downloads torch-2.5.1-cp313 and then "Could not
    # find a version that satisfies the requirement torchvision (from versions: none)".
    py313 = {"python": "3.13", "platform": "linux"}
    result = judge("pip3 install torch torchvision torchaudio", "2025-01-14", **py313)
    assert result.outcome == FAIL and checks(result, FAIL) == {"companion"}, text_of(result)
    assert "first Python 3.13 wheels are 0.21.0" in text_of(result)
    # After torch 2.6.0 and torchvision 0.21.0 (2025-01-29) the same line installs.
    later = judge("pip3 install torch torchvision torchaudio", "2025-03-01", **py313)
    assert "companion" not in checks(later, FAIL), text_of(later)
    # https://github.com/devnen/Chatterbox-TTS-Server/issues/105 (2026-01-09, Python 3.13): a
    # torchvision pin older than 0.21.0 finds none ("from versions: 0.1.6, 0.2.0, 0.21.0, ...").
    line = f"pip install torch==2.5.1+cu121 torchvision==0.20.1+cu121 --extra-index-url {CU}/cu121"
    pinned = judge(line, "2026-01-09", **py313)
    assert pinned.outcome == FAIL and "torchvision 0.20.1 has no wheel" in text_of(pinned)
    # Python 3.12 has both.
    py312 = judge("pip3 install torch torchvision torchaudio", "2025-01-14", python="3.12",
                  platform="linux")  # fmt: skip
    assert "companion" not in checks(py312, FAIL), text_of(py312)


def test_an_unpinned_torchvision_before_the_yank_is_not_judged():
    # pytorch/vision#5313 (2022-01-29, Python 3.10): pip fell back to torchvision 0.2.2.post3, a
    # pure-Python wheel; before pure_wheels_yanked_by an unpinned torchvision is not failed.
    result = judge("pip install torch==1.13.1 torchvision", "2023-01-04", python="3.11",
                   platform="linux")  # fmt: skip
    assert "companion" not in checks(result, FAIL), text_of(result)
    # A pinned one is: torchvision's cp311 wheels came with 0.15.0 (pytorch/pytorch#91543).
    pinned = judge("pip install torch==1.13.1 torchvision==0.14.1", "2023-01-04",
                   python="3.11", platform="linux")  # fmt: skip
    assert pinned.outcome == FAIL and "first Python 3.11 wheels are 0.15.0" in text_of(pinned)


@pytest.mark.parametrize(
    ("line", "day"),
    [
        # https://github.com/joosthub/pytorch-nlp-tutorial-sf2017/issues/2 (2017-09-13, osx-64):
        # "Package missing in current osx-64 channels: cuda80"; `anaconda search -t conda
        # cuda80` lists soumith/cuda80 for linux-64 only.
        ("conda install pytorch torchvision cuda80 -c soumith", "2017-09-13"),
        # https://github.com/ifding/graph-neural-networks/issues/1 (2018-06-23, osx-64):
        # PackagesNotFoundError: cuda75.
        ("conda install pytorch=0.1.12 cuda75 -c soumith", "2018-06-23"),
        # fastai/fastai_old#48: the pytorch channel's GPU line of 2018 named cuda92.
        ("conda install pytorch torchvision cuda92 -c pytorch", "2018-09-28"),
    ],
    ids=["nlp-tutorial-2", "graph-nn-1", "cuda92"],
)
def test_the_old_cudaxy_packages_have_no_macos_build(line, day):
    result = judge(line, day, python="3.6", platform="macos")
    assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
    assert "has no macOS package" in text_of(result)
    # On Linux the same package is there: not a platform failure.
    linux = judge(line, day, python="3.6", platform="linux")
    assert "platform" not in checks(linux, FAIL), text_of(linux)


@pytest.mark.parametrize(
    ("day", "host"),
    [
        # https://github.com/lllyasviel/stable-diffusion-webui-forge/issues/2601 (2025-03-18,
        # Windows, RTX 5080): "pip3 install --pre torch torchvision torchaudio --index-url
        # https://download.pytorch.org/whl/nightly/cu128" -> "After that it works".
        ("2025-03-18", {"python": "3.10", "platform": "windows"}),
        # https://github.com/pytorch/pytorch/issues/149845 (2025-03-24, Ubuntu, RTX 5090D): the
        # same line, working once the driver was reinstalled.
        ("2025-03-24", {"python": "3.12", "platform": "linux"}),
    ],
    ids=["forge-2601", "pytorch-149845"],
)
def test_a_nightly_index_of_a_runtime_its_line_brings_exists_before_the_release(day, host):
    line = f"pip3 install --pre torch torchvision torchaudio --index-url {CU}/nightly/cu128"
    rtx50 = {**host, "gpu": "NVIDIA GeForce RTX 5080", "capability": "12.0"}
    result = judge(line, day, **rtx50)
    assert result.outcome == PASS and result.runtime == "cu128", text_of(result)
    assert "2.7 nightly (cu128)" in text_of(result)
    # A runtime no release and not the nightly line brought still has no index (cu114).
    gone = judge(f"pip install --pre torch --index-url {CU}/nightly/cu114", day, **rtx50)
    assert "has no https://download.pytorch.org/whl/nightly/cu114 index" in text_of(gone)


def test_the_nvidia_channel_had_no_windows_cudatoolkit_11_1():
    # https://github.com/pytorch/pytorch/issues/58681 (2021-05-20, Windows 10): the website's
    # 1.8.1 command "cudatoolkit=11.1 -c pytorch -c nvidia" -> PackagesNotFoundError; with
    # -c conda-forge instead "results in a successful installation".
    win = {"python": "3.8", "platform": "windows"}
    line = "conda install pytorch torchvision torchaudio cudatoolkit=11.1 -c pytorch -c nvidia"
    result = judge(line, "2021-05-20", **win)
    assert result.outcome == FAIL and "has no win-64 package" in text_of(result), text_of(result)
    forge = judge(line.replace("nvidia", "conda-forge"), "2021-05-20", **win)
    assert forge.outcome == PASS, text_of(forge)
    # On Linux the nvidia channel's 11.1 was there (pytorch/pytorch#65338's nightly command).
    linux = judge(line, "2021-05-20", python="3.8", platform="linux")
    assert "install" not in checks(linux, FAIL), text_of(linux)


def test_conda_s_default_channels_lacked_windows_torchvision_and_macos_pytorch():
    # https://github.com/pytorch/pytorch/issues/37412 (2020-04-29, Windows, no -c): "conda
    # install pytorch torchvision cudatoolkit=10.1" -> PackagesNotFoundError: torchvision (main
    # had a win-64 pytorch, no torchvision); lucidrains/stylegan2-pytorch#155 (2020-10-20) too.
    win = {"python": "3.7", "platform": "windows"}
    line = "conda install pytorch torchvision cudatoolkit=10.1"
    result = judge(line, "2020-04-29", **win)
    assert result.outcome == FAIL and checks(result, FAIL) == {"companion"}, text_of(result)
    assert "PackagesNotFoundError: torchvision" in text_of(result)
    assert judge(line + " -c pytorch", "2020-04-29", **win).outcome != FAIL
    # Without torchvision, or after the last report, the default channels are not judged.
    assert judge("conda install pytorch cudatoolkit=10.1", "2020-04-29", **win).outcome == UNKNOWN
    assert judge(line, "2023-01-10", **win).outcome == UNKNOWN
    # https://github.com/ContinuumIO/anaconda-issues/issues/11426 (2019-11-04, macOS): "pytorch
    # for macOS is not available in the defaults channel".
    mac = judge("conda install pytorch", "2019-11-04", python="3.7", platform="macos")
    assert mac.outcome == FAIL and checks(mac, FAIL) == {"platform"}, text_of(mac)


def test_soumith_s_channel_had_no_windows_packages():
    # https://github.com/joosthub/pytorch-nlp-tutorial-sf2017/issues/2 (2017-09-15, Windows):
    # "Packages missing in current channels: - pytorch" from soumith/win-64 and the default
    # channels; pytorch/pytorch#12210 (2018-09-30): torchvision -c soumith on Windows likewise.
    line = "conda install pytorch torchvision cuda80 -c soumith"
    result = judge(line, "2017-09-15", python="3.6", platform="windows")
    assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
    assert "nor on soumith (no windows packages)" in text_of(result)
    # On Linux soumith's channel had pytorch (and cuda80): not judged a failure.
    linux = judge(line, "2017-09-15", python="3.6", platform="linux")
    assert linux.outcome != FAIL, text_of(linux)


def test_nvidia_s_library_indexes_serve_no_torch():
    # https://github.com/pytorch/pytorch/issues/91543 (2022-12-31, Python 3.11.1): with
    # pypi.ngc.nvidia.com beside PyPI and whl/cu117, "Could not find a version that satisfies
    # the requirement torch (from versions: none)": the NGC index adds no torch (was: unknown).
    line = (
        "pip install torch --extra-index-url https://pypi.ngc.nvidia.com "
        f"--extra-index-url {CU}/cu117"
    )
    result = judge(line, "2022-12-31", python="3.11", platform="windows")
    assert result.outcome == FAIL and checks(result, FAIL) == {"python"}, text_of(result)
    # On Linux PyPI's 1.13.1 had cp311 wheels: it installs, NVIDIA's index or not.
    linux = judge(line, "2022-12-31", python="3.11", platform="linux")
    assert linux.outcome == PASS and linux.torch.startswith("1.13.1"), text_of(linux)
    nvidia = judge("pip install torch --extra-index-url https://pypi.nvidia.com", "2024-06-01",
                   python="3.11", platform="linux")  # fmt: skip
    assert nvidia.outcome == PASS, text_of(nvidia)


@pytest.mark.parametrize(
    ("line", "day", "python"),
    [
        # https://github.com/pytorch/pytorch/issues/20631 (2019-05-17, Windows, Python 3.6):
        # "torch==0.3.1 (from versions: 0.1.2, 0.1.2.post1)": 0.3.1 existed, with no Windows
        # wheel on PyPI (was: "no torch release matches torch==0.3.1").
        ("pip install torch==0.3.1", "2019-05-17", "3.6"),
        # https://github.com/udacity/AIPND-revision/issues/7 (2019-10-23, Windows, Python 3.8).
        ("torch==0.4.0", "2019-10-23", "3.8"),
    ],
    ids=["pytorch-20631", "aipnd-revision-7"],
)
def test_releases_before_1_0_existed_without_windows_wheels_on_pypi(line, day, python):
    result = judge(line, day, python=python, platform="windows")
    assert result.outcome == FAIL and "no torch release matches" not in text_of(result)
    assert "has no wheel for windows" in text_of(result), text_of(result)


# ------------------------------------------------------------------------------------------
# Round six (issue 30; facts as whole families from the studied files and public sources)


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        # https://github.com/pytorch/pytorch/issues/156215 (2025-06-17, Ubuntu 18.04): "ERROR:
        # Could not find a version that satisfies the requirement torch==2.7.0 (from versions:
        # 2.0.0+cu118, ..., 2.6.0+cu118)"; uv: "torch==2.7.0+cu118 has no wheels with a matching
        # platform tag (e.g., `manylinux_2_27_x86_64`)".
        (
            "pip install torch==2.7.0 torchvision --index-url https://download.pytorch.org/whl/cu118",
            "pip install torch==2.6.0 torchvision==0.21.0 --index-url https://download.pytorch.org/whl/cu118",
        ),
        (
            "uv pip install torch==2.7.0 torchvision --index-url https://download.pytorch.org/whl/cu118",
            "uv pip install torch==2.6.0 torchvision==0.21.0 --index-url https://download.pytorch.org/whl/cu118",
        ),
        # astral-sh/uv#14268: PyPI's 2.7.0 "only has wheels for ... manylinux_2_28_aarch64,
        # manylinux_2_28_x86_64, macosx_11_0_arm64, win_amd64".
        ("pip install torch==2.7.0", "pip install torch==2.6.0"),
    ],
    ids=["pytorch-156215-pip", "pytorch-156215-uv", "pypi"],
)
def test_manylinux_2_28_wheels_need_glibc_2_28(line, fix):
    old = judge(line, "2025-06-17", python="3.11", platform="linux", glibc="2.27")
    assert old.outcome == FAIL and checks(old, FAIL) == {"platform"}, text_of(old)
    assert "manylinux_2_28 (glibc >= 2.28)" in text_of(old) and "glibc is 2.27" in text_of(old)
    assert old.fix == fix and old.host.glibc == "2.27"
    # glibc 2.28 (RHEL 8) takes them; a host whose glibc is unknown is judged as before.
    for host in ({"glibc": "2.28"}, {}):
        new = judge(line, "2025-06-17", python="3.11", platform="linux", **host)
        assert "platform" not in checks(new, FAIL), text_of(new)


def test_an_unpinned_line_on_an_old_glibc_gets_the_last_manylinux2014_release():
    """pytorch/pytorch#126551 (raising the minimal glibc to 2.28) and #156215: pip skips the
    manylinux_2_28 wheels and takes the newest release it can install, 2.6.0 (its x86_64 PyPI
    wheels are manylinux1-tagged; which 2.6.0 aarch64/cu126 wheels moved early is not read)."""
    x86 = judge("pip install torch", "2025-06-17", python="3.11", platform="linux", glibc="2.27")
    assert x86.outcome == PASS and x86.torch == "2.6.0", text_of(x86)
    arm = judge(
        "pip install torch", "2025-06-17", python="3.11", platform="linux", arch="aarch64",
        glibc="2.27",
    )  # fmt: skip
    assert arm.outcome == PASS and arm.torch == "2.6.0", text_of(arm)
    # Windows has no glibc: the host's value is not read there.
    assert host_of({"host.glibc": "2.27"}, "3.11", "windows").glibc is None


@pytest.mark.parametrize(
    ("line", "day", "host"),
    [
        # https://github.com/open-mmlab/mmpose/issues/3238 (2025-08-19, Windows, Python 3.8.20):
        # the docs' GPU command brings the CPU build, "it seems the cuda-toolkit is not installed".
        (
            "conda install pytorch torchvision -c pytorch",
            "2025-08-19",
            {"python": "3.8", "platform": "windows", "gpu": "NVIDIA GPU"},
        ),
        # https://github.com/bioimage-io/core-bioimage-io-python/issues/307 (2022-11-03): "conda
        # list: pytorch 1.12.1 py3.9_cpu_0", "Torch not compiled with CUDA enabled"
        (
            "conda install -c pytorch -c conda-forge bioimageio.core pytorch torchvision cudatoolkit",
            "2022-11-03",
            {"python": "3.9", "platform": "linux", "gpu": "NVIDIA GPU"},
        ),
    ],
    ids=["mmpose-3238", "bioimageio-307"],
)
def test_the_pytorch_channel_s_cuda_builds_need_the_nvidia_channel(line, day, host):
    result = judge(line, day, **host)
    assert result.outcome == FAIL and checks(result, FAIL) == {"accelerator"}, text_of(result)
    assert result.runtime == "cpu" and "names no nvidia channel" in text_of(result)
    assert result.fix.endswith("-c pytorch -c nvidia") and "pytorch-cuda=" in result.fix
    # The line that works (pytorch-cuda from -c nvidia) gets a CUDA build on the same host.
    fixed = judge(result.fix, day, **host)
    assert fixed.runtime not in (None, "cpu") and "accelerator" not in checks(fixed, FAIL)


def test_conda_without_the_nvidia_channel_is_judged_as_before_where_the_rule_does_not_reach():
    """Before 1.13 (cudatoolkit from the default channels), with a CUDA asked for, and with
    conda-forge for a release whose pytorch-cuda builds include CUDA 12 (conda-forge has those
    libraries), the rule does not apply."""
    gpu = {"python": "3.10", "platform": "linux", "gpu": "NVIDIA GPU"}
    old = judge("conda install pytorch torchvision -c pytorch", "2022-06-01", **gpu)
    asked = judge("conda install pytorch pytorch-cuda=12.1 -c pytorch", "2024-03-01", **gpu)
    forge = judge("conda install pytorch -c pytorch -c conda-forge", "2024-03-01", **gpu)
    for result in (old, asked, forge):
        assert "names no nvidia channel" not in text_of(result), text_of(result)


def test_pytorch_s_rocm_wheels_see_no_gpu_under_wsl2():
    """https://github.com/ROCm/hip/issues/3710 (2024-12-23, WSL2, AMD Radeon): the rocm6.2 index
    line installs, then torch.cuda.is_available() fails with hipErrorNoDevice; AMD's
    repo.radeon.com wheels with the WSL libhsa-runtime64 run (ROCm/legacy-rocm-build#4473)."""
    line = "pip3 install torch torchvision torchaudio --index-url https://download.pytorch.org/whl/rocm6.2"
    amd = {"python": "3.10", "platform": "linux", "gpu": "AMD Radeon", "gpu_vendor": "amd"}
    wsl = judge(line, "2024-12-23", wsl2="true", **amd)
    assert wsl.outcome == FAIL and checks(wsl, FAIL) == {"accelerator"}, text_of(wsl)
    assert "under WSL2" in text_of(wsl) and "repo.radeon.com" in text_of(wsl)
    native = judge(line, "2024-12-23", **amd)
    assert "accelerator" not in checks(native, FAIL), text_of(native)
    # A CUDA build under WSL2 is judged as before (no ROCm runtime involved).
    cuda = judge("pip install torch", "2024-12-23", wsl2="true", python="3.10", platform="linux")
    assert "under WSL2" not in text_of(cuda)


# ------------------------------------------------------------------------------------------
# Round eight (issue 30; families from the studied files, test-half-7.yaml included, and public
# sources)


@pytest.mark.parametrize(
    ("line", "day", "host"),
    [
        # https://github.com/pytorch/audio/issues/258 (2019-08-28, Windows, Python 3.7): "Could
        # not find a version that satisfies the requirement torchaudio (from versions: none)".
        (
            "pip install torchaudio -f https://download.pytorch.org/whl/torch_stable.html",
            "2019-08-28",
            {"python": "3.7", "platform": "windows"},
        ),
        # https://github.com/pytorch/pytorch/issues/54104 (2021-03-16, AArch64, torch 1.8.0):
        # "pip install torchaudio -f https://download.pytorch.org/whl/cpu/torch_stable.html Fails".
        (
            "pip install torchaudio -f https://download.pytorch.org/whl/cpu/torch_stable.html",
            "2021-03-16",
            {"python": "3.8", "platform": "linux", "arch": "aarch64"},
        ),
        # The same report's expected line, torch beside torchaudio: torch installs, torchaudio not.
        (
            "pip install torch torchvision torchaudio -f https://download.pytorch.org/whl/cpu/torch_stable.html",
            "2021-03-16",
            {"python": "3.8", "platform": "linux", "arch": "aarch64"},
        ),
    ],
    ids=["audio-258-windows", "pytorch-54104-aarch64", "pytorch-54104-with-torch"],
)
def test_torchaudio_had_no_wheel_for_windows_before_0_6_nor_for_aarch64_through_0_12(
    line, day, host
):
    result = judge(line, day, **host)
    assert result.outcome == FAIL and "platform" in checks(result, FAIL), text_of(result)
    assert "torchaudio had no wheel for" in text_of(result)


def test_torchaudio_s_platform_gap_ends_where_the_facts_end():
    """Windows from torchaudio 0.6.0 (pytorch/audio#563: 'As of torchaudio 0.6, torchaudio can be
    installed in windows'); aarch64 after 0.12.0 not read (unknown); today's facts: no gap."""
    line = "pip install torchaudio -f https://download.pytorch.org/whl/torch_stable.html"
    windows = judge(line, "2020-09-17", python="3.8", platform="windows")
    later_arm = judge(
        "pip3 install torchaudio", "2023-06-01", python="3.10", platform="linux", arch="aarch64"
    )
    today = judge("pip3 install torchaudio", None, python="3.9", platform="linux", arch="aarch64")
    for result in (windows, later_arm, today):
        assert "torchaudio had no wheel for" not in text_of(result), text_of(result)
    assert today.outcome == UNKNOWN


@pytest.mark.parametrize(
    ("line", "day"),
    [
        # https://github.com/pytorch/audio/issues/2562 (2022-07-21, Raspberry Pi 4, channels
        # pytorch/linux-aarch64 and conda-forge/linux-aarch64): PackagesNotFoundError: torchaudio
        ("conda install pytorch torchvision torchaudio cpuonly -c pytorch", "2022-07-21"),
        # https://github.com/nadermx/backgroundremover/issues/162 (2024-12-28, linux/arm64 docker,
        # channels pytorch/linux-aarch64 and pkgs/main/linux-aarch64): the same error
        ("conda install pytorch torchvision torchaudio cpuonly -c pytorch", "2024-12-28"),
    ],
    ids=["audio-2562", "backgroundremover-162"],
)
def test_no_conda_channel_read_had_a_linux_aarch64_torchaudio(line, day):
    result = judge(line, day, python="3.10", platform="linux", arch="aarch64")
    assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
    assert "torchaudio has no linux-aarch64 conda package" in text_of(result)
    # conda-forge was read to lack one through 2022-07-29 only: a later line naming it is not
    # judged by this rule; neither is a line without torchaudio.
    forge = judge(
        line + " -c conda-forge", "2024-06-14", python="3.10", platform="linux", arch="aarch64"
    )
    bare = judge(
        "conda install pytorch cpuonly -c pytorch",
        day,
        python="3.10",
        platform="linux",
        arch="aarch64",
    )
    for result in (forge, bare):
        assert "torchaudio has no" not in text_of(result), text_of(result)


def test_a_conda_line_of_a_cuda_toolkit_package_alone_is_judged():
    """https://github.com/YuliangXiu/ECON/issues/92 (2023-09-27): ResolvePackageNotFound:
    pytorch-cuda=11.3, a version pytorch-cuda never had (11.6 ... 12.4); an existing version
    installs no pytorch (unknown); https://github.com/isayevlab/pKa-ANI/issues/3 (2022-07-26,
    macOS): cudatoolkit=11.2 is not available from conda-forge/osx-64."""
    never = judge(
        "conda install pytorch-cuda=11.3 -c nvidia", "2023-09-27", python="3.8", platform="windows"
    )
    assert never.outcome == FAIL and checks(never, FAIL) == {"install"}, text_of(never)
    assert "pytorch-cuda=11.3 was never built" in text_of(never) and "11.8" in text_of(never)
    known = judge(
        "conda install pytorch-cuda=11.8 -c pytorch -c nvidia",
        "2023-09-27",
        python="3.10",
        platform="linux",
    )
    assert known.outcome == UNKNOWN and "no pytorch" in text_of(known), text_of(known)
    mac = judge(
        "conda install -c conda-forge torchani=2.2.0 cudatoolkit=11.2", "2022-07-26",
        python="3.8", platform="macos",
    )  # fmt: skip
    assert mac.outcome == FAIL and checks(mac, FAIL) == {"platform"}, text_of(mac)
    # A conda line of neither torch nor a CUDA toolkit package is still no install line.
    with pytest.raises(ConfigError, match="installs no torch"):
        install_line.parse("conda install -c conda-forge ffmpeg")


def test_amd_s_own_index_had_no_windows_python_3_14_wheels():
    """https://github.com/amd/playbooks/issues/315 (2026-05-28, Windows, Python 3.14): 'from
    versions: none' on repo.amd.com/rocm/whl/gfx1151/; amd/playbooks#428 read the page: Windows
    cp310-cp313, Linux cp310-cp314."""
    line = (
        "python -m pip install --force-reinstall --no-cache-dir --index-url "
        "https://repo.amd.com/rocm/whl/gfx1151/ torch torchvision torchaudio"
    )
    amd = {"gpu": "AMD Radeon 8060S", "gpu_vendor": "amd", "gfx": "gfx1151"}
    py314 = judge(line, "2026-05-28", python="3.14", platform="windows", **amd)
    assert py314.outcome == FAIL and checks(py314, FAIL) == {"python"}, text_of(py314)
    assert "AMD's own wheel index" in text_of(py314)
    # Python 3.13 on Windows, 3.14 on Linux, a day after the read and PyPI beside it: unknown.
    others = [
        judge(line, "2026-05-28", python="3.13", platform="windows", **amd),
        judge(line, "2026-05-28", python="3.14", platform="linux", **amd),
        judge(line, "2026-09-01", python="3.14", platform="windows", **amd),
        judge(
            "pip install torch --extra-index-url https://repo.amd.com/rocm/whl/gfx1151/",
            "2026-05-28", python="3.14", platform="windows", **amd,
        ),
    ]  # fmt: skip
    for result in others:
        assert "AMD's own wheel index" not in text_of(result), text_of(result)


def test_nightlies_after_2_2_have_no_intel_mac_wheels():
    """https://github.com/pytorch/executorch/issues/7772 (2025-01-20, an x86_64 macOS Python):
    the 2.6 nightly pin is not among 'versions: 1.11.0, ..., 2.2.2'; on Apple silicon it is."""
    line = "pip install torch==2.6.0.dev20250104 --extra-index-url https://download.pytorch.org/whl/nightly/cpu"
    intel = judge(line, "2025-01-20", python="3.10", platform="macos")
    assert intel.outcome == FAIL and checks(intel, FAIL) == {"platform"}, text_of(intel)
    assert "no macOS x86_64 wheels" in text_of(intel)
    arm = judge(line, "2025-01-20", python="3.10", platform="macos", arch="arm64")
    assert "platform" not in checks(arm, FAIL), text_of(arm)


@pytest.mark.parametrize(
    ("line", "day", "gfx", "ok"),
    [
        # https://github.com/pytorch/pytorch/issues/96964 (2023-03-16, RX 7900 XTX): rocBLAS
        # "Cannot read ... TensileLibrary.dat": 2.0.0's ROCm wheels were built for
        # gfx900;gfx906;gfx908;gfx90a;gfx1030 (pytorch/builder release/2.0 build_docker.sh).
        (
            "pip install torch==2.0.0 --index-url https://download.pytorch.org/whl/rocm5.4.2",
            "2023-03-16",
            "gfx1100",
            False,
        ),
        (
            "pip install torch==2.0.0 --index-url https://download.pytorch.org/whl/rocm5.4.2",
            "2023-03-16",
            "gfx1030",
            True,
        ),
        # https://github.com/louity/MQGeometry/issues/2 (2024-01-11): "this works with ROCm 5.7 and
        # AMD MI210 GPU" (gfx90a); 2.1 added gfx1100 (release/2.1).
        (
            "pip3 install torch --index-url https://download.pytorch.org/whl/rocm5.6",
            "2024-01-11",
            "gfx90a",
            True,
        ),
        (
            "pip3 install torch --index-url https://download.pytorch.org/whl/rocm5.6",
            "2024-01-11",
            "gfx1100",
            True,
        ),
        # release/2.3: gfx942 only in the ROCm 6.0 build.
        (
            "pip install torch==2.3.0 --index-url https://download.pytorch.org/whl/rocm6.0",
            "2024-05-01",
            "gfx942",
            True,
        ),
    ],
    ids=["2.0-gfx1100", "2.0-gfx1030", "2.1-gfx90a", "2.1-gfx1100", "2.3-rocm6.0-gfx942"],
)
def test_the_rocm_wheels_before_2_4_have_their_builder_gfx_lists(line, day, gfx, ok):
    result = judge(
        line, day, python="3.10", platform="linux", gpu="AMD GPU", gpu_vendor="amd", gfx=gfx
    )
    assert ("gfx" in checks(result, PASS)) is ok and ("gfx" in checks(result, FAIL)) is not ok, (
        text_of(result)
    )
    assert "gfx" not in checks(result, UNKNOWN)


@pytest.mark.parametrize(
    ("line", "day", "when"),
    [
        # https://github.com/conda/conda/issues/11054 (2021-11-20, an M1, channels pytorch,
        # conda-forge and pkgs/main osx-arm64): PackagesNotFoundError: torchaudio
        (
            "conda install pytorch torchvision torchaudio -c pytorch",
            "2021-11-20",
            "through 2021-11-20",
        ),
        # https://github.com/pytorch/pytorch/issues/83384 (soumith, 2022-08-14): "torchaudio isn't
        # published for M1 ARM64 binaries" on the nightly channel
        (
            "conda install pytorch torchvision torchaudio -c pytorch-nightly",
            "2022-08-14",
            "through 2022-08-14",
        ),
    ],
    ids=["conda-11054", "pytorch-83384"],
)
def test_apple_silicon_had_no_conda_torchaudio_on_the_channels_read(line, day, when):
    result = judge(line, day, python="3.8", platform="macos", arch="arm64")
    assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
    assert "torchaudio has no macos-arm64 conda package" in text_of(result) and when in text_of(
        result
    )


def test_the_pytorch_channel_s_1_12_torchaudio_for_apple_silicon_is_not_denied():
    """https://github.com/pytorch/pytorch/issues/82428 (atalman, 2022-07-28): the pytorch channel's
    1.12 plan installs torchaudio on osx-arm64; the facts know no day between, so no fail."""
    line = "conda install pytorch torchvision torchaudio -c pytorch"
    result = judge(line, "2022-07-28", python="3.8", platform="macos", arch="arm64")
    assert "torchaudio has no" not in text_of(result), text_of(result)


def test_numpy_2_beside_a_torch_built_against_numpy_1():
    """https://github.com/securefederatedai/openfederatedlearning/issues/999 (2024-07-09): torch<2.3
    (2.2.2+cpu) with NumPy 2: 'RuntimeError: Numpy is not available'; pytorch/pytorch#107302:
    2.3.0 works with numpy 2.0.0rc1 (Linux); https://github.com/neuromorphs/tonic/issues/317:
    2.3.0 on Windows still fails with NumPy 2."""
    linux = {"python": "3.10", "platform": "linux"}
    old = judge("pip install 'torch<2.3' numpy", "2024-07-09", **linux)
    assert old.outcome == FAIL and checks(old, FAIL) == {"companion"}, text_of(old)
    assert "built against NumPy 1.x" in text_of(old)
    windows = judge(
        "pip install torch==2.3.0 numpy", "2024-07-09", python="3.10", platform="windows"
    )
    assert windows.outcome == FAIL and "on Windows" in text_of(windows), text_of(windows)
    for result in (
        judge("pip install torch==2.3.0 numpy", "2024-07-09", **linux),  # built against 2.0
        judge("pip install 'torch<2.3' 'numpy<2'", "2024-07-09", **linux),  # NumPy 1.26
        judge("pip install 'torch<2.3' numpy", "2024-06-01", **linux),  # before NumPy 2.0.0
        judge("pip install 'torch<2.3' numpy", "2024-07-09", python="3.8", platform="linux"),
        judge("pip install 'torch<2.3'", "2024-07-09", **linux),  # no numpy on the line
    ):
        assert "NumPy 1.x" not in text_of(result), text_of(result)


def test_uv_add_locks_torch_2_5_1_on_python_3_8_by_its_requires_python():
    """https://github.com/astral-sh/uv/issues/14836 (2025-07-23, Python 3.8): `uv add torch` ->
    "Distribution torch==2.5.1 ... can't be installed because it doesn't have a source
    distribution or wheel for the current platform" (its metadata says >=3.8.0, its wheels start
    at cp39); "uv pip install torch" takes 2.4.1. astral-sh/uv#15932 (open 2025-09-18) would fix it."""
    py38 = {"python": "3.8", "platform": "linux"}
    add = judge("uv add torch", "2025-07-23", **py38)
    assert add.outcome == FAIL and checks(add, FAIL) == {"python"}, text_of(add)
    assert "locks 2.5.1" in text_of(add) and add.fix == 'uv add "torch<2.5"'
    for result in (
        judge("uv pip install torch", "2025-07-23", **py38),
        judge(add.fix, "2025-07-23", **py38),
        judge("uv add torch", "2024-10-01", **py38),  # before 2.5.0
        judge("uv add torch", "2025-07-23", python="3.9", platform="linux"),
    ):
        assert result.outcome == PASS and "Requires-Python" not in text_of(result), text_of(result)


def _fingerprint_on(tmp_path: Path, arch: str) -> Path:
    fp = tmp_path / f"{arch}.json"
    host = {"os": "Linux", "python": "3.9.2", "arch": arch}
    fp.write_text(json.dumps({"schema": 1, "host": host}))
    return fp


@pytest.mark.parametrize(
    ("arch", "verdict", "says"),
    [
        # https://github.com/askrella/whatsapp-chatgpt/issues/106 (2023-02-24, a Raspberry Pi):
        # "pip install torch" -> "Could not find a version ... (from versions: none)".
        ("armv7l", FAIL, "a 32-bit ARM Python (linux_armv7l)"),
        ("armv6l", FAIL, "a 32-bit ARM Python (linux_armv6l)"),
        ("i686", FAIL, "a 32-bit Python (linux_i686)"),
        ("ppc64le", UNKNOWN, "the facts cover x86_64 and aarch64 CPUs; this one is ppc64le"),
        ("riscv64", UNKNOWN, "this one is riscv64"),
    ],
)
def test_a_host_the_facts_do_not_cover_is_never_judged_as_x86_64(
    tmp_path, capsys, arch, verdict, says
):
    """``uname -m`` other than x86_64/aarch64 (a 32-bit Raspberry Pi OS, IBM Power, RISC-V) was
    read as x86_64, so ``repro check`` on a Pi answered for an x86_64 PC. A machine that runs only
    32-bit Pythons fails as a 32-bit Python; any other is unknown, said plainly."""
    argv = ["check", "pip install torch", "--fingerprint", str(_fingerprint_on(tmp_path, arch))]
    cli_main.main([*argv, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["outcome"] == verdict, data
    assert says in json.dumps(data), data
    x86 = ["check", "pip install torch", "--fingerprint", str(_fingerprint_on(tmp_path, "x86_64"))]
    cli_main.main([*x86, "--json"])
    assert json.loads(capsys.readouterr().out)["outcome"] == PASS


def test_machine_spellings():
    from repro.compat.sources import machine_of

    assert [machine_of(m, "linux") for m in ("AMD64", "x64", None, "arm64", "i386", "PPC64LE")] == [
        "x86_64", "x86_64", "x86_64", "aarch64", "i686", "ppc64le",
    ]  # fmt: skip
    assert machine_of("aarch64", "macos") == "arm64"


# ------------------------------------------------------------------------------------------
# Round eight, first-sight audit (issue 30): torchvision's and torchaudio's wheels on PyPI, every
# file of every release read from PyPI's JSON API (compat-extra companion_pypi_wheels).


@pytest.mark.parametrize(
    ("line", "day", "host", "says"),
    [
        # https://github.com/pytorch/pytorch/issues/144757 (2025-01-14, Python 3.13.1): torch
        # 2.5.1 cp313 downloaded, "Could not find a version that satisfies the requirement
        # torchvision (from versions: none)". torchvision's gap is companion_python_first's;
        # torchaudio had no cp313 wheel either (its first: 2.6.0, 2025-01-29).
        (
            "pip3 install torch torchvision torchaudio",
            "2025-01-14",
            {"python": "3.13", "platform": "linux"},
            "no torchaudio release on PyPI up to 2025-01-14 has a wheel for Python 3.13 on linux",
        ),
        # https://github.com/pytorch/audio/issues/1837 (2021-10-07, aarch64, Python 3.9): no
        # torchaudio for aarch64; PyPI's first manylinux2014_aarch64 torchaudio is 0.10.0
        # (uploaded 2021-10-21).
        (
            "pip3 install torchaudio",
            "2021-10-07",
            {"python": "3.9", "platform": "linux", "arch": "aarch64"},
            "no torchaudio release on PyPI up to 2021-10-07 has a wheel for Python 3.9 on linux-aarch64",
        ),
        # PyPI's torchvision 0.8.2 has Linux and macOS wheels only (its Windows wheels were on
        # download.pytorch.org's -f page): pinned without -f on Windows, pip finds none.
        (
            "pip install torch==1.7.1 torchvision==0.8.2",
            "2021-01-10",
            {"python": "3.8", "platform": "windows"},
            "torchvision 0.8.2 has no wheel for Python 3.8 on windows on PyPI (its windows wheels: none)",
        ),
        # A mirror of PyPI (compat-extra pypi_hosts) serves the same files.
        (
            "pip install torch==1.7.1 torchvision==0.8.2 -i https://pypi.tuna.tsinghua.edu.cn/simple",
            "2021-01-10",
            {"python": "3.8", "platform": "windows"},
            "torchvision 0.8.2 has no wheel for Python 3.8 on windows on PyPI",
        ),
    ],
    ids=["pytorch-144757", "audio-1837", "torchvision-0.8.2-windows", "pypi-mirror"],
)
def test_a_companion_pypi_has_no_wheel_of_for_the_host_fails(line, day, host, says):
    result = judge(line, day, **host)
    assert result.outcome == FAIL and "companion" in checks(result, FAIL), text_of(result)
    assert says in text_of(result)
    facts = {r.fact for r in result.prediction.reasons}
    assert any(f.startswith("compat-extra:companion_pypi_wheels.") for f in facts), facts


@pytest.mark.parametrize(
    ("line", "day", "host"),
    [
        # The -f page had Windows builds of torchvision 0.8.2 (the website's Windows command).
        (
            "pip install torch==1.7.1+cpu torchvision==0.8.2+cpu -f https://download.pytorch.org/whl/torch_stable.html",
            "2021-01-10",
            {"python": "3.8", "platform": "windows"},
        ),
        # torchvision 0.9.0 (2021-03-04) was the first with Windows wheels on PyPI after 0.5.0.
        (
            "pip install torch==1.8.0 torchvision==0.9.0",
            "2021-03-10",
            {"python": "3.8", "platform": "windows"},
        ),
        # Python 3.13 from torchvision 0.21.0 / torchaudio 2.6.0 (2025-01-29).
        (
            "pip3 install torch torchvision torchaudio",
            "2025-02-10",
            {"python": "3.13", "platform": "linux"},
        ),
        # An index the PyPI table does not describe (the cu118 index has its own files).
        (
            f"pip3 install torch torchvision torchaudio --index-url {CU}/cu118",
            "2025-01-14",
            {"python": "3.13", "platform": "linux"},
        ),
    ],
    ids=["find-links-page", "torchvision-0.9.0-windows", "python-3.13-later", "other-index"],
)
def test_the_pypi_companion_table_stays_out_where_pypi_had_the_wheel_or_is_not_asked(
    line, day, host
):
    result = judge(line, day, **host)
    facts = {r.fact for r in result.prediction.reasons}
    assert not any("companion_pypi_wheels" in f for f in facts), text_of(result)


def test_the_pypi_companion_table_is_pypi_s_own_listing():
    """Spot checks of the generated table against PyPI's files: torchaudio has no release with a
    Windows wheel before 0.8.0 and none for aarch64 before 0.10.0; torchvision 0.20.1 has no
    cp313 wheel; a release's first upload day is its day."""
    from repro.compat.facts import extra_facts

    table = extra_facts().get("companion_pypi_wheels")
    audio, vision = table["torchaudio"], table["torchvision"]
    windows = [v for v, e in audio.items() if "windows" in e["wheels"]]
    arm = [v for v, e in audio.items() if "linux-aarch64" in e["wheels"]]
    assert windows[0] == "0.8.0" and arm[0] == "0.10.0"
    assert "3.13" not in vision["0.20.1"]["wheels"]["linux"].split()
    assert vision["0.21.0"]["day"] == "2025-01-29"
    assert "3.13" in vision["0.21.0"]["wheels"]["linux"].split()


def test_a_torch_wheel_pypi_got_after_the_release_is_not_there_before_that_day():
    """PyPI's file list (compat-extra pypi_wheels_later): torch 1.7.0's win_amd64 wheels were
    uploaded on 2020-12-04, its Linux and macOS ones on 2020-10-27. Before that day pip on Windows
    finds no torch 1.7.0 on PyPI; download.pytorch.org's -f page had it all along."""
    windows = {"python": "3.8", "platform": "windows"}
    before = judge("pip install torch==1.7.0", "2020-11-15", **windows)
    assert before.outcome == FAIL and "platform" in checks(before, FAIL), text_of(before)
    assert "came to PyPI on 2020-12-04" in text_of(before)
    after = judge("pip install torch==1.7.0", "2020-12-10", **windows)
    assert after.outcome == PASS, text_of(after)
    page = judge(
        "pip install torch==1.7.0+cpu -f https://download.pytorch.org/whl/torch_stable.html",
        "2020-11-15",
        **windows,
    )
    assert page.outcome == PASS, text_of(page)
    today = judge("pip install torch==1.7.0", None, **windows)
    assert "pypi_wheels_later" not in text_of(today)
    linux = judge("pip install torch==1.7.0", "2020-11-15", python="3.8", platform="linux")
    assert linux.outcome == PASS, text_of(linux)


def test_torch_after_torchaudio_s_last_release_has_no_torchaudio_beside_it():
    """compat-extra companion_last: torchaudio's newest release on PyPI is 2.11.0 (read
    2026-11-27, four torch releases later). https://github.com/cancer32/ComfyEnv/issues/2
    (2026-05-14, Windows, Python 3.12): the cu132 index had torch 2.12.0+cu132 and torchvision
    0.27.0+cu132 but "torchaudio (from versions: none)"."""
    cu132 = f"pip install --index-url {CU}/cu132 torch torchvision torchaudio"
    windows = {"python": "3.12", "platform": "windows", "gpu": "NVIDIA GPU"}
    result = judge(cu132, "2026-05-14", **windows)
    assert result.outcome == FAIL and checks(result, FAIL) == {"companion"}, text_of(result)
    assert "has no torchaudio at all" in text_of(result)
    # Without torchaudio the same index installs.
    assert judge(cu132.replace(" torchaudio", ""), "2026-05-14", **windows).outcome == PASS
    # cu130 had torch 2.10/2.11 builds, so its index has torchaudio 2.11.0 (pip takes that pair);
    # PyPI likewise; neither is failed.
    cu130 = f"pip install --index-url {CU}/cu130 torch torchvision torchaudio"
    for line in (cu130, "pip install torch torchaudio"):
        other = judge(line, "2026-06-01", python="3.12", platform="linux")
        assert "companion_last" not in {r.fact.split(".")[0] for r in other.prediction.reasons}
        assert "torchaudio's last release" not in text_of(other), text_of(other)


# ------------------------------------------------------------------------------------------
# Round ten (issue 30, pip side): where "pass" was given although the facts do not cover the
# dimension the line touches (first-sight precision of uv add passes: 0 of 3 over test3-test8)


def test_uv_add_from_a_cuda_index_before_2_6_is_unknown_off_aarch64():
    """compat-extra uv_lock_plain_aarch64. https://github.com/astral-sh/uv/issues/11418
    (2025-02-11, Linux x86_64): "Distribution torch==2.5.1 @ registry+https://download.pytorch.org/
    whl/cu124 can't be installed ... only has wheels for the following platform: linux_aarch64";
    https://github.com/astral-sh/uv/issues/4377 (2024-06-18): torchaudio 2.0.0 from the cu121 index
    locked with its manylinux2014_aarch64 wheels only. The CUDA indexes list the aarch64 wheels
    under the plain version (pytorch/builder#1585); the lock taking them depends on uv's version."""
    linux = {"python": "3.10", "platform": "linux", "gpu": "NVIDIA GPU"}
    for line, day in (
        (
            "uv add torch==2.5.1 --index https://download.pytorch.org/whl/cu124 --optional gpu",
            "2025-02-11",
        ),
        (f"uv add torch torchvision torchaudio --index-url {CU}/cu121", "2024-06-18"),
    ):
        result = judge(line, day, **linux)
        assert result.outcome == UNKNOWN and checks(result, UNKNOWN) == {"install"}, text_of(result)
        assert "the facts do not cover" in text_of(result) and "#11418" in text_of(result)
    # Left as before: a +cu124 pin on every package, 2.6.0 and later, the CPU index, PyPI, uv pip install.
    for line, day, host in (
        (f"uv add torch==2.5.1+cu124 --index {CU}/cu124", "2025-02-11", linux),
        (f"uv add torch==2.6.0 --index {CU}/cu124", "2025-03-01", linux),
        (f"uv add torch==2.5.1 --index {CU}/cpu", "2025-02-11", linux),
        ("uv add torch torchvision torchaudio", "2024-10-30", linux),
        (f"uv pip install torch==2.5.1 --index-url {CU}/cu124", "2025-02-11", linux),
    ):
        result = judge(line, day, **host)
        assert "uv_lock_plain_aarch64" not in {
            r.fact.split(":")[-1] for r in result.prediction.reasons
        }, text_of(result)
        assert result.outcome == PASS, (line, text_of(result))
    # Linux aarch64: the plain wheels are its own; the rule stays out (the older facts decide).
    arm = judge(f"uv add torch==2.5.1 --index {CU}/cu124", "2025-02-11", **linux, arch="aarch64")
    assert "uv_lock_plain_aarch64" not in {r.fact.split(":")[-1] for r in arm.prediction.reasons}
    # Windows keeps its fail (the index's Linux-only markupsafe, astral-sh/uv#10843's host).
    windows = judge(
        f"uv add torch>=2.5.1 --index {CU}/cu124 --optional cu124",
        "2025-01-22",
        python="3.12",
        platform="windows",
        gpu="NVIDIA GPU",
    )
    assert windows.outcome == FAIL, text_of(windows)


def test_a_cuda_index_without_an_aarch64_cuda_build_gives_linux_aarch64_its_cpu_wheel():
    """compat-extra aarch64.cpu_on_cuda_indexes. https://github.com/skypilot-org/skypilot/pull/8837
    (2026-02-11, GH200): `pip install torch torchvision --index-url .../whl/cu118` ->
    "Distributed package doesn't have NCCL built in": "cu118 has only CPU-only aarch64 builds".
    astral-sh/uv#11418: the cu124 index's torch 2.5.1 has linux_aarch64 wheels, unlabelled."""
    gh200 = {"python": "3.10", "platform": "linux", "arch": "aarch64", "gpu": "NVIDIA GH200"}
    line = f"pip install torch torchvision --index-url {CU}/cu118"
    result = judge(line, "2026-02-11", **{**gh200, "capability": "9.0"})
    assert result.outcome == FAIL and checks(result, FAIL) == {"accelerator"}, text_of(result)
    assert result.torch == "2.7.1" and "gets the CPU build" in text_of(result)
    pinned = judge(f"pip install torch==2.5.1 --index-url {CU}/cu124", "2024-12-01", **gh200)
    assert pinned.torch == "2.5.1" and checks(pinned, FAIL) == {"accelerator"}, text_of(pinned)
    # Where the index has the aarch64 CUDA build, that is what pip gets (2.7.0 on cu128).
    cuda = judge(f"pip install torch==2.7.0 --index-url {CU}/cu128", "2025-05-10", **gh200)
    assert cuda.torch == "2.7.0+cu128", text_of(cuda)
    # Not read before 2.0 (the index is judged as before: no build of it there); x86_64 unchanged.
    old = judge(f"pip install torch==1.13.1 --index-url {CU}/cu117", "2023-03-01", **gh200)
    assert "cpu_on_cuda_indexes" not in text_of(old) and old.torch is None
    x86 = judge(
        f"pip install torch==2.5.1 --index-url {CU}/cu124",
        "2024-12-01",
        python="3.10",
        platform="linux",
    )
    assert x86.torch == "2.5.1+cu124" and x86.outcome == PASS, text_of(x86)


def test_a_find_links_page_given_as_an_index_serves_no_torch():
    """compat-extra sources.pip_index_url: an index is read as <url>/<project>/ (pip install
    --help: "--index-url ... should point to a repository compliant with PEP 503"; -f: "If a URL
    or path to an html file, then parse for links to archives"). https://github.com/astral-sh/uv/
    issues/12980: `uv add torch==1.6.0+cu101 torchvision==0.7.0+cu101 --index
    https://download.pytorch.org/whl/torch_stable.html` finds no torch."""
    page = f"{CU}/torch_stable.html"
    py38 = {"python": "3.8", "platform": "linux"}
    for line in (
        f"uv add torch==1.6.0+cu101 torchvision==0.7.0+cu101 --index {page}",
        f"pip install torch==1.6.0+cu101 --index-url {page}",
        f"pip install torch==1.6.0+cu101 --extra-index-url {page}",
    ):
        result = judge(line, "2025-04-19", **py38)
        assert result.outcome == FAIL and checks(result, FAIL) == {"install"}, text_of(result)
        assert "find-links page given as an index" in text_of(result)
    # The same page as -f serves the build; beside PyPI a plain pin comes from PyPI.
    assert judge(f"pip install torch==1.6.0+cu101 -f {page}", "2025-04-19", **py38).outcome == PASS
    plain = judge(f"pip install torch==1.6.0 --extra-index-url {page}", "2025-04-19", **py38)
    assert plain.outcome == PASS and plain.torch == "1.6.0", text_of(plain)


# ------------------------------------------------------------------------------------------
# Round ten (conda): a pass that rests on a conda dimension the facts do not list is unknown
# (compat-extra conda_coverage; the issue's item 4 wording "unknown: the facts do not cover X").


def test_companions_from_the_conda_nightly_channel_are_not_covered():
    """https://github.com/pytorch/test-infra/issues/4567 (2023-09-12, Linux): the nightly's CUDA
    12.1 builds were missing that day and conda installed the CPU builds of pytorch, torchvision
    and torchaudio. https://github.com/pytorch/vision/issues/1902 (2020-02-21): torchvision
    came from pkgs/main with cudatoolkit instead of the nightly CPU torchvision. Which companion
    nightlies the pruned channel held on a day is not in the facts: unknown, not "installs"."""
    line = "conda install pytorch torchvision torchaudio pytorch-cuda=12.1 -c pytorch-nightly -c nvidia"
    result = judge(line, "2023-09-12", python="3.10", platform="linux", gpu="NVIDIA GPU")
    assert result.outcome == UNKNOWN and checks(result, UNKNOWN) == {"companion"}, text_of(result)
    assert "the facts do not cover the pytorch-nightly conda channel's torchvision" in text_of(
        result
    )
    vision = judge(
        "conda install pytorch torchvision cpuonly -c pytorch-nightly",
        "2020-02-21",
        python="3.7",
        platform="linux",
    )
    assert vision.outcome == UNKNOWN, text_of(vision)
    # pytorch alone from the nightly channel stays judged (pytorch/pytorch#79337, 2022-06-11: the
    # expected 1.13.0.dev20220610 nightly on an M1; pytorch/pytorch#56882, 2021-04-28).
    alone = judge(
        "conda install -c pytorch-nightly pytorch",
        "2022-06-11",
        python="3.9",
        platform="macos",
        arch="arm64",
    )
    assert alone.outcome == PASS, text_of(alone)
    nvidia = judge(
        "conda create -y -p $(pwd) -c pytorch-nightly -c nvidia python=3.8 pytorch cudatoolkit=11.1",
        "2021-04-28",
        python="3.8",
        platform="linux",
    )
    assert nvidia.outcome == PASS, text_of(nvidia)
    # A nightly line that fails on a listed fact still fails (the channel's end, #138506).
    ended = judge(line, "2025-06-01", python="3.10", platform="linux", gpu="NVIDIA GPU")
    assert ended.outcome == FAIL, text_of(ended)


def test_conda_companions_on_apple_silicon_are_judged_by_the_listed_facts():
    """Round ten made a conda pass with companions on osx-arm64/linux-aarch64 unknown
    (conda_coverage.companion_platforms_unlisted, from 1 right of 8 first-sight passes on
    test3-test8); round thirteen empties that list: with test9/test10 read, such passes were right
    2 of 4 over the studied files (pytorch/pytorch#82428 and myshell-ai/OpenVoice#38 installed;
    pytorch/pytorch#82483 and pytorch/audio#2517 did not), and on the sets unseen when the rule
    was written it cost agreeing lines and removed no wrong pass. The nightly-companion and
    torchdata unknowns stay. https://github.com/myshell-ai/OpenVoice/issues/38 (2024-01-05, Apple
    silicon, Python 3.9): the line below installed and ran."""
    m1 = {"python": "3.9", "platform": "macos", "arch": "arm64"}
    openvoice = (
        "conda install pytorch==1.13.1 torchvision==0.14.1 torchaudio==0.13.1 -c pytorch -c nvidia"
    )
    ran = judge(openvoice, "2024-01-05", **m1)
    assert ran.outcome == PASS, text_of(ran)
    assert "conda_coverage" not in json.dumps([r.fact for r in ran.prediction.reasons])
    line = "conda install pytorch torchvision torchaudio -c pytorch"
    result = judge(line, "2022-07-29", **m1)
    assert result.outcome == PASS, text_of(result)
    # The listed fact still decides where it holds: no torchaudio on osx-arm64 through 2021-11-20.
    early = judge(line, "2021-06-16", **m1)
    assert early.outcome == FAIL, text_of(early)
    # pytorch alone on Apple silicon, and the same line on an Intel Mac, stay judged.
    assert judge("conda install pytorch -c pytorch", "2022-07-29", **m1).outcome == PASS
    intel = judge(line, "2022-07-29", python="3.9", platform="macos", arch="x86_64")
    assert intel.outcome == PASS, text_of(intel)


def test_torchdata_from_conda_is_not_covered():
    """https://github.com/meta-pytorch/data/issues/315 (2022-03-22, Linux, Python 3.8): adding
    torchdata to a cudatoolkit=11.3 line made conda install pytorch 1.11.0's CPU build
    (pytorch-mutex cpu); without it the CUDA 11.3 build came. torchdata's conda packages are not
    in the facts: unknown, while the line without torchdata is judged."""
    line = "conda install -c pytorch python=3.8 pytorch torchvision torchaudio cudatoolkit=11.3"
    linux = {"python": "3.8", "platform": "linux"}
    result = judge(line + " torchdata", "2022-03-22", **linux)
    assert result.outcome == UNKNOWN, text_of(result)
    assert "torchdata's conda packages" in text_of(result)
    assert install_line.parse(line + " torchdata").conda.companions[-1] == "torchdata"
    assert judge(line, "2022-03-22", **linux).outcome == PASS


def test_conda_forge_alone_is_judged_from_the_feedstock_s_builds():
    """compat-extra conda_forge_builds (scripts/conda_forge_builds.py over
    conda-forge/pytorch-cpu-feedstock's history). https://github.com/conda-forge/pytorch-cpu-feedstock/issues/102
    (2022-05-04, Ubuntu 20.04 with a GPU, Python 3.7): `conda install -c conda-forge pytorch`
    planned pytorch-1.11.0 cpu_py37 'even though I have a gpu'; https://github.com/mamba-org/mamba/issues/3005
    (2023-11-23): micromamba's pytorch=1.9.1 from conda-forge was the CPU build without a build
    string. Both releases had CUDA builds there: which one conda takes depends on the __cuda
    virtual package at solve time, not in the facts (unknown, not "installs")."""
    line = "conda install -c conda-forge pytorch"
    gpu = {"python": "3.7", "platform": "linux", "gpu": "NVIDIA GPU"}
    result = judge(line, "2022-05-04", **gpu)
    assert result.outcome == UNKNOWN and result.torch == "1.11.0", text_of(result)
    assert "CUDA 10.2, 11.0, 11.1, 11.2 builds" in text_of(result) and "__cuda" in text_of(result)
    mamba = judge("micromamba install -c conda-forge pytorch=1.9.1", "2023-11-23", python="3.9",
                  platform="linux", gpu="NVIDIA GPU")  # fmt: skip
    assert mamba.outcome == UNKNOWN and mamba.torch == "1.9.1", text_of(mamba)
    # The same line on a host without a GPU gets the CPU build: judged, and it runs.
    cpu = judge(line, "2022-05-04", python="3.7", platform="linux")
    assert cpu.outcome == PASS and (cpu.torch, cpu.runtime) == ("1.11.0", "cpu"), text_of(cpu)
    # A Python conda-forge had not built by then (3.12 came with 2.1.0 on 2023-11-06): conda
    # keeps the environment's Python and finds no pytorch for it.
    py312 = judge(line, "2023-10-01", python="3.12", platform="linux")
    assert py312.outcome == FAIL and checks(py312, FAIL) == {"python"}, text_of(py312)
    assert judge(line, "2023-12-01", python="3.12", platform="linux").outcome == PASS
    # Apple silicon before conda-forge's first osx-arm64 pytorch (1.8.0, 2021-03-08): no channel
    # conda reads had one (conda-forge/miniforge#101, 2021-01-17, the existing platform fact);
    # linux-aarch64 before 1.12.0 (2022-07-17): conda-forge had none, the default channels are not
    # in the facts (unknown).
    m1 = judge(line, "2021-01-17", python="3.8", platform="macos", arch="arm64")
    assert m1.outcome == FAIL and checks(m1, FAIL) == {"platform"}, text_of(m1)
    arm = judge(line, "2022-01-10", python="3.9", platform="linux", arch="aarch64")
    assert arm.outcome == UNKNOWN and "first linux-aarch64 build came on 2022-07-17" in text_of(arm)
    # Companions from their own feedstock's rows (conda-forge/torchvision-feedstock): torchvision
    # for Linux and Python 3.7 was there by then; on linux-aarch64 it came on 2023-01-20 (0.14.0),
    # half a year after pytorch (2022-07-17): PackagesNotFoundError before.
    both = judge("conda install -c conda-forge pytorch torchvision", "2022-05-04", python="3.7",
                 platform="linux")  # fmt: skip
    assert both.outcome == PASS and "conda-forge has torchvision" in text_of(both), text_of(both)
    arm_tv = judge("conda install -c conda-forge pytorch torchvision", "2022-10-01",
                   python="3.9", platform="linux", arch="aarch64")  # fmt: skip
    assert arm_tv.outcome == FAIL and checks(arm_tv, FAIL) == {"companion"}, text_of(arm_tv)
    assert "first linux-aarch64 build came on 2023-01-20" in text_of(arm_tv)
    # On Apple silicon the conda-forge rows decide (conda_coverage's unlisted platforms are the
    # pytorch and nightly channels').
    m1_tv = judge("conda install -c conda-forge pytorch torchvision", "2022-05-04", python="3.9",
                  platform="macos", arch="arm64")  # fmt: skip
    assert m1_tv.outcome == PASS and "conda-forge has torchvision" in text_of(m1_tv), text_of(m1_tv)
    # torchaudio came to conda-forge with its feedstock (2024-10-13): PackagesNotFoundError before
    # (as conda/conda#11054 and pytorch/audio#2562 saw on osx-arm64 and linux-aarch64), judged
    # after; torchdata's conda-forge packages are not in the facts.
    audio = "conda install -c conda-forge pytorch torchaudio"
    early = judge(audio, "2022-05-04", python="3.9", platform="linux")
    assert early.outcome == FAIL and checks(early, FAIL) == {"companion"}, text_of(early)
    late = judge(audio, "2025-03-01", python="3.11", platform="linux")
    assert late.outcome == PASS and "conda-forge has torchaudio" in text_of(late), text_of(late)
    data = judge("conda install -c conda-forge pytorch torchdata", "2025-03-01", python="3.11",
                 platform="linux")  # fmt: skip
    assert data.outcome == UNKNOWN and checks(data, UNKNOWN) == {"companion"}, text_of(data)
    # Windows rows before conda-forge's Windows builds merged (2025-01-14) are not used.
    win = judge(line, "2021-05-01", python="3.8", platform="windows")
    assert "conda_forge_builds" not in text_of(win), text_of(win)


def test_conda_forge_s_aarch64_cuda_build_on_a_jetson_is_not_called_a_pass():
    """https://github.com/conda-forge/pytorch-cpu-feedstock/issues/303 (2024-12-11, Jetson Orin,
    linux-aarch64, Python 3.12): conda-forge's CUDA pytorch installed, then 'no kernel image' for
    sm_87. The table names 2.5.1's CUDA 12.0/12.6 linux-aarch64 builds; whether conda takes one
    (and its arch list) is not in the facts: unknown."""
    result = judge("conda install -c conda-forge pytorch", "2024-12-11", python="3.12",
                   platform="linux", arch="aarch64", gpu="NVIDIA Jetson Orin",
                   capability="8.7")  # fmt: skip
    assert result.outcome == UNKNOWN and result.torch == "2.5.1", text_of(result)
    assert "CUDA 12.0, 12.6 builds for linux-aarch64" in text_of(result)


# ------------------------------------------------------------------------------------------
# Round eleven (issue 30, kinds): the import failures whose cause is the host, not the line.


@pytest.mark.parametrize(
    ("line", "day", "python"),
    [
        # https://github.com/pytorch/pytorch/issues/6607 (CentOS 6.7, glibc 2.12, conda 0.3.1:
        # "version `GLIBC_2.17' not found (required by .../torch/_C...so)")
        ("conda install pytorch torchvision -c pytorch", "2018-04-14", "3.6"),
        # https://github.com/pytorch/pytorch/issues/26467 (RHEL 6.4: "GLIBC_2.14 not found")
        ("conda install pytorch torchvision cudatoolkit=10.0 -c pytorch", "2019-09-19", "3.7"),
        # https://github.com/pytorch/pytorch/issues/14274 (CentOS 6.8, glibc 2.12, "pytorch 1.0"
        # on 2018-11-21, a preview: the day here is after 1.0.0's release)
        ("pip install torch==1.0.0", "2019-01-15", "3.6"),
        # https://github.com/pytorch/pytorch/issues/43758 (pip in a virtualenv: libgomp needs
        # GLIBC_2.14); the same from a download.pytorch.org index (linux_x86_64 tags)
        ("pip install torch", "2020-08-28", "3.7"),
        (
            "pip install torch==1.8.1+cu111 -f https://download.pytorch.org/whl/torch_stable.html",
            "2021-05-01",
            "3.8",
        ),
    ],
)
def test_pytorch_s_linux_binaries_fail_at_import_below_glibc_2_17(line, day, python):
    """compat-extra linux_glibc_floor: the get-started page's "glibc >= v2.17"; soumith on
    pytorch/pytorch#14274: "Our binaries do not support centos 6 since 0.4.1 and going forward".
    pip (manylinux1 / linux_x86_64 tags) and conda install them; `import torch` fails."""
    old = judge(line, day, python=python, platform="linux", glibc="2.12")
    assert old.outcome == FAIL and checks(old, FAIL) == {"runs"}, text_of(old)
    assert "glibc is 2.12" in text_of(old) and old.installs is not False, text_of(old)
    assert old.summary == "installs but will not run"
    # glibc 2.17 (CentOS 7) runs them; a host whose glibc is unknown is judged as before.
    for host in ({"glibc": "2.17"}, {}):
        other = judge(line, day, python=python, platform="linux", **host)
        assert "linux_glibc_floor" not in json.dumps([r.fact for r in other.prediction.reasons])


def test_the_glibc_floor_starts_where_its_sources_do():
    """Before 0.4.1 only the pytorch channel's conda packages are known to need glibc 2.17
    (pytorch/pytorch#6607, 0.3.1); a 0.3.1 wheel, conda-forge's builds and other platforms are
    not judged by it."""
    old = {"platform": "linux", "glibc": "2.12"}
    for line, day, python in (
        ("pip install torch==0.3.1", "2018-04-14", "3.6"),
        ("conda install -c conda-forge pytorch", "2022-05-04", "3.9"),
    ):
        result = judge(line, day, python=python, **old)
        facts = [r.fact for r in result.prediction.reasons]
        assert "compat-extra:linux_glibc_floor" not in facts, text_of(result)
    win = judge("pip install torch==1.0.0", "2018-11-21", python="3.6", platform="windows")
    assert "compat-extra:linux_glibc_floor" not in [r.fact for r in win.prediction.reasons]


GT710 = {"gpu": "GeForce GT 710", "capability": "3.5", "driver": "446.14"}


def test_windows_builds_from_1_4_have_no_sm_35_kernels():
    """windows_arch_floor: pytorch/builder b3543d0d ("Kick out cuda arch 3.5 for Windows (#386)",
    2019-11-27) made 3.7+PTX the lowest entry of the Windows wheels' and conda packages' lists.
    https://github.com/pytorch/pytorch/issues/40430: `conda install pytorch torchvision
    cudatoolkit=10.2 -c pytorch` on Windows 10, GeForce GT 710, driver 446.14 -> "no kernel
    image is available for execution on the device"."""
    win = {"python": "3.8", "platform": "windows", **GT710}
    line = "conda install pytorch torchvision cudatoolkit=10.2 -c pytorch"
    result = judge(line, "2020-06-23", **win)
    assert result.outcome == FAIL and checks(result, FAIL) == {"kernel_image"}, text_of(result)
    assert "windows_arch_floor" in json.dumps([r.fact for r in result.prediction.reasons])
    # The Linux package of the same release has no torch kernel below sm_37 either (its
    # cuobjdump keeps a bundled library's sm_35; conda_arch_floor, round thirteen); a K80 (3.7)
    # runs the Windows one.
    linux = judge(line, "2020-06-23", **{**win, "platform": "linux"})
    assert linux.outcome == FAIL and checks(linux, FAIL) == {"kernel_image"}, text_of(linux)
    assert "conda_arch_floor" in json.dumps([r.fact for r in linux.prediction.reasons])
    k80 = judge(line, "2020-06-23", **{**win, "gpu": "Tesla K80", "capability": "3.7"})
    assert k80.outcome == PASS, text_of(k80)
    # The pip wheel's own list (builder_wheel_arches) already starts at sm_37 on both platforms.
    pip = "pip install torch==1.5.1+cu102 -f https://download.pytorch.org/whl/torch_stable.html"
    assert judge(pip, "2020-06-23", **win).outcome == FAIL
    # Before 1.4.0 the Windows builds had sm_35 (3.5;5.0+PTX;...).
    old = judge(
        "conda install pytorch=1.3.1 cudatoolkit=10.1 -c pytorch",
        "2019-11-20",
        **{**win, "python": "3.7"},
    )
    assert "windows_arch_floor" not in json.dumps([r.fact for r in old.prediction.reasons])
    assert checks(old, FAIL) == set(), text_of(old)


def test_windows_arch_drops_only_entries_below_sm_37():
    from repro.compat.facts import default_facts
    from repro.compat.predictions import windows_arch

    facts = default_facts()
    entries = ["sm_35", "compute_35", "sm_37", "sm_50", "sm_90a", "compute_90"]
    assert windows_arch(facts, "1.5.1", entries) == entries[2:]
    assert windows_arch(facts, "2.4.0+cu118", entries) == entries[2:]
    assert windows_arch(facts, "1.3.1", entries) == entries
    assert windows_arch(facts, None, entries) == entries


def test_aarch64_wheels_that_stop_with_sigill_on_armv8_0_are_unknown_not_a_pass():
    """compat-extra aarch64.armv8_0_sigill. https://github.com/pytorch/pytorch/issues/132032
    (Raspberry Pi 4, `pip install torch==2.4.0`: SIGILL on the LSE instruction ldaddal in
    libarm_compute; 2.3.1 works) and https://github.com/pytorch/pytorch/issues/97226 (Raspberry
    Pi 4: the cpu index's 2.0.0 stops with 'Illegal instruction'; the manylinux2014 wheel from
    https://download.pytorch.org/whl/torch-2.0.0-cp310-cp310-manylinux2014_aarch64.whl works)."""
    pi = {"platform": "linux", "arch": "aarch64"}
    for line, day, python in (
        ("pip install torch==2.4.0", "2024-07-29", "3.9"),
        (
            "pip3 install torch torchvision torchaudio --index-url https://download.pytorch.org/whl/cpu",
            "2023-03-21",
            "3.10",
        ),
    ):
        result = judge(line, day, python=python, **pi)
        assert result.outcome == UNKNOWN, text_of(result)
        assert "ARMv8.0" in text_of(result) and checks(result, UNKNOWN) == {"runs"}
    # 2.3.1 runs there; 2.0.0 from PyPI is not reported; x86_64 is not concerned.
    for line, day, host in (
        ("pip install torch==2.3.1", "2024-07-29", pi),
        ("pip install torch==2.0.0", "2023-03-21", pi),
        ("pip install torch==2.4.0", "2024-07-29", {"platform": "linux"}),
    ):
        result = judge(line, day, python="3.10", **host)
        assert result.outcome == PASS, text_of(result)


def test_mamba_takes_the_cpu_build_beside_cudatoolkit_for_1_8_to_1_11():
    """compat-extra conda_mamba_cpu_variant. https://github.com/mamba-org/mamba/issues/1617
    (mamba 0.22.1: `mamba install pytorch torchvision torchaudio cudatoolkit=11.3 -c pytorch`
    plans the CPU build) and https://github.com/mamba-org/mamba/issues/1349 (pytorch=1.8.1 with
    cudatoolkit=10.2 from the pytorch channel -> py3.9_cpu_0; still so for 1.10.2)."""
    gpu = {"python": "3.9", "platform": "linux", "gpu": "NVIDIA GPU"}
    for line, day in (
        ("mamba install pytorch torchvision torchaudio cudatoolkit=11.3 -c pytorch", "2022-04-09"),
        ("micromamba install pytorch=1.8.1 cudatoolkit=10.2 -c pytorch", "2021-12-14"),
    ):
        result = judge(line, day, **gpu)
        assert result.outcome == FAIL and checks(result, FAIL) == {"accelerator"}, text_of(result)
        assert result.runtime == "cpu" and result.fix.startswith("conda install pytorch==")
        # conda itself takes the CUDA build.
        plain = judge(line.replace("micromamba", "conda").replace("mamba", "conda"), day, **gpu)
        assert plain.outcome == PASS, text_of(plain)
    # pytorch-cuda (1.13 on), cpuonly and releases outside 1.8-1.11 are judged as before:
    # https://github.com/mamba-org/mamba/issues/3294's line ran.
    for line, day, host in (
        (
            "mamba install pytorch==2.3.0 pytorch-cuda=12.1 -c pytorch -c nvidia",
            "2024-04-30",
            {**gpu, "platform": "windows", "python": "3.11"},
        ),
        ("mamba install pytorch=1.7.1 cudatoolkit=10.2 -c pytorch", "2021-02-01", gpu),
    ):
        result = judge(line, day, **host)
        assert "compat-extra:conda_mamba_cpu_variant" not in [
            r.fact for r in result.prediction.reasons
        ], text_of(result)


def test_a_windows_build_with_its_own_list_in_the_facts_is_judged_by_that_list():
    """torch_variants 2.4/2.5 name each Windows CUDA wheel's own list (arch_windows:
    win_cu118_2_4 from compute_37/sm_37, win_cu12_2_4 from sm_50 with sm_61); a native Windows
    host is judged by it; windows_arch_floor (the Linux list cut below sm_37) is the coarser fact
    for releases whose Windows lists the facts do not hold."""
    # 2.4.1: 2.4.0's Windows wheels miss libomp140.x86_64.dll (windows_libomp, a runs failure).
    line = "pip install torch==2.4.1 --index-url https://download.pytorch.org/whl/cu121"
    gtx1080 = {"python": "3.11", "platform": "windows", "gpu": "GeForce GTX 1080"}
    result = judge(line, "2024-09-10", **gtx1080, capability="6.1")
    facts = json.dumps([r.fact for r in result.prediction.reasons])
    assert "arch_windows" in facts and "windows_arch_floor" not in facts, facts
    assert checks(result, FAIL) == set(), text_of(result)
    # A K80 (3.7) has no kernel in the cu12 Windows list and one in the cu118 list.
    k80 = {**gtx1080, "gpu": "Tesla K80", "capability": "3.7"}
    assert "kernel_image" in checks(judge(line, "2024-09-10", **k80), FAIL)
    cu118 = line.replace("cu121", "cu118")
    assert "kernel_image" not in checks(judge(cu118, "2024-09-10", **k80), FAIL)
    # On Linux the same wheel is judged by its Linux list (no arch_windows).
    linux = judge(line, "2024-09-10", **{**gtx1080, "platform": "linux"}, capability="6.1")
    assert "arch_windows" not in json.dumps([r.fact for r in linux.prediction.reasons])


# ------------------------------------------------------------------------------------------
# Round thirteen (issue 30, PASS-3): first-sight wrong passes of test9/test10 and test3-test8


K40M = {"python": "3.7", "platform": "linux", "gpu": "Tesla K40m", "capability": "3.5"}


def test_the_pytorch_channel_s_linux_packages_from_1_3_1_have_no_sm_35_kernels():
    """conda_arch_floor: pytorch/builder 2aac90bd (soumith, 2019-10-29, "moved 3.5 to 3.7") set
    conda/pytorch-nightly/build.sh's TORCH_CUDA_ARCH_LIST to 3.7;5.0+PTX and no later list has
    3.5; the packages' cuobjdump (conda_arch_lists) keeps sm_35 from a bundled library.
    https://github.com/pytorch/pytorch/issues/30532 (2019-11-27, Tesla K40m): `conda install
    pytorch cudatoolkit -c pytorch` (1.3.1) -> "no kernel image is available";
    https://github.com/pytorch/pytorch/issues/30376 (2019-11-24, capability 3.5) likewise with
    cudatoolkit=10.1 and torchvision."""
    for line, day in (
        ("conda install pytorch cudatoolkit -c pytorch", "2019-11-27"),
        ("conda install pytorch torchvision cudatoolkit=10.1 -c pytorch", "2019-11-24"),
    ):
        result = judge(line, day, **K40M)
        assert result.torch == "1.3.1", text_of(result)
        assert result.outcome == FAIL and checks(result, FAIL) == {"kernel_image"}, text_of(result)
        facts = json.dumps([r.fact for r in result.prediction.reasons])
        assert "conda_arch_floor" in facts, facts
        # A K80 (3.7) runs the same package.
        k80 = judge(line, day, **{**K40M, "gpu": "Tesla K80", "capability": "3.7"})
        assert k80.outcome == PASS, text_of(k80)
    # 1.3.0 was built before 2aac90bd (3.5;5.0+PTX): its package keeps sm_35.
    old = judge("conda install pytorch=1.3.0 cudatoolkit=10.1 -c pytorch", "2019-10-20", **K40M)
    assert old.torch == "1.3.0" and old.outcome == PASS, text_of(old)
    assert "conda_arch_floor" not in json.dumps([r.fact for r in old.prediction.reasons])


def test_arch_floor_drops_only_entries_below_the_floor_from_its_first_release():
    from repro.compat.facts import default_facts
    from repro.compat.predictions import arch_floor

    facts = default_facts()
    entries = ["sm_30", "sm_35", "sm_37", "sm_50", "compute_35", "compute_50"]
    assert arch_floor(facts, "conda_arch_floor", "1.3.1", entries) == [
        "sm_37",
        "sm_50",
        "compute_50",
    ]
    assert arch_floor(facts, "conda_arch_floor", "2.5.1", entries) == [
        "sm_37",
        "sm_50",
        "compute_50",
    ]
    assert arch_floor(facts, "conda_arch_floor", "1.3.0", entries) == entries
    assert arch_floor(facts, "conda_arch_floor", None, entries) == entries
    assert arch_floor(facts, "no_such_floor", "2.0.0", entries) == entries


def test_torch_2_4_0_s_windows_wheels_fail_at_import_for_want_of_libomp():
    """compat-extra windows_libomp: torch 2.4.0's fbgemm.dll needs libomp140.x86_64.dll, which
    the Windows wheels do not ship; fixed in 2.4.1 (https://github.com/pytorch/pytorch/issues/131662,
    pytorch/pytorch#130697). https://github.com/kohya-ss/sd-scripts/issues/1597 (2024-09-14,
    Windows, Python 3.10): `pip install torch==2.4.0 torchvision==0.19.0 --index-url
    https://download.pytorch.org/whl/cu124` -> "OSError: [WinError 126] ... fbgemm.dll";
    https://github.com/pytorch/pytorch/issues/133076 (2024-08-09, Windows, Python 3.12): `pip
    install torch torchvision torchaudio` (PyPI's 2.4.0) -> the same error."""
    kohya = "pip install torch==2.4.0 torchvision==0.19.0 --index-url https://download.pytorch.org/whl/cu124"
    win = {"python": "3.10", "platform": "windows"}
    result = judge(kohya, "2024-09-14", **win)
    assert result.outcome == FAIL and checks(result, FAIL) == {"runs"}, text_of(result)
    assert "libomp140.x86_64.dll" in text_of(result) and "WinError 126" in text_of(result)
    assert "installs and runs" not in text_of(result)
    assert result.fix is not None and "torch==2.4.1" in result.fix, result.fix
    # With a GPU the other 2.4.0 builds are not offered instead (they ship the same DLL).
    gpu = {**win, "gpu": "NVIDIA GeForce RTX 3090", "capability": "8.6", "driver": "560.94"}
    with_gpu = judge(kohya, "2024-09-14", **gpu)
    assert with_gpu.outcome == FAIL and with_gpu.instead == (), with_gpu.instead
    assert "torch==2.4.1" in (with_gpu.fix or ""), with_gpu.fix
    pypi = judge(
        "pip install torch torchvision torchaudio", "2024-08-09", python="3.12", platform="windows"
    )
    assert pypi.torch == "2.4.0" and pypi.outcome == FAIL, text_of(pypi)
    assert "compat-extra:windows_libomp" in [r.fact for r in pypi.prediction.reasons]
    # 2.4.1 on Windows, 2.4.0 on Linux and under WSL2 (a Linux wheel): not judged by it.
    fixed = judge(kohya.replace("2.4.0", "2.4.1"), "2024-09-14", **win)
    assert fixed.outcome == PASS, text_of(fixed)
    for host in ({**win, "platform": "linux"}, {**win, "platform": "linux", "wsl2": "true"}):
        other = judge(kohya, "2024-09-14", **host)
        assert "compat-extra:windows_libomp" not in [r.fact for r in other.prediction.reasons]


def test_a_linux_aarch64_torch_wheel_file_is_someone_else_s_build():
    """compat-extra aarch64.own_tags: PyTorch's own aarch64 wheels (PyPI, download.pytorch.org)
    are tagged manylinux2014_aarch64 or manylinux_2_28_aarch64 (https://pypi.org/pypi/torch/json:
    no linux_aarch64 file); a linux_aarch64 torch file is NVIDIA's Jetson wheel or a community
    or local build, whose needs the facts do not hold: unknown, not a pass.
    https://github.com/dusty-nv/jetson-inference/issues/559 (2020-04-28, JetPack 4.4): the 1.4.0
    wheel built for CUDA 10.0 -> "libcudart.so.10.0: cannot open shared object file";
    https://github.com/KumaTea/pytorch-aarch64/issues/16 (2023-03-04, Ubuntu 18.04, glibc 2.27):
    a community 1.6.0 wheel needs GLIBC_2.28; https://github.com/Lmy0217/PyTorch-aarch64/issues/3
    (2020-08-19, Jetson Nano): a community 1.6.0 wheel ran on the CPU only."""
    aarch64 = {"platform": "linux", "arch": "aarch64"}
    cases = (
        ("pip3 install torch-1.4.0-cp36-cp36m-linux_aarch64.whl", "2020-04-28", {"python": "3.6"}),
        (
            "pip install torch-1.6.0-cp37-cp37m-linux_aarch64.whl",
            "2023-03-04",
            {"python": "3.7", "glibc": "2.27"},
        ),
        (
            "pip install torch-1.6.0-cp36-cp36m-linux_aarch64.whl",
            "2020-08-19",
            {"python": "3.6", "gpu": "NVIDIA Jetson Nano", "capability": "5.3"},
        ),
    )
    for line, day, host in cases:
        result = judge(line, day, **aarch64, **host)
        assert result.outcome == UNKNOWN and checks(result, UNKNOWN) == {"runs"}, text_of(result)
        assert "the facts do not cover who built" in text_of(result), text_of(result)
    # A file for another Python still fails on its tag first
    # (https://github.com/nmilosev/pytorch-arm-builds/issues/2, 2019-07-25, Python 3.6).
    other = judge(
        "pip install torch-1.1.0-cp37-cp37m-linux_aarch64.whl",
        "2019-06-01",
        python="3.6",
        **aarch64,
    )
    assert other.outcome == FAIL and checks(other, FAIL) == {"python"}, text_of(other)
    # PyTorch's own aarch64 file (https://github.com/pytorch/pytorch/issues/97226: it ran on a
    # Raspberry Pi 4) and a linux_x86_64 file are judged as before.
    own = "pip3 install https://download.pytorch.org/whl/torch-2.0.0-cp310-cp310-manylinux2014_aarch64.whl"
    assert judge(own, "2023-03-21", python="3.10", **aarch64).outcome == PASS
    x86 = judge(
        "pip install torch-2.0.1+gite19229c-cp310-cp310-linux_x86_64.whl",
        "2023-06-01",
        python="3.10",
        platform="linux",
    )
    assert "compat-extra:aarch64.own_tags" not in [r.fact for r in x86.prediction.reasons]


# Round fourteen (issue 30, PASS-4): test11's disagreements and what round thirteen left

STABLE = "https://download.pytorch.org/whl/torch_stable.html"


def test_the_stable_page_lists_1_3_and_1_4_s_default_build_only_without_a_label():
    """find_links_pages.default_unlabelled_only: torch_stable.html has no +<default> wheel of
    1.3.x and 1.4.0 on Linux and of 1.3.0-1.6.0 on Windows; the default build is the plain version.
    https://github.com/pytorch/pytorch/issues/37113 (2020-04-22, Linux, Python 3.8): `pip install
    -f https://download.pytorch.org/whl/torch_stable.html torch==1.4.0+cu101` "can't find the
    requested version"; https://github.com/pytorch/pytorch/issues/30631 (1.3: CUDA 10.1 under the
    plain version); https://github.com/pytorch/pytorch/issues/54172 (Windows candidates: 1.4.0,
    1.4.0+cpu, 1.4.0+cu92, 1.5.0, 1.5.0+cpu, 1.5.0+cu101, 1.5.0+cu92, ...)."""
    linux = {"python": "3.8", "platform": "linux"}
    result = judge(f"pip install -f {STABLE} torch==1.4.0+cu101", "2020-04-22", **linux)
    assert result.outcome == FAIL and checks(result, FAIL) == {"install"}, text_of(result)
    facts = json.dumps([r.fact for r in result.prediction.reasons])
    assert "find_links_pages.default_unlabelled_only" in facts, facts
    assert result.fix == f"pip install -f {STABLE} torch==1.4.0", result.fix
    # The plain pin and the labelled non-default builds are still found.
    for pin in ("torch==1.4.0", "torch==1.4.0+cu92", "torch==1.4.0+cpu"):
        ok = judge(f"pip install {pin} -f {STABLE}", "2020-04-22", **linux)
        assert ok.outcome == PASS, (pin, text_of(ok))
    assert (
        judge(f"pip install torch==1.3.1+cu101 -f {STABLE}", "2020-01-10", **linux).outcome == FAIL
    )
    # 1.5's +cu102 on Linux is not read: not judged by this fact.
    later = judge(f"pip install torch==1.5.0+cu102 -f {STABLE}", "2020-06-01", **linux)
    assert "default_unlabelled_only" not in json.dumps([r.fact for r in later.prediction.reasons])
    windows = {"python": "3.8", "platform": "windows"}
    for pin, day in (("torch==1.5.0+cu102", "2020-06-01"), ("torch==1.6.0+cu102", "2020-09-01")):
        result = judge(f"pip install {pin} -f {STABLE}", day, **windows)
        assert result.outcome == FAIL, (pin, text_of(result))
    assert (
        judge(f"pip install torch==1.6.0+cu101 -f {STABLE}", "2020-09-01", **windows).outcome
        == PASS
    )


def test_torch_1_4_0_has_cu100_wheels_on_the_stable_page_for_linux():
    """1.4.0+cu100 was served on Linux though the previous-versions page names none:
    https://github.com/vt-vl-lab/3d-photo-inpainting/issues/28 (2020-04-18, Colab, Python 3.6):
    `pip3 install torch==1.4.0+cu100 torchvision==0.5.0+cu100 -f
    https://download.pytorch.org/whl/torch_stable.html` ran (detectron2's Colab tutorial used the
    same pin); pytorch/pytorch#54172's Windows candidates have no 1.4.0+cu100."""
    line = (
        "pip3 install torch==1.4.0+cu100 torchvision==0.5.0+cu100 -f "
        "https://download.pytorch.org/whl/torch_stable.html"
    )
    colab = {"python": "3.6", "platform": "linux", "gpu": "NVIDIA GPU"}
    result = judge(line, "2020-04-18", **colab)
    assert result.outcome == PASS and result.torch == "1.4.0+cu100", text_of(result)
    windows = judge(line, "2020-04-18", python="3.7", platform="windows")
    assert windows.outcome == FAIL, text_of(windows)


def test_torch_0_4_1_post2_had_linux_wheels_for_python_3_7_only():
    """torch 0.4.1.post2: https://github.com/clovaai/WCT2/issues/2 (2019-03-28, Colab Python 3.6):
    `torch==0.4.1.post2` -> "Could not find a version ... (from versions: 0.1.2, 0.1.2.post1,
    0.3.1, 0.4.0, 0.4.1, 1.0.0, 1.0.1, 1.0.1.post2)"; https://github.com/pytorch/pytorch/issues/59192
    (2021-06-02, Colab Python 3.7): `pip install torch==0.4.1.post2` ran. The release is no longer
    "never released": Python 3.6 fails on the python check, 3.7 installs (its build's runtime is not
    in the facts, as for every release before 1.0)."""
    old = judge("torch==0.4.1.post2", "2019-03-28", python="3.6", platform="linux")
    assert old.outcome == FAIL and checks(old, FAIL) == {"python"}, text_of(old)
    new = judge("pip install torch==0.4.1.post2", "2021-06-02", python="3.7", platform="linux")
    assert new.outcome != FAIL and new.torch == "0.4.1.post2", text_of(new)
    assert checks(new, FAIL) == set(), text_of(new)


def test_pypi_s_aarch64_wheels_of_1_9_1_10_and_1_13_stop_with_sigill_on_armv8_0():
    """compat-extra aarch64.armv8_0_sigill, in the first kernels rather than at import:
    https://github.com/KumaTea/pytorch-aarch64/issues/8 (2021-07-07, Raspberry Pi 4B, Python 3.8,
    PyPI's wheel, 1.9.0 then: a torch.mm snippet -> "Illegal instruction (core dumped)");
    https://github.com/mpcabete/bombcrypto-bot/issues/220 (Raspberry Pi 4, `pip install torch`,
    1.10.0: "Illegal instruction"); https://github.com/pytorch/pytorch/issues/90535 (Raspberry Pi 4,
    1.13.0: Conv2d -> "illegal hardware instruction"; "It runs successfully on torch 1.10.2")."""
    pi = {"platform": "linux", "arch": "aarch64"}
    for line, day, python in (
        ("pip install torch", "2021-07-07", "3.8"),
        ("pip install torch==1.10.0", "2021-11-20", "3.9"),
        ("pip install torch==1.13.0", "2022-12-09", "3.9"),
    ):
        result = judge(line, day, python=python, **pi)
        assert result.outcome == UNKNOWN, text_of(result)
        assert "ARMv8.0" in text_of(result) and checks(result, UNKNOWN) == {"runs"}
    ran = judge("pip install torch==1.10.2", "2022-12-09", python="3.9", **pi)
    assert ran.outcome == PASS, text_of(ran)


def test_a_nightly_pin_one_line_past_a_dated_view_s_nightly_line_is_unknown():
    """https://github.com/apple/ml-sharp/issues/5 (2025-12-15, DGX Spark, Python 3.13): `pip
    install torch==2.11.0.dev20251215+cu130 torchvision torchaudio triton --index-url
    https://download.pytorch.org/whl/nightly/cu130` installed and ran: the 2.10 branch was cut,
    so the nightlies built 2.11 while the newest release was 2.9.1. The day of a branch cut is not
    in the facts: unknown, not "never released"."""
    spark = {"python": "3.13", "platform": "linux", "arch": "aarch64"}
    line = (
        "pip install torch==2.11.0.dev20251215+cu130 torchvision torchaudio triton "
        "--index-url https://download.pytorch.org/whl/nightly/cu130"
    )
    result = judge(line, "2025-12-15", **spark)
    assert result.outcome == UNKNOWN and "branch was cut" in text_of(result), text_of(result)
    # Two lines ahead, or a dev pin with no nightly index, still fails.
    ahead = judge(line.replace("2.11.0.dev", "2.12.0.dev"), "2025-12-15", **spark)
    assert ahead.outcome == FAIL, text_of(ahead)
    plain = judge("pip install torch==2.11.0.dev20251215", "2025-12-15", **spark)
    assert plain.outcome == FAIL, text_of(plain)


def test_no_pytorch_wheel_runs_on_musl_libc():
    """compat-extra sources musl_libc: PyPI has no musllinux torch file and download.pytorch.org's
    Linux files are glibc builds. https://github.com/docker-library/python/issues/341 (2018-10,
    python:3.7-alpine: `pip install --no-cache-dir torch` -> the 0.1.2 sdist fails to build);
    https://github.com/pytorch/pytorch/issues/102592 (2023-05, python:3.9-alpine: torch==2.0.0+cpu
    -f torch_stable.html installs, import -> "Error relocating ... libgomp ... symbol not found");
    https://github.com/astral-sh/uv/issues/9901 (2024-12, uv:python3.10-alpine: `uv add torch
    --index .../cu124` finds no wheel). The fingerprint's os (Alpine's PRETTY_NAME) says musl."""
    from repro import properties as names

    for text, day, python in (
        ("pip install --no-cache-dir torch", "2018-10-01", "3.7"),
        (
            "python -m pip install --no-cache-dir torch==2.0.0+cpu -f "
            "https://download.pytorch.org/whl/torch_stable.html",
            "2023-05-31",
            "3.9",
        ),
        ("uv add torch --index https://download.pytorch.org/whl/cu124", "2024-12-15", "3.10"),
    ):
        line = install_line.parse(text)
        result = check_line(line, {}, python, "linux", as_of=date.fromisoformat(day), libc="musl")
        assert result.outcome == FAIL and checks(result, FAIL) == {"platform"}, text_of(result)
        assert "musl" in text_of(result)
        alpine = {names.HOST_OS: "Alpine Linux v3.18"}
        by_os = check_line(line, alpine, python, "linux", as_of=date.fromisoformat(day))
        assert by_os.outcome == FAIL and "musl" in text_of(by_os), text_of(by_os)
        glibc = check_line(line, {}, python, "linux", as_of=date.fromisoformat(day))
        assert "musl" not in text_of(glibc), text_of(glibc)
    # conda lines and other platforms are not judged by it.
    conda = check_line(
        install_line.parse("conda install pytorch -c pytorch"), {}, "3.9", "linux", libc="musl"
    )
    assert "musl" not in text_of(conda)


def test_a_conda_forge_build_string_asking_for_cuda_needs_the_driver_s_cuda():
    """https://github.com/conda-forge/pytorch-cpu-feedstock/issues/364 (2025-02-25, Python 3.12):
    `micromamba install -c conda-forge pytorch libtorch=*=cuda12*` on a login node with no GPU
    -> "__cuda =* *, which is missing on the system" (the maintainers point to
    CONDA_OVERRIDE_CUDA); on the cluster's GPU node the same line "works"."""
    line = "micromamba install -c conda-forge pytorch libtorch=*=cuda12*"
    assert install_line.parse(line).conda.cuda_build
    assert install_line.parse(
        "conda install -c conda-forge pytorch==2.5.1=cuda126_py312h1"
    ).conda.cuda_build
    assert not install_line.parse("conda install -c conda-forge pytorch=2.5.1").conda.cuda_build
    login = judge(line, "2025-02-25", python="3.12", platform="linux")
    assert login.outcome == FAIL and checks(login, FAIL) == {"accelerator"}, text_of(login)
    assert "__cuda" in text_of(login) and "CONDA_OVERRIDE_CUDA" in text_of(login)
    node = judge(line, "2025-02-25", python="3.12", platform="linux", gpu="NVIDIA GPU")
    assert node.outcome == PASS, text_of(node)
    # Without the build string a GPU host stays unknown (conda may take the CPU build).
    plain = judge(
        "micromamba install -c conda-forge pytorch",
        "2025-02-25",
        python="3.12",
        platform="linux",
        gpu="NVIDIA GPU",
    )
    assert plain.outcome == UNKNOWN, text_of(plain)


# Round fifteen (issue 30, PASS-5): test12's disagreements and what round fourteen left


def test_pytorch_publishes_no_wheel_for_pypy():
    """compat-extra sources pypy: PyPI's torch files are CPython wheels only (cp27 ... cp315, no pp
    tag). https://github.com/pytorch/pytorch/issues/127181 (2024-05-25, an M1 with PyPy 7.3.11
    implementing Python 3.8.16): `pip3 install --pre torch torchvision torchaudio --extra-index-url
    https://download.pytorch.org/whl/nightly/cpu` -> "Could not find a version that satisfies the
    requirement torch (from versions: none)"."""
    text = (
        "pip3 install --pre torch torchvision torchaudio --extra-index-url "
        "https://download.pytorch.org/whl/nightly/cpu"
    )
    line = install_line.parse(text)
    day = date(2024, 5, 25)
    pypy = check_line(line, {}, "3.8", "macos", machine="arm64", as_of=day, implementation="pypy")
    assert pypy.outcome == FAIL and checks(pypy, FAIL) == {"python"}, text_of(pypy)
    assert "PyPy (3.8)" in text_of(pypy) and "CPython" in text_of(pypy)
    assert pypy.to_json()["outcome"] == FAIL
    # CPython on the same host gets the nightly; a Linux PyPy fails the same way.
    cpython = check_line(line, {}, "3.8", "macos", machine="arm64", as_of=day)
    assert cpython.outcome == PASS and "PyPy" not in text_of(cpython), text_of(cpython)
    linux = check_line(
        install_line.parse("pip install torch==2.3.0"), {}, "3.10", "linux", implementation="pypy"
    )
    assert linux.outcome == FAIL and "PyPy" in text_of(linux)
    # conda lines are not judged by it (conda-forge builds PyPy variants of some packages).
    conda = check_line(
        install_line.parse("conda install pytorch -c pytorch"),
        {},
        "3.9",
        "linux",
        implementation="pypy",
    )
    assert "PyPy" not in text_of(conda)


def test_an_arm64_python_reporting_macos_10_16_finds_no_torch_wheel():
    """compat-extra sources macos_arm64_tags: PyPI's macOS arm64 torch files are all tagged
    macosx_11_0_arm64 or later. https://github.com/pytorch/pytorch/issues/128939 (2024-06-18, an M1
    on macOS 14.5, Python 3.10.14 whose platform reads macOS-10.16-arm64): `pip3 install torch` ->
    "from versions: none"; https://github.com/pytorch/pytorch/issues/75534 (2022-04-08, Python
    3.8.12, the same platform): `python -m pip install torch` -> the same."""
    for text, python, day in (
        ("pip3 install torch", "3.10", date(2024, 6, 18)),
        ("python -m pip install torch", "3.8", date(2022, 4, 8)),
    ):
        line = install_line.parse(text)
        old = check_line(line, {}, python, "macos", machine="arm64", as_of=day, macos="10.16")
        assert old.outcome == FAIL and checks(old, FAIL) == {"platform"}, text_of(old)
        assert "macOS 10.16" in text_of(old) and "macosx_11_0_arm64" in text_of(old)
        for macos in ("14.5", None):
            new = check_line(line, {}, python, "macos", machine="arm64", as_of=day, macos=macos)
            assert new.outcome == PASS and "10.16" not in text_of(new), text_of(new)
    # An Intel Mac's Python reporting 10.16 is not judged by it (x86_64 wheels: macosx_10_9).
    intel = check_line(
        install_line.parse("pip install torch==2.2.0"), {}, "3.10", "macos", macos="10.16"
    )
    assert "10.16" not in text_of(intel)
    # conda lines are not judged by it.
    conda = check_line(
        install_line.parse("conda install pytorch -c pytorch"),
        {},
        "3.10",
        "macos",
        machine="arm64",
        macos="10.16",
    )
    assert "10.16" not in text_of(conda)


def test_a_dated_conda_nightly_pin_is_unknown_not_refused():
    """https://github.com/pytorch/pytorch/issues/64906 (2021-09-13): `conda install -yq
    pytorch=1.10.0.dev20210911 cudatoolkit=10.2 -c pytorch-nightly` -> PackagesNotFoundError on
    Linux (that day's build was missing). conda's `=X` is a prefix match, which PEP 440 has not for a
    dev release: the spec is that day's builds; which days the channel kept is not in the facts."""
    text = "conda install -yq pytorch=1.10.0.dev20210911 cudatoolkit=10.2 -c pytorch-nightly"
    line = install_line.parse(text)
    assert line.conda.spec == "==1.10.0.dev20210911"
    result = check_line(line, {}, "3.8", "linux", as_of=date(2021, 9, 13))
    assert result.outcome == UNKNOWN and checks(result, UNKNOWN) == {"install"}, text_of(result)
    assert "1.10.0.dev20210911" in text_of(result) and "days" in text_of(result)
    # An undated nightly line from the same channel is still judged from the facts.
    plain = check_line(
        install_line.parse("conda install pytorch cudatoolkit=10.2 -c pytorch-nightly"),
        {},
        "3.8",
        "linux",
        as_of=date(2021, 9, 13),
    )
    assert "days" not in text_of(plain), text_of(plain)


def test_the_torch_nightly_package_name_was_gone_by_august_2019():
    """compat-extra pip_torch_nightly: the 1.0 preview's pip nightly package was torch_nightly
    (horovod/horovod#473); by 2019-08-20 the nightly pages served torch X.Y.Z.devYYYYMMDD
    (https://github.com/aiqm/torchani/pull/294). https://github.com/fastai/course-v3/issues/561
    (2020-08-14, Colab): `pip install torch_nightly -f
    https://download.pytorch.org/whl/nightly/cu101/torch_nightly.html` -> "Could not find a version
    that satisfies the requirement torch_nightly (from versions: none)"."""
    text = "pip install torch_nightly -f https://download.pytorch.org/whl/nightly/cu101/torch_nightly.html"
    line = install_line.parse(text)
    assert line.torch is None and line.torch_nightly is not None
    late = check_line(line, {}, "3.6", "linux", as_of=date(2020, 8, 14))
    assert late.outcome == FAIL and checks(late, FAIL) == {"install"}, text_of(late)
    assert "torch_nightly" in text_of(late) and "devYYYYMMDD" in text_of(late)
    assert check_line(line, {}, "3.6", "linux").outcome == FAIL  # today's facts
    early = check_line(line, {}, "3.6", "linux", as_of=date(2018, 12, 1))
    assert early.outcome == UNKNOWN, text_of(early)
    # The same page with the name torch is judged as before (the course's next cell ran).
    torch = check_line(
        install_line.parse(text.replace("torch_nightly -f", "torch -f")),
        {},
        "3.6",
        "linux",
        as_of=date(2020, 8, 14),
    )
    assert "torch_nightly package" not in text_of(torch), text_of(torch)


def test_the_rocm_wheels_of_1_8_to_1_10_hold_gfx900_906_908_kernels():
    """compat-facts-history sources builder_rocm_arches_1_8 (pytorch/builder build_rocm.sh on
    lts/release/1.8, release/1.9, release/1.10: rocBLAS libraries for gfx803/900/906/908 only,
    PYTORCH_ROCM_ARCH left to LoadHIP.cmake). https://github.com/ROCm/pytorch/issues/819
    (2021-04-20, a Vega 64, gfx900): `pip3 install torch -f
    https://download.pytorch.org/whl/rocm4.0.1/torch_stable.html` ran;
    https://github.com/ROCm/legacy-rocm-build/issues/1471 (2021-05-15, an RX 580, gfx803):
    torch==1.8.1+rocm4.0.1 -> "hipErrorNoBinaryForGpu: Coudn't find binary for current devices!"."""
    vega = host_properties(
        {"python": "3.8", "gpu": "AMD Radeon RX Vega 64", "gpu_vendor": "amd", "gfx": "gfx900"}
    )
    line = install_line.parse(
        "pip3 install torch -f https://download.pytorch.org/whl/rocm4.0.1/torch_stable.html"
    )
    ran = check_line(line, vega, "3.8", "linux", as_of=date(2021, 4, 20))
    assert ran.outcome == PASS and "gfx900 is in the wheel's gfx list" in text_of(ran), text_of(ran)
    rx580 = host_properties(
        {"python": "3.8", "gpu": "Radeon RX 580", "gpu_vendor": "amd", "gfx": "gfx803"}
    )
    pinned = install_line.parse(
        "pip install torch==1.8.1+rocm4.0.1 -f https://download.pytorch.org/whl/torch_stable.html"
    )
    failed = check_line(pinned, rx580, "3.8", "linux", as_of=date(2021, 5, 15))
    assert failed.outcome == FAIL and "gfx803 is not in the wheel's gfx list" in text_of(failed)
