"""What one run is, apart from supervising its cases (``repro.runner.executor``): its settings
(:class:`RunContext`) and what its cases share while it runs (:class:`RunState`). Which cases
fork from the run's zygote, and the pool itself, are ``repro.runner.zygote_pool``.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.config.expect import CellExpectations
from repro.host import fork_check
from repro.model import Fingerprint
from repro.runner import protocol
from repro.runner.caselog import DEFAULT_CAP_BYTES
from repro.runner.zygote_pool import ISOLATIONS, ZygotePool, pool_env, zygote_modules  # noqa: F401


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
