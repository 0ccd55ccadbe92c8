"""The runner's side of the zygote (issue 13, issue 25 item 1): :class:`Zygote` starts
``python -m repro.runner.zygote``, asks it to fork a harness per case and hears of their exits;
:class:`ForkedHarness` is the part of ``subprocess.Popen`` the executor uses. The zygote process
is :mod:`repro.runner.zygote`, the wire :mod:`repro.runner.zygote_wire`, the run's pool and fork
policy :mod:`repro.runner.zygote_pool`. Never imports torch.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import psutil

from repro import proctree
from repro.runner.zygote_wire import SOCKET_FD_VAR, recv, send, zygote_env

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
                got = recv(self.sock)
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
                got = recv(self.sock)
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
                send(self.sock, {"env": env, "cwd": cwd}, (log_fd, report_fd))
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
