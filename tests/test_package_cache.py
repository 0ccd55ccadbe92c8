"""Issue 25 item 2: the package cache (``repro.scenarios._packages``) trusts only what it
published. Real pip installs a tiny wheel built here from an offline wheelhouse; planted
entries, symlinked locks, stale partial directories, a cache writable by others, a killed caller
and a read-only or full cache are each tried against the real code."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import psutil
import pytest
from conftest import cli_env

from repro.scenarios import _packages

REQ = "reprotiny==1.0"


def _wheel(folder: Path, payload: bytes = b"") -> Path:
    """A minimal valid pure-Python wheel ``reprotiny 1.0`` (``VALUE = 'real'``), plus an optional
    data file of ``payload`` bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "reprotiny-1.0-py3-none-any.whl"
    info = "reprotiny-1.0.dist-info"
    files = {
        "reprotiny/__init__.py": b"VALUE = 'real'\n",
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: reprotiny\nVersion: 1.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    if payload:
        files["reprotiny/blob.bin"] = payload
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", record)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    _wheel(tmp_path / "wheels")
    monkeypatch.setenv("REPRO_WHEELHOUSE", str(tmp_path / "wheels"))
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _import_value(installed: _packages.Installed) -> str:
    """``reprotiny.VALUE`` as a fresh interpreter with the entry on PYTHONPATH sees it."""
    done = subprocess.run(
        [sys.executable, "-c", "import reprotiny; print(reprotiny.VALUE)"],
        env=_packages.child_env(installed),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _plant(entry: Path, marker: Path) -> None:
    """Code that would prove it ran by creating ``marker``."""
    (entry / "reprotiny").mkdir(parents=True, exist_ok=True)
    (entry / "reprotiny" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nVALUE = 'planted'\n"
    )


def test_an_installed_entry_is_verified_and_reused(cache):
    first = _packages.ensure([REQ], timeout_s=120)
    assert not first.cached and _import_value(first) == "real"
    recorded = json.loads((first.path / "repro-packages.json").read_text())
    assert recorded["version"] == _packages.MANIFEST_VERSION
    assert recorded["files"]["reprotiny/__init__.py"].startswith("sha256:")
    again = _packages.ensure([REQ], timeout_s=120)
    assert again.cached and again.path == first.path


def test_a_planted_entry_is_refused_and_reinstalled_its_code_never_run(cache, tmp_path):
    marker = tmp_path / "planted-code-ran"
    entry = cache / _packages.cache_key([REQ], str(tmp_path / "wheels"))
    _plant(entry, marker)  # the plant: the old completion marker, no hashes
    (entry / "repro-packages.json").write_text(
        json.dumps({"requirements": [REQ], "source": str(tmp_path / "wheels")})
    )
    installed = _packages.ensure([REQ], timeout_s=120)
    assert not installed.cached and installed.path == entry
    assert _import_value(installed) == "real"
    assert not marker.exists()
    assert sorted(p.name for p in cache.iterdir()) == [entry.name, f"{entry.name}.lock"]


@pytest.mark.slow
def test_an_entry_changed_after_publication_is_refused_and_reinstalled(cache, tmp_path):
    marker = tmp_path / "planted-code-ran"
    published = _packages.ensure([REQ], timeout_s=120)
    _plant(published.path, marker)  # same files, other content: the manifest's hash differs
    assert "differ from its manifest" in _packages.verify(
        published.path, (REQ,), str(tmp_path / "wheels")
    )
    again = _packages.ensure([REQ], timeout_s=120)
    assert not again.cached and _import_value(again) == "real" and not marker.exists()
    (again.path / "reprotiny" / "extra.py").write_text("")  # a file added is refused too
    assert "differ" in _packages.verify(again.path, (REQ,), str(tmp_path / "wheels"))


@pytest.mark.parametrize("where", ["repro-packages.json", "reprotiny/__init__.py"])
@pytest.mark.slow
def test_a_fifo_in_an_entry_is_refused_never_read(cache, tmp_path, where):
    """A FIFO as the manifest or as a file of the entry: reading it would wait forever."""
    published = _packages.ensure([REQ], timeout_s=120)
    (published.path / where).unlink()
    os.mkfifo(published.path / where)
    reason = _packages.verify(published.path, (REQ,), str(tmp_path / "wheels"))
    assert reason is not None and ("FIFO" in reason or "differ" in reason), reason
    again = _packages.ensure([REQ], timeout_s=120)
    assert not again.cached and _import_value(again) == "real"


def test_a_symlinked_lock_is_not_followed(cache, tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    cache.mkdir(mode=0o700)
    key = _packages.cache_key([REQ], str(tmp_path / "wheels"))
    (cache / f"{key}.lock").symlink_to(victim)
    installed = _packages.ensure([REQ], timeout_s=120)
    assert _import_value(installed) == "real"
    assert victim.read_text() == "keep me"
    lock = cache / f"{key}.lock"
    assert lock.is_file() and not lock.is_symlink()


def test_a_cache_writable_by_others_is_refused_with_the_reason(cache):
    cache.mkdir()
    cache.chmod(0o777)
    with pytest.raises(_packages.CacheRefused, match=r"writable by others \(mode 777\)"):
        _packages.ensure([REQ], timeout_s=120)
    assert list(cache.iterdir()) == []


def test_stale_partials_are_removed_and_a_live_installers_partial_is_kept(cache, tmp_path):
    cache.mkdir(mode=0o700)
    key = _packages.cache_key([REQ], str(tmp_path / "wheels"))
    dead = cache / f"{key}.partial-999999"
    (dead / "big").mkdir(parents=True)
    other_dead = cache / "other-key.partial-4"
    other_dead.mkdir()
    busy = cache / "busy-key.partial-5"
    busy.mkdir()
    holder = subprocess.Popen(  # another installer holds busy-key's lock
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(cache / "busy-key.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        _packages.ensure([REQ], timeout_s=120)
        assert not dead.exists() and not other_dead.exists()
        assert busy.exists()
    finally:
        holder.kill()
        holder.wait()


def test_pips_generic_exception_line_gets_its_cause():
    # pip 24's report of a full disk during install (as in pypa/pip#11620's log)
    output = (
        "ERROR: Exception:\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/pip/_internal/cli/base_command.py", line 180\n'
        "    status = self.run(options, args)\n"
        "OSError: [Errno 28] No space left on device\n"
    )
    assert _packages.first_error_line(output) == (
        "ERROR: Exception: OSError: [Errno 28] No space left on device"
    )
    assert _packages.first_error_line("ERROR: No matching distribution\n") == (
        "ERROR: No matching distribution"
    )


def _in_own_mount(script: str, options: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``script`` (Python) with ``$REPRO_CACHE`` on a tmpfs mounted with ``options`` in a
    private mount namespace; skips where that needs privileges this machine lacks."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to mount a tmpfs")
    mount = tmp_path / "mnt"
    mount.mkdir()
    shell = f'mount -t tmpfs -o {options} tmpfs "{mount}" && exec "{sys.executable}" -c "$0"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", shell, script],
        env={
            **cli_env(),
            "REPRO_CACHE": str(mount / "cache"),
            "REPRO_WHEELHOUSE": os.environ["REPRO_WHEELHOUSE"],
        },  # fmt: skip
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(done.stderr.strip())
    return done


_REPORT = (
    "from repro.scenarios import _packages as p\n"
    "try:\n    p.ensure(['reprotiny==1.0'], timeout_s=60); print('installed')\n"
    "except p.CacheRefused as e:\n    print('refused:', e)\n"
)


def test_a_read_only_cache_is_refused_with_the_errno_text(cache, tmp_path):
    done = _in_own_mount(_REPORT, "ro,size=1m", tmp_path)
    assert "refused: package cache" in done.stdout, done.stdout + done.stderr
    assert "Read-only file system (EROFS)" in done.stdout


@pytest.mark.slow
def test_a_full_cache_is_refused_with_the_errno_text(cache, tmp_path, monkeypatch):
    _wheel(tmp_path / "big-wheels", payload=os.urandom(600_000))
    monkeypatch.setenv("REPRO_WHEELHOUSE", str(tmp_path / "big-wheels"))
    done = _in_own_mount(_REPORT, "size=256k", tmp_path)
    assert "refused: package cache" in done.stdout, done.stdout + done.stderr
    assert "No space left on device" in done.stdout


@pytest.mark.slow
def test_the_installer_dies_with_its_caller(tmp_path):
    """pip waiting on an index that never answers; the caller is SIGKILLed; pip must follow."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)  # accepts connections in the backlog, never answers
    port = server.getsockname()[1]
    env = {
        **cli_env(),
        "REPRO_CACHE": str(tmp_path / "cache"),
        "PIP_INDEX_URL": f"http://127.0.0.1:{port}/simple",
        "PIP_CONFIG_FILE": os.devnull,
    }
    env.pop("REPRO_WHEELHOUSE", None)
    caller = subprocess.Popen(
        [sys.executable, "-c", "from repro.scenarios import _packages as p; p.ensure(['x==1'])"],
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        pip = []
        while not pip and time.monotonic() < deadline:
            time.sleep(0.2)
            pip = psutil.Process(caller.pid).children(recursive=True)
        assert pip, "pip never started"
        time.sleep(1.0)  # let the launcher reach the prctl
        caller.send_signal(signal.SIGKILL)
        caller.wait()
        _gone, alive = psutil.wait_procs(pip, timeout=10)
        assert alive == []
    finally:
        caller.kill()
        server.close()
