"""The zygote: a pre-imported interpreter that forks one case harness per request (issue 13).

A fresh case pays a Python start and ``import torch`` (~1.8 s on a quiet 2-core machine). The
zygote (``python -m repro.runner.zygote``, started by the runner with ``ctx.python``) imports
torch (with ``torch._dynamo``, which the first optimizer would import) and the zygote-eligible
scenario modules once, then, for each request on its socket, checks it is still safe to fork and
forks a child that becomes exactly what a fresh ``python -m repro.runner.harness`` would be:

- its own session and process group (``setsid``), stdin ``/dev/null``, stdout and stderr the
  case's log pipe and the harness report pipe, both received with ``SCM_RIGHTS``; every other
  descriptor closed;
- ``os.environ`` replaced by the request's environment (``repro.runner.protocol.case_env``),
  working directory the case's workdir, fresh ``random``/torch seeds;
- then ``repro.runner.harness.serve`` with the zygote as the parent to watch: the zygote has
  PDEATHSIG SIGKILL on the runner and exits on EOF of its socket, so a ``kill -9`` of the
  runner kills the zygote and every harness then kills its case's tree.

Safe to fork means (checked before every fork, :func:`fork_hazards`): one thread (counted in
``/proc/self/task``: an OpenMP/MKL pool, a CUDA or a Python thread would be copied as a held
lock), CUDA not initialised, no multiprocessing start method fixed. When the check fails the
zygote answers ``{"error": ...}`` and exits; the client replaces it.

What torch reads at import stays as the zygote read it: libgomp parses ``OMP_NUM_THREADS`` when
it is loaded, so a case's different ``OMP_NUM_THREADS`` does not change ``torch.get_num_threads()``
in a forked child (measured, see tests/test_zygote.py). Scenarios that set such variables, or
whose subject is process semantics, declare ``FRESH`` (``repro.scenarios.case_flag``).

The wire format and the zygote's environment are :mod:`repro.runner.zygote_wire`; the runner's
client (:class:`~repro.runner.zygote_client.Zygote`) is :mod:`repro.runner.zygote_client`; the
run's pool and which case forks are :mod:`repro.runner.zygote_pool`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import socket
import sys
import weakref

from repro import proctree
from repro.runner.zygote_wire import SOCKET_FD_VAR, recv, send


def fork_hazards() -> list[str]:
    """Why forking this process now would not equal a fresh interpreter; [] when safe.

    Checks: threads in ``/proc/self/task`` (one expected), ``torch.cuda.is_initialized()``
    (only when torch is imported), ``multiprocessing.get_start_method(allow_none=True)``.
    """
    problems = []
    with contextlib.suppress(OSError):
        threads = len(os.listdir("/proc/self/task"))
        if threads != 1:
            problems.append(f"{threads} threads")
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        problems.append("CUDA initialised")
    if "multiprocessing" in sys.modules:
        import multiprocessing

        method = multiprocessing.get_start_method(allow_none=True)
        if method is not None:
            problems.append(f"start method fixed ({method})")
    return problems


def fresh_openblas_threads(env: dict[str, str], cores: int) -> int:
    """The size of the OpenBLAS pool a fresh interpreter with ``env`` would start at load:
    the first positive of ``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS``, ``OMP_NUM_THREADS``
    (its leading number: ``"4,2"`` is 4), capped at ``cores``, else ``cores`` (the usable
    cores). Source: OpenBLAS ``driver/others/memory.c``, ``blas_get_cpu_number``."""
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        digits = ""
        for char in env.get(name, "").strip():
            if not char.isdigit():
                break
            digits += char
        if digits and int(digits[:6]) > 0:
            return min(int(digits[:6]), cores)
    return cores


_POOLS = None  # threadpoolctl's handles on the zygote's limited pools, found once before forks


def _find_pools() -> None:
    """In the zygote, after its imports: remember the pools :data:`ZYGOTE_POOL_LIMITS` limited
    (threadpoolctl walks the loaded libraries once here, not in every forked case)."""
    global _POOLS
    try:
        import threadpoolctl
    except ImportError:  # a declared dependency; without it forked cases keep one BLAS thread
        return
    with contextlib.suppress(Exception):
        _POOLS = threadpoolctl.ThreadpoolController().select(internal_api="openblas")


def restore_thread_pools() -> None:
    """In a forked case process: give each pool the zygote limited the size a fresh interpreter
    with this environment would have given it at load (:func:`fresh_openblas_threads`)."""
    if not _POOLS:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with contextlib.suppress(Exception):
        _POOLS.limit(limits=fresh_openblas_threads(dict(os.environ), cores or 1))


#: The ``weakref.finalize`` callbacks torch's own import registered in the zygote (torch 2.13:
#: 174 ``torch.library._del_library``, one per op library), set by :func:`_preimport`. A forked
#: case does not run them at its exit: they tear down torch's in-process op registry in a
#: process about to end, which :func:`_exit_like_python` skips for torch anyway, and they cost
#: every forked case 106 ms (measured: forked ``noop[torch=1]`` 0.143-0.153 s per case with
#: them, 0.055-0.067 s without, quiet 2-core host). The scenario modules' finalizers, and every
#: one a case registers, still run as in a fresh interpreter.
_TORCH_FINALIZERS: list[weakref.finalize] = []


def _preimport(modules: list[str]) -> None:
    """Import torch, ``torch._dynamo`` and the scenario modules (import paths; nothing else: no
    CUDA, no threads).
    A module that fails to import is left to the case, which reports it as a fresh one would."""
    import importlib

    import torch  # noqa: F401

    # torch's own lazy import, done by the first optimizer a case builds (torch.optim ->
    # torch._dynamo, 1.15 s measured with torch 2.13): without it every training case pays it
    # again after the fork. It starts no thread and calls no torch.cuda function (checked with
    # torch 2.13 CPU); fork_hazards still checks after it.
    with contextlib.suppress(Exception):
        importlib.import_module("torch._dynamo")
    global _TORCH_FINALIZERS
    _TORCH_FINALIZERS = list(getattr(weakref.finalize, "_registry", ()))
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    _find_pools()


def _become_harness(request: dict, fds: list[int], sock: socket.socket, wake: int) -> int:
    """In the forked child: turn into a fresh harness and serve the case (see module doc)."""
    from repro.runner import harness

    zygote_pid = os.getppid()
    for finalizer in _TORCH_FINALIZERS:  # torch's teardown, skipped at exit (see there)
        finalizer.atexit = False
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    log_fd, report_fd = fds
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    keep = report_fd
    sock.close()
    # A fresh harness holds only 0, 1, 2 and its report pipe (Popen's close_fds).
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    del wake  # closed above with the rest
    os.environ.clear()
    os.environ.update(request["env"])
    # ``python -m`` put the start directory first on sys.path: a fresh harness has its workdir.
    if sys.path and sys.path[0] == os.getcwd():
        sys.path[0] = request["cwd"]
    os.chdir(request["cwd"])
    # tempfile cached the zygote's private TMPDIR; a fresh interpreter reads the case's.
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None
    import random

    random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()
    sys.argv = [harness.__file__]
    return harness.serve(keep, zygote_pid, case_setup=restore_thread_pools)


def _exit_like_python(code: int) -> None:
    """End a forked case as interpreter shutdown would, minus tearing down torch's modules
    (measured: 0.6 s with torch loaded, what a fresh case also pays) and torch's op-library
    finalizers (:data:`_TORCH_FINALIZERS`): join non-daemon threads, run atexit callbacks
    (multiprocessing finalisers, logging, the case's and scenario modules' ``weakref.finalize``),
    flush, ``_exit``."""
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def serve_forever(sock: socket.socket, runner_pid: int) -> int | None:
    """The zygote's loop: answers requests until EOF. Returns its exit status (a forked child
    never returns: it ends through :func:`_exit_like_python`)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    while True:
        _reap_and_report(sock)
        if os.getppid() != runner_pid:
            return 1
        ready, _, _ = select.select([sock, wake_r], [], [], 1.0)
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
        if sock not in ready:
            continue
        got = recv(sock)
        if got is None:  # the runner closed its end: done
            return 0
        request, fds = got
        hazards = fork_hazards()
        if hazards or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            send(sock, {"error": "; ".join(hazards) or f"expected 2 fds, got {len(fds)}"})
            return 1
        pid = os.fork()
        if pid == 0:
            os.close(wake_r)
            _exit_like_python(_become_harness(request, fds, sock, wake_w))
        for fd in fds:
            os.close(fd)
        send(sock, {"pid": pid})


def _reap_and_report(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        send(sock, {"exit": pid, "returncode": os.waitstatus_to_exitcode(status)})


def main() -> int:
    """``python -m repro.runner.zygote MODULE...``: pre-import, say ready, serve requests."""
    from repro.runner import protocol

    sock = socket.socket(fileno=int(os.environ.pop(SOCKET_FD_VAR)))
    runner_pid = int(os.environ[protocol.RUNNER_PID_VAR])
    proctree.set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != runner_pid:
        return 1
    _preimport(sys.argv[1:])
    try:
        hazards = fork_hazards()
        if hazards:
            send(sock, {"error": "after import: " + "; ".join(hazards)})
            return 1
        send(sock, {"ready": os.getpid()})
        return serve_forever(sock, runner_pid) or 0
    except (BrokenPipeError, ConnectionResetError):
        # The runner closed its end: every case ended before this zygote was ready (issue 32:
        # each such run left a BrokenPipeError traceback in zygote.log). Nothing is owed.
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
