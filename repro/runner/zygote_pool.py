"""The run's zygote, managed: started only when it pays, in the background, replaced when it
dies, wedges or refuses, given up after ``MAX_FAILURES`` (issue 19 item 4, issue 25 item 1);
and the fork policy: which case forks from it (:func:`wants_zygote`), whether a run uses one at
all (:func:`plan_zygote`, the accelerator lane's :func:`check_fork`).

A zygote (``repro.runner.zygote``) costs one interpreter's imports (torch, ``torch._dynamo``
and the scenarios: about 3.5 CPU-seconds on a 2-core host) and saves about 1.6 s per forked
case. Under ``--isolation auto`` it is started without waiting: the cases that come before it
is ready run fresh, so a run is never held up by it, and a run with fewer than ``MIN_CASES``
zygote-eligible cases never starts one (one case took 5.8 s with a zygote against 5.1 s fresh,
issue 19). Under ``--isolation zygote`` every eligible case waits for it.

Only the main thread starts a zygote: its parent-death signal follows the thread that started
it (PR_SET_PDEATHSIG, prctl(2)). The zygote process is ``repro.runner.zygote``, the runner's
client ``repro.runner.zygote_client``, the wire ``repro.runner.zygote_wire``. Never imports torch.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from repro import scenarios
from repro.errors import ConfigError
from repro.host import fork_check
from repro.runner import zygote_client
from repro.runner.caselog import CaseLog
from repro.scenarios import Case

if TYPE_CHECKING:  # the run's settings; context.py holds the pool in its state
    from repro.runner.context import RunContext

#: Values of ``RunContext.isolation`` / ``repro run --isolation``.
ISOLATIONS = ("fresh", "zygote", "auto")

#: Below this many zygote-eligible cases in a run, ``auto`` isolation starts no zygote.
MIN_CASES = 4
#: Zygotes that refused a fork, died or wedged before the rest of the run goes fresh.
MAX_FAILURES = 3


class ZygotePool:
    """The zygote of one run, shared by every case thread (all methods take ``lock``).

    ``python``: the interpreter under test; ``env``: the cases' common environment;
    ``modules``: scenario module paths to pre-import; ``log_path``: the zygote's own output
    (``run_dir/zygote.log``); ``background``: start without waiting (``auto``) or wait for
    ready (``zygote``).
    """

    def __init__(
        self,
        python: str,
        env: dict[str, str],
        modules: list[str],
        log_path: Path,
        background: bool,
    ) -> None:
        self.python, self.env, self.modules = python, env, modules
        self.log_path, self.background = log_path, background
        self.lock = threading.RLock()
        self.zygote: zygote_client.Zygote | None = None
        #: Why the rest of the run is fresh (set once); None while a zygote may still be used.
        self.given_up: str | None = None
        self.failures = 0
        self.started = 0
        self.forked = 0

    def give_up(self, reason: str) -> None:
        """No zygote for the rest of the run (a running one is closed)."""
        with self.lock:
            self.given_up = self.given_up or reason
            self.close()

    def start(self) -> None:
        """Start a zygote if none is running and the run still wants one. Only the main thread
        starts one; elsewhere this does nothing. Never blocks under ``background``."""
        with self.lock:
            if (
                self.given_up is not None
                or threading.current_thread() is not threading.main_thread()
            ):
                return
            if self.zygote is not None and self.zygote.failure is None and self.zygote.alive():
                return
            if self.zygote is not None:
                self._retire(self.zygote)
                if self.given_up is not None:
                    return
            self.started += 1
            try:
                self.zygote = zygote_client.Zygote(
                    self.python, self.env, self.modules, self.log_path, wait=not self.background
                )
            except (zygote_client.ZygoteError, OSError) as exc:
                self.zygote = None
                self.given_up = str(exc)

    def ready(self) -> zygote_client.Zygote | None:
        """A zygote that can fork now, else None (the case runs fresh): starting one in the
        background if none runs (main thread only), never waiting for it under ``background``."""
        with self.lock:
            self.start()
            zygote = self.zygote
            if zygote is None:
                return None
            if zygote.ready or zygote.poll_ready():
                return zygote
            if zygote.failure is not None:
                self._retire(zygote)
            return None

    def settle(self) -> None:
        """Wait until a zygote importing in the background is ready or has failed (at most
        ``zygote_client.START_TIMEOUT_S`` from its start): before an ``EXCLUSIVE`` case, which
        must run alone. A zygote importing torch takes a core: on the 2-core host the first
        dataloader case measured while one did saw other processes take 50 % of the host
        (its ``host_busy``, 10 runs of benchmarks/metric_stability.py), so every comparison of
        it was set aside."""
        with self.lock:
            zygote = self.zygote
        if zygote is not None and not zygote.ready and zygote.failure is None:
            zygote.wait_ready(zygote_client.START_TIMEOUT_S)

    def spawn(
        self,
        zygote: zygote_client.Zygote,
        env: dict[str, str],
        cwd: str,
        log_fd: int,
        report_fd: int,
    ) -> zygote_client.ForkedHarness:
        """Fork a harness from ``zygote``; raises ZygoteError when it refused or stopped
        answering (it is then retired: replaced before a later case, or given up)."""
        with self.lock:
            try:
                harness = zygote.spawn(env, cwd, log_fd, report_fd)
            except zygote_client.ZygoteError:
                self._retire(zygote)
                raise
            self.forked += 1
            return harness

    def _retire(self, zygote: zygote_client.Zygote) -> None:
        """Forget a zygote that failed. One that never got ready failed for good (its imports
        start threads: the same every time); otherwise give up after ``MAX_FAILURES``."""
        if zygote is not self.zygote:
            return
        self.zygote = None
        reason = zygote.failure or "exited"
        zygote.close()
        if not zygote.ready:
            self.given_up = self.given_up or f"zygote unavailable: {reason}"
            return
        self.failures += 1
        if self.failures >= MAX_FAILURES:
            self.given_up = self.given_up or f"{self.failures} zygotes failed, the last: {reason}"

    def summary(self) -> dict[str, object]:
        """For ``run.json``: zygotes started, cases forked, and why the run went fresh."""
        with self.lock:
            return {"started": self.started, "forked": self.forked, "fresh_because": self.given_up}

    def close(self) -> None:
        with self.lock:
            if self.zygote is not None:
                self.zygote.close()
                self.zygote = None


def pool_env(env: dict[str, str]) -> dict[str, str]:
    """The cases' common environment without the per-case protocol variables (what a zygote
    imports under; each forked case gets its own environment)."""
    from repro import proctree
    from repro.runner import protocol

    out = dict(env)
    for name in (protocol.CASE_VAR, protocol.EVENTS_VAR, protocol.WORKDIR_VAR, proctree.TOKEN_VAR):
        out.pop(name, None)
    return out


# ---- the fork policy: which case forks, and whether the run uses a zygote at all ------------


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


def zygote_for(ctx: RunContext, case: Case, log: CaseLog) -> zygote_client.Zygote | None:
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
    zygote when ``case`` will want one (background under ``auto``); before an ``EXCLUSIVE`` case,
    wait for a zygote still importing (:meth:`ZygotePool.settle`). Under ``-j N`` the main
    thread calls it, because the zygote's parent-death signal fires when the thread that
    started it ends."""
    if wants_zygote(ctx, case):
        ctx.pool().start()
    if scenarios.case_flag(case, "EXCLUSIVE") and ctx.state.zygotes is not None:
        ctx.state.zygotes.settle()  # an exclusive case runs alone: no zygote importing beside it


def plan_zygote(ctx: RunContext, cases: list[Case]) -> None:
    """Decide once per run whether a zygote pays and may be used: under ``auto``, fewer
    eligible ``cases`` than :data:`MIN_CASES` run fresh; on an accelerator
    lane, a failed :func:`check_fork` makes the whole run fresh. Either reason is said in
    ``run.json`` and in each case log that wanted a zygote."""
    if ctx.isolation == "fresh":
        return
    eligible = sum(1 for case in cases if wants_zygote(ctx, case))
    if ctx.isolation == "auto" and eligible < MIN_CASES:
        ctx.pool().give_up(f"{eligible} zygote-eligible case(s): a zygote pays from {MIN_CASES}")
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
