"""Issue 19 item 3: the report merges our runs per (host, variant, case id), newest result wins,
and a partial (interrupted) run adds its cases without hiding older ones; both are listed.

The runs are written by the real runner (``repro.runner.run_all`` with its ``junit.xml`` and
``run.json`` writers); only the case processes are replaced, by results of the shape
``repro.runner.executor.run_case`` returns. The slow tests run the real CLI end to end, with a
real Ctrl-C (SIGINT) of ``repro run``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_env, run_cli, write_matrix

from repro.errors import Interrupted
from repro.model import Fingerprint, Variant
from repro.outcomes import DOCTOR_SCENARIO, CaseResult, Outcome
from repro.report.html import render_html
from repro.report.markdown import md_escape, render_markdown
from repro.report.merge import build_report
from repro.runner import job
from repro.runner import run_all as run_all_mod
from repro.scenarios import Case

FINGERPRINT = Fingerprint.from_json(
    {
        "schema": 1,
        "host": {"hostname": "vm", "os": "Debian GNU/Linux 12 (bookworm)", "wsl2": False},
        "gpus": [],
        "driver": {"nvidia": None, "cuda_driver_api": None, "rocm": None, "amdgpu": None},
        "runtime": {"torch": "2.13.0+cpu", "cuda": None, "hip": None, "accelerator": None},
        "unreadable": [],
    }
)
VARIANT = Variant(
    id="cpu-torch2.13",
    runtime="cpu",
    torch="2.13.0+cpu",
    accelerator="cpu",
    source="host",
)


def _case(scenario: str, params: dict[str, str]) -> Case:
    return Case(scenario, f"repro.scenarios.{scenario}", tuple(params.items()), 60.0)


LOSSES = [
    _case("losses", {"device": "cpu", "case": name})
    for name in ("dice_empty", "l1_masked", "bce_balanced", "dice_fixed")
]
FORK_SAFETY = [_case("fork_safety", {"start_method": method}) for method in ("spawn", "forkserver")]


def _result(case: Case, outcome: Outcome) -> CaseResult:
    red = outcome is not Outcome.PASSED
    return CaseResult(
        case.scenario,
        case.case_id,
        outcome,
        0.5,
        "loss is nan" if red else "",
        "nan_loss" if red else None,
        properties={f"param.{k}": str(v) for k, v in case.params},
    )


#: The host checks a default ``repro run`` puts first in every run (``repro.host.doctor``).
DOCTOR = [
    CaseResult(DOCTOR_SCENARIO, f"{DOCTOR_SCENARIO}[check={check}]", outcome, 0.0, "", None)
    for check, outcome in (("driver", Outcome.SKIPPED), ("shm", Outcome.PASSED))
]


def _run(tmp_path: Path, cases: list[Case], outcomes: dict[str, Outcome], monkeypatch) -> Path:
    """One ``repro run`` into ``tmp_path/results`` through the real runner and writers, doctor
    checks first; a case whose outcome is ``None`` in ``outcomes`` is where Ctrl-C arrives."""

    def fake_run_case(ctx, case, on_tick=None):
        outcome = outcomes[case.case_id]
        if outcome is None:
            raise KeyboardInterrupt
        return _result(case, outcome)

    monkeypatch.setattr(run_all_mod, "run_case", fake_run_case)
    options = job.ResolvedRun(results_dir=str(tmp_path / "results"), isolation="fresh")
    time.sleep(1.05)  # run.json ``started`` has one-second resolution, as the real runner's
    run_id, run_dir = run_all_mod.new_run_dir(tmp_path / "results", VARIANT.id)
    ctx = job.run_context(options, FINGERPRINT, VARIANT, run_id, run_dir, {})
    run_all_mod.run_all(ctx, cases, preflight=DOCTOR, jobs=1)
    return run_dir


def _cell_cases(report) -> dict[str, str]:
    """The cell's scenario cases; its doctor checks must be one run's, the newest."""
    (cell,) = report.cells
    doctor = [case for case in cell.cases if case.scenario == DOCTOR_SCENARIO]
    assert sorted(case.case for case in doctor) == sorted(check.case_id for check in DOCTOR)
    assert len({case.file for case in doctor}) == 1
    assert doctor[0].file == max(cell.files)
    return {c.case: c.outcome.value for c in cell.cases if c.scenario != DOCTOR_SCENARIO}


def test_a_run_of_other_cases_adds_to_the_cell_instead_of_hiding_it(tmp_path, monkeypatch):
    # `repro run -k losses` (3 failed) then `repro run -k fork_safety` into the same results.
    losses = {c.case_id: Outcome.FAILED for c in LOSSES[:3]} | {LOSSES[3].case_id: Outcome.PASSED}
    _run(tmp_path, LOSSES, losses, monkeypatch)
    _run(tmp_path, FORK_SAFETY, {c.case_id: Outcome.PASSED for c in FORK_SAFETY}, monkeypatch)

    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {
        **{case: outcome.value for case, outcome in losses.items()},
        **{c.case_id: "passed" for c in FORK_SAFETY},
    }
    assert report.cells[0].state == "failed"
    # Doctor checks are counted apart (repro.outcomes.Totals), in matrix.json too.
    assert report.totals["failed"] == 3 and report.totals["tests"] == 6
    assert report.totals["doctor_checks"] == len(DOCTOR)
    inputs = report.matrix["inputs"]
    assert [(i["state"], i["superseded_cases"]) for i in inputs] == [("ok", 0), ("ok", 0)]
    # Nothing was superseded: the newer run's doctor checks replacing the older's is no news.
    assert "Runs merged per case" not in render_markdown(report)


def test_an_interrupted_run_keeps_older_failures_visible_and_is_listed(tmp_path, monkeypatch):
    # A full run with 3 failures, then a run stopped by Ctrl-C after one passing case.
    cases = LOSSES + FORK_SAFETY
    full = {c.case_id: Outcome.PASSED for c in cases}
    full.update({c.case_id: Outcome.FAILED for c in LOSSES[1:4]})
    first = _run(tmp_path, cases, full, monkeypatch)
    second_outcomes = {cases[0].case_id: Outcome.PASSED, cases[1].case_id: None}
    with pytest.raises(Interrupted) as stopped:
        _run(tmp_path, cases, second_outcomes, monkeypatch)
    second = max((tmp_path / "results").iterdir())
    assert str(stopped.value) == (
        f"interrupted after 1 of {len(cases)} cases; partial results in {second}"
    )
    run_info = json.loads((second / "run.json").read_text())
    assert (run_info["cases_done"], run_info["finished"], run_info["interrupted"]) == (
        1,
        None,
        True,
    )

    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {c: o.value for c, o in full.items()}
    cell = report.cells[0]
    assert cell.state == "failed" and cell.counts["failed"] == 3
    # The passing case of the partial run is the newest result of that case.
    newest = {c.case: c.file for c in cell.cases}
    assert newest[cases[0].case_id] == (second / "junit.xml").as_posix()
    assert newest[cases[1].case_id] == (first / "junit.xml").as_posix()
    inputs = {i["path"]: i for i in report.matrix["inputs"]}
    old, new = inputs[(first / "junit.xml").as_posix()], inputs[(second / "junit.xml").as_posix()]
    assert new["partial"] == f"run incomplete: 1 of {len(cases)} cases done, interrupted"
    assert (old["state"], old["superseded_cases"], old["superseded_by"]) == (
        "ok",
        1,
        [new["path"]],
    )
    markdown = render_markdown(report)
    assert "## Runs merged per case" in markdown
    assert f"- partial: {md_escape(new['path'])}: run incomplete: 1 of {len(cases)}" in markdown
    assert "interrupted; its 1 case count, older results stay" in markdown  # doctor left out
    assert f"- superseded: {md_escape(old['path'])}: 1 of {len(cases)} cases superseded" in markdown
    page = render_html(report, tmp_path)
    assert "Runs merged per case" in page and f"1 of {len(cases)} cases done" in page


def test_ctrl_c_at_j2_records_no_case_it_stopped(tmp_path, monkeypatch):
    # Case 1 passes; Ctrl-C arrives while case 2 runs and case 3 is in flight beside it: the
    # runner cancels case 3 (executor.CaseCancelled, nothing recorded), keeps case 1.
    from repro.runner.executor import CaseCancelled

    def fake_run_case(ctx, case, on_tick=None):
        if case is LOSSES[0]:
            return _result(case, Outcome.PASSED)
        if case is LOSSES[1]:
            deadline = time.monotonic() + 30
            while ctx.run_info.get("cases_done") != 1 or "case-3" not in _threads():
                assert time.monotonic() < deadline, "case 1 never recorded or case 3 never started"
                time.sleep(0.01)
            raise KeyboardInterrupt
        assert ctx.state.cancel.wait(30), "case 3 never cancelled"
        raise CaseCancelled(case.case_id)

    monkeypatch.setattr(run_all_mod, "run_case", fake_run_case)
    options = job.ResolvedRun(results_dir=str(tmp_path / "results"), isolation="fresh")
    run_id, run_dir = run_all_mod.new_run_dir(tmp_path / "results", VARIANT.id)
    ctx = job.run_context(options, FINGERPRINT, VARIANT, run_id, run_dir, {})
    with pytest.raises(Interrupted) as stopped:
        run_all_mod.run_all(ctx, LOSSES, preflight=DOCTOR, jobs=2)
    assert str(stopped.value) == f"interrupted after 1 of 4 cases; partial results in {run_dir}"
    run_info = json.loads((run_dir / "run.json").read_text())
    assert (run_info["cases_done"], run_info["interrupted"], run_info["finished"]) == (
        1,
        True,
        None,
    )
    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {LOSSES[0].case_id: "passed"}
    assert report.matrix["inputs"][0]["partial"] == "run incomplete: 1 of 4 cases done, interrupted"


def _threads() -> set[str]:
    import threading

    return {thread.name for thread in threading.enumerate()}


def test_a_newer_run_of_the_same_case_wins_and_a_fully_replaced_run_is_superseded(
    tmp_path, monkeypatch
):
    first = _run(tmp_path, LOSSES[:1], {LOSSES[0].case_id: Outcome.FAILED}, monkeypatch)
    second = _run(tmp_path, LOSSES[:1], {LOSSES[0].case_id: Outcome.PASSED}, monkeypatch)
    report = build_report([tmp_path / "results"])
    assert _cell_cases(report) == {LOSSES[0].case_id: "passed"}
    states = {i["path"]: (i["state"], i["superseded_cases"]) for i in report.matrix["inputs"]}
    assert states == {
        (first / "junit.xml").as_posix(): ("superseded", 1),
        (second / "junit.xml").as_posix(): ("ok", 0),
    }
    assert report.cells[0].files == [(second / "junit.xml").as_posix()]


# ---- the real CLI, end to end ---------------------------------------------------------------

PLANTED = "planted: {module: planted, timeout_s: 120, params: {kind: [pass, sleep, fail, error]}}\n"


@pytest.mark.slow
def _sigint_default() -> None:
    """In the child before exec: SIGINT as at a terminal. A test session started in the
    background of a shell without job control (`pytest &`) has SIGINT ignored, the child
    inherits that, and `repro run` then rightly ignores Ctrl-C too."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_cli_union_of_two_selections_and_ctrl_c_after_one_passing_case(project):
    write_matrix(project, PLANTED)
    red = run_cli(
        "run", "--no-doctor", "-j", "1", "-k", "kind=fail", "-k", "kind=error", cwd=project
    )
    assert red.returncode == 1, red.stderr
    green = run_cli("run", "--no-doctor", "-j", "1", "-k", "kind=pass", cwd=project)
    assert green.returncode == 0, green.stderr
    done = run_cli("report", "results", "-o", "out", cwd=project)
    assert done.returncode == 0, done.stderr
    matrix = json.loads((project / "out" / "matrix.json").read_text())
    (cell,) = matrix["cells"]
    assert cell["counts"]["failed"] == 1 and cell["counts"]["error"] == 1
    assert cell["counts"]["passed"] == 1

    # Every case, stopped by Ctrl-C while the sleeper runs (after one passing case).
    before = set((project / "results").iterdir())
    time.sleep(1.05)  # run.json ``started`` has one-second resolution
    runner = subprocess.Popen(
        [sys.executable, "-m", "repro", "run", "--no-doctor", "--isolation", "fresh", "-j", "1"],
        cwd=project, env=cli_env(), text=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        preexec_fn=_sigint_default,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        run_json = None
        while run_json is None or json.loads(run_json.read_text()).get("cases_done") != 1:
            assert runner.poll() is None and time.monotonic() < deadline, "first case never ended"
            time.sleep(0.1)
            new = set((project / "results").iterdir()) - before
            if new and (min(new) / "run.json").is_file():
                run_json = min(new) / "run.json"
        os.kill(runner.pid, signal.SIGINT)
        _out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130
    assert err.strip().splitlines()[-1] == (
        f"repro: interrupted after 1 of 4 cases; partial results in results/{run_json.parent.name}"
    )
    done = run_cli("report", "results", "-o", "out", cwd=project)
    assert done.returncode == 0, done.stderr
    matrix = json.loads((project / "out" / "matrix.json").read_text())
    (cell,) = matrix["cells"]
    assert (cell["state"], cell["counts"]["failed"], cell["counts"]["error"]) == ("error", 1, 1)
    partial = [i for i in matrix["inputs"] if i["partial"]]
    assert [i["path"] for i in partial] == [f"results/{run_json.parent.name}/junit.xml"]
    markdown = (project / "out" / "matrix.md").read_text()
    assert f"partial: results/{run_json.parent.name}/junit.xml" in markdown


def test_report_without_any_junit_input_is_exit_2_with_one_line(tmp_path):
    (tmp_path / "results").mkdir()
    done = run_cli("report", "results", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no JUnit" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


# ---- repro run --as-variant: the label must be the interpreter's ------------------------------

TWO_PINS = """\
version: 1
defaults: {results_dir: results}
variants:
  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}
  - {runtime: cpu, torch: "2.15.0", base_image: "python:3.12-slim"}
  - {runtime: cu128, torch: "2.13.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"}
scenarios:
  noop: {timeout_s: 60}
"""


@pytest.mark.slow
def test_unknown_variant_is_exit_2_with_list_too(tmp_path):
    (tmp_path / "matrix.yaml").write_text(TWO_PINS)
    for args in (("--list",), ()):
        done = run_cli("run", "--as-variant", "nope", *args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines()[-1] == (
            "repro: error: matrix.yaml: no variant with id 'nope' "
            "(known: cpu-torch2.13, cpu-torch2.15, cu128-torch2.13)"
        )
    assert not (tmp_path / "results").exists()


def test_list_refuses_a_foreign_pin_as_a_run_would(tmp_path, monkeypatch, capsys):
    from repro.cli.main import main

    (tmp_path / "matrix.yaml").write_text(TWO_PINS)
    config = str(tmp_path / "matrix.yaml")
    monkeypatch.setattr(job, "fingerprint_host", lambda options: FINGERPRINT)  # torch 2.13.0+cpu
    listing = ["run", "--config", config, "--list", "--as-variant", "cpu-torch2.15"]
    assert main(listing) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(
        "repro: error: --as-variant cpu-torch2.15: it pins torch 2.15.0 (cpu) but "
    )
    assert main([*listing, "--allow-variant-mismatch"]) == 0
    out, err = capsys.readouterr()
    assert out == "noop[torch=0]\n"
    assert err == (
        "repro: WARNING: variant cpu-torch2.15: it pins torch 2.15.0 (cpu) but the interpreter "
        "has torch 2.13.0+cpu (cpu); a run records under it anyway\n"
    )
    assert main(["run", "--config", config, "--list", "--as-variant", "cpu-torch2.13"]) == 0
    assert capsys.readouterr() == ("noop[torch=0]\n", "")


@pytest.mark.parametrize(
    ("variant", "build", "why"),
    [
        ("cpu-torch2.13", {"torch": "2.13.0+cpu"}, None),
        ("cpu-torch2.13", {"torch": "2.13"}, None),
        ("cu128-torch2.13", {"torch": "2.13.0", "cuda": "12.8"}, None),
        ("cpu-torch2.15", {"torch": "2.13.0+cpu"}, "torch 2.13.0+cpu (cpu)"),
        ("cu128-torch2.13", {"torch": "2.13.0+cpu"}, "torch 2.13.0+cpu (cpu)"),
        ("cpu-torch2.13", {}, "has no torch"),
    ],
)
def test_a_variant_whose_pin_is_not_the_interpreters_is_refused_unless_allowed(
    tmp_path, variant, build, why
):
    (tmp_path / "matrix.yaml").write_text(TWO_PINS)
    from repro import config as matrix_mod
    from repro.errors import ConfigError

    config = matrix_mod.load(tmp_path / "matrix.yaml")
    fp = Fingerprint.from_json({"runtime": build})
    options = job.ResolvedRun(as_variant=variant)
    if why is None:
        assert job.pick_variant(config, options, fp)[0].id == variant
        return
    with pytest.raises(ConfigError) as refused:
        job.pick_variant(config, options, fp)
    assert f"--as-variant {variant}: it pins torch" in str(refused.value) and why in str(
        refused.value
    )
    assert job.ALLOW_MISMATCH_FLAG in refused.value.hint
    allowed, mismatch = job.pick_variant(
        config, job.ResolvedRun(as_variant=variant, **{"allow_variant_mismatch": True}), fp
    )
    assert allowed.id == variant and why in mismatch


@pytest.mark.slow
def test_cli_refuses_a_foreign_pin_and_records_it_loudly_with_the_flag(tmp_path):
    (tmp_path / "matrix.yaml").write_text(TWO_PINS)
    refused = run_cli("run", "--no-doctor", "--as-variant", "cpu-torch2.15", cwd=tmp_path)
    assert refused.returncode == 2
    error = refused.stderr.splitlines()[-1]
    assert error.startswith("repro: error: --as-variant cpu-torch2.15: it pins torch 2.15.0 (cpu)")
    assert "--allow-variant-mismatch" in error
    listed = run_cli("run", "--list", "--as-variant", "cpu-torch2.15", cwd=tmp_path)
    assert (listed.returncode, listed.stderr.splitlines()[-1]) == (2, error), listed.stderr
    assert not (tmp_path / "results").exists()

    done = run_cli(
        "run",
        "--no-doctor",
        "--as-variant",
        "cpu-torch2.15",
        "--allow-variant-mismatch",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING: variant cpu-torch2.15: it pins torch 2.15.0" in done.stderr
    (run_dir,) = (tmp_path / "results").iterdir()
    assert "repro.variant_mismatch" in (run_dir / "junit.xml").read_text()


class _SwallowingFinaliser:
    """Raises SIGINT inside ``__del__``: Python runs the handler there, and the KeyboardInterrupt
    it raises is printed as "Exception ignored" and lost (as when a Popen, file or psutil object
    is collected at the moment Ctrl-C arrives)."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


class _CtrlCInFinaliser(run_all_mod.Reporter):
    """Ctrl-C half a second into the sleeping case (the current one once the passing case has
    been reported: a slow interpreter start, as with the dependency floors of tests-lowest, made
    the passing case itself last past 0.5 s, and the Ctrl-C then came before it ended)."""

    def __init__(self) -> None:
        self.fired = False
        self.current: Case | None = None

    def case_started(self, index: int, total: int, case: Case) -> None:
        self.current = case

    def case_tick(self, elapsed_s: float) -> None:
        sleeping = self.current is not None and dict(self.current.params).get("kind") == "sleep"
        if sleeping and elapsed_s > 0.5 and not self.fired:
            self.fired = True
            _SwallowingFinaliser()  # collected at once: SIGINT inside its __del__


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost KI
@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_whose_keyboardinterrupt_a_finaliser_swallows_still_stops_the_run(
    tmp_path, monkeypatch, request, jobs
):
    # The clean-clone CI run of 85866ed: SIGINT reached `repro run` while its sleeping case ran,
    # and the case went on ("still running 60 s"). The real executor runs the planted cases.
    from conftest import PLANTED

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLANTED), *sys.path]))
    monkeypatch.syspath_prepend(str(PLANTED))
    cases = [Case("planted", "planted", (("kind", kind),), 20.0) for kind in ("pass", "sleep")]
    options = job.ResolvedRun(
        results_dir=str(tmp_path / "results"), isolation="fresh", python=sys.executable
    )
    run_id, run_dir = run_all_mod.new_run_dir(tmp_path / "results", VARIANT.id)
    ctx = job.run_context(options, FINGERPRINT, VARIANT, run_id, run_dir, {})
    # As at a terminal (see _sigint_default); put back as it was after the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    reporter = _CtrlCInFinaliser()
    started = time.monotonic()
    with pytest.raises(Interrupted) as stopped:
        run_all_mod.run_all(ctx, cases, reporter=reporter, jobs=jobs)
    assert reporter.fired
    assert time.monotonic() - started < 15  # not the sleeper's 20 s timeout
    assert str(stopped.value) == f"interrupted after 1 of 2 cases; partial results in {run_dir}"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    run_info = json.loads((run_dir / "run.json").read_text())
    assert (run_info["cases_done"], run_info["interrupted"]) == (1, True)
