"""The API a scenario's ``run(ctx, params)`` sees, inside the case's child process (ground
floor: the scenarios and the runner both import it, neither imports the other).

Everything a case reports travels as JSON lines appended to the events file the runner named
in ``REPRO_EVENTS`` (``repro.case_protocol``: one ``write`` per line), so metrics and the last heartbeat
survive even when the case later segfaults or hangs.
"""

from __future__ import annotations

import math
import time
from typing import Any

from repro import case_protocol as protocol
from repro import measurement


class CaseFailed(Exception):
    """The scenario's check failed: the bug reproduced. Outcome ``failed``."""

    def __init__(self, message: str, signature: str | None = None):
        super().__init__(message)
        self.signature = signature


class CaseSkipped(Exception):
    """A requirement is absent at run time. Outcome ``skipped`` with this reason."""


class Context:
    """Handed to ``run(ctx, params)``.

    Attributes:
        case_id: the canonical case id.
        params: the case parameters.
        device: ``params["device"]`` when present (``"cpu"``/``"cuda"``), else ``"cpu"``.
        workdir: a private temporary directory for this case (removed by the runner).
    """

    def __init__(self, case_id: str, params: dict[str, Any], events_path: str, workdir: str):
        self.case_id = case_id
        self.params = params
        self.device = str(params.get("device", "cpu"))
        self.workdir = workdir
        self._events_path = events_path
        self._t0 = time.monotonic()

    def emit(self, event: str, **fields: Any) -> None:
        """Append one event line (``{"event": ..., "t": seconds since start, ...}``) through
        the one writer of the protocol, :func:`repro.case_protocol.append_event`."""
        protocol.append_event(self._events_path, self._t0, event, fields)

    def heartbeat(
        self, phase: str, step: int | None = None, *, budget_s: float | None = None
    ) -> None:
        """Mark progress: the watchdog reports the last phase a hung case reached.

        ``budget_s``: seconds this phase may stay silent (no next heartbeat) before the watchdog
        calls it hung, instead of waiting for the case's hard timeout or for a rhythm of beats.
        Give it where the scenario knows the phase is short (a forked child that only takes a
        lock); make it at least 5x the phase's time on a quiet machine. ``repro run
        --timeout-scale`` scales it. Raises ValueError for a budget that is not a finite
        positive number.
        """
        fields: dict[str, Any] = {"phase": str(phase), "step": None if step is None else int(step)}
        if budget_s is not None:
            if not protocol.positive_seconds(budget_s):
                raise ValueError(
                    f"heartbeat budget_s: expected finite positive seconds, got {budget_s!r}"
                )
            fields["budget_s"] = float(budget_s)
        self.emit("heartbeat", **fields)

    def metric(self, name: str, value: float) -> None:
        """Record a number as testcase property ``metric.<name>``; put the unit in the name
        (``first_batch_s``, ``it_per_s``, ``peak_rss_bytes``). A NaN or infinite value (a loss
        that diverged) is recorded as the text ``nan``/``inf`` under the same property name:
        the events protocol carries finite numbers only."""
        number = float(value)
        if math.isfinite(number):
            self.emit("metric", name=str(name), value=number)
        else:
            self.emit("property", name=f"metric.{name}", value=repr(number))

    def measurement(self, name: str, values: Any) -> None:
        """Record a figure measured more than once (``values``: its samples, e.g. the it/s of
        each steady-state window) as its median, spread and sample count: ``metric.<name>``,
        ``metric.<name>.spread``, ``metric.<name>.n`` (``repro.measurement``, the one codec of
        those names); what ``repro compare`` weighs a drop against. Non-finite samples are
        left out; none left records nothing."""
        finite = [float(v) for v in values if math.isfinite(float(v))]
        if not finite:
            return
        for metric, number in measurement.to_metrics(name, measurement.summarize(finite)).items():
            self.metric(metric, number)

    def property(self, name: str, value: Any) -> None:
        """Record a free-form testcase property (a version, a mode that was really used)."""
        self.emit("property", name=name, value=str(value))

    def log(self, message: str) -> None:
        """Print a line to the case log (stdout of the case process)."""
        print(f"[{self.case_id}] {message}", flush=True)

    def fail(self, message: str, signature: str | None = None) -> None:
        """End the case as ``failed``: raises :class:`CaseFailed`."""
        raise CaseFailed(message, signature)

    def skip(self, reason: str) -> None:
        """End the case as ``skipped``: raises :class:`CaseSkipped`."""
        raise CaseSkipped(reason)
