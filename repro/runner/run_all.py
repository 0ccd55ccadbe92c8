"""Run every selected case in order, keeping ``junit.xml`` and ``run.json`` current after each.

Cases run one after another (timings stay comparable on a 2-core runner). The runner makes
itself a child subreaper for the run, so whatever a case leaves behind when its harness is
killed is re-parented here and swept (``repro.runner.executor``). Results are rewritten
atomically after every case: a run killed halfway, or stopped by a full disk or a read-only
results directory, keeps every finished case. Never imports torch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from repro import proctree
from repro.errors import FatalError
from repro.host import cuda_init
from repro.junit.sidecar import write_run_info
from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.runner.executor import RunContext, run_case, skipped_result
from repro.scenarios import Case, skip_reason


class Reporter:
    """What the runner tells about progress (see ``repro.runner.progress``); all methods optional."""

    def case_started(self, index: int, total: int, case: Case) -> None: ...
    def case_tick(self, elapsed_s: float) -> None: ...
    def case_rerun(self, attempt: int, reruns: int, first: CaseResult) -> None: ...
    def case_finished(self, index: int, total: int, result: CaseResult) -> None: ...
    def run_finished(self, results: Sequence[CaseResult], run_dir: Path) -> None: ...


def run_all(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter | None = None,
    preflight: Sequence[CaseResult] = (),
    rerun_failures: int = 0,
) -> list[CaseResult]:
    """Run ``cases`` one after another and return their results (``preflight`` first).

    ``rerun_failures``: each red case (failed, error, crashed, hung) is run again, each time in
    a fresh process, up to this many times or until it passes (:func:`rerun_red_case`).

    Writes ``junit.xml`` and ``run.json`` after every case. Ctrl-C kills the current case's
    tree, keeps what finished, and re-raises KeyboardInterrupt. ``preflight`` results (the
    ``doctor`` testsuite, ``repro.host.doctor``) come first in ``junit.xml`` and are written
    before the first case starts; ``run.json`` counts cases only.

    Raises FatalError (exit 3) when the results directory cannot be written (ENOSPC, EROFS...):
    the case that was running is killed, ``junit.xml`` keeps every case finished before it.
    """
    proctree.become_subreaper()
    try:
        return _run_all(ctx, cases, reporter or Reporter(), preflight, rerun_failures)
    except OSError as exc:
        why = exc.strerror or str(exc)
        where = exc.filename or ctx.run_dir
        raise FatalError(
            f"{where}: cannot write results: {why}; the run stopped, junit.xml in {ctx.run_dir} "
            "keeps every finished case"
        ) from None


def _run_all(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter,
    preflight: Sequence[CaseResult],
    rerun_failures: int,
) -> list[CaseResult]:
    results: list[CaseResult] = list(preflight)
    junit_path = ctx.run_dir / "junit.xml"
    hostname = str(ctx.fingerprint.get("host", {}).get("hostname") or "")
    ctx.run_info.update(cases_total=len(cases), cases_done=0)
    write_run_info(ctx.run_dir, ctx.run_info)
    if results:
        write_junit(junit_path, results, ctx.suite_properties, hostname=hostname)
    total = len(cases)
    for index, case in enumerate(cases, start=1):
        reporter.case_started(index, total, case)
        # On a GPU variant a missing device is a failure the harness reports, never a skip.
        requires = [r for r in case.requires if not (ctx.expect_accelerator and r == "accelerator")]
        reason = skip_reason(requires, ctx.fingerprint)
        broken = cuda_init.case_error(case, ctx.fingerprint)  # NVML fine, CUDA broken: red
        if broken is not None:
            result = broken
        elif reason is not None:
            result = skipped_result(case, reason)
        else:
            result = run_case(ctx, case, on_tick=reporter.case_tick)
            if result.outcome.is_problem and rerun_failures > 0:
                result = rerun_red_case(ctx, case, result, rerun_failures, reporter)
        results.append(result)
        write_junit(junit_path, results, ctx.suite_properties, hostname=hostname)
        ctx.run_info["cases_done"] = index
        write_run_info(ctx.run_dir, ctx.run_info)
        reporter.case_finished(index, total, result)
    ctx.run_info["finished"] = _now()
    write_run_info(ctx.run_dir, ctx.run_info)
    return results


#: Testcase properties of a rerun red case (issue 11): ``repro.reruns`` (how many reruns ran),
#: ``repro.flaky`` (``true``: passed on a rerun, ``false``: red every time) and, for a flaky
#: case, the first attempt's outcome, signature, message and log.
PROP_RERUNS = "repro.reruns"
PROP_FLAKY = "repro.flaky"
PROP_FIRST_OUTCOME = "repro.first_outcome"
PROP_FIRST_SIGNATURE = "repro.first_signature"
PROP_FIRST_MESSAGE = "repro.first_message"
PROP_FIRST_LOG = "repro.first_log"


def rerun_red_case(
    ctx: RunContext, case: Case, first: CaseResult, reruns: int, reporter: Reporter
) -> CaseResult:
    """Rerun a red ``case`` up to ``reruns`` times, each in a fresh process (``run_case``),
    stopping at the first pass.

    Passed on a rerun: the passing result, with ``repro.flaky=true`` and the first failure kept
    in ``repro.first_outcome``/``first_signature``/``first_message``/``first_log``. Red every
    time: the first result (its signature and log), with ``repro.flaky=false``. Both carry
    ``repro.reruns``. Each attempt keeps its own log (``executor`` never reuses a log name).
    """
    fresh_ctx = dataclasses.replace(ctx, isolation="fresh")
    for attempt in range(1, reruns + 1):
        reporter.case_rerun(attempt, reruns, first)
        # A rerun is a new interpreter, never a zygote fork: flakiness must not hide in shared state.
        again = run_case(fresh_ctx, case, on_tick=reporter.case_tick)
        if again.outcome is Outcome.PASSED:
            again.properties.update(
                {
                    PROP_RERUNS: str(attempt),
                    PROP_FLAKY: "true",
                    PROP_FIRST_OUTCOME: first.outcome.value,
                    PROP_FIRST_SIGNATURE: first.signature,
                    PROP_FIRST_MESSAGE: first.message[:500],
                    PROP_FIRST_LOG: first.log_path,
                }
            )
            return again
    first.properties.update({PROP_RERUNS: str(reruns), PROP_FLAKY: "false"})
    return first


def is_flaky(result: CaseResult) -> bool:
    """True for a case that failed first and passed on a rerun (``repro.flaky=true``)."""
    return result.properties.get(PROP_FLAKY) == "true"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_run_dir(results_root: Path, variant_id: str) -> tuple[str, Path]:
    """Create ``results_root/<run-id>`` that did not exist before; never reuses a directory.

    Run id: ``<UTC timestamp>-<variant id>``, with ``-2``, ``-3``... on collision.
    Raises OSError if the directory cannot be created.
    """
    base = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{variant_id}"
    results_root.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        run_id = base if attempt == 1 else f"{base}-{attempt}"
        path = results_root / run_id
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return run_id, path
    raise OSError(f"could not create a new run directory under {results_root}")
