"""Run every selected case, keeping ``junit.xml`` and ``run.json`` current after each.

Cases run one after another, or up to ``jobs`` at once (``repro run -j N``): cases start in
catalogue order, a case whose scenario declares ``EXCLUSIVE`` (it measures timing or
throughput, or needs a whole device) runs alone, and ``junit.xml`` lists finished cases in
catalogue order, so the file and the progress lines read the same whatever finished first.
The runner makes itself a child subreaper for the run, so whatever a case leaves behind when
its harness is killed is re-parented here and swept (``repro.runner.executor``). Results are
rewritten atomically after every case: a run killed halfway, or stopped by a full disk or a
read-only results directory, keeps every finished case. Never imports torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from repro import proctree
from repro import properties as property_names
from repro.errors import FatalError, Interrupted
from repro.host import cuda_init
from repro.junit.sidecar import RESULT_KEY, RESULT_NAME, result_entry, write_run_info
from repro.junit.writer import write_junit
from repro.outcomes import CaseResult, Outcome
from repro.runner.context import RunContext
from repro.runner.executor import CaseCancelled, is_exclusive, run_case, skipped_result
from repro.runner.repeat import combine_rounds, is_measuring
from repro.runner.zygote_pool import close_zygote, plan_zygote, prepare_zygote
from repro.scenarios import Case, skip_reason

#: Every skipped case of a run, one ``CASE_ID<TAB>REASON`` line each, appended as it is decided
#: (the terminal groups skips by reason, ``repro.runner.progress``; junit.xml has each one too).
SKIPPED_LOG = "logs/skipped.log"
#: Seconds between progress ticks while the main thread waits for parallel cases.
_TICK_S = 0.2
#: Seconds to wait for running cases to be killed after Ctrl-C or a write error.
_CANCEL_WAIT_S = 30.0


class Reporter:
    """What the runner tells about progress (see ``repro.runner.progress``); all methods optional."""

    def case_started(self, index: int, total: int, case: Case) -> None: ...
    def case_tick(self, elapsed_s: float) -> None: ...
    def case_rerun(self, attempt: int, reruns: int, first: CaseResult) -> None: ...
    def round_started(self, round_no: int, rounds: int, cases: int) -> None: ...
    def case_finished(self, index: int, total: int, result: CaseResult) -> None: ...
    def run_finished(self, results: Sequence[CaseResult], run_dir: Path) -> None: ...


def run_all(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter | None = None,
    preflight: Sequence[CaseResult] = (),
    rerun_failures: int = 0,
    jobs: int = 1,
    rounds: int = 1,
) -> list[CaseResult]:
    """Run ``cases`` and return their results in catalogue order (``preflight`` first).

    ``jobs``: how many cases may run at once (1: one after another). Cases start in order; an
    ``EXCLUSIVE`` one (:func:`is_exclusive`) waits for the running ones and runs alone.

    ``rerun_failures``: each red case (failed, error, crashed, hung) is run again, each time in
    a fresh process, up to this many times or until it passes (:func:`rerun_red_case`).

    ``rounds``: after every case ran, rounds 2..``rounds`` of each case that recorded a rate
    (``repro.runner.repeat``), one after another, each alone in a new process; each round
    rewrites the case's result with the rounds combined so far.

    Writes ``junit.xml`` and ``run.json`` after every case. Ctrl-C kills the current case's
    tree, keeps what finished, marks ``run.json`` ``interrupted`` and raises
    ``repro.errors.Interrupted`` ("interrupted after N of M cases; partial results in PATH").
    ``preflight`` results (the ``doctor`` testsuite, ``repro.host.doctor``) come first in
    ``junit.xml`` and are written before the first case starts; ``run.json`` counts cases only.

    Raises FatalError (exit 3) when the results directory cannot be written (ENOSPC, EROFS...):
    the case that was running is killed, ``junit.xml`` keeps every case finished before it (the
    message says so only when there is one: a disk full from the start leaves none).
    """
    proctree.become_subreaper()
    plan_zygote(ctx, [case for case in cases if _not_run(ctx, case) is None])
    try:
        with _ctrl_c_cancels(ctx) as ctrl_c:
            try:
                return _run_all(
                    ctx, cases, reporter or Reporter(), preflight, rerun_failures, jobs, rounds
                )
            except CaseCancelled:
                if not ctrl_c.is_set():
                    raise
                raise KeyboardInterrupt from None
    except KeyboardInterrupt:
        raise _interrupted(ctx) from None
    except OSError as exc:
        why = exc.strerror or str(exc)
        where = exc.filename or ctx.run_dir
        junit = Path(ctx.run_dir) / "junit.xml"
        kept = (
            f"junit.xml in {ctx.run_dir} keeps every case written before it"
            if junit.is_file()
            else f"no junit.xml was written in {ctx.run_dir}"
        )
        raise FatalError(f"{where}: cannot write results: {why}; the run stopped, {kept}") from None
    finally:
        close_zygote(ctx)
        with contextlib.suppress(OSError):
            write_run_info(ctx.run_dir, ctx.run_info)


@contextlib.contextmanager
def _ctrl_c_cancels(ctx: RunContext) -> Iterator[threading.Event]:
    """While the run lasts, Ctrl-C (SIGINT) sets ``ctx.state.cancel`` before it raises
    KeyboardInterrupt; yields an Event set once SIGINT arrived.

    Python raises KeyboardInterrupt wherever the main thread is when its handler runs; inside
    a finaliser (``__del__``, a weakref callback: a Popen, a file, a psutil object collected
    mid-run) the exception is printed as "Exception ignored" and lost, and the run went on
    (measured: a clean-clone CI run under load kept running its sleeping case 60 s after
    SIGINT). The flag survives: the watch loop stops the running case (CaseCancelled), no
    further case starts, and the run ends as interrupted. Left as it is where SIGINT is not
    Python's default handler (ignored under ``nohup``, or a caller's own), or off the main
    thread."""
    ctrl_c = threading.Event()

    def on_sigint(signum: int, frame: object) -> None:
        ctrl_c.set()
        ctx.state.cancel.set()
        raise KeyboardInterrupt

    ours = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if ours:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        yield ctrl_c
    finally:
        if ours:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _interrupted(ctx: RunContext) -> Interrupted:
    """Mark ``run.json`` ``interrupted`` (the report then lists the run as partial and lets it
    hide no older result) and say how far the run got."""
    info = ctx.run_info
    info["interrupted"] = True
    with contextlib.suppress(OSError):  # a full disk must not hide the Ctrl-C
        write_run_info(ctx.run_dir, info)
    return Interrupted(
        f"interrupted after {info.get('cases_done', 0)} of {info.get('cases_total', '?')} cases; "
        f"partial results in {ctx.run_dir}"
    )


class _Results:
    """The finished cases of a run, written to ``junit.xml`` and ``run.json`` after each one
    (catalogue order, whatever order they finished in)."""

    def __init__(self, ctx: RunContext, preflight: Sequence[CaseResult], total: int) -> None:
        self.ctx, self.preflight = ctx, list(preflight)
        for result in self.preflight:
            self.judge(result)
        self.finished: dict[int, CaseResult] = {}
        self.junit_path = ctx.run_dir / RESULT_NAME
        self.hostname = ctx.fingerprint.host.hostname or ""
        ctx.run_info.update(cases_total=total, cases_done=0)
        write_run_info(ctx.run_dir, ctx.run_info)
        if self.preflight:
            self._write_junit()
            write_run_info(ctx.run_dir, ctx.run_info)

    def judge(self, result: CaseResult) -> None:
        """Give ``result`` its ``expect:`` verdict (``repro.config.expect``, as the report does)."""
        if self.ctx.expectations is not None:
            # A red case without a signature reads back as "unknown" (repro.junit.reader).
            signature = result.signature or ("unknown" if result.outcome.is_problem else None)
            result.expect = self.ctx.expectations.verdict(
                result.scenario, result.case_id, result.outcome, signature
            )

    def add(self, index: int, result: CaseResult) -> None:
        self.judge(result)
        self.finished[index] = result
        if result.outcome is Outcome.SKIPPED:
            path = self.ctx.run_dir / SKIPPED_LOG
            path.parent.mkdir(exist_ok=True)
            with open(path, "a", encoding="utf-8") as log:
                log.write(f"{result.case_id}\t{' '.join(result.message.split())}\n")
        self._write_junit()
        self.ctx.run_info["cases_done"] = len(self.finished)
        write_run_info(self.ctx.run_dir, self.ctx.run_info)

    def _write_junit(self) -> None:
        """Rewrite ``junit.xml`` and note its digest in ``run_info`` (written to ``run.json``
        next: the report's proof that the file is the one this runner wrote)."""
        digest = write_junit(
            self.junit_path, self.in_order(), self.ctx.suite_properties, hostname=self.hostname
        )
        self.ctx.run_info[RESULT_KEY] = result_entry(digest)

    def in_order(self) -> list[CaseResult]:
        return self.preflight + [self.finished[i] for i in sorted(self.finished)]

    def close(self) -> list[CaseResult]:
        self.ctx.run_info["finished"] = _now()
        write_run_info(self.ctx.run_dir, self.ctx.run_info)
        return self.in_order()


def _not_run(ctx: RunContext, case: Case) -> CaseResult | None:
    """The result of a case that is not started (a requirement absent: skipped; NVML fine but
    CUDA broken: red), or None when it should run."""
    # On a GPU variant a missing device is a failure the harness reports, never a skip.
    requires = [r for r in case.requires if not (ctx.expect_accelerator and r == "accelerator")]
    reason = skip_reason(requires, ctx.fingerprint)
    broken = cuda_init.case_error(case, ctx.fingerprint)
    if broken is not None:
        return broken
    return skipped_result(case, reason) if reason is not None else None


def _run_one(
    ctx: RunContext,
    case: Case,
    rerun_failures: int,
    reporter: Reporter,
    on_tick: Callable[[float], None] | None,
) -> CaseResult:
    result = run_case(ctx, case, on_tick=on_tick)
    if result.outcome.is_problem and rerun_failures > 0:
        result = rerun_red_case(ctx, case, result, rerun_failures, reporter)
    return result


def _run_all(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter,
    preflight: Sequence[CaseResult],
    rerun_failures: int,
    jobs: int,
    rounds: int = 1,
) -> list[CaseResult]:
    results = _Results(ctx, preflight, len(cases))
    total = len(cases)
    if jobs > 1:
        _run_parallel(ctx, cases, reporter, results, rerun_failures, jobs)
    else:
        for index, case in enumerate(cases, start=1):
            if ctx.state.cancel.is_set():  # Ctrl-C whose KeyboardInterrupt a finaliser swallowed
                raise CaseCancelled(case.case_id)
            reporter.case_started(index, total, case)
            result = _not_run(ctx, case) or _run_one(
                ctx, case, rerun_failures, reporter, reporter.case_tick
            )
            results.add(index, result)
            reporter.case_finished(index, total, result)
    _more_rounds(ctx, cases, reporter, results, rounds)
    return results.close()


def _more_rounds(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter,
    results: _Results,
    rounds: int,
) -> None:
    """Rounds 2..``rounds`` of the cases whose first round recorded a rate (``repro run
    --rounds``, :mod:`repro.runner.repeat`): round after round, each case alone (they measure
    time), its result rewritten after each round with the rounds so far combined, so a run
    stopped halfway keeps every round that finished. A case red in a round is red and is not
    measured again."""
    chosen = [i for i in sorted(results.finished) if is_measuring(results.finished[i])]
    measured = {i: [results.finished[i]] for i in chosen}
    total = len(cases)
    for round_no in range(2, rounds + 1):
        # A case red in an earlier round stays red: nothing more to measure.
        chosen = [i for i in chosen if results.finished[i].outcome is Outcome.PASSED]
        if not chosen:
            return
        reporter.round_started(round_no, rounds, len(chosen))
        for index in chosen:
            case = cases[index - 1]
            if ctx.state.cancel.is_set():
                raise CaseCancelled(case.case_id)
            reporter.case_started(index, total, case)
            prepare_zygote(ctx, case)
            this_round = run_case(ctx, case, on_tick=reporter.case_tick)
            measured[index].append(this_round)
            combined = combine_rounds(measured[index])
            results.add(index, combined)
            # The line shows this round's time and the combined verdict.
            reporter.case_finished(
                index, total, dataclasses.replace(combined, duration_s=this_round.duration_s)
            )


def _run_parallel(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter,
    results: _Results,
    rerun_failures: int,
    jobs: int,
) -> None:
    """Up to ``jobs`` cases at once, each in a thread that waits on its case's processes.

    The reporter hears about cases in catalogue order from this thread only: the oldest
    unfinished case is the "current" one (its ticks), and a case that finished early is
    reported when every case before it has been. Ctrl-C or a write error sets ``ctx.state.cancel``:
    every running case's tree is killed, then the exception goes on.
    """
    total = len(cases)
    done: queue.Queue[tuple[int, CaseResult | None, BaseException | None]] = queue.Queue()
    running: dict[int, tuple[bool, float]] = {}  # index -> (exclusive, monotonic start)
    threads: list[threading.Thread] = []
    quiet = Reporter()  # reruns in a worker thread say nothing; the verdict line says it all

    def work(index: int, case: Case) -> None:
        try:
            done.put((index, _run_one(ctx, case, rerun_failures, quiet, None), None))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            done.put((index, None, exc))

    def may_start(case: Case) -> bool:
        if any(exclusive for exclusive, _ in running.values()):
            return False
        return not running if is_exclusive(case) else len(running) < jobs

    next_index, shown, announced = 1, 1, 0
    try:
        while shown <= total:
            if ctx.state.cancel.is_set():  # Ctrl-C whose KeyboardInterrupt a finaliser swallowed
                raise CaseCancelled(cases[shown - 1].case_id)
            while next_index <= total and may_start(cases[next_index - 1]):
                case = cases[next_index - 1]
                skipped = _not_run(ctx, case)
                if skipped is not None:
                    results.add(next_index, skipped)
                else:
                    prepare_zygote(ctx, case)  # here: the zygote dies with its starting thread
                    running[next_index] = (is_exclusive(case), time.monotonic())
                    thread = threading.Thread(
                        target=work, args=(next_index, case), name=f"case-{next_index}", daemon=True
                    )
                    threads.append(thread)
                    thread.start()
                next_index += 1
            # Report, in order, every case whose predecessors have all been reported.
            while shown <= total and shown in results.finished:
                if announced < shown:
                    reporter.case_started(shown, total, cases[shown - 1])
                reporter.case_finished(shown, total, results.finished[shown])
                announced = shown
                shown += 1
            if shown <= total and shown in running and announced < shown:
                reporter.case_started(shown, total, cases[shown - 1])
                announced = shown
            if shown > total:
                break
            try:
                index, result, error = done.get(timeout=_TICK_S)
            except queue.Empty:
                if shown in running:
                    reporter.case_tick(time.monotonic() - running[shown][1])
                continue
            running.pop(index, None)
            if error is not None:
                raise error
            assert result is not None
            results.add(index, result)
    except BaseException:
        ctx.state.cancel.set()
        deadline = time.monotonic() + _CANCEL_WAIT_S
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        raise


# A rerun red case (issue 11) carries the testcase properties ``repro.reruns`` (how many reruns
# ran), ``repro.flaky`` (``true``: passed on a rerun, ``false``: red every time) and, for a flaky
# case, the first attempt's outcome, signature, message and log (names: repro.properties).


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
                    property_names.RERUNS: str(attempt),
                    property_names.FLAKY: "true",
                    property_names.FIRST_OUTCOME: first.outcome.value,
                    property_names.FIRST_SIGNATURE: first.signature,
                    property_names.FIRST_MESSAGE: first.message[:500],
                    property_names.FIRST_LOG: first.log_path,
                }
            )
            return again
    first.properties.update({property_names.RERUNS: str(reruns), property_names.FLAKY: "false"})
    return first


def is_flaky(result: CaseResult) -> bool:
    """True for a case that failed first and passed on a rerun (``repro.flaky=true``)."""
    return result.properties.get(property_names.FLAKY) == "true"


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
