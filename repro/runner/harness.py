"""Entry point of one case's child process: ``python -m repro.runner.harness``.

The runner starts this module in a new session (its own process group) with the environment
of ``repro.runner.protocol.case_env`` (``REPRO_CASE``, ``REPRO_EVENTS``, ``REPRO_WORKDIR``, the
case token) and, in ``REPRO_REPORT_FD``, a pipe for the harness's own report.

Two processes (issue 9, item 3): this one makes itself the child subreaper and forks the case
process, then only watches (:func:`_watch`): it reaps orphans, kills the case's whole subtree
when the case ends or when the runner dies (even by ``kill -9``), and reports leftovers. The
case process has PDEATHSIG = SIGKILL, so it cannot outlive its watcher. The case process arms ``faulthandler`` for fatal signals (crash stacks) and for ``SIGUSR1`` (the watchdog asks
every process of a hung case for all its threads' stacks before killing the tree), runs the
scenario and appends a ``result`` event. The verdict travels in the events file, not in the
exit status, so a status of 0 with no verdict is itself suspicious.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import resource
import signal
import sys
import traceback
from collections.abc import Callable

from repro import proctree, scenarios
from repro.case_api import CaseFailed, CaseSkipped, Context
from repro.case_protocol import DUMP_SIGNAL, arm_stack_dump  # noqa: F401 (DUMP_SIGNAL re-exported)
from repro.runner import protocol

#: Seconds between the watcher's checks for an ended case or a dead runner.
_WATCH_POLL_S = 0.05


def _print_traceback() -> None:
    """Print the current exception's traceback to the log, even if a signal handler raises
    while it prints (torch's DataLoader SIGCHLD handler does): the verdict must still be written."""
    try:
        traceback.print_exc()
    except BaseException as again:  # noqa: BLE001
        print(
            f"repro: while printing the traceback: {type(again).__name__}: {again}",
            file=sys.stderr,
            flush=True,
        )


def _exception_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _check_accelerator(ctx: Context, expect: bool) -> None:
    """A cuda case must never pass by silently running on the CPU (field reports F3-8)."""
    if ctx.device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        message = (
            "device=cuda but torch.cuda.is_available() is False "
            f"(torch {torch.__version__}, cuda {torch.version.cuda}, hip {torch.version.hip})"
        )
        if expect:
            ctx.fail(message, signature="accelerator_unavailable")
        ctx.skip(message)


def _limit_threads() -> None:
    """Under ``repro run -j N`` a case gets ``REPRO_CASE_THREADS`` intra-op threads. A fresh
    interpreter reads ``OMP_NUM_THREADS`` (set beside it) when it imports torch; a case forked
    from the zygote has torch imported already, so the count is set here."""
    threads = os.environ.get(protocol.THREADS_VAR, "")
    torch = sys.modules.get("torch")
    if threads.isdigit() and int(threads) > 0 and torch is not None:
        torch.set_num_threads(int(threads))


def run_case(spec: dict, events_path: str, workdir: str) -> dict:
    """Run one case in this process and return its verdict ``{"outcome", "message", "signature"}``.

    Tracebacks go to stderr (the case log). Never raises for scenario errors.
    """
    ctx = Context(spec["case_id"], dict(spec["params"]), events_path, workdir)
    _limit_threads()
    ctx.heartbeat("start")
    verdict: dict = {"outcome": "passed", "message": "", "signature": None}
    try:
        module = scenarios.load(spec["scenario"], spec.get("module"))
        _check_accelerator(ctx, bool(spec.get("expect_accelerator")))
        module.run(ctx, ctx.params)
    except CaseSkipped as exc:
        verdict = {"outcome": "skipped", "message": str(exc), "signature": None}
    except CaseFailed as exc:
        print(f"repro: check failed: {exc}", file=sys.stderr, flush=True)
        verdict = {"outcome": "failed", "message": str(exc), "signature": exc.signature}
    except AssertionError as exc:
        _print_traceback()
        verdict = {"outcome": "failed", "message": _exception_line(exc), "signature": None}
    except BaseException as exc:  # noqa: BLE001 - every other exception is an `error` verdict
        _print_traceback()
        verdict = {"outcome": "error", "message": _exception_line(exc), "signature": None}
    ctx.heartbeat("teardown")
    ctx.emit("result", **verdict)
    return verdict


def _watch(case_pid: int, parents: tuple[int, ...], report_fd: int) -> int:
    """The harness's own loop while its child runs the case (this process runs no case code).

    It is the child subreaper of the case, so every orphaned descendant (a ``setsid``'ed
    grandchild too) is re-parented to it and stays in its tree. It reaps them, and:

    - when its parent is no longer one of ``parents`` (the runner, or the zygote that forked it
      and, once that zygote retires, the runner that adopts it) because the runner died, even by
      SIGKILL, it SIGKILLs its whole subtree and exits, so nothing of the case outlives a
      killed run;
    - when the case process ends, it SIGKILLs whatever of the case is left, reports those
      processes on ``report_fd`` (one JSON line ``{"leaked": [...], "cpu_s": seconds}``: the
      user + system CPU time of every process of the case it reaped, workers and ranks
      included) and exits with the case's status (a signal is re-raised on itself, so the
      runner sees ``-SIGNUM`` as before).
    """
    signal.signal(DUMP_SIGNAL, signal.SIG_IGN)  # the watchdog asks every pid for stacks
    status = None
    while status is None:
        status = _reap(case_pid)
        if status is None and os.getppid() not in parents:
            proctree.kill_subtree()
            os._exit(1)
        if status is None:  # wakes at once when a child exits (SIGCHLD is blocked, see main)
            signal.sigtimedwait([signal.SIGCHLD], _WATCH_POLL_S)
    leaked = proctree.kill_subtree()
    if report_fd >= 0:
        report = {"leaked": leaked[:100], "cpu_s": round(_children_cpu_s(), 3)}
        with contextlib.suppress(OSError):
            os.write(report_fd, (json.dumps(report)[:60_000] + "\n").encode())
            os.close(report_fd)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        faulthandler.disable()
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return os.waitstatus_to_exitcode(status)


def _children_cpu_s() -> float:
    """User + system CPU seconds of every reaped descendant (a fork starts at zero, so a
    zygote's own import never counts)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap(case_pid: int) -> int | None:
    """Reap every exited child; the case process's wait status once it has ended, else None."""
    status = None
    while True:
        try:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == case_pid:
            status = wait_status


def main() -> int:
    """Fresh isolation: ``python -m repro.runner.harness`` started by the runner. Reads the case
    from the environment and serves it (:func:`serve`), watching the runner."""
    report_fd = int(os.environ.get(protocol.REPORT_FD_VAR, "-1"))
    # From the environment, not getppid(): a runner killed before this line would otherwise
    # leave init recorded as "the runner" and the watcher would never notice.
    runner_pid = int(os.environ.get(protocol.RUNNER_PID_VAR, os.getppid()))
    return serve(report_fd, runner_pid)


def serve(report_fd: int, parent_pid: int, case_setup: Callable[[], None] | None = None) -> int:
    """Become the case's subreaper, fork the case process, and watch it (:func:`_watch`).

    ``parent_pid``: the process whose death ends the case (the runner when fresh, the zygote
    when forked by ``repro.runner.zygote``, which itself dies with the runner). A forked
    harness whose zygote retires (it refused a later fork) is adopted by the runner, a
    subreaper, and goes on. ``case_setup`` runs first in the case process (the zygote's:
    thread pools sized as a fresh interpreter would size them). The case spec,
    events path and workdir come from ``os.environ`` (``repro.runner.protocol.case_env``).
    Returns (or ends the process with) the case's exit status, as :func:`_watch` does.
    """
    spec = protocol.case_spec()
    proctree.become_subreaper()
    if os.getppid() != parent_pid:
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    watcher_pid = os.getpid()
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])  # before fork: no lost wake-up
    case_pid = os.fork()
    if case_pid:
        runner_pid = int(os.environ.get(protocol.RUNNER_PID_VAR, parent_pid))
        os._exit(_watch(case_pid, (parent_pid, runner_pid), report_fd))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])  # the case gets a normal mask
    # The case process: dies at once with its watcher (PDEATHSIG SIGKILL: a case ignoring
    # SIGTERM cannot outlive it), and cannot write the watcher's report.
    if report_fd >= 0:
        os.close(report_fd)
    proctree.set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != watcher_pid:  # the watcher died before prctl took effect
        os._exit(1)
    arm_stack_dump()
    if case_setup is not None:
        case_setup()
    run_case(
        spec,
        os.environ[protocol.EVENTS_VAR],
        os.environ.get(protocol.WORKDIR_VAR, os.getcwd()),
    )
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
