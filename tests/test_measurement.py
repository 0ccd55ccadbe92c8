"""repro.measurement: a compared figure is a median with its spread and sample count, and one
codec names its metric properties (issue 29 item 2)."""

from __future__ import annotations

import pytest
from conftest import REPO, spelled_outside

from repro import measurement
from repro.measurement import Measurement


def test_summarize_gives_the_median_the_interquartile_range_and_the_count():
    m = measurement.summarize([10.0, 12.0, 11.0, 30.0, 9.0, float("nan")])
    assert (m.median, m.n) == (11.0, 5)
    assert m.spread == pytest.approx(12.0 - 10.0)  # one wild window does not widen it
    assert measurement.summarize([5.0]) == Measurement(5.0, None, 1)  # measured once: no spread
    with pytest.raises(ValueError):
        measurement.summarize([float("inf")])


def test_metrics_round_trip_and_a_single_figure_reads_as_measured_once():
    m = Measurement(812.0, 21.5, 5)
    metrics = measurement.to_metrics("steady_it_per_s", m)
    assert metrics == {
        "steady_it_per_s": 812.0,
        "steady_it_per_s.spread": 21.5,
        "steady_it_per_s.n": 5.0,
    }
    assert measurement.from_metrics(metrics, "steady_it_per_s") == m
    assert measurement.from_metrics({"it_per_s": 879.3}, "it_per_s") == Measurement(879.3, None, 1)
    assert measurement.from_metrics({"it_per_s": None}, "it_per_s") is None
    bad = {"x": 1.0, "x.n": 2.5, "x.spread": -1.0}
    assert measurement.from_metrics(bad, "x") == Measurement(1.0, None, 1)
    assert measurement.is_companion("steady_it_per_s.spread")
    assert measurement.base_name("steady_it_per_s.n") == "steady_it_per_s"


def test_combining_never_hides_the_noise_of_one_measurement():
    quiet, loud = Measurement(100.0, 2.0, 5), Measurement(104.0, 30.0, 5)
    both = measurement.combine([quiet, loud])
    assert (both.median, both.spread, both.n) == (102.0, 30.0, 10)
    # single figures pooled across cases get the spread of their values
    pooled = measurement.combine([Measurement(v, None, 1) for v in (3.2, 3.5, 3.4, 4.0)])
    assert pooled.n == 4 and pooled.spread == pytest.approx(measurement.iqr([3.2, 3.4, 3.5, 4.0]))
    assert measurement.combine([Measurement(1.0, None, 1)]).spread is None


def test_a_ratio_carries_both_relative_spreads():
    r = measurement.ratio(Measurement(50.0, 5.0, 5), Measurement(100.0, 10.0, 5))
    assert r.value == pytest.approx(0.5) and r.spread == pytest.approx(0.5 * (0.1 + 0.1) / 2)
    assert measurement.ratio(Measurement(3.0, None, 1), Measurement(1.0, 0.1, 4)).spread is None
    assert measurement.ratio(Measurement(1.0, None, 1), Measurement(0.0, None, 1)) is None


def test_only_the_codec_spells_the_suffixes():
    codec = REPO / "repro" / "measurement.py"
    assert spelled_outside(r"""["']\.(spread|n)["']""", codec) == []
