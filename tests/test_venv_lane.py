"""The venv lane: the environment's content key, uv's command lines and failure reasons, the
``variant.lane`` property, and (slow) a real uv environment with the torch 2.13.0+cpu wheel
running ``-k losses`` through ``repro venv-run``, reused on the second run, shown by ``repro
report`` with its lane."""

from __future__ import annotations

import dataclasses
import glob
import os

import pytest
from conftest import REPO, host_has_nvidia_gpu, run_cli
from junitparser import JUnitXml

from repro.envs import uv
from repro.envs.spec import EnvSpec, Source
from repro.model import Fingerprint, Variant

SPEC = EnvSpec(
    python="3.11",
    pinned=("torch==2.13.0",),
    source=Source(index_url="https://download.pytorch.org/whl/cpu"),
    project_requirements=("pyyaml>=6",),
    project_root="/src",
    project_version="0.1.0",
)


def test_key_changes_with_every_field_and_nothing_else():
    assert SPEC.key() == dataclasses.replace(SPEC).key()
    others = [
        dataclasses.replace(SPEC, python="3.12"),
        dataclasses.replace(SPEC, pinned=("torch==2.14.1",)),
        dataclasses.replace(
            SPEC, source=Source(index_url="https://download.pytorch.org/whl/cu128")
        ),
        dataclasses.replace(SPEC, source=Source(find_links=("/wh",), no_index=True)),
        dataclasses.replace(SPEC, project_version="0.2.0"),
        dataclasses.replace(SPEC, project_root="/other"),
        dataclasses.replace(SPEC, project_requirements=("pyyaml>=7",)),
    ]
    assert len({SPEC.key(), *(o.key() for o in others)}) == len(others) + 1


def test_pinned_come_from_their_index_and_the_project_from_the_default_one():
    cmds = uv.commands("uv", "3.11", "/e", ["torch==2.13.0"], SPEC.source, ["pyyaml>=6"])
    assert cmds.venv == ["uv", "venv", "--quiet", "--python", "3.11", "/e"]
    assert cmds.pinned[-3:] == [
        "--index-url",
        "https://download.pytorch.org/whl/cpu",
        "torch==2.13.0",
    ]
    assert "--index-url" not in cmds.project and cmds.project[-1] == "pyyaml>=6"
    offline = Source(find_links=("/wh",), no_index=True)
    cmds = uv.commands("uv", "3.11", "/e", ["torch==2.13.0"], offline, ["pyyaml>=6"])
    for command in (cmds.venv, cmds.pinned, cmds.project):
        assert "--offline" in command
    assert cmds.project[-4:] == ["--no-index", "--find-links", "/wh", "pyyaml>=6"]


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        # uv 0.13 messages seen on this project's host (issue 24)
        (
            "error: No solution found when resolving dependencies\n  cause: Because "
            "reprobisectdemo==1.4 requires Python >=4 and you require reprobisectdemo==1.4, we "
            "can conclude that your requirements are unsatisfiable.",
            uv.NO_WHEEL_FOR_PYTHON,
        ),
        (
            "error: Request failed after 3 retries in 8.7s\n  cause: Failed to download "
            "`https://github.com/astral-sh/python-build-standalone/releases/download/20261110/"
            "cpython-3.12.16%2B20261110-x86_64-unknown-linux-gnu-install_only_stripped.tar.gz`",
            uv.NO_PYTHON,
        ),
        (
            "error: Request failed after 3 retries in 6.4s\n  cause: Failed to fetch: "
            "https://download.pytorch.org/whl/cpu/torch/\n  cause: dns error",
            uv.INDEX_UNREACHABLE,
        ),
        (
            "error: Because there is no version of torch==2.99.0 and you require "
            "torch==2.99.0, we can conclude that your requirements are unsatisfiable.",
            uv.NO_VERSION,
        ),
        ("error: something new", uv.INSTALL_FAILED),
    ],
)
def test_uv_failures_are_named(output, reason):
    assert uv.classify_failure(output) == reason


def _torch_wheel_dir() -> str | None:
    """A directory holding the torch 2.13.0 CPU wheel for this Python (pip's find-links)."""
    for directory in filter(None, [os.environ.get("PIP_FIND_LINKS"), "/opt/wheels"]):
        if glob.glob(os.path.join(directory, "torch-2.13.0+cpu-*.whl")):
            return directory
    return None


@pytest.mark.slow
def test_venv_lane_runs_losses_with_its_own_torch_and_reuses_the_environment(tmp_path):
    wheels = _torch_wheel_dir()
    if wheels is None:
        pytest.skip("no torch-2.13.0+cpu wheel in a find-links directory here")
    results = tmp_path / "results"
    base = [
        "venv-run", "cpu-torch2.13", "--config", str(REPO / "matrix.yaml"),
        "--find-links", wheels, "--index-url", "https://pypi.org/simple",
        "--env-python", "3.11", "--env-cache", str(tmp_path / "envs"),
        "-k", "losses[device=cpu", "--results-dir", str(results), "--", "--no-doctor",
    ]  # fmt: skip
    first = run_cli(*base, cwd=tmp_path, timeout=900)
    assert first.returncode in (0, 1), first.stderr[-3000:]
    assert " made in " in first.stderr
    second = run_cli(*base, cwd=tmp_path, timeout=900)
    assert " reused in " in second.stderr, second.stderr[-2000:]
    runs = sorted(results.glob("*/junit.xml"))
    assert len(runs) == 2
    for run in runs:
        xml = JUnitXml.fromfile(str(run))
        suite = next(iter(xml))
        props = {p.name: p.value for p in suite.properties()}
        assert props["variant.lane"] == "venv" and props["variant.id"] == "cpu-torch2.13"
        assert props["runtime.torch"] == "2.13.0+cpu"
        assert len(props["variant.env_key"]) == 20
        cases = [c for s in xml for c in s]
        assert len(cases) == 6 and all("device=cpu" in c.name for c in cases)
    report = run_cli(
        "report", str(results), "-o", str(tmp_path / "out"), "--no-coverage", cwd=tmp_path
    )
    assert report.returncode in (0, 1), report.stderr
    assert "cpu-torch2.13 (venv)" in (tmp_path / "out" / "matrix.md").read_text()


def test_host_lane_runs_are_marked_host(tmp_path):
    from repro.runner import job

    options = job.ResolvedRun(python="python3")
    fp = Fingerprint.from_json({"host": {}, "runtime": {}})
    variant = Variant(
        id="cpu-torch2.13", runtime="cpu", torch="2.13.0", accelerator="cpu", source="host"
    )
    ctx = job.run_context(options, fp, variant, "r", tmp_path, {})
    assert ctx.suite_properties["variant.lane"] == "host"
    inside = Fingerprint.from_json({"host": {}, "runtime": {}, "container": {"os": "x"}})
    ctx = job.run_context(options, inside, variant, "r", tmp_path, {})
    assert ctx.suite_properties["variant.lane"] == "container"
    ctx = job.run_context(options, fp, variant, "r", tmp_path, {"variant.lane": "venv"})
    assert ctx.suite_properties["variant.lane"] == "venv"


def test_dry_run_prints_the_run_command_and_makes_nothing(tmp_path):
    done = run_cli(
        "venv-run", "cpu-torch2.13", "--config", str(REPO / "matrix.yaml"), "--dry-run",
        "--env-cache", str(tmp_path / "envs"), "-k", "losses", "--", "-j", "1", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--property variant.lane=venv" in done.stdout and done.stdout.rstrip().endswith(
        "-k losses -j 1"
    )
    assert "torch==2.13.0" in done.stderr and not (tmp_path / "envs").exists()


HOSTS = REPO / "tests" / "fixtures" / "hosts"


@pytest.mark.parametrize(
    ("host", "cuda", "rocm"),
    [
        ("cpu", "this host has no NVIDIA GPU (host kind cpu)", "no AMD GPU"),
        ("nvidia-linux", None, "no AMD GPU"),
        ("nvidia-linux-driver-broken", None, "no AMD GPU"),  # broken driver: cases stay red
        ("nvidia-wsl2", None, "no AMD GPU"),
        ("rocm-linux", "no NVIDIA GPU", None),
        ("rocm-wsl2", "no NVIDIA GPU", None),
    ],
)
def test_a_host_without_the_variants_gpu_is_named_from_its_device_nodes(host, cuda, rocm):
    from repro.envs import lane

    root = HOSTS / host / "root"
    for accelerator, expected in (("cuda", cuda), ("rocm", rocm)):
        found = lane.missing_accelerator(accelerator, root)
        assert (found is None) == (expected is None), (accelerator, found)
        assert expected is None or expected in found
    assert lane.missing_accelerator("cpu", root) is None


def test_an_nvidia_gpu_whose_driver_did_not_load_still_expects_cuda(tmp_path):
    """No /dev/nvidia* (the kernel module failed to load) but an NVIDIA 3D controller on the
    PCI bus: the cuda cases must stay red, not be skipped."""
    from repro.envs import lane

    device = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:01:00.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x10de\n")
    (device / "class").write_text("0x030200\n")
    assert lane.missing_accelerator("cuda", tmp_path) is None
    (device / "class").write_text("0x068000\n")  # an NVIDIA bridge, not a GPU
    assert "no NVIDIA GPU" in lane.missing_accelerator("cuda", tmp_path)


def test_run_options_can_stop_expecting_the_accelerator(tmp_path):
    from repro.runner import job

    fp = Fingerprint.from_json({"host": {}, "runtime": {}})
    variant = Variant(
        id="cu130-torch2.14", runtime="cu130", torch="2.14.1", accelerator="cuda", source="matrix"
    )
    expected = job.run_context(job.ResolvedRun(python="p"), fp, variant, "r", tmp_path, {})
    assert expected.expect_accelerator
    options = job.ResolvedRun(python="p", expect_accelerator=False)
    assert not job.run_context(options, fp, variant, "r", tmp_path, {}).expect_accelerator


def test_dry_run_of_a_cuda_variant_on_a_host_without_nvidia_gpu_skips_its_cuda_cases(tmp_path):
    done = run_cli(
        "venv-run", "cu130-torch2.14", "--config", str(REPO / "matrix.yaml"), "--dry-run",
        "--env-cache", str(tmp_path / "envs"), "-k", "losses", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    skipping = "--no-expect-accelerator" in done.stdout
    assert skipping == (not host_has_nvidia_gpu())
    assert skipping == ("the cuda cases of cu130-torch2.14 are skipped" in done.stderr)


@pytest.mark.slow
def test_cuda_variant_on_a_host_without_nvidia_gpu_skips_its_cuda_cases_and_runs_the_cpu_ones(
    tmp_path,
):
    """A cu130 variant (here served by the 2.13.0+cpu wheel: its torch sees no GPU either) on
    this GPU-less host: the cuda cases are skipped with the reason, never failed as
    accelerator_unavailable (nothing on the host to blame), the cpu cases run. The +cpu build
    is not the variant's, so the run says so (--allow-variant-mismatch, issue 19)."""
    wheels = _torch_wheel_dir()
    if wheels is None or host_has_nvidia_gpu():
        pytest.skip("needs the torch-2.13.0+cpu wheel and a host without NVIDIA devices")
    results = tmp_path / "results"
    done = run_cli(
        "venv-run", "cu130-torch2.13", "--config", str(REPO / "matrix.yaml"), "--find-links", wheels,
        "--index-url", "https://pypi.org/simple", "--env-python", "3.11",
        "--env-cache", str(tmp_path / "envs"), "-k", "losses[*,case=normal,*",
        "--results-dir", str(results), "--", "--no-doctor", "--allow-variant-mismatch",
        cwd=tmp_path, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING: variant cu130-torch2.13" in done.stderr
    (run,) = results.glob("*/junit.xml")
    cases = {c.name: c for s in JUnitXml.fromfile(str(run)) for c in s}
    assert sorted(cases) == [
        "losses[device=cpu,case=normal,eps=0]",
        "losses[device=cuda,case=normal,eps=0]",
    ]
    cuda = cases["losses[device=cuda,case=normal,eps=0]"]
    assert [type(r).__name__ for r in cuda.result] == ["Skipped"]
    assert "no CUDA/ROCm device visible" in cuda.result[0].message
    assert cases["losses[device=cpu,case=normal,eps=0]"].is_passed
