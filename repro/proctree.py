"""Find and signal every process that belongs to one case, with psutil.

A case's processes are found two ways, because neither alone is enough: the live descendants
of the case's root process, and every process whose environment carries the case's token
(``REPRO_CASE_TOKEN``). The token catches what escaped the tree: torchrun starts ranks in new
sessions, and a worker whose parent died is re-parented to init. Subreapers
(:func:`become_subreaper`, ``repro.runner.harness``) keep orphans in the tree in the first
place, so a ``setsid``'ed grandchild with a clean environment is found too.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence

import psutil

TOKEN_VAR = "REPRO_CASE_TOKEN"
#: Seconds to wait for a SIGKILLed tool to be reaped before giving up on it.
KILL_GRACE_S = 2.0
#: prctl(2) options, from <linux/prctl.h>.
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


def _prctl(option: int, value: int) -> bool:
    """Call prctl(2); False where there is none (not Linux) or it fails."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make the calling process the child subreaper of its descendants (Linux >= 3.4):
    orphans, ``setsid``'ed ones included, are re-parented to it instead of to init, so they stay
    in its tree. Returns False where that is not available."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def is_subreaper() -> bool:
    """Whether the calling process is a child subreaper (PR_GET_CHILD_SUBREAPER, prctl(2)):
    only then can a direct child be an adopted orphan rather than one it started."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and bool(
            flag.value
        )
    except (OSError, AttributeError):
        return False


def set_parent_death_signal(sig: int) -> bool:
    """Have the kernel send ``sig`` to the calling process when its parent dies (PR_SET_PDEATHSIG;
    cleared by fork, kept by exec). Returns False where that is not available."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


#: The launcher of :func:`tied`: argv[1] is the caller's pid, the rest the command. It asks the
#: kernel for SIGKILL when its parent dies (PR_SET_PDEATHSIG = 1, prctl(2); kept across exec),
#: exits when the caller died before the prctl (it was re-parented), then execs the command,
#: which keeps the death signal. Self-contained: imports nothing of repro.
_TIED_LAUNCHER = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit('the caller %s is gone' % sys.argv[1])\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def tied(argv: Sequence[str]) -> list[str]:
    """``argv`` started through a launcher that ties its life to the calling process: the
    kernel SIGKILLs it when the caller dies, even by SIGKILL (an installer must not outlive the
    cache entry or environment it fills: issue 25's pip, issue 32's uv). The death signal follows
    the *thread* that starts it: start tied commands from a thread that outlives them."""
    return [sys.executable, "-c", _TIED_LAUNCHER, str(os.getpid()), *argv]


def kill_subtree(timeout_s: float = 5.0) -> list[str]:
    """SIGKILL every live descendant of the calling process until none is left (new ones forked
    meanwhile included), reaping them; at most ``timeout_s`` seconds.

    Meant for a subreaper (:func:`become_subreaper`), whose tree holds every orphan. Returns
    ``describe()`` of each process found alive at the first sweep (zombies are not counted).
    """
    me = psutil.Process()
    first: list[str] | None = None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            live = [p for p in me.children(recursive=True) if _alive(p)]
        except psutil.Error:
            live = []
        if first is None:
            first = [f"{p.pid} {describe(p)}" for p in live]
        send(live, signal.SIGKILL)
        _reap_children()
        if not live or time.monotonic() > deadline:
            return first
        time.sleep(0.02)


def status(pid: int) -> str | None:
    """``pid``'s scheduler state as psutil names it (``psutil.STATUS_STOPPED``, ``_ZOMBIE``,
    ``_TRACING_STOP``...), or None when there is no such process."""
    try:
        return psutil.Process(pid).status()
    except psutil.Error:
        return None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _reap_children() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


class _Children:
    """Which direct children of this process are its own (started by it, or forked on its
    behalf by its zygote) and which it adopted as a child subreaper (issue 19, item 1).

    Starting a child and judging children exclude each other: :meth:`spawning` holds the lock
    from before a fork until the new pid is registered with :meth:`own`, and :meth:`adopted`
    judges under the same lock, so a harness another thread is starting can never be taken
    for an orphan. Only adopted children are ever reaped here; an own child is reaped by
    whoever started it (its ``Popen``), so no exit status is taken from its waiting thread.
    Children that existed before the first registration are neither (they are the caller's).
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.counts: dict[int, int] = {}  # pid -> registrations (a reused pid counts twice)
        self.baseline: set[int] | None = None

    def arm(self) -> None:
        with self.lock:
            if self.baseline is None:
                self.baseline = child_pids()


_CHILDREN = _Children()


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Hold while starting a child and registering it with :func:`own`: no :func:`adopted`
    judgement runs in between (re-entrant; the same lock)."""
    _CHILDREN.arm()
    with _CHILDREN.lock:
        yield


def own(pid: int) -> None:
    """Register ``pid`` as a child this process started (or one it will wait for)."""
    with _CHILDREN.lock:
        _CHILDREN.arm()
        _CHILDREN.counts[pid] = _CHILDREN.counts.get(pid, 0) + 1


def disown(pid: int) -> None:
    """Undo one :func:`own` once ``pid`` has been reaped by its owner."""
    with _CHILDREN.lock:
        left = _CHILDREN.counts.get(pid, 0) - 1
        if left > 0:
            _CHILDREN.counts[pid] = left
        else:
            _CHILDREN.counts.pop(pid, None)


def adopted(other_tokens: Iterable[str] = ()) -> list[psutil.Process]:
    """The orphans this subreaper adopted: its live direct children that it did not start
    (:func:`own`) and that are not older than its first registration, each with its
    descendants. An adopted child whose environment carries one of ``other_tokens`` (a case
    still running under ``-j N``) is left to that case's own sweep. Adopted children that
    already died are reaped (no zombies pile up in a long run); own children never are."""
    others = set(other_tokens)
    found: list[psutil.Process] = []
    if not is_subreaper():  # orphans go to init: every direct child is the caller's own
        return found
    with _CHILDREN.lock:
        _CHILDREN.arm()
        ignore = set(_CHILDREN.counts) | (_CHILDREN.baseline or set())
        try:
            children = psutil.Process().children()
        except psutil.Error:
            return []
        for proc in children:
            if proc.pid in ignore:
                continue
            if not _alive(proc):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(proc.pid, os.WNOHANG)
                continue
            if others and _token_of(proc) in others:
                continue
            found.append(proc)
            with contextlib.suppress(psutil.Error):
                found.extend(p for p in proc.children(recursive=True) if _alive(p))
    return found


def _token_of(proc: psutil.Process) -> str | None:
    try:
        return proc.environ().get(TOKEN_VAR)
    except psutil.Error:
        return None


def child_pids() -> set[int]:
    """Pids of the calling process's live direct children."""
    try:
        return {p.pid for p in psutil.Process().children()}
    except psutil.Error:
        return set()


def run_bounded(
    argv: Sequence[str],
    *,
    timeout_s: float | None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    tie: bool = False,
) -> subprocess.CompletedProcess:
    """Run a tool that may hang, even inside the kernel (nvidia-smi on a wedged GPU, a torch probe
    stuck in driver init), in its own session with text output captured and stdin closed.

    On timeout its whole process group is SIGKILLed and waited for at most ``KILL_GRACE_S``
    seconds (``subprocess.run`` would wait forever for a process in ``D`` state), then
    ``subprocess.TimeoutExpired`` is raised. ``tie``: the tool runs under :func:`tied` (it dies
    with the caller) and its process group is SIGKILLed on any exception in the caller too
    (Ctrl-C), so it never outlives the call; installers (pip, uv) run so. Raises OSError
    (FileNotFoundError) when the tool cannot start.
    """
    with spawning():  # a runner's sweep never takes the tool for an orphan
        proc = subprocess.Popen(
            tied(argv) if tie else list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        own(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except BaseException as exc:
        timed_out = isinstance(exc, subprocess.TimeoutExpired)
        if not (timed_out or tie):
            raise
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=KILL_GRACE_S)
        if timed_out:
            raise subprocess.TimeoutExpired(list(argv), timeout_s or 0) from None
        raise
    finally:
        if proc.returncode is not None:  # reaped; else it stays ours (a D-state tool)
            disown(proc.pid)
    return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)


def case_processes(root_pid: int | None, token: str) -> list[psutil.Process]:
    """Live processes of a case (root first when alive), excluding the calling process."""
    found: dict[int, psutil.Process] = {}
    if root_pid is not None:
        try:
            root = psutil.Process(root_pid)
            found[root.pid] = root
            for child in root.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(TOKEN_VAR) == token:
                found[proc.pid] = proc
        except psutil.Error:  # gone, zombie, or not ours to read
            continue
    found.pop(os.getpid(), None)
    return list(found.values())


def describe(proc: psutil.Process) -> str:
    """``name [state] cmdline`` of a process, or ``(gone)``; at most 200 characters."""
    try:
        return f"{proc.name()} [{proc.status()}] {' '.join(proc.cmdline())}"[:200]
    except psutil.Error:
        return "(gone)"


def send(processes: Iterable[psutil.Process], sig: int) -> int:
    """Send ``sig`` to each process that is still alive; returns how many were signalled."""
    count = 0
    for proc in processes:
        try:
            proc.send_signal(sig)
            count += 1
        except psutil.Error:
            continue
    return count


def kill_case(root_pid: int | None, token: str, timeout_s: float = 5.0) -> list[psutil.Process]:
    """SIGKILL every process of a case (also the root's process group) and wait up to
    ``timeout_s`` seconds. Returns the processes that are still alive (e.g. stuck in ``D`` state)."""
    procs = case_processes(root_pid, token)
    if root_pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(root_pid, signal.SIGKILL)
    return kill(procs, timeout_s)


def kill(procs: list[psutil.Process], timeout_s: float = 5.0) -> list[psutil.Process]:
    """SIGKILL ``procs`` and wait up to ``timeout_s`` seconds (reaping our own children).
    Returns those still alive."""
    if not procs:
        return []
    send(procs, signal.SIGKILL)
    _gone, alive = psutil.wait_procs(procs, timeout=timeout_s)
    return alive
