"""``repro run --rounds N``: the rounds of a case whose figures people compare, as one result.

A rate measured in one process is one draw of the host's state: on the shared 2-core VM one
build's steady it per CPU second moved up to 41 % between runs while its windows inside a run
agreed within 1-5 % (benchmarks/metric_stability.py, issue 29), so the spread a single run
records cannot tell noise from a regression. asv runs every benchmark in several processes for
the same reason (its ``processes`` setting, default 2). With ``--rounds N`` the runner measures
each case that recorded a rate (:func:`is_measuring`) N times, each round in its own process
and the later rounds after the other cases (``repro.runner.run_all``), and
:func:`combine_rounds` turns the rounds into the one testcase junit.xml keeps: each
measurement combined by :func:`repro.measurement.combine` (the median of the rounds' medians,
the spread the larger of their interquartile range and the widest round's), each single figure
the median of the rounds', the outcome the worst round's. Never imports torch.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence

from repro import measurement
from repro import properties as property_names
from repro.outcomes import CaseResult, Outcome


def is_measuring(result: CaseResult) -> bool:
    """Whether a round of ``result``'s case is worth repeating: it passed and recorded a rate
    ``repro compare`` weighs (``repro.measurement.is_rate``: ``steady_it_per_s`` and its CPU
    twin)."""
    return result.outcome is Outcome.PASSED and any(
        measurement.is_rate(name) for name in result.metrics
    )


def combine_rounds(rounds: Sequence[CaseResult]) -> CaseResult:
    """One result for the rounds of one case (first round first; at least one).

    Every round passed: the first round's result with each measurement (a metric with a
    ``.n`` companion) combined over the rounds that recorded it, each other figure the median
    of the rounds' values, ``duration_s`` their sum. A round that did not pass: that round's
    result (the first such), so a case red in any round is red. Both carry
    ``repro.rounds`` (how many rounds) and ``repro.round_logs`` (the later rounds' logs).
    Raises ValueError for no round."""
    if not rounds:
        raise ValueError("no round to combine")
    red = next((r for r in rounds if r.outcome is not Outcome.PASSED), None)
    first = rounds[0]
    props = {
        **(red or first).properties,
        property_names.ROUNDS: str(len(rounds)),
        property_names.ROUND_LOGS: " ".join(r.log_path for r in rounds[1:] if r.log_path),
    }
    if red is not None:
        return dataclasses.replace(red, properties=props)
    metrics: dict[str, float] = {}
    names = {measurement.base_name(name) for r in rounds for name in r.metrics}
    for name in sorted(names):
        found = [measurement.from_metrics(r.metrics, name) for r in rounds]
        samples = [m for m in found if m is not None]
        if not samples:
            continue
        if any(name + measurement.SAMPLES_SUFFIX in r.metrics for r in rounds):
            metrics.update(measurement.to_metrics(name, measurement.combine(samples)))
        else:
            metrics[name] = statistics.median(m.median for m in samples)
    return dataclasses.replace(
        first,
        metrics=metrics,
        properties=props,
        duration_s=sum(r.duration_s for r in rounds),
    )
