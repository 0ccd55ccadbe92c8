"""Run one scenario case in its own child process and process group, under a watchdog.

The runner never imports torch and never initialises CUDA: it starts ``python -m
repro.runner.harness`` per case (the harness is the case's subreaper and forks the case
process), drains the case's output into a capped log (``repro.runner.caselog``), follows its
heartbeats (``repro.runner.watchdog``), enforces the hard timeout, and classifies what happened
(``repro.runner.verdict``). A segfault, abort, deadlock, a broken events file or a leaked
DataLoader worker, torchrun rank or ``setsid``'ed grandchild ends that case only.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from repro import proctree, scenarios
from repro import properties as property_names
from repro.errors import ConfigError
from repro.junit.writer import xml_safe
from repro.outcomes import CaseResult, Outcome
from repro.runner import protocol, verdict, watchdog, zygote_client
from repro.runner.caselog import CaseLog, OutputPipe
from repro.runner.context import RunContext
from repro.runner.protocol import EventReader
from repro.runner.watchdog import Heartbeats
from repro.runner.zygote_pool import zygote_for
from repro.scenarios import Case
from repro.signatures import engine as signatures
from repro.signatures.hostfacts import HostFacts

#: Seconds between asking a hung case for its stacks (SIGUSR1) and killing its tree.
STACK_DUMP_WAIT_S = 2.0
#: How much of a log is read for classification and kept in the JUnit body (bytes, from the end).
LOG_TAIL_BYTES = 4 * 1024 * 1024
DETAIL_CHARS = 8_000
#: Seconds the runner keeps draining a finished case's output (a leftover holding the pipe).
DRAIN_S = 2.0
_POLL_S = 0.05
_BEAT_POLL_S = 0.25
#: Seconds to wait for a killed harness to be reaped (a process in ``D`` state may never be).
KILL_WAIT_S = 5.0
#: A running case's harness: started fresh, or forked by the zygote (same interface).
Harness = subprocess.Popen | zygote_client.ForkedHarness


def log_name(case_id: str) -> str:
    """File name of a case log: the case id with characters unsafe in paths replaced."""
    safe = re.sub(r"[^A-Za-z0-9._=,-]+", "_", case_id.replace("[", "-").replace("]", ""))
    return f"{safe.strip('_')[:200] or 'case'}.log"


def check_timeout(case: Case) -> None:
    """Refuse a case whose hard timeout is not a finite, positive number of seconds (NaN or
    infinity would disable the watchdog). Raises ConfigError naming the case."""
    timeout = case.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ConfigError(f"case {case.case_id}: timeout_s: expected seconds, got {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(
            f"case {case.case_id}: timeout_s: expected a finite positive number of seconds, got {timeout!r}"
        )


class CaseCancelled(Exception):
    """``RunContext.cancel`` was set while the case ran: its tree is killed, nothing recorded."""


@dataclass
class _Watch:
    """What the watch loop saw of a running case."""

    returncode: int | None = None
    verdict: verdict.Verdict | None = None
    leaked: list[str] = field(default_factory=list)
    cpu_s: float | None = None  # the harness's report; None when the harness was killed


def run_case(
    ctx: RunContext, case: Case, on_tick: Callable[[float], None] | None = None
) -> CaseResult:
    """Run one case in an isolated child process and return its classified result.

    Hard timeout: ``case.timeout_s`` seconds (refused unless finite and positive:
    ConfigError). On timeout every process of the case is sent SIGUSR1 (all-thread stack dump
    into the log), then after ``STACK_DUMP_WAIT_S`` the whole tree is SIGKILLed. Leftover
    processes (leaked workers, ranks, ``setsid``'ed grandchildren: found by the harness as
    subreaper, by the case token, and among orphans this process adopted) are killed after
    every case and counted in the ``repro.leaked_processes`` property.

    Raises OSError when the log cannot be written (the case's tree is killed first).
    """
    check_timeout(case)
    logs = ctx.run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    header = f"# repro case {case.case_id}\n# timeout {case.timeout_s:g} s, python {ctx.python}\n"
    log = _open_log(logs, case.case_id, header.encode(errors="replace"), ctx.log_cap_bytes)
    workdir = Path(tempfile.mkdtemp(prefix="repro-case-"))
    events_path = workdir / "events.jsonl"
    token = uuid.uuid4().hex
    spec = {
        "scenario": case.scenario,
        "module": case.module,
        "case_id": case.case_id,
        "params": case.param_dict,
        "expect_accelerator": ctx.expect_accelerator,
    }
    env = protocol.case_env(dict(os.environ), ctx.env, spec, events_path, workdir, token)
    if ctx.case_threads and not is_exclusive(case):  # alone, a case has every core
        env[protocol.THREADS_VAR] = str(ctx.case_threads)
        env.setdefault("OMP_NUM_THREADS", str(ctx.case_threads))
    reader = EventReader(events_path)
    pipe = OutputPipe(log)
    report_read, report_write = os.pipe()
    env[protocol.REPORT_FD_VAR] = str(report_write)
    proc: Harness | None = None
    started = time.monotonic()
    try:
        zygote = zygote_for(ctx, case, log)
        # Starting a harness and judging orphans exclude each other (proctree.spawning): a
        # harness another case thread is starting is never swept as this case's leftover.
        with proctree.spawning():
            proc = _start_harness(ctx, zygote, env, workdir, pipe.write_fd, report_write, log)
            proctree.own(proc.pid)
        with ctx.state.lock:
            ctx.state.harnesses[token] = proc.pid
        isolation = "zygote" if isinstance(proc, zygote_client.ForkedHarness) else "fresh"
        os.close(report_write)
        report_write = -1
        pipe.close_write_end()
        seen = _watch(
            ctx,
            case,
            proc,
            Heartbeats(reader, scale=ctx.timeout_scale),
            pipe,
            token,
            on_tick,
            started,
        )
        duration = time.monotonic() - started
        seen.leaked, seen.cpu_s = _leftovers(report_read, token, ctx.state.other_tokens(token), log)
        pipe.drain(DRAIN_S)
        events = reader.read_all()
        log_text = log.tail(LOG_TAIL_BYTES)
    except BaseException:
        if proc is not None:
            proctree.kill_case(proc.pid, token)
            _reap(proc, log)
            proctree.kill(proctree.adopted(ctx.state.other_tokens(token)))
        raise
    finally:
        with ctx.state.lock:
            ctx.state.harnesses.pop(token, None)
        if proc is not None and proc.returncode is not None:  # reaped: the pid is no longer ours
            proctree.disown(proc.pid)
        if report_write >= 0:
            os.close(report_write)
        os.close(report_read)
        pipe.close()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)
    result = _result(ctx, case, seen, events, log_text, duration, log.path)
    result.properties[property_names.ISOLATION] = isolation
    return result


def is_exclusive(case: Case) -> bool:
    """Whether ``case`` must run alone under ``-j N`` (its scenario's ``EXCLUSIVE``: it measures
    timing or throughput, holds a fixed port, or needs a whole device). An exclusive case gets
    torch's default threads."""
    return scenarios.case_flag(case, "EXCLUSIVE")


def _start_harness(
    ctx: RunContext,
    zygote: zygote_client.Zygote | None,
    env: dict[str, str],
    workdir: Path,
    log_fd: int,
    report_fd: int,
    log: CaseLog,
) -> Harness:
    """Start the case's harness: forked by ``zygote`` when given (it checks fork safety; one
    that refuses or stops answering is retired), else ``python -m repro.runner.harness``
    (the fresh path). Call under ``proctree.spawning()``."""
    if zygote is not None:
        try:
            return ctx.pool().spawn(zygote, env, str(workdir), log_fd, report_fd)
        except zygote_client.ZygoteError as exc:
            log.write(f"# repro: {exc}; running this case fresh\n".encode(errors="replace"))
    return subprocess.Popen(
        [ctx.python, "-m", "repro.runner.harness"],
        stdin=subprocess.DEVNULL,
        stdout=log_fd,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env=env,
        start_new_session=True,
        pass_fds=(report_fd,),
    )


def _open_log(logs: Path, case_id: str, header: bytes, cap_bytes: int) -> CaseLog:
    """A new log for the case; two ids that map to one file name get ``-2``, ``-3``..."""
    name = log_name(case_id)
    for attempt in range(1, 100):
        path = logs / (name if attempt == 1 else f"{name[:-4]}-{attempt}.log")
        try:
            return CaseLog(path, header, cap_bytes)
        except FileExistsError:
            continue
    raise FileExistsError(f"{logs}: no free log name for {name}")


def _watch(
    ctx: RunContext,
    case: Case,
    proc: Harness,
    beats: Heartbeats,
    pipe: OutputPipe,
    token: str,
    on_tick: Callable[[float], None] | None,
    started: float,
) -> _Watch:
    """Wait for the case under the hard deadline and the stall detector, draining its output.
    Nothing the case does to its files can block this loop (non-blocking pipe and events)."""
    exit_fd = _pidfd(proc)
    try:
        timed_out, stalled = _wait(ctx, case, proc, beats, pipe, on_tick, started, exit_fd)
    finally:
        if exit_fd is not None:
            os.close(exit_fd)
    seen = _Watch()
    if not (timed_out or stalled):
        seen.returncode = proc.returncode
        return seen
    slow = timed_out and beats.progressing(time.monotonic())
    mark = pipe.log.mark()
    wchans = _dump_and_kill(proc, token, pipe)
    dump = pipe.log.text_since(mark, LOG_TAIL_BYTES)
    elapsed = time.monotonic() - started
    seen.verdict = verdict.watchdog_verdict(case, beats, slow, dump, wchans, elapsed)
    if not slow:
        pipe.log.write(
            b"# repro watchdog: kernel log tail\n"
            + watchdog.kernel_log_tail().encode(errors="replace")
            + b"\n"
        )
    return seen


def _wait(
    ctx: RunContext,
    case: Case,
    proc: Harness,
    beats: Heartbeats,
    pipe: OutputPipe,
    on_tick: Callable[[float], None] | None,
    started: float,
    exit_fd: int | None,
) -> tuple[bool, bool]:
    """Poll until the harness ends: ``(timed_out, stalled)``. Each wait also wakes when the
    harness exits (``exit_fd``, or the zygote's socket), not only on output or every
    ``_POLL_S``. Raises CaseCancelled when ``ctx.state.cancel`` is set."""
    deadline = started + case.timeout_s
    next_beat_poll = started
    starvation = watchdog.Starvation(lambda: _tree_pids(proc))
    try:
        while proc.poll() is None:
            if ctx.state.cancel.is_set():
                raise CaseCancelled(case.case_id)
            now = time.monotonic()
            if now >= next_beat_poll:
                beats.poll(now)
                next_beat_poll = now + _BEAT_POLL_S
            if now >= deadline:
                return True, False
            if confirmed_stall(beats, now, starvation):
                return False, True
            if on_tick:
                on_tick(now - started)
            wake = exit_fd if exit_fd is not None else _zygote_fd(proc)
            pipe.pump(_POLL_S, wake_fds=() if wake is None else (wake,))
        return False, False
    finally:
        _note_starvation(pipe, starvation)


def confirmed_stall(
    beats: Heartbeats, now: float, starvation: watchdog.Starvation | None = None
) -> bool:
    """True when the case's phase is silent past its budget even after reading its events file
    once more (the last read may be up to ``_BEAT_POLL_S`` old, or older when the runner itself
    was not scheduled, and a beat written since then is not a stall), and its processes are not
    starved of CPU (``starvation``: runnable but waiting on a loaded host; the hard timeout
    still holds). ``now``: ``time.monotonic()``."""
    if not beats.stalled(now):
        return False
    beats.poll(now)
    if not beats.stalled(now):
        return False
    return starvation is None or not starvation.starved(beats.last_beat_at, now)


def _note_starvation(pipe: OutputPipe, starvation: watchdog.Starvation) -> None:
    if starvation.postponed_s:
        pipe.log.write(
            f"# repro watchdog: the hang verdict waited {starvation.postponed_s:.1f} s while the "
            "case's processes were runnable but waiting for a CPU\n".encode()
        )


def _tree_pids(proc: Harness) -> list[int]:
    """The harness and every process under it (it is the case's subreaper: orphans stay)."""
    try:
        harness = psutil.Process(proc.pid)
        return [proc.pid] + [p.pid for p in harness.children(recursive=True)]
    except psutil.Error:
        return []


def _pidfd(proc: Harness) -> int | None:
    """A pidfd of a fresh harness (readable once it exits: Linux 5.3+), else None."""
    if isinstance(proc, zygote_client.ForkedHarness):
        return None
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # an old kernel, or already reaped
        return None


def _zygote_fd(proc: Harness) -> int | None:
    """The zygote's socket for a forked harness: readable when the zygote reports an exit."""
    if isinstance(proc, zygote_client.ForkedHarness) and proc.zygote.alive():
        return proc.zygote.sock.fileno()
    return None


def _dump_and_kill(proc: Harness, token: str, pipe: OutputPipe) -> list[str]:
    """Ask every process of a stuck case for its stacks, then kill the tree.

    Returns each process's kernel wait channel, read before the kill (a ``D``-state process
    blocked in ``dup_mmap`` is a fork stuck in the kernel, not a Python deadlock).
    """
    log = pipe.log
    procs = proctree.case_processes(proc.pid, token)
    log.write(f"\n# repro watchdog: dumping stacks of {len(procs)} process(es)\n".encode())
    # One process at a time, each under a header, so interleaved dumps stay attributable.
    per_process_s = min(0.5, STACK_DUMP_WAIT_S / max(1, len(procs)))
    wchans = []
    for member in procs:
        channel = watchdog.wchan(member.pid)
        wchans.append(channel)
        log.write(
            f"# --- stacks of pid {member.pid} (wchan {channel or '?'}): {proctree.describe(member)} ---\n".encode(
                errors="replace"
            )
        )
        proctree.send([member], signal.SIGUSR1)
        pipe.drain_for(per_process_s)
    alive = proctree.kill_case(proc.pid, token)
    _reap(proc, log)
    pipe.drain_for(0.1)
    if alive:
        log.write(
            f"# repro watchdog: unkillable process(es) (D state?): {[p.pid for p in alive]}\n".encode()
        )
    log.write(b"# repro watchdog: process tree killed\n")
    return wchans


def _reap(proc: Harness, log: CaseLog) -> None:
    """Wait for a killed harness at most ``KILL_WAIT_S`` seconds (a forked one's zygote may be
    wedged: ``ForkedHarness.poll`` then kills it and reaps the harness itself)."""
    try:
        proc.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        log.write(
            f"# repro: harness {proc.pid} not reaped {KILL_WAIT_S:g} s after SIGKILL\n".encode()
        )


def _harness_report(fd: int) -> tuple[list[str], float | None]:
    """What the harness said when the case ended (its one JSON line): the leftovers it killed
    and the CPU seconds of the case's processes; ``([], None)`` without a report (the harness
    itself was killed)."""
    os.set_blocking(fd, False)
    try:
        data = os.read(fd, 65536)
        report = json.loads(data.decode(errors="replace")) if data else {}
        leaked, cpu_s = report.get("leaked"), report.get("cpu_s")
    except (OSError, ValueError, AttributeError):
        return [], None
    leaked = [str(item)[:200] for item in leaked] if isinstance(leaked, list) else []
    cpu_ok = isinstance(cpu_s, (int, float)) and not isinstance(cpu_s, bool) and cpu_s >= 0
    return leaked, float(cpu_s) if cpu_ok else None


def _leftovers(
    report_fd: int, token: str, other_tokens: set[str], log: CaseLog
) -> tuple[list[str], float | None]:
    """Every process the case left behind, killed: those the harness found in its subreaper
    tree (its report), then those outside it: processes carrying the case's token and, when the
    harness died without a report, the orphans this (subreaper) process adopted
    (``proctree.adopted``: never a child it started, never one carrying another running case's
    token). Returns their descriptions and the harness's CPU seconds (None without a report)."""
    leaked, cpu_s = _harness_report(report_fd)
    found = {p.pid: p for p in proctree.case_processes(None, token)}
    if cpu_s is None:
        # No report: the harness died, and its orphans were re-parented to this subreaper. A
        # harness that reported outlived its case and reaped its own tree, so an orphan seen
        # now is another case's (one whose harness died beside this one under -j N).
        found.update({p.pid: p for p in proctree.adopted(other_tokens)})
    procs = list(found.values())
    leaked += [f"{p.pid} {proctree.describe(p)}" for p in procs]
    proctree.kill(procs)
    if leaked:
        log.write(
            f"\n# repro: killed {len(leaked)} leftover process(es) of this case: {leaked}\n".encode(
                errors="replace"
            )
        )
    return leaked, cpu_s


def _result(
    ctx: RunContext,
    case: Case,
    seen: _Watch,
    events: protocol.Events,
    log_text: str,
    duration: float,
    log_path: Path,
) -> CaseResult:
    watchdog_verdict = seen.verdict
    if watchdog_verdict is not None and events.result is not None:
        outcome_, signature_, message_ = watchdog_verdict
        watchdog_verdict = (
            outcome_,
            signature_,
            f"{message_} (after a {events.result['outcome']} verdict: teardown or exit hung)",
        )
    host = HostFacts.from_fingerprint(ctx.fingerprint)
    outcome, signature, message = verdict.classify(
        seen.returncode, watchdog_verdict, events, log_text, host
    )
    message = xml_safe(message)  # a dying process can leave NULs and escapes in its last line

    properties = dict(events.properties)
    if seen.returncode is not None:
        properties[property_names.RETURNCODE] = str(seen.returncode)
        if seen.returncode < 0:
            properties[property_names.SIGNAL] = signatures.signal_name(-seen.returncode)
    if events.last_phase:
        properties[property_names.LAST_PHASE] = events.last_phase
    if seen.leaked:
        properties[property_names.LEAKED_PROCESSES] = str(len(seen.leaked))
    if seen.cpu_s is not None:
        properties[property_names.CPU_S] = f"{seen.cpu_s:.2f}"
    for key, value in case.params:
        properties[f"param.{key}"] = str(value)
    rules = dict(case.params).get("fail_on")
    if outcome is Outcome.PASSED and rules:
        failed = verdict.fail_on(rules, log_text, host)
        if failed is not None:
            outcome, signature, message = failed[0], failed[1], xml_safe(failed[2])
    if outcome is Outcome.PASSED:
        # Exit 0 is not "nothing happened": a child's traceback, a printed NaN, a row's text
        # (issue 21, item 4). The outcome stays; the findings travel as properties.
        found = signatures.findings(log_text, host)
        if found:
            properties[property_names.FINDINGS] = str(len(found))
            for number, line in enumerate(found, 1):
                properties[property_names.finding(number)] = xml_safe(line)
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


def skipped_result(case: Case, reason: str) -> CaseResult:
    """The result for a case that is not started because a requirement is absent."""
    properties = {f"param.{key}": str(value) for key, value in case.params}
    return CaseResult(
        case.scenario, case.case_id, Outcome.SKIPPED, message=reason, properties=properties
    )
