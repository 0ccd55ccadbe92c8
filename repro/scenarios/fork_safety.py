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
- ``wandb`` / ``wandb_thread``: the real wandb (axis ``wandb``: a release, e.g. the affected
  0.27.2 and the current 0.31.0) in offline mode (``WANDB_MODE=offline``, ``WANDB_DIR`` in the
  case's workdir, no network), with the default start method or ``WANDB_START_METHOD=thread``,
  and fork DataLoader workers. The pinned release is installed once into a cache
  (``repro.scenarios._packages``; ``$REPRO_WHEELHOUSE`` for offline installs) and the wandb part
  runs in a fresh interpreter (``repro.scenarios._wandb_child``); a failed install skips the
  case with pip's error. ``mode=wandb`` also runs under ``forkserver``: the workaround that works.

Expected under ``fork``: ``lock`` and ``logger_process`` hang (the watchdog reports ``hung``
with every process's stacks); the guarded and thread modes pass. ``spawn`` and ``forkserver``
start fresh interpreters that inherit neither the lock nor the client -> passed. Observed with
the real wandb on CPython 3.11 / torch 2.13 (CPU): 0.27.2 hangs in the workers'
``_cleanup -> api_cleanup_request -> asyncio_manager.run -> Future.result`` (wandb#12079) with and
without ``WANDB_START_METHOD=thread`` (0.27.2 warns that ``start_method`` "is currently
non-functional and safely ignored"), passes under forkserver; 0.31.0 passes (its
``AsyncioManager`` refuses to run in a forked process, wandb PR #12114, and ``_cleanup``
swallows that error).
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
    # Real wandb releases for the wandb modes: 0.27.2 is the last affected by wandb#12079
    # (0.25.1-0.27.2, F2-2); 0.31.0 is current (issue 14). "none" for the other modes.
    "wandb": ["none", "0.27.2", "0.31.0"],
}
QUIET_DEFAULTS = {"mode": "lock", "wandb": "none"}
#: Covers a cold install of a pinned wandb (about 15 s on this project's 2-core CI host).
TIMEOUT_S = 45.0
#: Reproductions red by design (the report shows them as expected, and flags one that ever
#: passes): matrix.yaml's ``expect:`` entries, kept beside the scenario (issue 20); the
#: file's own entries override these (``repro.config.load``).
EXPECT = [
    {
        "case": "fork_safety[start_method=fork]",
        "outcome": "hung",
        "reason": (
            "fork() while a background thread holds a lock: the child blocks forever (the "
            "mechanism behind the ROCm DataLoader and logger deadlocks)"
        ),
        "link": "https://github.com/wandb/wandb/issues/12079",
    },
    {
        "case": "fork_safety[start_method=fork,mode=logger_process]",
        "outcome": "hung",
        "reason": (
            "a logger client's GC finalizer waits on a thread the forked DataLoader worker "
            "does not have (wandb 0.25.1-0.27.2; fixed by a PID guard, wandb PR #12111)"
        ),
        "link": "https://github.com/wandb/wandb/issues/12079",
    },
    # Real wandb (offline, fork DataLoader workers), installed per release into the package
    # cache. Observed on CPython 3.11 / torch 2.13 CPU: the workers' stacks end in _cleanup ->
    # api_cleanup_request -> asyncio_manager.run -> Future.result; 0.31.0 and forkserver pass.
    {
        "case": "fork_safety[start_method=fork,mode=wandb,wandb=0.27.2]",
        "outcome": "hung",
        "signature": "hang.wandb_fork_finalizer",
        "reason": (
            "wandb 0.25.1-0.27.2: the public-API handle's GC finalizer waits on the parent's "
            "asyncio thread inside a forked DataLoader worker (fixed by wandb PR "
            "#12111/#12114; 0.31.0 beside it passes)"
        ),
        "link": "https://github.com/wandb/wandb/issues/12079",
    },
    {
        "case": "fork_safety[start_method=fork,mode=wandb_thread,wandb=0.27.2]",
        "outcome": "hung",
        "signature": "hang.wandb_fork_finalizer",
        "reason": (
            "WANDB_START_METHOD=thread no longer helps: wandb 0.27.2 says start_method is "
            "non-functional and ignored, so the same finalizer hang follows (forkserver "
            "workers or an upgrade are the fixes)"
        ),
        "link": "https://github.com/wandb/wandb/issues/12079",
    },
]

#: Phase budgets (seconds of silence before the watchdog calls the case hung, ``budget_s`` of
#: ``ctx.heartbeat``): a forked child or worker runs no import and answers in ~0.05 s on a quiet
#: 2-core machine, so its hang is caught after 3 s instead of at the 45 s timeout. Measured with
#: four busy loops beside ``-j 2`` on 2 cores: the fork cases still passed with 1 s budgets
#: (``--timeout-scale 0.34``, 6 of 6) and not with 0.6 s. A spawned or forkserver child first
#: imports an interpreter's worth of modules (~2 s quiet, torch included).
FORKED_CHILD_BUDGET_S = 3.0
NEW_INTERPRETER_BUDGET_S = 30.0
#: A fresh interpreter (not a zygote fork, repro.runner.zygote) where the case process itself
#: forks (its threads and locks are the subject); spawn/forkserver children and the wandb part
#: (repro.scenarios._wandb_child) are new interpreters either way.
FRESH = lambda params: params["start_method"] == "fork" and not params["mode"].startswith("wandb")  # noqa: E731
WORKERS = 2
SAMPLES = 8

#: Stands for a library's internal lock without an at-fork handler (HIP runtime, a logger).
_LIBRARY_LOCK = threading.Lock()


def valid(params) -> bool:
    mode, start_method = params["mode"], params["start_method"]
    uses_wandb = mode.startswith("wandb")
    if uses_wandb != (params.get("wandb", "none") != "none"):
        return False  # a wandb release only with the wandb modes, and they need one
    if uses_wandb:
        # forkserver is the fix that works for every release; the thread setting only matters
        # under fork.
        return start_method == "fork" or (mode == "wandb" and start_method == "forkserver")
    # The fixes only make a point under fork, where the bug lives.
    return mode in ("lock", "logger_process") or start_method == "fork"


def requires(params) -> list[str]:
    return [f"start_method:{params['start_method']}"]


def run(ctx, params) -> None:
    mode = params["mode"]
    if mode == "lock":
        _run_lock(ctx, params["start_method"])
    elif mode.startswith("wandb"):
        _run_wandb(ctx, params, thread_mode=mode == "wandb_thread")
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


def child_budget_s(start_method: str) -> float:
    """Seconds a child started with ``start_method`` may take to do its small job."""
    return FORKED_CHILD_BUDGET_S if start_method == "fork" else NEW_INTERPRETER_BUDGET_S


def _run_lock(ctx, start_method: str) -> None:
    held = threading.Event()
    threading.Thread(
        target=_hold_library_lock, args=(held,), name="library-lock-holder", daemon=True
    ).start()
    held.wait()
    mp = multiprocessing.get_context(start_method)
    ctx.heartbeat("child_started", budget_s=child_budget_s(start_method))
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
    """Samples from ``collect_from`` on run the garbage collector, as a worker's allocations
    eventually do (a later ``collect_from`` makes the hang come at a later step, as in the field).
    """

    def __init__(self, samples: int = SAMPLES, collect_from: int = 0):
        self.samples, self.collect_from = samples, collect_from

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int):
        import torch

        if index >= self.collect_from:
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
    budget = child_budget_s(start_method)
    ctx.heartbeat("workers_start", budget_s=budget)
    for step, batch in enumerate(loader):
        ctx.heartbeat("batch", step, budget_s=budget)
        total += float(batch.sum())
    ctx.heartbeat("finish")  # the batch budget ends with the loop
    gc.enable()
    gc.collect()  # in the parent the loop thread is alive: goodbye goes through
    expected = float(sum(range(SAMPLES)) * 4)
    assert total == expected, f"batches summed to {total}, expected {expected}"


# -- real wandb ---------------------------------------------------------------------------------


def _run_wandb(ctx, params, thread_mode: bool) -> None:
    """Install the pinned wandb (cached) and run the wandb part in a fresh interpreter."""
    import subprocess
    import sys

    from repro.scenarios import _packages

    requirement = f"wandb=={params['wandb']}"
    ctx.heartbeat("install")
    try:
        installed = _packages.ensure([requirement])
    except _packages.PackageInstallError as exc:
        ctx.skip(f"cannot install {requirement}: {exc}")
    ctx.metric("install_s", installed.install_s)
    ctx.property("package_cache", "hit" if installed.cached else "miss")
    ctx.property("package_dir", installed.path)
    env = _packages.child_env(installed)
    env.update(
        WANDB_MODE="offline",  # no network, no account
        WANDB_DIR=os.path.join(ctx.workdir, "wandb"),
        WANDB_SILENT="true",
        WANDB_CONSOLE="off",  # keep wandb from wrapping the case log
        WANDB_ERROR_REPORTING="false",  # no Sentry traffic
    )
    env.pop("WANDB_START_METHOD", None)
    if thread_mode:
        env["WANDB_START_METHOD"] = "thread"
    os.makedirs(env["WANDB_DIR"], exist_ok=True)
    command = [sys.executable, "-m", "repro.scenarios._wandb_child", params["start_method"]]
    ctx.log(f"{' '.join(command)} (PYTHONPATH starts with {installed.path})")
    status = subprocess.call(command, env=env, cwd=ctx.workdir, stdin=subprocess.DEVNULL)
    if status != 0:
        ctx.fail(f"the wandb {params['wandb']} interpreter exited with status {status}")
