"""``fork_safety``: fork while a background thread holds a lock.

Failure family 1/2 of ../shared/field-reports.md: the mechanism behind the ROCm DataLoader
deadlock (O2, F1-3: the ROCr event thread holds runtime locks when DataLoader forks) and the
logger deadlocks (F2-2 wandb/wandb#12079: a forked worker inherits an object whose lock or
future is served by a thread it does not have). ``fork()`` copies only the calling thread, so a
lock held by another thread stays locked forever in the child. Python 3.12 warns about it
(F1-8, pyg-team/pytorch_geometric PR #10810). Reproducible on the CPU.

Expected: ``fork`` -> the child blocks on the lock, the case hangs and the watchdog reports
``hung`` with every thread's stack; ``spawn`` and ``forkserver`` start a fresh interpreter
whose lock is free -> passed.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

PARAMS = {"start_method": ["fork", "spawn", "forkserver"]}
TIMEOUT_S = 20.0

#: Stands for a library's internal lock without an at-fork handler (HIP runtime, a logger).
_LIBRARY_LOCK = threading.Lock()


def requires(params) -> list[str]:
    return [f"start_method:{params['start_method']}"]


def _hold_library_lock(held: threading.Event) -> None:
    with _LIBRARY_LOCK:
        held.set()
        time.sleep(3600)  # a background thread busy while holding the lock


def _child_uses_library() -> None:
    with _LIBRARY_LOCK:  # in a forked child nobody will ever release it
        pass


def run(ctx, params) -> None:
    held = threading.Event()
    threading.Thread(
        target=_hold_library_lock, args=(held,), name="library-lock-holder", daemon=True
    ).start()
    held.wait()

    mp = multiprocessing.get_context(params["start_method"])
    ctx.heartbeat("child_started")
    child = mp.Process(target=_child_uses_library, name="uses-library")
    child.start()
    child.join()  # no timeout on purpose: the watchdog decides what a hang is
    ctx.heartbeat("child_joined")
    ctx.property("child_exitcode", child.exitcode)
    assert child.exitcode == 0, f"child exited with {child.exitcode}"
