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

Wire format: each message is a 4-byte big-endian length then JSON. Runner -> zygote:
``{"env": {...}, "cwd": str}`` with fds ``[log_fd, report_fd]``. Zygote -> runner: ``{"ready":
pid}`` once, ``{"pid": n}`` or ``{"error": text}`` per request, ``{"exit": pid, "returncode":
int}`` when a harness ends (``returncode`` as ``subprocess.Popen``: ``-SIGNUM`` for a signal).
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref

import psutil

from repro import proctree

#: Environment variable holding the zygote's socket descriptor.
SOCKET_FD_VAR = "REPRO_ZYGOTE_FD"
#: Seconds the runner waits for a zygote to import torch and say ready.
START_TIMEOUT_S = 120.0
#: Seconds a zygote may take to answer one fork request (a fork of a torch process takes
#: milliseconds; a longer silence is a wedge: the zygote is killed and the case runs fresh).
ANSWER_TIMEOUT_S = 10.0
#: Seconds a harness may be dead (a zombie of the zygote) before the zygote's exit report is
#: overdue: the zygote is then wedged (stopped, or stuck), killed, and the runner, a child
#: subreaper, reaps the harness itself with its real exit status (issue 25, item 1).
REPORT_GRACE_S = 2.0
#: Socket timeout of the runner's side (seconds): no read or write waits longer on a zygote.
SOCKET_TIMEOUT_S = 10.0
_MAX_MESSAGE = 16 * 1024 * 1024
#: Thread pools that start their threads when their library is loaded, limited to one thread
#: in the zygote before it imports anything (issue 19, item 4). numpy's OpenBLAS starts one
#: thread per extra core at ``import numpy``, which ``import torch`` does; each forked case
#: gets the size a fresh interpreter would have (:func:`restore_thread_pools`). OpenMP and MKL
#: pools start lazily, at the first parallel region, so they need no limit.
ZYGOTE_POOL_LIMITS = {"OPENBLAS_NUM_THREADS": "1"}


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


def zygote_env(env: dict[str, str], tmpdir: str) -> dict[str, str]:
    """The zygote's environment: the cases' common ``env`` with :data:`ZYGOTE_POOL_LIMITS`
    and ``TMPDIR`` set to ``tmpdir``, a directory the zygote's imports may write to
    (``import torch._dynamo`` creates ``$TMPDIR/torchinductor_<user>``) and that is removed
    with the zygote. A forked case gets its own environment back (:func:`_become_harness`)."""
    out = dict(env)
    out.update(ZYGOTE_POOL_LIMITS)
    out["TMPDIR"] = tmpdir
    return out


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


# ---- wire ---------------------------------------------------------------------------------


def _send(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    data = json.dumps(message).encode()
    payload = struct.pack(">I", len(data)) + data
    if fds:
        sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(payload)


def _recv(sock: socket.socket) -> tuple[dict, list[int]] | None:
    """One message and the descriptors that came with it; None at EOF."""
    fds = array.array("i")
    head, ancdata, _flags, _addr = sock.recvmsg(4, socket.CMSG_LEN(16 * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if len(head) < 4:
        for fd in fds:
            os.close(fd)
        return None
    (size,) = struct.unpack(">I", head)
    if size > _MAX_MESSAGE:
        raise ValueError(f"zygote message of {size} bytes")
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body), list(fds)


# ---- the zygote process -------------------------------------------------------------------


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
        got = _recv(sock)
        if got is None:  # the runner closed its end: done
            return 0
        request, fds = got
        hazards = fork_hazards()
        if hazards or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            _send(sock, {"error": "; ".join(hazards) or f"expected 2 fds, got {len(fds)}"})
            return 1
        pid = os.fork()
        if pid == 0:
            os.close(wake_r)
            _exit_like_python(_become_harness(request, fds, sock, wake_w))
        for fd in fds:
            os.close(fd)
        _send(sock, {"pid": pid})


def _reap_and_report(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exit": pid, "returncode": os.waitstatus_to_exitcode(status)})


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
            _send(sock, {"error": "after import: " + "; ".join(hazards)})
            return 1
        _send(sock, {"ready": os.getpid()})
        return serve_forever(sock, runner_pid) or 0
    except (BrokenPipeError, ConnectionResetError):
        # The runner closed its end: every case ended before this zygote was ready (issue 32:
        # each such run left a BrokenPipeError traceback in zygote.log). Nothing is owed.
        return 0


# ---- the runner's side --------------------------------------------------------------------


class ZygoteError(RuntimeError):
    """The zygote could not start, refused to fork, or stopped answering; the caller falls back
    to fresh."""


class Zygote:
    """The runner's handle on one zygote process. Thread-safe: under ``repro run -j N`` several
    cases ask it for harnesses and poll their exits (one lock around the socket).

    ``python``: interpreter; ``env``: the environment it imports torch under (the cases' common
    environment, with ``REPRO_RUNNER_PID``; :func:`zygote_env` adds the pool limits and a
    private ``TMPDIR``); ``scenario_names``: module paths to pre-import; ``log_path``: file its
    own stdout/stderr are appended to (default: inherited).

    ``wait=True``: the constructor waits up to ``START_TIMEOUT_S`` seconds for ``ready`` and
    raises ZygoteError otherwise. ``wait=False``: it returns at once and :meth:`poll_ready`
    says when the zygote can fork (cases run fresh meanwhile).

    No wait on a zygote is unbounded: a request is answered within ``ANSWER_TIMEOUT_S``
    seconds, a socket read or write within ``SOCKET_TIMEOUT_S``, and a zygote found stopped
    (SIGSTOP) or that owes an exit report past ``REPORT_GRACE_S`` is killed (:meth:`kill`).
    """

    def __init__(
        self,
        python: str,
        env: dict[str, str],
        scenario_names: list[str],
        log_path: str | os.PathLike[str] | None = None,
        wait: bool = True,
    ) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._tmpdir = tempfile.mkdtemp(prefix="repro-zygote-")
        env = zygote_env(env, self._tmpdir)
        env[SOCKET_FD_VAR] = str(theirs.fileno())
        ours.settimeout(SOCKET_TIMEOUT_S)
        self.sock = ours
        self.exits: dict[int, int] = {}
        self.ready = False
        #: Why this zygote cannot fork (it failed to start, refused, or was killed); None if it can.
        self.failure: str | None = None
        self._started = time.monotonic()
        self._lock = threading.RLock()
        # Its own output (import warnings) goes to its log, not to the runner's terminal.
        log = open(log_path, "ab") if log_path is not None else None  # noqa: SIM115
        try:
            with proctree.spawning():  # an orphan sweep never takes the zygote for an orphan
                self.proc = subprocess.Popen(
                    [python, "-m", "repro.runner.zygote", *scenario_names],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT if log else None,
                    env=env,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                )
                proctree.own(self.proc.pid)
        except BaseException:
            ours.close()
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            raise
        finally:
            theirs.close()
            if log is not None:
                log.close()
        self.pid = self.proc.pid
        _LIVE.add(self)
        if wait and not self.wait_ready(START_TIMEOUT_S):
            raise ZygoteError(f"zygote did not start: {self.failure}")

    def poll_ready(self) -> bool:
        """True once the zygote said ready (never blocks). A zygote that failed to start, or is
        still importing past ``START_TIMEOUT_S``, is closed with :attr:`failure` set."""
        return self.wait_ready(0.0)

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for ready; see :meth:`poll_ready`."""
        with self._lock:
            if self.ready or self.failure is not None:
                return self.ready
            message = self._next(timeout_s)
            if message is not None and "ready" in message:
                self.ready = True
                return True
            if message is not None:  # {"error": ...}: a fork hazard after its imports
                self._fail(str(message.get("error") or message)[:500])
            elif self.sock.fileno() < 0 or self.proc.poll() is not None:
                self._fail(f"exited during its imports (status {self.proc.poll()}); see zygote.log")
            elif time.monotonic() - self._started >= START_TIMEOUT_S:
                self.kill(f"not ready after {START_TIMEOUT_S:g} s")
            return False

    def _fail(self, reason: str) -> None:
        self.failure = self.failure or reason
        self.close()

    def alive(self) -> bool:
        return self.proc.poll() is None and self.sock.fileno() >= 0

    def stopped(self) -> bool:
        """True when the zygote process is stopped (SIGSTOP, a tracer): it answers nothing."""
        return proctree.status(self.pid) in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)

    def _next(self, timeout_s: float | None) -> dict | None:
        """The next message other than an exit notice (those are recorded); None on timeout,
        EOF, or a zygote found stopped while waiting."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = 0.25 if deadline is None else max(0.0, min(0.25, deadline - time.monotonic()))
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                if (deadline is not None and time.monotonic() >= deadline) or self.stopped():
                    return None
                continue
            try:
                got = _recv(self.sock)
            except (OSError, ValueError):
                got = None
            if got is None:
                self.close()
                return None
            message, _fds = got
            if "exit" in message:
                self.exits[int(message["exit"])] = int(message["returncode"])
                continue
            return message

    def exit_of(self, pid: int) -> int | None:
        """The return code of harness ``pid`` once the zygote reported its exit (taken once)."""
        with self._lock:
            self._pump()
            return self.exits.pop(pid, None)

    def _pump(self) -> None:
        while self.sock.fileno() >= 0 and select.select([self.sock], [], [], 0)[0]:
            try:
                got = _recv(self.sock)
            except (OSError, ValueError):
                got = None
            if got is None:
                self.close()
                return
            message, _fds = got
            if "exit" in message:
                self.exits[int(message["exit"])] = int(message["returncode"])

    def spawn(self, env: dict[str, str], cwd: str, log_fd: int, report_fd: int) -> ForkedHarness:
        """Fork a harness for one case. Raises ZygoteError when the zygote is not ready, refuses
        (fork hazards), is gone, or does not answer within ``ANSWER_TIMEOUT_S`` seconds (it is
        then killed); harnesses it forked before go on, adopted by the runner."""
        with self._lock:
            if not self.ready or self.failure is not None:
                raise ZygoteError(f"zygote not ready: {self.failure or 'still importing'}")
            if self.stopped():
                self.kill("stopped (SIGSTOP?)")
                raise ZygoteError(f"zygote {self.failure}")
            try:
                _send(self.sock, {"env": env, "cwd": cwd}, (log_fd, report_fd))
            except OSError as exc:
                self.kill(f"gone: {exc}")
                raise ZygoteError(f"zygote {self.failure}") from None
            message = self._next(ANSWER_TIMEOUT_S)
            if not message or "pid" not in message:
                if message:
                    self._fail(f"refused to fork: {str(message.get('error', message))[:500]}")
                else:
                    self.kill(f"no answer to a fork request within {ANSWER_TIMEOUT_S:g} s")
                raise ZygoteError(f"zygote {self.failure}")
        return ForkedHarness(self, int(message["pid"]))

    def kill(self, reason: str) -> None:
        """SIGKILL a wedged zygote (a stopped process too) and reap it; its harnesses are
        re-parented to the runner (a child subreaper), which then reaps them itself."""
        self.failure = self.failure or reason
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.close()

    def close(self) -> None:
        """Close the socket (the zygote exits on EOF), reap it within 5 s (a stopped or stuck
        one is killed), and remove its private TMPDIR."""
        _LIVE.discard(self)
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.stopped():
            with contextlib.suppress(OSError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.returncode is not None and self._tmpdir:
            proctree.disown(self.proc.pid)
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = ""


class ForkedHarness:
    """A harness forked by a zygote, with the part of ``subprocess.Popen`` the executor uses
    (``pid``, ``returncode``, ``poll()``, ``wait()``)."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.returncode: int | None = None
        self._dead_since: float | None = None

    def poll(self) -> int | None:
        """The harness's return code once known, else None. Known from the zygote's report;
        or, when the zygote died or was killed as wedged (dead harness, no report within
        ``REPORT_GRACE_S``), from the runner's own ``waitpid`` (:meth:`_orphaned`)."""
        if self.returncode is None:
            code = self.zygote.exit_of(self.pid)
            if code is not None:
                self.returncode = code
            elif not self.zygote.alive():
                self._orphaned()
            elif self._dead():
                now = time.monotonic()
                self._dead_since = self._dead_since or now
                if now - self._dead_since >= REPORT_GRACE_S or self.zygote.stopped():
                    self.zygote.kill(
                        f"did not report the exit of harness {self.pid} within {REPORT_GRACE_S:g} s"
                    )
                    self._orphaned()
        return self.returncode

    def _dead(self) -> bool:
        """True when the harness has exited (a zombie its zygote has not reaped) or is gone."""
        return proctree.status(self.pid) in (None, psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)

    def _orphaned(self) -> None:
        """The zygote died: the harness (re-parented to the runner, a subreaper) kills its tree
        and exits; reap it here if it is ours, else report it as killed."""
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            if not _exists(self.pid):
                self.returncode = -signal.SIGKILL
            return
        if pid:
            self.returncode = os.waitstatus_to_exitcode(status)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"harness {self.pid}", timeout or 0)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_LIVE: set[Zygote] = set()


@atexit.register
def _close_all() -> None:
    for zygote in list(_LIVE):
        zygote.close()


if __name__ == "__main__":
    raise SystemExit(main())
