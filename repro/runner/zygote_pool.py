"""The run's zygote, managed: started only when it pays, in the background, replaced when it
dies, wedges or refuses, given up after ``MAX_FAILURES`` (issue 19 item 4, issue 25 item 1).

A zygote (``repro.runner.zygote``) costs one interpreter's imports (torch, ``torch._dynamo``
and the scenarios: about 3.5 CPU-seconds on a 2-core host) and saves about 1.6 s per forked
case. Under ``--isolation auto`` it is started without waiting: the cases that come before it
is ready run fresh, so a run is never held up by it, and a run with fewer than ``MIN_CASES``
zygote-eligible cases never starts one (one case took 5.8 s with a zygote against 5.1 s fresh,
issue 19). Under ``--isolation zygote`` every eligible case waits for it.

Only the main thread starts a zygote: its parent-death signal follows the thread that started
it (PR_SET_PDEATHSIG, prctl(2)). Never imports torch.
"""

from __future__ import annotations

import threading
from pathlib import Path

from repro.runner import zygote as zygote_mod

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
        self.zygote: zygote_mod.Zygote | None = None
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
                self.zygote = zygote_mod.Zygote(
                    self.python, self.env, self.modules, self.log_path, wait=not self.background
                )
            except (zygote_mod.ZygoteError, OSError) as exc:
                self.zygote = None
                self.given_up = str(exc)

    def ready(self) -> zygote_mod.Zygote | None:
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

    def spawn(
        self, zygote: zygote_mod.Zygote, env: dict[str, str], cwd: str, log_fd: int, report_fd: int
    ) -> zygote_mod.ForkedHarness:
        """Fork a harness from ``zygote``; raises ZygoteError when it refused or stopped
        answering (it is then retired: replaced before a later case, or given up)."""
        with self.lock:
            try:
                harness = zygote.spawn(env, cwd, log_fd, report_fd)
            except zygote_mod.ZygoteError:
                self._retire(zygote)
                raise
            self.forked += 1
            return harness

    def _retire(self, zygote: zygote_mod.Zygote) -> None:
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
