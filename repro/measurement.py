"""A figure people compare, with its noise: median, spread and sample count, and the one codec of
their metric names.

A figure measured repeatedly (a DataLoader's steady it/s over several windows, a training step's
rate over several steps) is recorded as three testcase metrics (``ctx.measurement``,
``repro.runner.case_api``)::

    metric.<name>          the median of the samples
    metric.<name>.spread   their interquartile range (q3 - q1, the unit of <name>), as
                           pytest-benchmark and asv report it
    metric.<name>.n        how many samples

A metric without ``.n`` was measured once (older results, or a figure that exists once per
case): it has no spread, and whoever compares it says so (``repro compare``, the start-method
summary). Only this module writes or reads the suffixes. Never imports torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: Suffixes of a measurement's companions (``metric.steady_it_per_s.spread``, ``...n``).
SPREAD_SUFFIX = ".spread"
SAMPLES_SUFFIX = ".n"
#: A rate per wall-clock second, and the same work per CPU second of the processes doing it
#: (``steady_it_per_s`` / ``steady_it_per_cpu_s``): the second does not move when other jobs
#: take the host's cores, the first does.
RATE_SUFFIX = "_per_s"
CPU_RATE_SUFFIX = "_per_cpu_s"
#: A case's contention while it measured its rates: per window, the share of the host's CPU
#: time (0..1, all CPUs, the hypervisor's steal included) that other processes took
#: (``repro.scenarios.dataloader.host_cpu_s``), recorded as a measurement like the rates.
HOST_BUSY = "host_busy"
#: Rates measured while others took more than this share of the host are not judged by
#: ``repro compare``: on the shared 2-core host (2 other test suites running, load 3-4) the
#: same build's steady it per CPU second moved 23-26 % between runs (36 runs of 4 CPU cases,
#: 2026-11-27), past the 20 % threshold, and no window rule told that from a real 1.8x
#: slowdown; the CPU twin does not help there (shared cores and caches slow the work itself).
BUSY_LIMIT = 0.25


@dataclass(frozen=True)
class Measurement:
    """``median`` of ``n`` samples and their ``spread`` (interquartile range, same unit); the
    spread is None when the figure was measured once (``n == 1``): nothing says how noisy it is.
    """

    median: float
    spread: float | None
    n: int

    @property
    def relative_spread(self) -> float | None:
        """``spread / median`` (0.1: the middle half of the samples spans 10 % of the median),
        or None without a spread or with a median of 0."""
        if self.spread is None or not self.median:
            return None
        return self.spread / abs(self.median)

    def to_json(self) -> dict[str, float | int | None]:
        return {"median": self.median, "spread": self.spread, "n": self.n}


def iqr(values: Sequence[float]) -> float:
    """The interquartile range of at least two values (inclusive quartiles: [a, b] -> (b-a)/2)."""
    q1, _q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def summarize(values: Iterable[float]) -> Measurement:
    """The :class:`Measurement` of the finite ``values``. Raises ValueError when there is none."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        raise ValueError("no finite sample to summarize")
    spread = iqr(finite) if len(finite) > 1 else None
    return Measurement(statistics.median(finite), spread, len(finite))


def combine(measurements: Sequence[Measurement]) -> Measurement:
    """Several measurements of one figure as one (cases pooled, a case found in several runs):
    the median of their medians; the spread is the larger of the medians' interquartile range
    and the widest spread among them (so pooling never hides the noise of one), None when there
    is one measurement of one sample; ``n`` all their samples. Raises ValueError for none."""
    if not measurements:
        raise ValueError("no measurement to combine")
    if len(measurements) == 1:
        return measurements[0]
    medians = [m.median for m in measurements]
    spreads = [m.spread for m in measurements if m.spread is not None]
    spread = max([iqr(medians), *spreads])
    return Measurement(statistics.median(medians), spread, sum(m.n for m in measurements))


def to_metrics(name: str, measurement: Measurement) -> dict[str, float]:
    """The metrics recording ``measurement`` as ``name`` (median, ``.spread``, ``.n``)."""
    out = {name: measurement.median, name + SAMPLES_SUFFIX: float(measurement.n)}
    if measurement.spread is not None:
        out[name + SPREAD_SUFFIX] = measurement.spread
    return out


def from_metrics(metrics: Mapping[str, float | None], name: str) -> Measurement | None:
    """The measurement recorded as ``name`` in a case's metrics, or None when it is absent or
    not a finite number. Without ``.n`` (or with a bad one) it was measured once: no spread."""
    value = metrics.get(name)
    if not _finite(value):
        return None
    n = metrics.get(name + SAMPLES_SUFFIX)
    spread = metrics.get(name + SPREAD_SUFFIX)
    if not _finite(n) or n < 1 or n != int(n):
        return Measurement(float(value), None, 1)
    if int(n) == 1 or not _finite(spread) or spread < 0:
        return Measurement(float(value), None, int(n))
    return Measurement(float(value), float(spread), int(n))


def is_rate(name: str) -> bool:
    """Whether ``name`` is a rate ``repro compare`` weighs (per second or per CPU second)."""
    return name.endswith((RATE_SUFFIX, CPU_RATE_SUFFIX)) and not is_companion(name)


def cpu_rate_of(name: str) -> str | None:
    """``steady_it_per_cpu_s`` for ``steady_it_per_s``: the CPU-time twin of a wall-clock rate
    (None for a name that is not one)."""
    if name.endswith(CPU_RATE_SUFFIX) or not name.endswith(RATE_SUFFIX):
        return None
    return name[: -len(RATE_SUFFIX)] + CPU_RATE_SUFFIX


def is_companion(name: str) -> bool:
    """Whether a metric name is a measurement's ``.spread`` or ``.n`` (not a figure itself)."""
    return name.endswith((SPREAD_SUFFIX, SAMPLES_SUFFIX))


def base_name(name: str) -> str:
    """``steady_it_per_s`` for ``steady_it_per_s.spread`` / ``.n``; the name itself otherwise."""
    for suffix in (SPREAD_SUFFIX, SAMPLES_SUFFIX):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


@dataclass(frozen=True)
class Ratio:
    """``value`` = a measurement's median over a reference's (1.0: the same), ``spread`` its
    noise: ``value`` times the half relative spreads of both added (None when either lacks a
    spread). ``3.4 ±0.2`` reads "3.4 times the reference, give or take the two runs' noise"."""

    value: float
    spread: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"ratio": self.value, "spread": self.spread}


def ratio(measurement: Measurement, reference: Measurement) -> Ratio | None:
    """``measurement`` relative to ``reference`` (:class:`Ratio`), None when the reference's
    median is 0."""
    if not reference.median:
        return None
    value = measurement.median / reference.median
    a, b = measurement.relative_spread, reference.relative_spread
    spread = None if a is None or b is None else abs(value) * (a + b) / 2
    return Ratio(value, spread)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
