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


def test_rounds_rounds_combine_into_one_result():
    """repro run --rounds (issue 29): each measurement over the rounds, single figures their
    median, a round without a figure leaves it out, the worst round decides the outcome."""
    from repro.outcomes import CaseResult, Outcome
    from repro.runner.repeat import combine_rounds, is_measuring

    def round_(rate: list[float], first_batch_s: float, log: str, **kw) -> CaseResult:
        metrics = {**measurement.to_metrics("steady_it_per_s", measurement.summarize(rate)),
                   "first_batch_s": first_batch_s}  # fmt: skip
        return CaseResult("dataloader", "dl[x]", Outcome.PASSED, 2.0, metrics=metrics,
                          log_path=log, **kw)  # fmt: skip

    rounds = [round_([100, 102, 104], 0.5, "a.log"), round_([60, 61, 62], 0.7, "b.log"),
              round_([90, 91, 92], 0.9, "c.log")]  # fmt: skip
    assert all(is_measuring(r) for r in rounds)
    one = combine_rounds(rounds)
    got = measurement.from_metrics(one.metrics, "steady_it_per_s")
    # medians 102, 61, 91 -> 91; their IQR (inclusive quartiles) 20.5 beats each round's 1-2
    assert (got.median, got.spread, got.n) == (91, 20.5, 9)
    assert one.metrics["first_batch_s"] == 0.7 and one.duration_s == 6.0
    assert one.properties == {"repro.rounds": "3", "repro.round_logs": "b.log c.log"}
    assert one.outcome is Outcome.PASSED and one.log_path == "a.log"

    red = CaseResult("dataloader", "dl[x]", Outcome.CRASHED, 1.0, signature="worker_killed",
                     log_path="d.log")  # fmt: skip
    worst = combine_rounds([rounds[0], red])
    assert (worst.outcome, worst.signature, worst.log_path) == (
        Outcome.CRASHED, "worker_killed", "d.log",
    )  # fmt: skip
    assert worst.properties["repro.rounds"] == "2"
    assert not is_measuring(red)
    assert not is_measuring(CaseResult("losses", "l[x]", Outcome.PASSED, metrics={"loss": 1.0}))
    with pytest.raises(ValueError):
        combine_rounds([])
