"""What one run is, apart from supervising its cases (``repro.runner.executor``): its settings
(:class:`RunContext`), what its cases share while it runs (:class:`RunState`), and which of
them fork from the run's zygote (``wants_zygote``, ``plan_zygote``, the accelerator lane's fork
check) — the pool itself is ``repro.runner.zygote_pool``.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import scenarios
from repro.config.expect import CellExpectations
from repro.errors import ConfigError
from repro.host import fork_check
from repro.model import Fingerprint
from repro.runner import protocol, zygote_pool
from repro.runner import zygote as zygote_mod
from repro.runner.caselog import DEFAULT_CAP_BYTES, CaseLog
from repro.runner.zygote_pool import ZygotePool, pool_env
from repro.scenarios import Case

#: Values of ``RunContext.isolation`` / ``repro run --isolation``.
ISOLATIONS = ("fresh", "zygote", "auto")


@dataclass
class RunContext:
    """Everything a run needs that is the same for every case.

    Attributes:
        run_dir: ``results/<run-id>``; ``logs/`` is created inside.
        fingerprint: the typed host facts (``repro.host.fingerprint.collect``, keyed by the
            real host inside an image); decides skips.
        suite_properties: JUnit testsuite properties (``host.*``, ``runtime.*``, ``variant.*``).
        run_info: the ``run.json`` sidecar, updated as cases finish.
        python: interpreter that runs the cases (the one under test).
        expect_accelerator: a cuda case that finds no device fails instead of skipping
            (true for GPU variants in containers; a silent CPU fallback must not pass).
        env: the variant's extra environment for every case.
        log_cap_bytes: cap of each case log (bytes; the tail is kept).
        isolation: ``fresh`` (a new interpreter per case), ``zygote`` (every case forked from
            a pre-imported interpreter, ``repro.runner.zygote``) or ``auto`` (zygote unless the
            scenario declares ``FRESH``).
        timeout_scale: ``--timeout-scale``; the case timeouts are already scaled, this scales
            the phase budgets scenarios declare in their heartbeats.
        case_threads: torch intra-op threads per case that shares the machine (``repro run -j
            N`` on a CPU lane: cores / N), or None for torch's default; an exclusive case keeps
            the default. A user's own ``OMP_NUM_THREADS`` wins in a fresh interpreter.
        expectations: the judge of this run's cell (``repro.config.expect``: matrix.yaml's
            ``expect:`` entries, then the scenarios' ``EXPECT``), applied to each result as it
            ends; None judges nothing.

    What the cases share while the run lasts (the zygote pool, the running harnesses, the
    cancel flag) is ``state``, a :class:`RunState`; ``dataclasses.replace`` keeps it shared.
    """

    run_dir: Path
    fingerprint: Fingerprint
    suite_properties: dict[str, str]
    run_info: dict[str, Any]
    python: str = sys.executable
    expect_accelerator: bool = False
    env: dict[str, str] = field(default_factory=dict)
    log_cap_bytes: int = DEFAULT_CAP_BYTES
    isolation: str = "fresh"
    timeout_scale: float = 1.0
    case_threads: int | None = None
    expectations: CellExpectations | None = None
    state: RunState = field(default_factory=lambda: RunState(), repr=False, compare=False)

    def pool(self) -> ZygotePool:
        """The run's zygote pool (made on first use; ``zygote`` isolation waits for ready)."""
        state = self.state
        with state.lock:
            if state.zygotes is None:
                env = pool_env(
                    protocol.case_env(dict(os.environ), self.env, {}, Path(), Path(), "")
                )
                state.zygotes = ZygotePool(
                    self.python,
                    env,
                    zygote_modules(),
                    self.run_dir / "zygote.log",
                    background=self.isolation != "zygote",
                )
            return state.zygotes


@dataclass
class RunState:
    """What the cases of one run share while it runs (threads under ``-j N``), apart from the
    run's settings (:class:`RunContext`): ``lock`` guards ``harnesses`` (case token -> harness
    pid of every running case) and ``zygotes``; ``cancel`` stops every running case (Ctrl-C, a
    results directory that cannot be written)."""

    #: The run's zygote (``repro.runner.zygote_pool``), made on first use; None until then.
    zygotes: ZygotePool | None = None
    #: The zygote's premise checked once on an accelerator lane (:func:`accelerator_lane`)
    #: before the first zygote starts; None until then, or on a CPU lane.
    fork_check: fork_check.ForkCheck | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    cancel: threading.Event = field(default_factory=threading.Event)
    harnesses: dict[str, int] = field(default_factory=dict)

    def other_tokens(self, token: str) -> set[str]:
        """The tokens of the other cases running now: their leftovers are theirs to sweep."""
        with self.lock:
            return {t for t in self.harnesses if t != token}


def wants_zygote(ctx: RunContext, case: Case) -> bool:
    """Whether ``ctx.isolation`` forks this case from the zygote: always under ``zygote``, never
    under ``fresh``, and under ``auto`` unless the scenario declares ``FRESH`` for it
    (``repro.scenarios.case_flag``). Raises ConfigError for an unknown isolation."""
    if ctx.isolation not in ISOLATIONS:
        raise ConfigError(
            f"isolation: expected one of {', '.join(ISOLATIONS)}, got {ctx.isolation!r}"
        )
    if ctx.isolation == "auto":
        return not scenarios.case_flag(case, "FRESH")
    return ctx.isolation == "zygote"


def zygote_modules() -> list[str]:
    """Import paths of the built-in scenarios a zygote pre-imports: those with a case that may
    be forked (not ``FRESH = True`` for every case)."""
    return [
        scenarios.module_name(n)
        for n in scenarios.builtin()
        if getattr(scenarios.load(n), "FRESH", False) is not True
    ]


def zygote_for(ctx: RunContext, case: Case, log: CaseLog) -> zygote_mod.Zygote | None:
    """The run's zygote when this case should be forked from it and one is ready, else None
    (the case runs fresh). Under ``auto`` a zygote still importing is not waited for."""
    if not wants_zygote(ctx, case):
        return None
    pool = ctx.pool()
    zygote = pool.ready()
    if zygote is None and pool.given_up is not None:
        log.write(f"# repro: running fresh: {pool.given_up}\n".encode(errors="replace"))
    return zygote


def prepare_zygote(ctx: RunContext, case: Case) -> None:
    """From the main thread, before a case thread forks from it: start (or replace) the run's
    zygote when ``case`` will want one (background under ``auto``). Under ``-j N`` the main
    thread calls it, because the zygote's parent-death signal fires when the thread that
    started it ends."""
    if wants_zygote(ctx, case):
        ctx.pool().start()


def plan_zygote(ctx: RunContext, cases: list[Case]) -> None:
    """Decide once per run whether a zygote pays and may be used: under ``auto``, fewer
    eligible ``cases`` than ``repro.runner.zygote_pool.MIN_CASES`` run fresh; on an accelerator
    lane, a failed :func:`check_fork` makes the whole run fresh. Either reason is said in
    ``run.json`` and in each case log that wanted a zygote."""
    if ctx.isolation == "fresh":
        return
    eligible = sum(1 for case in cases if wants_zygote(ctx, case))
    if ctx.isolation == "auto" and eligible < zygote_pool.MIN_CASES:
        ctx.pool().give_up(
            f"{eligible} zygote-eligible case(s): a zygote pays from {zygote_pool.MIN_CASES}"
        )
        return
    if eligible:
        unsafe = check_fork(ctx, zygote_modules(), ctx.pool().env)
        if unsafe is not None:
            ctx.pool().give_up(unsafe)


def accelerator_lane(ctx: RunContext) -> bool:
    """Whether the run's cases may touch a CUDA/ROCm device: a GPU variant
    (``ctx.expect_accelerator``) or GPUs in the host's fingerprint."""
    return ctx.expect_accelerator or bool(ctx.fingerprint.gpus)


def check_fork(ctx: RunContext, modules: list[str], env: dict[str, str]) -> str | None:
    """On an accelerator lane, once per run: does a CUDA/ROCm op work in a child forked from
    ``ctx.python`` after importing torch, ``torch._dynamo`` and ``modules``
    (:func:`repro.host.fork_check.run`, the ``fork_cuda`` check of ``repro doctor --deep``)?
    Records the answer in ``ctx.state.fork_check`` and ``run.json`` (``fork_check``); returns why the
    zygote must not be used, or None (ok, n/a, a CPU lane, or already checked and fine)."""
    if ctx.state.fork_check is None and accelerator_lane(ctx):
        found = fork_check.run(ctx.python, ["torch._dynamo", *modules], env=env)
        ctx.state.fork_check = found
        ctx.run_info["fork_check"] = {
            "status": found.status,
            "reason": found.reason,
            "duration_s": found.duration_s,
        }
    if ctx.state.fork_check is not None and not ctx.state.fork_check.fork_is_safe:
        return f"fork check failed: {ctx.state.fork_check.reason}"
    return None


def close_zygote(ctx: RunContext) -> None:
    """Stop the run's zygote, if one was started (it also stops when this process exits), and
    record what it did in ``run.json``'s ``zygote`` (started, forked, why cases ran fresh)."""
    if ctx.state.zygotes is not None:
        ctx.state.zygotes.close()
        ctx.run_info["zygote"] = ctx.state.zygotes.summary()
