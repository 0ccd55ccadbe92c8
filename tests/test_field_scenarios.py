"""Issue 14 "closer to the field": real wandb across releases in ``fork_safety`` and DDP as the
field runs it (world size, loader workers, rank-0-only logging), through the real CLI.

The wandb releases come from the package index (or ``$REPRO_WHEELHOUSE``) into the user's package
cache; a test that cannot install them is skipped with pip's error, never passed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cases_by_name, cli_env, only_run_dir, write_matrix

from repro import config as matrix
from repro import scenarios
from repro.model import Fingerprint
from repro.scenarios import _packages


def _run(project: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "repro", "run", "--no-doctor", *args],
        cwd=project,
        env={**cli_env(), **extra_env},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def _verdicts(project: Path) -> tuple[Path, dict]:
    run_dir = only_run_dir(project / "results")
    return run_dir, cases_by_name(run_dir / "junit.xml")


# -- the grids -------------------------------------------------------------------------------------


def test_wandb_releases_are_an_axis_of_the_wandb_modes_only():
    ids = {c.case_id for c in scenarios.expand("fork_safety")}
    assert "fork_safety[start_method=fork,mode=wandb,wandb=0.27.2]" in ids
    assert "fork_safety[start_method=fork,mode=wandb_thread,wandb=0.31.0]" in ids
    assert "fork_safety[start_method=forkserver,mode=wandb,wandb=0.27.2]" in ids  # the fix
    assert "fork_safety[start_method=fork]" in ids  # other modes keep their ids
    assert not any("wandb=none" in i or i.endswith("mode=wandb]") for i in ids)
    assert not any("spawn,mode=wandb" in i or "forkserver,mode=wandb_thread" in i for i in ids)


def test_ddp_faults_run_at_one_point_of_the_grid_and_gpu_cases_require_enough_gpus():
    cases = {c.case_id: c for c in scenarios.expand("ddp")}
    gloo = {i for i in cases if "gloo" in i}
    assert gloo == {
        "ddp[backend=gloo,world_size=1,workers=0]",
        "ddp[backend=gloo,world_size=1,workers=2]",
        "ddp[backend=gloo,world_size=2,workers=0]",
        "ddp[backend=gloo,world_size=2,workers=0,fault=masked_segfault]",
        "ddp[backend=gloo,world_size=2,workers=0,fault=port_in_use]",
        "ddp[backend=gloo,world_size=2,workers=0,fault=rank_raises]",
        "ddp[backend=gloo,world_size=2,workers=2]",
        # srun launchers (issue 33): without a fault, without loader workers; the two
        # mistakes at the fault world size
        "ddp[backend=gloo,world_size=1,workers=0,launcher=srun]",
        "ddp[backend=gloo,world_size=2,workers=0,launcher=srun]",
        "ddp[backend=gloo,world_size=2,workers=0,launcher=srun_torchrun]",
        "ddp[backend=gloo,world_size=2,workers=0,launcher=srun_ntasks_missing]",
    }
    assert cases["ddp[backend=nccl,world_size=2,workers=2]"].requires == ("gpus>=2",)
    assert cases["ddp[backend=nccl,world_size=1,workers=0,fault=oom_halving]"].requires == (
        "accelerator",
    )
    wide = scenarios.expand("ddp", params={"backend": ["nccl"], "world_size": [1, 2, 4, 8]})
    assert {c.requires for c in wide if c.param_dict["world_size"] == 8} == {("gpus>=8",)}
    # The CPU host gets a reason for the GPU-only OOM path, not silence.
    fingerprint = {"runtime": {"torch": "2.13.0+cpu", "accelerator_count": 0}}
    oom = cases["ddp[backend=nccl,world_size=1,workers=0,fault=oom_halving]"]
    assert "no CUDA/ROCm device" in scenarios.skip_reason(
        oom.requires, Fingerprint.from_json(fingerprint)
    )


def test_matrix_yaml_expects_the_wandb_hang_and_nothing_for_the_fixed_release():
    config = matrix.load(REPO / "matrix.yaml")
    ids = {c.case_id for s in config.scenarios for c in s.cases() if s.name == "fork_safety"}

    def covering(case_id: str) -> list:
        return [
            e
            for e in config.expectations
            if e.matches(scenario="fork_safety", case=case_id, variant="cpu-torch2.13", host="h")
        ]

    for case_id in (
        "fork_safety[start_method=fork,mode=wandb,wandb=0.27.2]",
        "fork_safety[start_method=fork,mode=wandb_thread,wandb=0.27.2]",
    ):
        assert case_id in ids
        [entry] = covering(case_id)
        assert entry.expects("hung", "hang.wandb_fork_finalizer")
        assert "wandb/wandb/issues/12079" in entry.link
    assert covering("fork_safety[start_method=fork,mode=wandb,wandb=0.31.0]") == []


# -- the package cache ----------------------------------------------------------------------------


def test_a_failed_install_raises_pips_error_and_leaves_no_cache_entry(tmp_path, monkeypatch):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REPRO_WHEELHOUSE", str(wheelhouse))
    with pytest.raises(_packages.PackageInstallError) as raised:
        _packages.ensure(["wandb==0.27.2"], timeout_s=120)
    assert str(raised.value).startswith("ERROR:") and "wandb" in str(raised.value)
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")] == []


def test_cache_keys_separate_releases_sources_and_keep_the_name_readable():
    a = _packages.cache_key(["wandb==0.27.2"], None)
    assert a != _packages.cache_key(["wandb==0.31.0"], None)
    assert a != _packages.cache_key(["wandb==0.27.2"], "/srv/wheels")
    assert a.startswith(f"wandb-0.27.2-cp{sys.version_info.major}{sys.version_info.minor}-")


# -- real runs -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_wandb_case_is_skipped_with_pips_error_when_nothing_can_be_installed(project, tmp_path):
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    write_matrix(
        project,
        "fork_safety: {timeout_s: 60, params: {start_method: [fork], mode: [wandb], wandb: [0.27.2]}}\n",
    )
    done = _run(project, REPRO_WHEELHOUSE=str(empty), REPRO_CACHE=str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    _run_dir, cases = _verdicts(project)
    case, props = cases["fork_safety[start_method=fork,mode=wandb,wandb=0.27.2]"]
    assert props["repro.outcome"] == "skipped"
    assert case.result[0].message.startswith("cannot install wandb==0.27.2: ERROR:")


@pytest.mark.slow
def test_real_wandb_0_27_2_hangs_fork_workers_in_its_finalizer_and_0_31_0_passes(project):
    write_matrix(
        project,
        "fork_safety: {timeout_s: 60, params: {start_method: [fork], mode: [wandb], wandb: [0.27.2, 0.31.0]}}\n",
    )
    done = _run(project)
    run_dir, cases = _verdicts(project)
    old_case, old = cases["fork_safety[start_method=fork,mode=wandb,wandb=0.27.2]"]
    new_case, new = cases["fork_safety[start_method=fork,mode=wandb,wandb=0.31.0]"]
    for case, props in ((old_case, old), (new_case, new)):
        if props["repro.outcome"] == "skipped" and "cannot install" in case.result[0].message:
            pytest.skip(case.result[0].message)
    assert (old["repro.outcome"], old["repro.signature"]) == ("hung", "hang.wandb_fork_finalizer")
    assert old["wandb_version"] == "0.27.2" and old["repro.last_phase"] == "batch"
    assert "no heartbeat for" in old_case.result[0].message  # a stall, not the hard timeout
    log = (run_dir / old["repro.log"]).read_text()
    worker_dumps = log.split("pt_data_worker")[1:]
    assert worker_dumps and all("in api_cleanup_request" in dump for dump in worker_dumps)
    assert new["repro.outcome"] == "passed", (run_dir / new["repro.log"]).read_text()[-3000:]
    assert new["wandb_version"] == "0.31.0" and new["package_cache"] in ("hit", "miss")
    # The hang is the module's EXPECT (hung, hang.wandb_fork_finalizer): expected, so exit 0.
    assert done.returncode == 0, done.stderr[-3000:]
    assert "expected reproductions: 1" in done.stderr


@pytest.mark.slow
def test_ddp_one_rank_and_two_ranks_with_loader_workers_pass_on_cpu_with_gloo(project):
    write_matrix(project, "ddp: {timeout_s: 120, params: {backend: [gloo], fault: [none]}}\n")
    single, double = (
        "ddp[backend=gloo,world_size=1,workers=0]",
        "ddp[backend=gloo,world_size=2,workers=2]",
    )
    done = _run(project, "-k", single, "-k", double)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, cases = _verdicts(project)
    assert set(cases) == {single, double}
    for case_id, steps in ((single, "8.0"), (double, "4.0")):
        props = cases[case_id][1]
        assert props["repro.outcome"] == "passed"
        assert props["logging_ranks"] == "0" and props["metric.rank0_logged_steps"] == steps
    log = (run_dir / cases[double][1]["repro.log"]).read_text()
    assert "RANK=1 LOCAL_RANK=1 WORLD_SIZE=2" in log
    assert "rank 1: DDP step ok, 4 steps, 2 loader workers" in log


def test_every_ddp_and_fork_safety_expectation_still_names_a_case_of_the_grid():
    config = matrix.load(REPO / "matrix.yaml")
    ids = [c.case_id for s in config.scenarios for c in s.cases()]
    for entry in config.expectations:
        if entry.case.startswith(("ddp[", "fork_safety[")):
            assert any(matrix.glob_match(entry.case, case_id) for case_id in ids), entry.label
