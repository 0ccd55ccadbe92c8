"""Bounded tool runs: a hung tool and everything it started are killed, never waited on forever."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from repro import proctree


def test_run_bounded_returns_text_output_and_status():
    done = proctree.run_bounded(
        [
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
        ],
        timeout_s=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_run_bounded_kills_a_hung_tool_with_its_children(tmp_path):
    marker = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        proctree.run_bounded([sys.executable, "-c", script], timeout_s=3)
    assert time.monotonic() - started < 3 + proctree.KILL_GRACE_S + 5
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 5
    while (
        psutil.pid_exists(grandchild)
        and psutil.Process(grandchild).status() != psutil.STATUS_ZOMBIE
    ):
        assert time.monotonic() < deadline, "the tool's child outlived the timeout"
        time.sleep(0.1)


def test_run_bounded_raises_when_the_tool_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError):
        proctree.run_bounded([str(tmp_path / "no-such-tool")], timeout_s=5)
