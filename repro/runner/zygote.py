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
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

#: Environment variable holding the zygote's socket descriptor.
SOCKET_FD_VAR = "REPRO_ZYGOTE_FD"
#: Seconds the runner waits for a zygote to import torch and say ready.
START_TIMEOUT_S = 120.0
_MAX_MESSAGE = 16 * 1024 * 1024


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
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def _become_harness(request: dict, fds: list[int], sock: socket.socket, wake: int) -> int:
    """In the forked child: turn into a fresh harness and serve the case (see module doc)."""
    from repro.runner import harness

    zygote_pid = os.getppid()
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
    import random

    random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()
    sys.argv = [harness.__file__]
    return harness.serve(keep, zygote_pid)


def _exit_like_python(code: int) -> None:
    """End a forked case as interpreter shutdown would, minus tearing down torch's modules
    (measured: 0.6 s with torch loaded, what a fresh case also pays): join non-daemon threads,
    run atexit callbacks (multiprocessing finalisers, logging), flush, ``_exit``."""
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
    from repro import proctree
    from repro.runner import protocol

    sock = socket.socket(fileno=int(os.environ.pop(SOCKET_FD_VAR)))
    runner_pid = int(os.environ[protocol.RUNNER_PID_VAR])
    proctree.set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != runner_pid:
        return 1
    _preimport(sys.argv[1:])
    hazards = fork_hazards()
    if hazards:
        _send(sock, {"error": "after import: " + "; ".join(hazards)})
        return 1
    _send(sock, {"ready": os.getpid()})
    return serve_forever(sock, runner_pid) or 0


# ---- the runner's side --------------------------------------------------------------------


class ZygoteError(RuntimeError):
    """The zygote could not start or refused to fork; the caller falls back to fresh."""


class Zygote:
    """The runner's handle on one zygote process. Thread-safe: under ``repro run -j N`` several
    cases ask it for harnesses and poll their exits (one lock around the socket).

    ``python``: interpreter; ``env``: the environment it imports torch under (the cases' common
    environment, with ``REPRO_RUNNER_PID``); ``scenario_names``: module paths to pre-import;
    ``log_path``: file its own stdout/stderr are appended to (default: inherited). Raises ZygoteError when it does not
    say ready within ``START_TIMEOUT_S`` seconds.
    """

    def __init__(
        self,
        python: str,
        env: dict[str, str],
        scenario_names: list[str],
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(env)
        env[SOCKET_FD_VAR] = str(theirs.fileno())
        self.sock = ours
        self.exits: dict[int, int] = {}
        self._lock = threading.RLock()
        # Its own output (import warnings) goes to its log, not to the runner's terminal.
        log = open(log_path, "ab") if log_path is not None else None  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "repro.runner.zygote", *scenario_names],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT if log else None,
                env=env,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            theirs.close()
            if log is not None:
                log.close()
        message = self._next(START_TIMEOUT_S)
        if not message or "ready" not in message:
            self.close()
            raise ZygoteError(f"zygote did not start: {message or 'no answer'}")
        self.pid = self.proc.pid
        _LIVE.add(self)

    def alive(self) -> bool:
        return self.proc.poll() is None and self.sock.fileno() >= 0

    def _next(self, timeout_s: float | None) -> dict | None:
        """The next message other than an exit notice (those are recorded); None on timeout/EOF."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
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
        """Fork a harness for one case. Raises ZygoteError when the zygote refuses (fork
        hazards) or is gone; it is then closed (harnesses it forked go on, adopted by the runner)."""
        with self._lock:
            try:
                _send(self.sock, {"env": env, "cwd": cwd}, (log_fd, report_fd))
            except OSError as exc:
                self.close()
                raise ZygoteError(f"zygote gone: {exc}") from None
            message = self._next(30.0)
        if not message or "pid" not in message:
            self.close()
            raise ZygoteError(f"zygote refused to fork: {message or 'no answer'}")
        return ForkedHarness(self, int(message["pid"]))

    def close(self) -> None:
        """Close the socket (the zygote exits on EOF) and reap it."""
        _LIVE.discard(self)
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ForkedHarness:
    """A harness forked by a zygote, with the part of ``subprocess.Popen`` the executor uses
    (``pid``, ``returncode``, ``poll()``, ``wait()``)."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.zygote.exit_of(self.pid)
            if code is not None:
                self.returncode = code
            elif not self.zygote.alive():
                self._orphaned()
        return self.returncode

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
