"""Issue 32 item 2: the venv lane's environment cache (``repro.envs.cache``) verifies what it
finds. Real uv makes real environments (a tiny wheel built here, offline from a find-links
directory); a planted interpreter, an added distribution, a half-built environment, a dangling
lock link and a symlinked key are each tried against the real code. The slow tests run the real
``repro venv-run``: a planted ``bin/python`` never runs, and ``kill -9`` of the command leaves no
uv process (uv waits on a local index that accepts connections and never answers)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import REPO, cli_env, run_cli
from test_package_cache import _wheel

from repro.envs import cache, manifest
from repro.envs.spec import EnvSpec, Source
from repro.errors import FatalError

PLANTED = "#!/bin/sh\ntouch {marker}\nexit 0\n"


@pytest.fixture
def spec(tmp_path) -> EnvSpec:
    _wheel(tmp_path / "wheels")
    return EnvSpec(
        python=sys.executable,
        pinned=("reprotiny==1.0",),
        source=Source(find_links=(str(tmp_path / "wheels"),), no_index=True),
        project_root=str(REPO),
        project_version="test",
    )


def _ensure(spec: EnvSpec, root: Path) -> tuple[cache.Env, list[str]]:
    said: list[str] = []
    return cache.ensure_env(spec, root=root, say=said.append), said


def _plant_python(env: cache.Env, marker: Path) -> None:
    python = Path(env.python)
    python.unlink()  # a symlink to the base interpreter in a uv environment
    python.write_text(PLANTED.format(marker=marker))
    python.chmod(0o755)


def test_a_new_environment_records_its_manifest_and_is_reused(spec, tmp_path):
    env, said = _ensure(spec, tmp_path / "envs")
    assert not env.reused and env.versions == {"reprotiny": "1.0"}
    recorded = env.record["manifest"]
    assert recorded["interpreter"]["path"] == os.path.realpath(env.python)
    assert recorded["interpreter"]["sha256"].startswith("sha256:")
    assert "reprotiny-1.0.dist-info" in recorded["distributions"]
    assert cache.PTH_NAME in recorded["pth"]
    again, _ = _ensure(spec, tmp_path / "envs")
    assert again.reused and again.path == env.path


def test_a_replaced_interpreter_never_runs_and_the_environment_is_made_again(spec, tmp_path):
    root = tmp_path / "envs"
    env, _ = _ensure(spec, root)
    marker = tmp_path / "planted-ran"
    _plant_python(env, marker)
    again, said = _ensure(spec, root)
    assert not again.reused and not marker.exists()
    assert any("its interpreter now leads to" in line for line in said), said
    (moved,) = root.glob(f"{env.key}.moved-*")
    assert "touch" in (moved / "bin" / "python").read_text()  # kept for the user, not deleted
    assert manifest.verify(again.path, again.record) is None
    done = subprocess.run([again.python, "-c", "import reprotiny; print(reprotiny.VALUE)"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.stdout.strip() == "real" and not marker.exists()


@pytest.mark.parametrize("change", ["distribution", "pth", "half_built"])
def test_a_changed_or_half_built_environment_is_moved_aside(spec, tmp_path, change):
    root = tmp_path / "envs"
    env, _ = _ensure(spec, root)
    site = env.path / env.record["manifest"]["site_packages"]
    if change == "distribution":
        (site / "evil-6.6.dist-info").mkdir()
        (site / "evil-6.6.dist-info" / "RECORD").write_text("")
        expected = "installed distributions differ from its manifest (added evil-6.6.dist-info)"
    elif change == "pth":
        (site / "zz-evil.pth").write_text("import os\n")
        expected = ".pth files differ from its manifest (added zz-evil.pth)"
    else:
        (env.path / cache.RECORD).unlink()  # killed before the record was written
        expected = "no readable record"
    again, said = _ensure(spec, root)
    assert not again.reused
    assert any(expected in line for line in said), said
    assert len(list(root.glob(f"{env.key}.moved-*"))) == 1


def test_a_dangling_lock_link_creates_nothing_outside_the_cache(spec, tmp_path):
    root = tmp_path / "envs"
    root.mkdir()
    outside = tmp_path / "outside" / "victim"
    outside.parent.mkdir()
    lock = root / f"{spec.key()}.lock"
    lock.symlink_to(outside)
    env, _ = _ensure(spec, root)
    assert not env.reused and env.versions == {"reprotiny": "1.0"}
    assert list(outside.parent.iterdir()) == []  # nothing created through the link
    assert lock.is_file() and not lock.is_symlink()


def test_a_symlinked_environment_key_is_refused_naming_it(spec, tmp_path):
    root = tmp_path / "envs"
    root.mkdir()
    target = tmp_path / "elsewhere"
    (target / "bin").mkdir(parents=True)
    (target / "keep.txt").write_text("mine")
    (root / spec.key()).symlink_to(target, target_is_directory=True)
    with pytest.raises(FatalError, match=rf"{root / spec.key()} is a symbolic link .*refused"):
        _ensure(spec, root)
    assert (target / "keep.txt").read_text() == "mine" and (root / spec.key()).is_symlink()


# -- the real CLI ------------------------------------------------------------------------------


def _torch_wheels() -> str:
    from test_venv_lane import _torch_wheel_dir

    wheels = _torch_wheel_dir()
    if wheels is None:
        pytest.skip("no torch-2.13.0+cpu wheel in a find-links directory here")
    return wheels


@pytest.mark.slow
def test_venv_run_never_runs_a_planted_interpreter_and_makes_the_environment_again(tmp_path):
    wheels = _torch_wheels()
    envs, results = tmp_path / "envs", tmp_path / "results"
    base = [
        "venv-run", "cpu-torch2.13", "--config", str(REPO / "matrix.yaml"),
        "--find-links", wheels, "--index-url", "https://pypi.org/simple",
        "--env-python", sys.executable, "--env-cache", str(envs),
        "-k", "losses[device=cpu,case=normal", "--results-dir", str(results), "--", "--no-doctor",
    ]  # fmt: skip
    first = run_cli(*base, cwd=tmp_path, timeout=900)
    assert first.returncode in (0, 1) and " made in " in first.stderr, first.stderr[-3000:]
    (env_dir,) = [p for p in envs.iterdir() if p.is_dir() and len(p.name) == 20]
    marker = tmp_path / "planted-ran"
    python = env_dir / "bin" / "python"
    python.unlink()
    python.write_text(PLANTED.format(marker=marker))
    python.chmod(0o755)
    second = run_cli(*base, cwd=tmp_path, timeout=900)
    assert second.returncode in (0, 1), second.stderr[-3000:]
    assert (
        "not used: its interpreter now leads to" in second.stderr and " made in " in second.stderr
    )
    assert not marker.exists()
    assert len(list(results.glob("*/junit.xml"))) == 2  # the second run ran, in the new env


def _index_that_never_answers() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)  # connections wait in the backlog; nothing is ever sent
    return server


@pytest.mark.slow
def test_kill_9_of_venv_run_leaves_no_uv_process(tmp_path):
    server = _index_that_never_answers()
    port = server.getsockname()[1]
    env = {**cli_env(), "UV_HTTP_TIMEOUT": "600", "UV_NO_CACHE": "1"}
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_FIND_LINKS", "REPRO_WHEELHOUSE"):
        env.pop(name, None)
    command = [
        sys.executable, "-m", "repro", "venv-run", "cpu-torch2.13",
        "--config", str(REPO / "matrix.yaml"), "--index-url", f"http://127.0.0.1:{port}/simple",
        "--env-python", sys.executable, "--env-cache", str(tmp_path / "envs"), "-k", "losses",
    ]  # fmt: skip
    uv: list[psutil.Process] = []
    runner = subprocess.Popen(command, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not uv and time.monotonic() < deadline:  # uv waiting on the index: mid-install
            time.sleep(0.2)
            for proc in psutil.Process(runner.pid).children(recursive=True):
                try:
                    if "install" in proc.cmdline() and proc.name() == "uv":
                        uv.append(proc)
                except psutil.Error:
                    pass
        assert uv, "uv pip install never started: " + runner.stderr.read1().decode()[-2000:]
        time.sleep(0.5)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        _gone, alive = psutil.wait_procs(uv, timeout=10)
        assert alive == [], [p.cmdline() for p in alive]
        key_dirs = [p for p in (tmp_path / "envs").iterdir() if len(p.name) == 20]
        record = [p / cache.RECORD for p in key_dirs if (p / cache.RECORD).exists()]
        assert record == []  # half-built: the next run moves it aside and makes it again
    finally:
        runner.kill()
        for proc in uv:  # a uv that outlived the test must not outlive the suite
            with contextlib.suppress(psutil.Error):
                proc.kill()
        server.close()


def test_the_record_of_a_finished_environment_is_json_with_the_manifest_last(spec, tmp_path):
    env, _ = _ensure(spec, tmp_path / "envs")
    record = json.loads((env.path / cache.RECORD).read_text())
    assert record["manifest"] == manifest.collect(env.path, record["manifest"]["site_packages"])
