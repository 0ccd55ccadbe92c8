"""repro compare: baseline vs candidate matrices (regressions, fixes, signatures, throughput)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.cli.main import main as repro_main
from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.report import compare as compare_mod
from repro.report import sides
from repro.report.compare import compare
from repro.report.merge import build_report
from repro.report.outputs import write_outputs


def main(argv: list[str]) -> int:
    """``repro compare ARGV...`` through the one command-line entry point."""
    return repro_main(["compare", *argv])


HOST = "NVIDIA H100 80GB HBM3 · driver 570.86.15 · Ubuntu 24.04.1 LTS"
VARIANT = "cu128-torch2.8"
LOADER = "dataloader[device=cpu,start_method=fork,workers=2]"


def write_results(
    root: Path, results: list[CaseResult], host: str = HOST, variant: str = VARIANT
) -> Path:
    """One run of ours: junit.xml keyed by its testsuite properties (no sidecar needed)."""
    run_dir = root / f"{variant}-{len(list(root.glob('*'))) if root.exists() else 0}"
    run_dir.mkdir(parents=True, exist_ok=True)
    write_junit(run_dir / "junit.xml", results, {"host.key": host, "variant.id": variant})
    return root


def case(
    name: str, outcome: Outcome, signature: str = "", it_per_s: float | None = None
) -> CaseResult:
    scenario = name.split("[", 1)[0]
    metrics = {"it_per_s": it_per_s, "first_batch_s": 0.5} if it_per_s is not None else {}
    message = f"{signature}: boom" if signature else ""
    return CaseResult(scenario, name, outcome, 1.0, message, signature, metrics=metrics)


def baseline() -> list[CaseResult]:
    return [
        case("ddp[backend=gloo]", Outcome.PASSED),
        case("cuda_basic[device=cuda]", Outcome.FAILED, "driver_too_old"),
        case("arch[device=cuda]", Outcome.FAILED, "no_kernel_image"),
        case("ddp[backend=nccl]", Outcome.FAILED, "nccl_error"),
        case(LOADER, Outcome.PASSED, it_per_s=100.0),
        case("dataloader[device=cpu,start_method=spawn,workers=2]", Outcome.PASSED, it_per_s=50.0),
    ]


def candidate() -> list[CaseResult]:
    return [
        case("ddp[backend=gloo]", Outcome.FAILED, "nccl_error"),  # regression (known signature)
        case("cuda_basic[device=cuda]", Outcome.PASSED),  # fix
        case("arch[device=cuda]", Outcome.FAILED, "illegal_instruction"),  # new signature
        case("ddp[backend=nccl]", Outcome.FAILED, "nccl_error"),  # unchanged
        case(LOADER, Outcome.PASSED, it_per_s=70.0),  # -30 %: a throughput drop
        case(
            "dataloader[device=cpu,start_method=spawn,workers=2]", Outcome.PASSED, it_per_s=45.0
        ),  # -10 %
    ]


def test_one_regression_fix_new_signature_and_throughput_drop_are_each_reported(tmp_path, capsys):
    base = write_results(tmp_path / "base", baseline())
    cand = write_results(tmp_path / "cand", candidate())
    assert main([str(base), str(cand), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)

    where = {"host": HOST, "variant": VARIANT}
    assert result["regressions"] == [
        {
            **where,
            "scenario": "ddp",
            "case": "ddp[backend=gloo]",
            "base": "passed",
            "cand": "failed",
            "signature": "nccl_error",
            "message": "nccl_error: boom",
            "expected": False,
        }
    ]
    assert [(f["case"], f["base"], f["base_signature"]) for f in result["fixes"]] == [
        ("cuda_basic[device=cuda]", "failed", "driver_too_old")
    ]
    assert [
        (c["case"], c["base_signature"], c["cand_signature"], c["new_signature"])
        for c in result["signature_changes"]
    ] == [("arch[device=cuda]", "no_kernel_image", "illegal_instruction", True)]
    assert [(s["signature"], s["cases"]) for s in result["new_signatures"]] == [
        ("illegal_instruction", 1)
    ]
    (drop,) = result["throughput_drops"]
    assert (drop["case"], drop["metric"], drop["base"], drop["cand"]) == (
        LOADER,
        "it_per_s",
        100.0,
        70.0,
    )
    assert (drop["base_samples"], drop["cand_samples"]) == (1, 1)
    assert drop["change"] == pytest.approx(-0.30)
    assert (drop["spread"], drop["basis"]) == (None, compare_mod.THRESHOLD_ONLY)
    assert result["appeared"] == result["vanished"] == []
    assert result["summary"]["regressions"] == 1


def test_identical_result_sets_exit_0(tmp_path, capsys):
    base = write_results(tmp_path / "base", baseline())
    cand = write_results(tmp_path / "cand", baseline())
    assert main([str(base), str(cand)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# repro compare: ✅ no regression")
    assert "**0 regressions**, 0 fixes" in out


def test_matrix_json_files_and_directories_compare_alike(tmp_path, capsys):
    base = write_results(tmp_path / "base", baseline())
    cand = write_results(tmp_path / "cand", candidate())
    write_outputs(build_report([base]), tmp_path / "base-out")
    write_outputs(build_report([cand]), tmp_path / "cand-out")
    summary_md = tmp_path / "summary.md"
    code = main(
        [str(tmp_path / "base-out" / "matrix.json"), str(cand), "--markdown", str(summary_md)]
    )
    assert code == 1
    printed = capsys.readouterr().out
    assert summary_md.read_text(encoding="utf-8") == printed
    assert printed.startswith("# repro compare: ❌ regressions")
    assert "## Regressions (1)" in printed and "## Fixes (1)" in printed
    assert "## New signatures (1)" in printed and "illegal\\_instruction" in printed
    assert "## Throughput drops > 20% and past the runs' spread (1)" in printed
    # A single figure (measured once) has no spread: the drop says it was judged on the threshold.
    assert (
        "| 100 (measured once) | 70 (measured once) | -30.0% | threshold only (no spread) |"
        in printed
    )
    # matrix.json against matrix.json: same verdict.
    assert (
        main(
            [str(tmp_path / "base-out" / "matrix.json"), str(tmp_path / "cand-out" / "matrix.json")]
        )
        == 1
    )


def test_threshold_option_changes_which_drops_are_reported(tmp_path, capsys):
    base = write_results(tmp_path / "base", baseline())
    cand = write_results(tmp_path / "cand", candidate())
    main([str(base), str(cand), "--json", "--threshold", "5"])
    drops = json.loads(capsys.readouterr().out)["throughput_drops"]
    assert sorted(d["case"] for d in drops) == sorted(
        [LOADER, "dataloader[device=cpu,start_method=spawn,workers=2]"]
    )
    main([str(base), str(cand), "--json", "--threshold", "40"])
    assert json.loads(capsys.readouterr().out)["throughput_drops"] == []


def test_throughput_alone_fails_only_when_asked(tmp_path, capsys):
    results = baseline()
    slower = [
        case(LOADER, Outcome.PASSED, it_per_s=10.0) if r.case_id == LOADER else r for r in results
    ]
    base = write_results(tmp_path / "base", results)
    cand = write_results(tmp_path / "cand", slower)
    assert main([str(base), str(cand)]) == 0
    assert main([str(base), str(cand), "--fail-on-throughput"]) == 1


def test_samples_of_repeated_runs_are_averaged_and_counted():
    def matrix(values: list[float]) -> dict:
        cases = [
            {
                "scenario": "dataloader",
                "case": LOADER,
                "outcome": "passed",
                "metrics": {"it_per_s": v},
            }
            for v in values
        ]
        return {"cells": [{"host": HOST, "variant": VARIANT, "state": "passed", "cases": cases}]}

    result = compare(matrix([100.0, 110.0, 90.0]), matrix([60.0, 80.0]))
    (drop,) = result["throughput_drops"]
    assert (drop["base"], drop["cand"], drop["base_samples"], drop["cand_samples"]) == (
        100.0,
        70.0,
        3,
        2,
    )


def test_appeared_and_vanished_cases_and_cells(tmp_path):
    other_host = "CPU only · Debian GNU/Linux 12 (bookworm)"
    base = build_report([write_results(tmp_path / "base", baseline())]).matrix
    cand_dir = write_results(
        tmp_path / "cand", [*baseline()[1:], case("shm[size=64m]", Outcome.CRASHED, "sigbus")]
    )
    write_results(
        cand_dir,
        [case("cuda_basic[device=cpu]", Outcome.PASSED)],
        host=other_host,
        variant="cpu-torch2.8",
    )
    result = compare(base, build_report([cand_dir]).matrix)
    assert [(c["case"], c["outcome"]) for c in result["appeared"]] == [("shm[size=64m]", "crashed")]
    assert [(c["case"], c["outcome"]) for c in result["vanished"]] == [
        ("ddp[backend=gloo]", "passed")
    ]
    assert result["cells_appeared"] == [
        {"host": other_host, "variant": "cpu-torch2.8", "state": "passed"}
    ]
    assert result["cells_vanished"] == []
    assert (
        result["regressions"] == []
    )  # a vanished pass is reported as vanished, not as a regression
    assert result["new_signatures"][0]["signature"] == "sigbus"


def test_a_regression_the_candidate_expects_does_not_fail_the_comparison(tmp_path, capsys):
    config = tmp_path / "matrix.yaml"
    config.write_text(
        "version: 1\n"
        "expect:\n"
        '  - {case: "ddp[backend=gloo]", outcome: failed, reason: "known NCCL bug", link: "https://example.org/issue/1"}\n'
    )
    base = write_results(tmp_path / "base", baseline())
    cand = write_results(tmp_path / "cand", candidate())
    assert main([str(base), str(cand), "--config", str(config), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["regressions"][0]["expected"] is True
    assert result["summary"]["regressions"] == 0 and result["summary"]["expected_regressions"] == 1


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda d: d / "missing.json", "no such file or directory"),
        (lambda d: _write(d / "bad.json", "{not json"), "not JSON"),
        (lambda d: _write(d / "other.json", '{"cells": 3}'), "not a matrix.json"),
        (
            lambda d: _write(d / "old.json", '{"schema_version": 99, "cells": []}'),
            "schema_version 99 is not supported",
        ),
        (
            lambda d: _write(d / "cells.json", '{"schema_version": 1, "cells": [1]}'),
            "cells[0]: expected an object",
        ),
        (lambda d: (d / "empty").mkdir() or d / "empty", "no JUnit XML files found"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path, capsys, make, fragment):
    good = write_results(tmp_path / "good", baseline())
    bad = make(tmp_path)
    assert main([str(bad), str(good)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("repro: error: ")
    assert fragment in lines[0]
    assert "Traceback" not in captured.err


def test_threshold_out_of_range_is_bad_input(tmp_path, capsys):
    good = write_results(tmp_path / "good", baseline())
    with pytest.raises(SystemExit) as stop:  # checked where it is parsed (repro.cli.options)
        main([str(good), str(good), "--threshold", "0"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        "repro compare: error: argument --threshold: expected a percentage between 0 and 100, "
        "got 0; see repro compare --help\n"
    )


def test_exit_code_helper_and_defaults():
    assert compare_mod.DEFAULT_THRESHOLD == 0.20
    clean = compare({"cells": []}, {"cells": []})
    assert compare_mod.exit_code(clean) == 0
    assert clean["summary"]["regressions"] == 0


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_torch_change_on_one_host_pairs_its_two_variants(tmp_path, capsys):
    """Baseline pin and candidate pin are two variant ids (two venvs: cpu-torch2.13 then
    cu130-torch2.14); with one variant per host on each side they are compared, not reported
    as a cell that vanished and one that appeared with no regression."""
    base = write_results(tmp_path / "base", baseline(), variant="cpu-torch2.13")
    cand = write_results(tmp_path / "cand", candidate(), variant="cu130-torch2.14")
    assert main([str(base), str(cand), "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["paired"] == [{"host": HOST, "base": "cpu-torch2.13", "cand": "cu130-torch2.14"}]
    assert [r["case"] for r in result["regressions"]] == ["ddp[backend=gloo]"]
    assert result["regressions"][0]["variant"] == "cpu-torch2.13 → cu130-torch2.14"
    assert result["cells_appeared"] == result["cells_vanished"] == []
    # the Markdown report says which two variants it compared
    assert main([str(base), str(cand)]) == 1
    text = capsys.readouterr().out
    assert "Compared cpu-torch2.13 (base) with cu130-torch2.14 (candidate) on " in text
    assert "cpu-torch2.13 → cu130-torch2.14" in text
    # two variants on a side: nothing is paired (which would be a guess)
    write_results(tmp_path / "cand", candidate(), variant="cu128-torch2.8")
    assert main([str(base), str(cand), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["paired"] == []


def _windows(name: str, rates: list[float]) -> CaseResult:
    """A dataloader case whose steady it/s was measured in windows (``ctx.measurement``)."""
    from repro import measurement

    metrics = measurement.to_metrics("steady_it_per_s", measurement.summarize(rates))
    return CaseResult("dataloader", name, Outcome.PASSED, 1.0, metrics=metrics)


def test_a_drop_counts_only_past_the_threshold_and_the_runs_spread(tmp_path, capsys):
    """Issue 29: a noisy run's -30 % is noise when its windows spread that wide; a steady run's
    -30 % is a drop; both say how they were judged."""
    noisy, steady = "dataloader[noisy]", "dataloader[steady]"
    base = write_results(
        tmp_path / "base",
        [_windows(noisy, [50, 70, 100, 130, 150]), _windows(steady, [100, 101, 99, 100, 102])],
    )
    cand = write_results(
        tmp_path / "cand",
        [_windows(noisy, [20, 40, 70, 100, 120]), _windows(steady, [70, 71, 69, 70, 72])],
    )
    assert main([str(base), str(cand), "--json", "--fail-on-throughput"]) == 1
    result = json.loads(capsys.readouterr().out)
    [drop] = result["throughput_drops"]
    [noise] = result["throughput_noise"]
    assert (drop["case"], drop["basis"]) == (steady, compare_mod.PAST_BOTH)
    assert (drop["base_samples"], drop["base_spread"]) == (5, 1.0)
    assert drop["spread"] == pytest.approx(1.0) and drop["change"] == pytest.approx(-0.30)
    assert (noise["case"], noise["basis"]) == (noisy, compare_mod.WITHIN_SPREAD)
    assert (
        noise["spread"] > noise["base"] - noise["cand"]
    )  # 60 it/s IQRs on both sides vs a 30 drop
    assert result["summary"]["throughput_drops"] == 1
    assert result["summary"]["throughput_noise"] == 1
    assert main([str(base), str(cand)]) == 0  # a drop alone is not a regression
    text = capsys.readouterr().out
    assert "1 throughput drops > 20% past the runs' spread (1 more past 20% but within" in text
    assert "| 100 ±1 (n=5) | 70 ±1 (n=5) | -30.0% | spread 1 |" in text
    assert (
        "## Past 20% but not counted (within the runs' spread, or the run got less CPU) (1)" in text
    )


def test_a_wall_clock_drop_on_a_busy_host_is_not_counted_when_the_cpu_rate_held(tmp_path, capsys):
    """Issue 29: on the shared 2-core host the same build's steady it/s moved 3x between runs
    (other jobs took the cores) while its it per CPU second moved under 10 %: a wall drop counts
    only when its CPU-time twin dropped too."""
    from repro import measurement

    def loader(name: str, wall: list[float], cpu: list[float]) -> CaseResult:
        metrics = measurement.to_metrics("steady_it_per_s", measurement.summarize(wall))
        metrics |= measurement.to_metrics("steady_it_per_cpu_s", measurement.summarize(cpu))
        return CaseResult("dataloader", name, Outcome.PASSED, 1.0, metrics=metrics)

    busy, slower = "dataloader[busy_host]", "dataloader[slower_dataset]"
    base = write_results(
        tmp_path / "base",
        [loader(busy, [80, 81, 79, 80, 82], [64, 65, 63, 64, 66]),
         loader(slower, [80, 81, 79, 80, 82], [64, 65, 63, 64, 66])],
    )  # fmt: skip
    cand = write_results(
        tmp_path / "cand",
        [loader(busy, [30, 31, 29, 30, 32], [62, 63, 61, 62, 64]),
         loader(slower, [40, 41, 39, 40, 42], [33, 34, 32, 33, 35])],
    )  # fmt: skip
    assert main([str(base), str(cand), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    counted = {(d["case"], d["metric"]) for d in result["throughput_drops"]}
    assert counted == {(slower, "steady_it_per_s"), (slower, "steady_it_per_cpu_s")}
    [noise] = result["throughput_noise"]
    assert (noise["case"], noise["metric"]) == (busy, "steady_it_per_s")
    assert (
        noise["basis"].startswith("the run got less CPU")
        and "steady_it_per_cpu_s" in noise["basis"]
    )


def test_a_drop_measured_while_others_took_the_host_is_not_counted(tmp_path, capsys):
    """Issue 29: with other jobs on the 2-core host even the per-CPU-second rate of one build
    moved 23-26 % between runs. A case whose windows saw others take more than BUSY_LIMIT of the
    host (``host_busy``, either side) has its drops listed as noise that says so; the same drop
    on a quiet host counts."""
    from repro import measurement

    def loader(name: str, wall: list[float], cpu: list[float], busy: float) -> CaseResult:
        metrics = measurement.to_metrics("steady_it_per_s", measurement.summarize(wall))
        metrics |= measurement.to_metrics("steady_it_per_cpu_s", measurement.summarize(cpu))
        busy_windows = [busy - 0.01, busy, busy + 0.01]
        metrics |= measurement.to_metrics(
            measurement.HOST_BUSY, measurement.summarize(busy_windows)
        )
        return CaseResult("dataloader", name, Outcome.PASSED, 1.0, metrics=metrics)

    quiet, busy = "dataloader[quiet]", "dataloader[busy]"
    fast, slow = [80, 81, 79, 80, 82], [50, 51, 49, 50, 52]
    base = write_results(
        tmp_path / "base", [loader(quiet, fast, fast, 0.02), loader(busy, fast, fast, 0.02)]
    )
    cand = write_results(
        tmp_path / "cand", [loader(quiet, slow, slow, 0.05), loader(busy, slow, slow, 0.40)]
    )
    assert main([str(base), str(cand), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {(d["case"], d["metric"]) for d in result["throughput_drops"]} == {
        (quiet, "steady_it_per_s"),
        (quiet, "steady_it_per_cpu_s"),
    }
    noise = result["throughput_noise"]
    assert {(n["case"], n["metric"]) for n in noise} == {
        (busy, "steady_it_per_s"),
        (busy, "steady_it_per_cpu_s"),
    }
    assert all(
        n["basis"].startswith("the host was busy: other processes took 40% of its CPU while "
                              "the candidate measured") for n in noise
    )  # fmt: skip
    assert not any(d["metric"] == measurement.HOST_BUSY for d in result["throughput_drops"] + noise)
    assert main([str(base), str(cand)]) == 0
    assert "the host was busy: other processes took 40%" in capsys.readouterr().out


def test_runs_of_one_build_pooled_per_side_weigh_the_spread_between_runs(tmp_path, capsys):
    """Issue 29: on the 2-core host one build's steady rate moved up to 47 % between runs and
    1-5 % inside one, so one run per side flags a drop no window spread can explain; two runs
    per side (``--base-run``/``--cand-run``) put that spread on both sides. A planted 2x
    slowdown still counts, and a case red in any run of the candidate is a regression."""
    steady, slowed = "dataloader[steady]", "dataloader[slowed]"
    flips = "ddp[backend=gloo]"

    def run(name: str, rate: float, slow_rate: float, flips_outcome: Outcome) -> Path:
        results = [
            _windows(steady, [rate * f for f in (0.99, 1.0, 1.0, 1.01, 1.02)]),
            _windows(slowed, [slow_rate * f for f in (0.99, 1.0, 1.0, 1.01, 1.02)]),
            case(flips, flips_outcome),
        ]
        return write_results(tmp_path / name, results)

    base1 = run("base1", 100.0, 100.0, Outcome.PASSED)
    base2 = run("base2", 75.0, 90.0, Outcome.PASSED)
    cand1 = run("cand1", 70.0, 50.0, Outcome.PASSED)
    cand2 = run("cand2", 95.0, 45.0, Outcome.FAILED)

    # One run per side: the regime change between runs reads as a -30 % drop past both.
    assert main([str(base1), str(cand1), "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert {d["case"] for d in single["throughput_drops"]} == {steady, slowed}

    argv = [str(base1), "--base-run", str(base2), str(cand1), "--cand-run", str(cand2)]
    assert main([*argv, "--json"]) == 1  # the regression, not the drop
    pooled = json.loads(capsys.readouterr().out)
    (drop,) = pooled["throughput_drops"]
    assert (drop["case"], drop["basis"]) == (slowed, compare_mod.PAST_BOTH)
    assert (drop["base"], drop["cand"]) == (pytest.approx(95.0), pytest.approx(47.5))
    assert (drop["base_runs"], drop["cand_runs"], drop["base_samples"]) == (2, 2, 10)
    assert drop["base_spread"] == pytest.approx(5.0)  # half the runs' distance (windows: ~1)
    assert pooled["throughput_noise"] == []  # steady: 87.5 vs 82.5, -6 %, under the threshold
    assert (pooled["base"]["runs"], pooled["cand"]["runs"]) == (2, 2)
    assert single["base"]["runs"] == 1
    (regression,) = pooled["regressions"]
    assert (regression["case"], regression["cand"]) == (flips, "failed")

    assert main(argv) == 1
    text = capsys.readouterr().out
    assert "- base: " in text and "(2 runs pooled, 1 cells, 3 cases," in text
    assert "| 95 ±5 (n=10, 2 runs) | 47.5 ±2.5 (n=10, 2 runs) | -50.0% |" in text


def test_a_missing_pooled_run_is_bad_input_naming_it(tmp_path, capsys):
    good = write_results(tmp_path / "good", baseline())
    missing = tmp_path / "missing-run"
    assert main([str(good), str(good), "--cand-run", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"repro: error: {missing}: no such file or directory\n"


def test_pool_keeps_every_cell_the_newest_stamp_and_counts_runs():
    def matrix(variant: str, stamp: str, rate: float) -> dict:
        item = {"scenario": "dataloader", "case": LOADER, "outcome": "passed"}
        item["metrics"] = {"it_per_s": rate}
        cell = {"host": HOST, "variant": variant, "state": "passed", "cases": [item]}
        return {"generated_at": stamp, "cells": [cell]}

    runs = [
        sides.side_of(matrix("a", "2026-11-27T10:00:00Z", 100.0), "one"),
        sides.side_of(matrix("b", "2026-11-27T12:00:00Z", 80.0), "two"),
        sides.side_of(matrix("a", "2026-11-27T11:00:00Z", 60.0), "three"),
    ]
    pooled = sides.pool(runs)
    assert pooled.runs == 3 and pooled.generated_at == "2026-11-27T12:00:00Z"
    assert sorted(pooled.index) == [(HOST, "a"), (HOST, "b")]
    [loader] = pooled.index[(HOST, "a")].values()
    assert [m.median for m in loader.metrics["it_per_s"]] == [100.0, 60.0]
    with pytest.raises(ValueError):
        sides.pool([])


@pytest.mark.slow
def test_two_real_runs_of_one_build_in_three_rounds_report_no_drop(tmp_path):
    """Issue 29 acceptance: two real runs (``repro run --rounds 3``) of the CPU dataloader cases
    (in-process, fork with 2 workers with and without persistence, spawn with 2 persistent
    workers) of one build: ``repro compare`` reports no regression and no throughput drop, every
    case carries both steady figures over its three rounds with their spread and host_busy, and
    every rate that still moved past the threshold is listed as noise with the documented reason
    (within the spread, or measured while the run got less CPU or the host was busy).

    Why three rounds: one process is one draw of the host's state. On this project's 2-core VM
    one build's rates moved up to 42 % between single-round runs (14 false drops in 10 pairs of
    the 7 CPU cases, benchmarks/metric_stability.py); with ``--rounds 3`` up to 17 % and no false
    drop in 10 pairs (175 case-pairs), because the spread then holds the between-process noise.
    This test runs that claim once per CI run on real processes."""
    from conftest import run_cli, write_matrix

    write_matrix(tmp_path, "dataloader: {params: {device: [cpu]}}\n")
    selected = [
        "-k", "dataloader[device=cpu,start_method=fork,*",
        "-k", "dataloader[device=cpu,start_method=spawn,workers=2,persistent=1*",
    ]  # fmt: skip
    for name in ("base", "cand"):
        done = run_cli(
            "run", "--no-doctor", "--rounds", "3", "--results-dir", name, *selected, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr[-3000:]
    done = run_cli("compare", "base", "cand", "--json", cwd=tmp_path)
    result = json.loads(done.stdout)
    noise = [
        (e["case"], e["metric"], round(e["change"], 3), e["basis"])
        for e in result["throughput_noise"]
    ]
    assert result["throughput_drops"] == [], (result["throughput_drops"], noise)
    assert result["summary"]["regressions"] == 0 and result["regressions"] == []
    assert done.returncode == 0, done.stderr[-2000:]
    assert (result["base"]["runs"], result["cand"]["runs"]) == (1, 1)
    for entry in result["throughput_noise"]:
        assert entry["change"] < -result["threshold"]
        if entry["basis"] == compare_mod.WITHIN_SPREAD:
            assert entry["base"] - entry["cand"] <= entry["spread"]
        else:
            assert entry["basis"].startswith(("the run got less CPU", "the host was busy"))
    merged = build_report([tmp_path / "base"], predict=False)
    cases = [c for cell in merged.cells for c in cell.cases]
    assert len(cases) == 4
    for case in cases:
        for metric in ("steady_it_per_s", "steady_it_per_cpu_s"):
            assert case.metrics[f"{metric}.n"] == 15 and case.metrics[f"{metric}.spread"] >= 0
        assert 0 <= case.metrics["host_busy"] <= 1 and case.metrics["host_busy.n"] == 15
