"""Does a CUDA/ROCm op work in a child forked from a torch-imported interpreter?

That is the zygote's premise on accelerator lanes (DESIGN.md, "Isolation"): it imports torch,
``torch._dynamo`` and the scenario modules, never initialises CUDA, and forks each case. If any
of those imports calls ``cuInit`` (or the ROCm runtime deadlocks across ``fork``), every forked
case fails with "Cannot re-initialize CUDA in forked subprocess" or hangs, for reasons that are
not the case's. :func:`run` checks it once, in a throwaway interpreter
(``python -m repro.host.accel_probe fork``), and answers ``ok``, ``failed`` (start cases fresh,
the reason says why) or ``n/a`` (CPU build, no device, or an accelerator that fails without a
fork too). ``repro doctor --deep`` reports it as the ``fork_cuda`` check.

Never imports torch; the child runs under a hard timeout with its whole process group killed
(:func:`repro.proctree.run_bounded`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repro import proctree
from repro.host.torch_probe import last_json_object

OK = "ok"
FAILED = "failed"
NA = "n/a"
CHILD_MODULE = "repro.host.accel_probe"
#: What the zygote imports besides torch (repro.runner.zygote: torch._dynamo, which the first
#: optimizer imports); the zygote passes its own list, scenario modules included.
DEFAULT_MODULES = ("torch._dynamo",)
#: Seconds for the whole check: interpreter start, torch import (a few seconds), the forked
#: child's first CUDA op (context creation) and, when it fails, the parent's control op.
DEFAULT_TIMEOUT_S = 180.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])

#: ``run_bounded``-compatible runner (tests pass a stand-in).
Runner = Callable[..., subprocess.CompletedProcess]


@dataclass(frozen=True)
class ForkCheck:
    """``status``: ``ok`` | ``failed`` | ``n/a``; ``reason``: one line; ``duration_s``: wall
    seconds of the check."""

    status: str
    reason: str
    duration_s: float = 0.0

    @property
    def fork_is_safe(self) -> bool:
        """False only when forking after the imports demonstrably breaks the accelerator."""
        return self.status != FAILED


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def child_command(python: str, what: str, *args: str) -> list[str]:
    """``[python, "-m", "repro.host.accel_probe", what, *args]``."""
    return [python, "-m", CHILD_MODULE, what, *args]


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this environment) with this checkout first on ``PYTHONPATH`` (the
    interpreter under test need not have repro installed)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    return env


def ask(
    python: str,
    what: str,
    *args: str,
    timeout_s: float,
    run: Runner = proctree.run_bounded,
    env: Mapping[str, str] | None = None,
) -> tuple[dict | None, str]:
    """Run one child check: ``(its JSON reply, "")`` or ``(None, why there is none)``; a child
    killed by a signal says which (SIGBUS, SIGSEGV). ``env``: the child's environment (default:
    this one), e.g. the variant's ``CUDA_VISIBLE_DEVICES``."""
    if os.sep in python:
        python = os.path.abspath(python)
    try:
        done = run(
            child_command(python, what, *args),
            timeout_s=timeout_s,
            env=child_env(env),
            cwd=_PACKAGE_PARENT,
        )
    except OSError as exc:
        return None, f"cannot run {python}: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return None, f"{python} -m {CHILD_MODULE} {what} hung past {timeout_s:g} s (killed)"
    reply = last_json_object(done.stdout or "")
    if reply is not None:
        return reply, ""
    if done.returncode < 0:
        return None, f"killed by {_signal_name(-done.returncode)}"
    last = ((done.stderr or "").strip().splitlines() or ["no output"])[-1]
    return None, f"exit status {done.returncode}: {last}"


def run(
    python: str = sys.executable,
    modules: Sequence[str] = DEFAULT_MODULES,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    runner: Runner = proctree.run_bounded,
    env: Mapping[str, str] | None = None,
) -> ForkCheck:
    """Check the zygote's premise under ``python`` after importing torch and ``modules`` (in
    ``env``, default this environment; the zygote passes the cases' common environment).

    Never raises: a child that cannot start or hangs is ``failed`` with the reason (a zygote
    that cannot be checked is not trusted)."""
    started = time.monotonic()
    reply, why = ask(python, "fork", *modules, timeout_s=timeout_s, run=runner, env=env)
    duration = round(time.monotonic() - started, 3)
    if reply is None:
        return ForkCheck(FAILED, f"the fork check did not answer: {why}", duration)
    status = reply.get("status")
    if status not in (OK, FAILED, NA):
        return ForkCheck(FAILED, f"the fork check answered {reply!r}", duration)
    return ForkCheck(status, str(reply.get("reason") or ""), duration)
