"""How ``repro compare`` judges a throughput drop: past the threshold and the runs' spread, a
wall-clock drop only when its per-CPU-second twin dropped too, and never for a case measured on
a busy host (``repro.measurement.HOST_BUSY``). Pure: measurements in, entries out (issue 29).
"""

from __future__ import annotations

from typing import Any

from repro import measurement
from repro.measurement import Measurement

#: How a drop past the threshold was judged (``basis`` of a ``throughput_drops`` or
#: ``throughput_noise`` entry).
PAST_BOTH = "past the threshold and the runs' spread"
THRESHOLD_ONLY = "past the threshold; no spread (measured once), so judged on the threshold alone"
WITHIN_SPREAD = "past the threshold but within the runs' spread: noise, not counted"
BUSY_HOST = (
    "the host was busy: other processes took {busy:.0%} of its CPU while {side} measured "
    "(over {limit:.0%}), so the figures are not comparable; not counted"
)
LESS_CPU = (
    "the run got less CPU: its rate per CPU second ({twin}) did not drop past the threshold "
    "and the spread, so other load on the host explains it; not counted"
)


def judge(
    base: Measurement, cand: Measurement, threshold: float
) -> tuple[str | None, float, float | None]:
    """``(basis, change, spread)`` of one rate: basis None when the candidate is not below the
    baseline by more than ``threshold``; else :data:`PAST_BOTH`, :data:`THRESHOLD_ONLY` or
    :data:`WITHIN_SPREAD`. ``spread``: half of each side's interquartile range, added (their
    middle halves do not overlap past it), None when a side was measured once."""
    change = (cand.median - base.median) / base.median
    spread = None if base.spread is None or cand.spread is None else (base.spread + cand.spread) / 2
    if -change <= threshold:
        return None, change, spread
    if spread is None:
        return THRESHOLD_ONLY, change, spread
    return (PAST_BOTH if base.median - cand.median > spread else WITHIN_SPREAD), change, spread


def drops(
    where: dict[str, str],
    old: dict[str, list[Measurement]] | None,
    new: dict[str, list[Measurement]] | None,
    threshold: float,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(drops, noise)`` of the rate metrics both sides have (:func:`judge`): a drop is past
    the threshold and the runs' spread, or past the threshold with no spread to weigh (the
    entry says so). A wall-clock rate whose CPU-time twin (``repro.measurement.cpu_rate_of``)
    both sides have counts only when the twin dropped too: otherwise the run got less CPU from
    a busy host (:data:`LESS_CPU`). A drop of a case that measured while other processes took
    more than ``repro.measurement.BUSY_LIMIT`` of the host on either side (its ``host_busy``
    median) is not counted either (:data:`BUSY_HOST`). What is past the threshold but not
    counted is noise. ``old``/``new``: metric name -> one measurement per run (or per duplicate
    case) of that side, combined with :func:`repro.measurement.combine`; an entry's
    ``base_runs``/``cand_runs`` say how many were pooled."""
    drops: list[dict[str, Any]] = []
    noise: list[dict[str, Any]] = []
    if not old or not new:
        return drops, noise
    both = {
        metric: (measurement.combine(old[metric]), measurement.combine(new[metric]))
        for metric in set(old) & set(new)
        if old[metric] and new[metric]
    }
    busy = {
        side: max((m.median for m in metrics.get(measurement.HOST_BUSY, [])), default=0.0)
        for side, metrics in (("the baseline", old), ("the candidate", new))
    }
    busiest = max(busy, key=lambda side: busy[side])
    for metric in sorted(both):
        base, cand = both[metric]
        if base.median <= 0 or metric == measurement.HOST_BUSY:
            continue
        basis, change, spread = judge(base, cand, threshold)
        if basis is None:
            continue
        twin = measurement.cpu_rate_of(metric)
        held = (
            twin in both
            and both[twin][0].median > 0
            and judge(*both[twin], threshold)[0] in (None, WITHIN_SPREAD)
        )
        if basis != WITHIN_SPREAD and held:
            basis = LESS_CPU.format(twin=twin)
        elif basis != WITHIN_SPREAD and busy[busiest] > measurement.BUSY_LIMIT:
            basis = BUSY_HOST.format(busy=busy[busiest], side=busiest, limit=measurement.BUSY_LIMIT)
        (drops if basis in (PAST_BOTH, THRESHOLD_ONLY) else noise).append(
            {
                **where,
                "metric": metric,
                "base": base.median,
                "cand": cand.median,
                "base_spread": base.spread,
                "cand_spread": cand.spread,
                "base_samples": base.n,
                "cand_samples": cand.n,
                "base_runs": len(old[metric]),
                "cand_runs": len(new[metric]),
                "change": change,
                "spread": spread,
                "basis": basis,
            }
        )
    return drops, noise
