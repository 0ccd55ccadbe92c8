"""Entry point of one case's child process: ``python -m repro.runner.harness``.

The runner starts this module in a new session (its own process group) with:

- ``REPRO_CASE``: JSON ``{"scenario", "module", "case_id", "params", "expect_accelerator"}``
- ``REPRO_EVENTS``: path of the JSON-lines events file (see ``repro.runner.case_api``)
- ``REPRO_WORKDIR``: a private temporary directory

It arms ``faulthandler`` for fatal signals (crash stacks) and for ``SIGUSR1`` (the watchdog asks
every process of a hung case for all its threads' stacks before killing the tree), runs the
scenario and appends a ``result`` event. The verdict travels in the events file, not in the
exit status, so a status of 0 with no verdict is itself suspicious.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import signal
import sys
import traceback

from repro import scenarios
from repro.runner.case_api import CaseFailed, CaseSkipped, Context

#: Signal the watchdog sends to ask for stacks. Registered again in spawned scenario children
#: by :func:`arm_stack_dump` so DataLoader workers and torchrun ranks can answer too.
DUMP_SIGNAL = signal.SIGUSR1
_PR_SET_PDEATHSIG = 1


def arm_stack_dump() -> None:
    """Print every thread's Python stack to stderr on SIGUSR1, and on fatal signals."""
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True, chain=False)


def _die_with_runner() -> None:
    """If the runner dies (even by SIGKILL), take this case's whole process group down with it,
    so a killed run leaves no hung case or DataLoader worker behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the runner's own cleanup still applies
        return
    harness_pid = os.getpid()

    def on_term(signum: int, _frame: object) -> None:
        if os.getpid() != harness_pid:
            # A forked child (e.g. a DataLoader worker being terminated) inherited this handler:
            # behave as if it had the default one.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        os.killpg(0, signal.SIGKILL)

    signal.signal(signal.SIGTERM, on_term)
    if os.getppid() == 1:  # the runner died before prctl took effect
        os.killpg(0, signal.SIGKILL)


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


def run_case(spec: dict, events_path: str, workdir: str) -> dict:
    """Run one case in this process and return its verdict ``{"outcome", "message", "signature"}``.

    Tracebacks go to stderr (the case log). Never raises for scenario errors.
    """
    ctx = Context(spec["case_id"], dict(spec["params"]), events_path, workdir)
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


def main() -> int:
    spec = json.loads(os.environ["REPRO_CASE"])
    arm_stack_dump()
    _die_with_runner()
    sys.stdout.flush()
    run_case(spec, os.environ["REPRO_EVENTS"], os.environ.get("REPRO_WORKDIR", os.getcwd()))
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
