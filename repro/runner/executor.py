"""Run scenario cases, each in its own child process and process group, under a watchdog.

The runner never imports torch and never initialises CUDA: it starts ``python -m
repro.runner.harness`` per case, waits with a hard timeout, and classifies what happened from the exit
status, the events file and the log (``repro.signatures.engine``). A segfault, abort, deadlock or a
leaked DataLoader worker or torchrun rank ends that case only; the run goes on. After each case
``junit.xml`` and ``run.json`` are rewritten atomically, so a run killed halfway keeps every
finished case.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import repro
from repro import proctree
from repro.host import cuda_init
from repro.junit.sidecar import write_run_info
from repro.junit.writer import write_junit, xml_safe
from repro.outcomes import CaseResult, Outcome
from repro.runner import watchdog
from repro.runner.watchdog import Heartbeats
from repro.scenarios import Case, skip_reason
from repro.signatures import engine as signatures
from repro.signatures.hostfacts import HostFacts

#: Seconds between asking a hung case for its stacks (SIGUSR1) and killing its tree.
STACK_DUMP_WAIT_S = 2.0
#: How much of a log is read for classification and kept in the JUnit body (bytes, from the end).
LOG_TAIL_BYTES = 4 * 1024 * 1024
DETAIL_CHARS = 8_000
_POLL_S = 0.05
_BEAT_POLL_S = 0.25


def log_name(case_id: str) -> str:
    """File name of a case log: the case id with characters unsafe in paths replaced."""
    safe = re.sub(r"[^A-Za-z0-9._=,-]+", "_", case_id.replace("[", "-").replace("]", ""))
    return f"{safe.strip('_')}.log"


@dataclass
class Events:
    """What a case reported through its events file (see ``repro.runner.case_api``)."""

    result: dict[str, Any] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    last_phase: str | None = None
    last_step: int | None = None

    @classmethod
    def read(cls, path: Path) -> Events:
        events = cls()
        try:
            lines = path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return events
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:  # a line cut short by a crash
                continue
            kind = record.get("event")
            if kind == "heartbeat":
                events.last_phase, events.last_step = record.get("phase"), record.get("step")
            elif kind == "metric":
                events.metrics[str(record["name"])] = float(record["value"])
            elif kind == "property":
                events.properties[str(record["name"])] = str(record["value"])
            elif kind == "result" and events.result is None:
                events.result = record
        return events


def _read_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - limit))
        return handle.read().decode("utf-8", errors="replace")


def _phase_text(events: Events) -> str:
    if not events.last_phase:
        return "no heartbeat"
    step = f" step {events.last_step}" if events.last_step is not None else ""
    return f"last phase {events.last_phase!r}{step}"


def classify(
    returncode: int | None,
    watchdog: tuple[Outcome, str, str] | None,
    events: Events,
    log_text: str,
    host: HostFacts | None = None,
) -> tuple[Outcome, str, str]:
    """Decide ``(outcome, signature, message)`` for a finished case.

    Order: the watchdog's verdict (hung, or too slow), then the exit status (negative = killed
    by that signal), then the signature table on the log. For a scenario's own failed/error
    verdict, a signature the scenario names explicitly (it knows the context, e.g.
    ``exit_code_masked``) wins over the table; otherwise the table decides. Unknown failures
    keep their first meaningful line.
    """
    if watchdog is not None:
        return watchdog
    found = signatures.classify(log_text, host)  # host facts: WSL2 vs native causes
    result = events.result

    if returncode is not None and returncode < 0:
        signum = -returncode
        name = signatures.signal_name(signum)
        if found.name != signatures.UNKNOWN:
            return Outcome.CRASHED, found.name, f"killed by {name}: {found.message}"
        return (
            Outcome.CRASHED,
            signatures.signal_signature(signum),
            f"killed by {name} ({_phase_text(events)})",
        )

    if result is None:
        detail = found.message or f"exit status {returncode}"
        return Outcome.ERROR, found.name, f"no verdict, exit status {returncode}: {detail}"

    outcome = Outcome(result["outcome"])
    if outcome is Outcome.SKIPPED:
        return outcome, "", result.get("message") or "skipped"
    if outcome is Outcome.PASSED:
        if returncode not in (0, None):
            return Outcome.ERROR, found.name, f"reported passed but exited with status {returncode}"
        return outcome, "", ""
    signature = result.get("signature") or found.name
    message = result.get("message") or found.message
    if found.name != signatures.UNKNOWN and found.message and found.message not in message:
        message = f"{message} | {found.message}"  # the scenario's verdict, then the evidence line
    return outcome, signature, message[:1000]


@dataclass
class RunContext:
    """Everything a run needs that is the same for every case.

    Attributes:
        run_dir: ``results/<run-id>``; ``logs/`` is created inside.
        fingerprint: from ``repro.host.fingerprint.collect`` (decides skips).
        suite_properties: JUnit testsuite properties (``host.*``, ``runtime.*``, ``variant.*``).
        run_info: the ``run.json`` sidecar, updated as cases finish.
        python: interpreter that runs the cases (the one under test).
        expect_accelerator: a cuda case that finds no device fails instead of skipping
            (true for GPU variants in containers; a silent CPU fallback must not pass).
    """

    run_dir: Path
    fingerprint: dict[str, Any]
    suite_properties: dict[str, str]
    run_info: dict[str, Any]
    python: str = sys.executable
    expect_accelerator: bool = False
    env: dict[str, str] = field(default_factory=dict)


def _case_env(
    ctx: RunContext, case: Case, events: Path, workdir: Path, token: str
) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ctx.env)
    # The harness must import this very repro (same version as the runner), installed or not.
    package_root = str(Path(repro.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"  # spawned workers and ranks print stacks on fatal signals too
    env["REPRO_CASE"] = json.dumps(
        {
            "scenario": case.scenario,
            "module": case.module,
            "case_id": case.case_id,
            "params": case.param_dict,
            "expect_accelerator": ctx.expect_accelerator,
        }
    )
    env["REPRO_EVENTS"] = str(events)
    env["REPRO_WORKDIR"] = str(workdir)
    env[proctree.TOKEN_VAR] = token
    return env


def run_case(
    ctx: RunContext, case: Case, on_tick: Callable[[float], None] | None = None
) -> CaseResult:
    """Run one case in an isolated child process and return its classified result.

    Hard timeout: ``case.timeout_s`` seconds. On timeout every process of the case is sent
    SIGUSR1 (all-thread stack dump into the log), then after ``STACK_DUMP_WAIT_S`` the whole tree
    is SIGKILLed. Leftover processes (leaked workers, ranks) are killed after every case and
    counted in the ``repro.leaked_processes`` property.
    """
    logs = ctx.run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / log_name(case.case_id)
    workdir = Path(tempfile.mkdtemp(prefix="repro-case-"))
    events_path = workdir / "events.jsonl"
    token = uuid.uuid4().hex
    env = _case_env(ctx, case, events_path, workdir, token)

    started = time.monotonic()
    timed_out = stalled = False
    beats = Heartbeats(events_path)
    with open(log_path, "wb") as log:
        log.write(
            f"# repro case {case.case_id}\n# timeout {case.timeout_s:g} s, python {ctx.python}\n".encode()
        )
        log.flush()
        proc = subprocess.Popen(
            [ctx.python, "-m", "repro.runner.harness"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
            start_new_session=True,
        )
        deadline = started + case.timeout_s
        next_beat_poll = started
        while proc.poll() is None:
            now = time.monotonic()
            if now >= next_beat_poll:
                beats.poll(now)
                next_beat_poll = now + _BEAT_POLL_S
            if now >= deadline:
                timed_out = True
                break
            if beats.stalled(now):
                stalled = True
                break
            if on_tick:
                on_tick(now - started)
            time.sleep(_POLL_S)
        watchdog_verdict = None
        if timed_out or stalled:
            slow = timed_out and beats.progressing(time.monotonic())
            dump_at = log.tell()
            wchans = _dump_and_kill(proc, token, log)
            watchdog_verdict = _watchdog_verdict(
                case, beats, slow, _read_from(log_path, dump_at), wchans, time.monotonic() - started
            )
            if not slow:
                log.write(
                    b"# repro watchdog: kernel log tail\n"
                    + watchdog.kernel_log_tail().encode(errors="replace")
                    + b"\n"
                )
        duration = time.monotonic() - started
        leaked = proctree.case_processes(None, token)
        if leaked:
            proctree.kill_case(None, token)
            log.write(
                f"\n# repro: killed {len(leaked)} leftover process(es) of this case: {[p.pid for p in leaked]}\n".encode()
            )

    events = Events.read(events_path)
    if watchdog_verdict is not None and events.result is not None:
        outcome_, signature_, message_ = watchdog_verdict
        watchdog_verdict = (
            outcome_,
            signature_,
            f"{message_} (after a {events.result['outcome']} verdict: teardown or exit hung)",
        )
    shutil.rmtree(workdir, ignore_errors=True)
    log_text = _read_tail(log_path)
    host = HostFacts.from_fingerprint(ctx.fingerprint)
    outcome, signature, message = classify(
        proc.returncode, watchdog_verdict, events, log_text, host
    )
    message = xml_safe(message)  # a dying process can leave NULs and escapes in its last line

    properties = dict(events.properties)
    if proc.returncode is not None and watchdog_verdict is None:
        properties["repro.returncode"] = str(proc.returncode)
        if proc.returncode < 0:
            properties["repro.signal"] = signatures.signal_name(-proc.returncode)
    if events.last_phase:
        properties["repro.last_phase"] = events.last_phase
    if leaked:
        properties["repro.leaked_processes"] = str(len(leaked))
    for key, value in case.params:
        properties[f"param.{key}"] = str(value)
    return CaseResult(
        scenario=case.scenario,
        case_id=case.case_id,
        outcome=outcome,
        duration_s=duration,
        message=message,
        signature=signature,
        detail=log_text[-DETAIL_CHARS:] if outcome.is_problem else "",
        metrics=events.metrics,
        properties=properties,
        log_path=str(log_path.relative_to(ctx.run_dir)),
    )


def _dump_and_kill(proc: subprocess.Popen, token: str, log) -> list[str]:
    """Ask every process of a stuck case for its stacks, then kill the tree.

    Returns each process's kernel wait channel, read before the kill (a ``D``-state process
    blocked in ``dup_mmap`` is a fork stuck in the kernel, not a Python deadlock).
    """
    procs = proctree.case_processes(proc.pid, token)
    log.write(f"\n# repro watchdog: dumping stacks of {len(procs)} process(es)\n".encode())
    # One process at a time, each under a header, so interleaved dumps stay attributable.
    per_process_s = min(0.5, STACK_DUMP_WAIT_S / max(1, len(procs)))
    wchans = []
    for member in procs:
        channel = watchdog.wchan(member.pid)
        wchans.append(channel)
        log.write(
            f"# --- stacks of pid {member.pid} (wchan {channel or '?'}): {proctree.describe(member)} ---\n".encode()
        )
        log.flush()
        proctree.send([member], signal.SIGUSR1)
        time.sleep(per_process_s)
    alive = proctree.kill_case(proc.pid, token)
    proc.wait()
    if alive:
        log.write(
            f"# repro watchdog: unkillable process(es) (D state?): {[p.pid for p in alive]}\n".encode()
        )
    log.write(b"# repro watchdog: process tree killed\n")
    log.flush()
    return wchans


def _read_from(path: Path, offset: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read(LOG_TAIL_BYTES).decode("utf-8", errors="replace")


def _watchdog_verdict(
    case: Case, beats: Heartbeats, slow: bool, dump: str, wchans: list[str], elapsed_s: float
) -> tuple[Outcome, str, str]:
    """Outcome, signature and message when the watchdog ended a case."""
    phase = (
        f"last phase {beats.last_phase!r}"
        + (f" step {beats.last_step}" if beats.last_step is not None else "")
        if beats.last_phase
        else "no heartbeat"
    )
    if slow:
        return (
            Outcome.ERROR,
            "timeout_slow_progress",
            f"still making progress when its {case.timeout_s:g} s timeout ran out ({phase}); slow, not hung: raise timeout_s",
        )
    signature, source = watchdog.hang_subtype(dump, wchans)
    if beats.stalled(time.monotonic()) and elapsed_s < case.timeout_s:
        why = f"no heartbeat for {beats.stall_budget_s():.0f} s in a steady phase"
    else:
        why = f"no verdict within {case.timeout_s:g} s"
    sub = f" [{signature}, {source}]" if source else ""
    return Outcome.HUNG, signature, f"{why} ({phase}){sub}; stacks dumped, process tree killed"


def skipped_result(case: Case, reason: str) -> CaseResult:
    """The result for a case that is not started because a requirement is absent."""
    properties = {f"param.{key}": str(value) for key, value in case.params}
    return CaseResult(
        case.scenario, case.case_id, Outcome.SKIPPED, message=reason, properties=properties
    )


class Reporter:
    """What the runner tells about progress (see ``repro.runner.progress``); all methods optional."""

    def case_started(self, index: int, total: int, case: Case) -> None: ...
    def case_tick(self, elapsed_s: float) -> None: ...
    def case_finished(self, index: int, total: int, result: CaseResult) -> None: ...


def run_all(
    ctx: RunContext,
    cases: Sequence[Case],
    reporter: Reporter | None = None,
    preflight: Sequence[CaseResult] = (),
) -> list[CaseResult]:
    """Run ``cases`` one after another (timings stay comparable on a 2-core runner).

    Writes ``junit.xml`` and ``run.json`` after every case. Ctrl-C kills the current case's
    tree, keeps what finished, and re-raises KeyboardInterrupt. ``preflight`` results (the
    ``doctor`` testsuite, ``repro.host.doctor``) come first in ``junit.xml`` and in the returned list
    and are written before the first case starts; ``run.json`` counts cases only.
    """
    reporter = reporter or Reporter()
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
        results.append(result)
        write_junit(junit_path, results, ctx.suite_properties, hostname=hostname)
        ctx.run_info["cases_done"] = index
        write_run_info(ctx.run_dir, ctx.run_info)
        reporter.case_finished(index, total, result)
    ctx.run_info["finished"] = _now()
    write_run_info(ctx.run_dir, ctx.run_info)
    return results


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
