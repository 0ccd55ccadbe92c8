"""The field's start-method question, answered per host from the ``dataloader`` cases (issue 29
item 3): what do spawn and forkserver cost against fork, at start-up and in steady state, and do
persistent workers win the start-up back?

One :class:`Summary` per (host, variant, device) with passed ``dataloader`` cases; one
:class:`Row` per start method and worker count (``workers=0`` is the ``in-process`` reference,
the start method does not apply there). Cases of a row are pooled over ``persistent`` and
``accel_init`` (``repro.measurement.combine``: the median of the cases, the widest spread):

- start-up: ``first_batch_s`` (time to the first batch; one figure per case, so its spread is
  over the cases) and ``worker_start_s`` (each worker's own start latency);
- steady it/s: ``steady_it_per_s`` (a median of windows after every worker delivered, with its
  spread, ``repro.scenarios.dataloader``);
- both against fork with the same worker count (``repro.measurement.ratio``, with spread);
- later epochs: the second pass's first batch (``epoch2_first_batch_s``) without and with
  persistent workers. Persistent workers **recover** the start-up cost when they cut it to at
  most :data:`RECOVERED_AT` of the non-persistent figure.

Results from before the steady windows (the H100 field run of 2026-11-27) have no
``steady_it_per_s``: their ``it_per_s`` was 11 batches right after the first batch, not a steady
state, so it is not shown (:attr:`Summary.legacy` says so); start-up and later epochs come from
``first_batch_s`` and ``epoch2_first_batch_s``, which those results have. The texts of a row
(:func:`row_texts`) are what matrix.md and matrix.html both print. Never reads files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from repro import measurement
from repro.measurement import Measurement, Ratio
from repro.outcomes import Outcome
from repro.report.model import Cell
from repro.report.plot import IN_PROCESS, case_params

SCENARIO = "dataloader"
#: Row order: the in-process reference, then the start methods.
METHOD_ORDER = (IN_PROCESS, "fork", "spawn", "forkserver")
#: The start methods whose start-up cost the question is about (a new interpreter per worker).
ASKED = ("spawn", "forkserver")
#: Persistent workers recover the start-up cost when a later epoch starts in at most this
#: fraction of the time it takes without them.
RECOVERED_AT = 0.10
LEGACY_NOTE = (
    "These results predate the steady-state windows: their it_per_s was 11 batches right after "
    "the first batch (whether the other workers had started yet), so no steady it/s is shown; "
    "start-up and later epochs are their first_batch_s and epoch2_first_batch_s"
)
#: Column headings of :func:`row_texts`, in order.
HEADINGS = (
    "start method",
    "workers",
    "first batch s",
    "vs fork",
    "worker start s",
    "steady it/s",
    "vs fork",
    "later epochs s: not persistent → persistent",
    "persistent workers recover start-up",
)


@dataclass
class _Figures:
    first_batch: list[Measurement] = field(default_factory=list)
    worker_start: list[Measurement] = field(default_factory=list)
    steady: list[Measurement] = field(default_factory=list)
    later: list[Measurement] = field(default_factory=list)
    later_persistent: list[Measurement] = field(default_factory=list)
    cases: int = 0


@dataclass(frozen=True)
class Row:
    """One start method and worker count; figures pooled over its cases (None: none had it)."""

    method: str
    workers: int
    cases: int
    first_batch_s: Measurement | None
    worker_start_s: Measurement | None
    steady_it_per_s: Measurement | None
    later_s: Measurement | None
    later_persistent_s: Measurement | None
    first_batch_vs_fork: Ratio | None = None
    steady_vs_fork: Ratio | None = None

    @property
    def recovered(self) -> float | None:
        """The fraction of the later-epoch start-up that persistent workers save (0.99: 99 %)."""
        if self.later_s is None or self.later_persistent_s is None or self.later_s.median <= 0:
            return None
        return 1.0 - self.later_persistent_s.median / self.later_s.median

    @property
    def recovers(self) -> bool | None:
        """Whether persistent workers win spawn's or forkserver's start-up back
        (:data:`RECOVERED_AT`); None for fork and in-process rows (their start-up is the
        reference) and where either figure is missing."""
        if self.method not in ASKED or self.recovered is None:
            return None
        return self.recovered >= 1.0 - RECOVERED_AT

    def to_json(self) -> dict[str, Any]:
        def m(value: Measurement | None) -> dict[str, Any] | None:
            return value.to_json() if value is not None else None

        def r(value: Ratio | None) -> dict[str, Any] | None:
            return value.to_json() if value is not None else None

        return {
            "start_method": self.method,
            "workers": self.workers,
            "cases": self.cases,
            "first_batch_s": m(self.first_batch_s),
            "first_batch_vs_fork": r(self.first_batch_vs_fork),
            "worker_start_s": m(self.worker_start_s),
            "steady_it_per_s": m(self.steady_it_per_s),
            "steady_vs_fork": r(self.steady_vs_fork),
            "later_epoch_first_batch_s": {
                "not_persistent": m(self.later_s),
                "persistent": m(self.later_persistent_s),
            },
            "persistent_recovered": self.recovered,
            "persistent_recovers": self.recovers,
        }


@dataclass(frozen=True)
class Summary:
    """The start-method summary of one (host, variant, device)."""

    host: str
    variant: str
    device: str
    rows: tuple[Row, ...]
    #: No case had steady windows (:data:`LEGACY_NOTE`).
    legacy: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "variant": self.variant,
            "device": self.device,
            "steady_state": not self.legacy,
            "note": LEGACY_NOTE if self.legacy else None,
            "rows": [row.to_json() for row in self.rows],
        }


def _figure(metrics: dict[str, float | None], name: str) -> Measurement | None:
    return measurement.from_metrics(metrics, name)


def _combined(values: Sequence[Measurement]) -> Measurement | None:
    return measurement.combine(values) if values else None


def summaries(cells: Sequence[Cell]) -> list[Summary]:
    """The start-method summaries of a report's ``cells``, by host, variant and device."""
    groups: dict[tuple[str, str, str], dict[tuple[str, int], _Figures]] = {}
    for cell in cells:
        for case in cell.cases:
            if case.scenario != SCENARIO or case.outcome is not Outcome.PASSED:
                continue
            params = case_params(case.case)
            if params.get("fault", "none") != "none" or "start_method" not in params:
                continue
            try:
                workers = int(params.get("workers", ""))
            except ValueError:
                continue
            method = IN_PROCESS if workers == 0 else params["start_method"]
            key = (cell.host, cell.column, params.get("device", ""))
            figures = groups.setdefault(key, {}).setdefault((method, workers), _Figures())
            figures.cases += 1
            metrics = case.metrics
            for name, into in (
                ("first_batch_s", figures.first_batch),
                ("worker_start_s", figures.worker_start),
                ("steady_it_per_s", figures.steady),
            ):
                found = _figure(metrics, name)
                if found is not None:
                    into.append(found)
            later = _figure(metrics, "epoch2_first_batch_s")
            if later is not None:
                persistent = params.get("persistent") in ("1", "True", "true")
                (figures.later_persistent if persistent else figures.later).append(later)
    out = []
    for (host, variant, device), rows in sorted(groups.items()):
        built = {
            key: Row(
                method=key[0],
                workers=key[1],
                cases=f.cases,
                first_batch_s=_combined(f.first_batch),
                worker_start_s=_combined(f.worker_start),
                steady_it_per_s=_combined(f.steady),
                later_s=_combined(f.later),
                later_persistent_s=_combined(f.later_persistent),
            )
            for key, f in rows.items()
        }
        ordered = []
        for key in sorted(built, key=_order):
            row = built[key]
            fork = built.get(("fork", row.workers))
            if fork is not None and row.workers:
                row = dataclasses.replace(
                    row,
                    first_batch_vs_fork=_ratio(row.first_batch_s, fork.first_batch_s),
                    steady_vs_fork=_ratio(row.steady_it_per_s, fork.steady_it_per_s),
                )
            ordered.append(row)
        legacy = not any(row.steady_it_per_s for row in ordered)
        out.append(Summary(host, variant, device, tuple(ordered), legacy))
    return out


def _order(key: tuple[str, int]) -> tuple[int, str, int]:
    method, workers = key
    rank = METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)
    return (rank, method, workers)


def _ratio(value: Measurement | None, reference: Measurement | None) -> Ratio | None:
    if value is None or reference is None:
        return None
    return measurement.ratio(value, reference)


# --------------------------------------------------------------------------------------------
# The texts matrix.md and matrix.html print


def figure_text(value: Measurement | None) -> str:
    """``3.42 ±0.21 (n=4)``; ``0.41 (n=1)`` without a spread; ``—`` for none."""
    if value is None:
        return "—"
    spread = f" ±{value.spread:.2g}" if value.spread is not None else ""
    return f"{value.median:.3g}{spread} (n={value.n})"


def ratio_text(value: Ratio | None) -> str:
    """``28× ±3``, ``0.93× ±0.1``; ``—`` for none."""
    if value is None:
        return "—"
    spread = f" ±{value.spread:.2g}" if value.spread is not None else ""
    return f"{value.value:.3g}×{spread}"


def later_text(row: Row) -> str:
    """``3.41 → 0.008``: the later epochs' start-up without and with persistent workers."""
    if row.later_s is None and row.later_persistent_s is None:
        return "—"
    parts = [
        f"{value.median:.3g}" if value is not None else "—"
        for value in (row.later_s, row.later_persistent_s)
    ]
    return " → ".join(parts)


def recovers_text(row: Row) -> str:
    """``yes (99.8 % saved)``, ``no (40 % saved)``, or ``—`` (fork, in-process, no figures)."""
    if row.recovers is None or row.recovered is None:
        return "—"
    return f"{'yes' if row.recovers else 'no'} ({row.recovered * 100:.3g} % saved)"


def row_texts(row: Row) -> list[str]:
    """The cells of one row under :data:`HEADINGS`."""
    fork = row.method == "fork"
    return [
        row.method,
        str(row.workers),
        figure_text(row.first_batch_s),
        "1" if fork and row.first_batch_s else ratio_text(row.first_batch_vs_fork),
        figure_text(row.worker_start_s),
        figure_text(row.steady_it_per_s),
        "1" if fork and row.steady_it_per_s else ratio_text(row.steady_vs_fork),
        later_text(row),
        recovers_text(row),
    ]


def title(summary: Summary) -> str:
    """``HOST · VARIANT · device cuda``."""
    return f"{summary.host} · {summary.variant} · device {summary.device or '-'}"


#: The paragraph above the tables (Markdown and HTML alike).
EXPLANATION = (
    "Per host: each start method and worker count against fork with the same workers. Start-up "
    "is the time to the first batch; steady it/s is the median of windows taken after every "
    "worker delivered. Figures are medians ±spread (interquartile range) over n samples (cases "
    "for start-up, windows for it/s); a ratio's spread adds both sides' relative spreads. Later "
    "epochs: the first batch of the next pass without → with persistent workers; they recover "
    f"the start-up cost when they cut it to {RECOVERED_AT:.0%} or less."
)
