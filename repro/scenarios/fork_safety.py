"""``fork_safety``: fork while another thread owns something the child will need.

Failure families 1 and 2 of ../shared/field-reports.md. ``fork()`` copies only the calling
thread, so whatever another thread holds or serves is frozen in the child. Reproducible on the
CPU. Modes:

- ``lock`` (default): a background thread holds a library lock while the process forks; the
  child blocks on it forever. The mechanism behind the ROCm DataLoader deadlock (O2, F1-3: the
  ROCr event thread holds runtime locks when DataLoader forks); Python 3.12 warns about it
  (F1-8, pyg-team/pytorch_geometric PR #10810).
- ``logger_process``: a logger-style client (wandb's public API object in wandb/wandb#12079,
  wandb 0.25.1-0.27.2) talks to a background *service process* through an asyncio loop running
  in a thread of the parent, and its garbage-collection finalizer waits on that loop. Forked
  DataLoader workers inherit the client but not the thread; when the worker's GC collects it,
  the finalizer waits forever (F2-2). O1 met the same family as crashes with wandb + fork
  workers.
- ``logger_pid_guard``: the same client whose finalizer does nothing outside the process that
  created it - the fix of wandb PR #12111.
- ``logger_thread``: the ``WANDB_START_METHOD=thread`` alternative (wandb/wandb#3223, O1): no
  service process and a finalizer that needs no other thread.
- ``wandb`` / ``wandb_thread``: the real wandb in offline mode (``WANDB_MODE=offline``), with the
  default start method or ``WANDB_START_METHOD=thread``, with fork DataLoader workers; skipped
  when wandb is not installed.

Expected under ``fork``: ``lock`` and ``logger_process`` hang (the watchdog reports ``hung``
with every process's stacks); the guarded and thread modes pass. ``spawn`` and ``forkserver``
start fresh interpreters that inherit neither the lock nor the client -> passed.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import threading
import time
import weakref

PARAMS = {
    "start_method": ["fork", "spawn", "forkserver"],
    "mode": [
        "lock",
        "logger_process",
        "logger_pid_guard",
        "logger_thread",
        "wandb",
        "wandb_thread",
    ],
}
QUIET_DEFAULTS = {"mode": "lock"}
TIMEOUT_S = 20.0
WORKERS = 2
SAMPLES = 8

#: Stands for a library's internal lock without an at-fork handler (HIP runtime, a logger).
_LIBRARY_LOCK = threading.Lock()


def valid(params) -> bool:
    # The fixes and the real wandb only make a point under fork, where the bug lives.
    return params["mode"] in ("lock", "logger_process") or params["start_method"] == "fork"


def requires(params) -> list[str]:
    return [f"start_method:{params['start_method']}"]


def run(ctx, params) -> None:
    mode = params["mode"]
    if mode == "lock":
        _run_lock(ctx, params["start_method"])
    elif mode.startswith("wandb"):
        _run_wandb(ctx, params["start_method"], thread_mode=mode == "wandb_thread")
    else:
        _run_logger(ctx, params["start_method"], mode)


# -- lock ---------------------------------------------------------------------------------------


def _hold_library_lock(held: threading.Event) -> None:
    with _LIBRARY_LOCK:
        held.set()
        time.sleep(3600)  # a background thread busy while holding the lock


def _child_uses_library() -> None:
    with _LIBRARY_LOCK:  # in a forked child nobody will ever release it
        pass


def _run_lock(ctx, start_method: str) -> None:
    held = threading.Event()
    threading.Thread(
        target=_hold_library_lock, args=(held,), name="library-lock-holder", daemon=True
    ).start()
    held.wait()
    mp = multiprocessing.get_context(start_method)
    ctx.heartbeat("child_started")
    child = mp.Process(target=_child_uses_library, name="uses-library")
    child.start()
    child.join()  # no timeout on purpose: the watchdog decides what a hang is
    ctx.heartbeat("child_joined")
    ctx.property("child_exitcode", child.exitcode)
    assert child.exitcode == 0, f"child exited with {child.exitcode}"


# -- logger client ------------------------------------------------------------------------------


def _logger_service(conn) -> None:
    """The logger's background service process: answers every request until told to stop."""
    while True:
        message = conn.recv()
        conn.send(("ack", message))
        if message == "bye":
            return


class LoggerClient:
    """A logging client shaped like wandb's public API object (wandb/wandb#12079).

    Requests travel to a service process through an asyncio loop running in a background
    thread; ``weakref.finalize`` says goodbye through that loop when the client is collected.
    ``pid_guard`` makes the finalizer a no-op outside the creating process (wandb PR #12111);
    ``in_thread`` needs no service process and no loop thread (``WANDB_START_METHOD=thread``).
    """

    def __init__(self, pid_guard: bool = False, in_thread: bool = False):
        self.records: list[str] = []
        if in_thread:
            weakref.finalize(self, self.records.clear)
            return
        ours, theirs = multiprocessing.get_context("spawn").Pipe()
        self._service = multiprocessing.get_context("spawn").Process(
            target=_logger_service, args=(theirs,), name="logger-service", daemon=True
        )
        self._service.start()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="logger-asyncio", daemon=True).start()
        weakref.finalize(self, _say_goodbye, self._loop, ours, os.getpid(), pid_guard)
        self._conn = ours

    def log(self, message: str) -> None:
        if not hasattr(self, "_loop"):
            self.records.append(message)
            return
        asyncio.run_coroutine_threadsafe(_request(self._conn, message), self._loop).result(
            timeout=30
        )


async def _request(conn, message: str):
    conn.send(message)
    return conn.recv()


def _say_goodbye(loop, conn, owner_pid: int, pid_guard: bool) -> None:
    if pid_guard and os.getpid() != owner_pid:
        return  # the fix: a forked copy leaves the parent's service alone
    # In a forked worker the loop thread does not exist: this waits forever (wandb#12079).
    asyncio.run_coroutine_threadsafe(_request(conn, "bye"), loop).result()


class CollectingDataset:
    """Each sample runs the garbage collector, as a worker's allocations eventually do."""

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        import torch

        gc.collect()
        return torch.full((4,), float(index))


def _run_logger(ctx, start_method: str, mode: str) -> None:
    from torch.utils.data import DataLoader

    gc.disable()  # keep the parent's GC from collecting the client before the workers fork
    client = LoggerClient(pid_guard=mode == "logger_pid_guard", in_thread=mode == "logger_thread")
    client.log("run started")
    client.cycle = client  # a reference cycle: only the cyclic GC can collect it
    del client
    loader = DataLoader(
        CollectingDataset(), batch_size=2, num_workers=WORKERS, multiprocessing_context=start_method
    )
    total = 0.0
    for step, batch in enumerate(loader):
        ctx.heartbeat("batch", step)
        total += float(batch.sum())
    gc.enable()
    gc.collect()  # in the parent the loop thread is alive: goodbye goes through
    expected = float(sum(range(SAMPLES)) * 4)
    assert total == expected, f"batches summed to {total}, expected {expected}"


# -- real wandb ---------------------------------------------------------------------------------


def _run_wandb(ctx, start_method: str, thread_mode: bool) -> None:
    try:
        import wandb
    except ImportError:
        ctx.skip("wandb is not installed (pip install wandb to run the real thing, offline)")
    from torch.utils.data import DataLoader

    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    if thread_mode:
        os.environ["WANDB_START_METHOD"] = "thread"
    ctx.property("wandb_version", wandb.__version__)
    run = wandb.init(project="repro-matrix", dir=ctx.workdir)
    loader = DataLoader(
        CollectingDataset(), batch_size=2, num_workers=WORKERS, multiprocessing_context=start_method
    )
    for epoch in range(2):
        for step, batch in enumerate(loader):
            ctx.heartbeat("batch", epoch * 10 + step)
            run.log({"value": float(batch.sum())})
    run.finish()
