"""Decide a finished case's ``(outcome, signature, message)`` from what the runner saw: the
watchdog's verdict, the exit status, the events the case reported and its log.

Order (DESIGN.md, "The runner"): the watchdog (hung, or too slow), then a broken events
protocol, then the exit status (negative = killed by that signal), then the signature table
(``repro.signatures.engine``) on the log. A signature the scenario names itself wins over the
table for its own failed/error verdict. Never imports torch.
"""

from __future__ import annotations

import re
import time

from repro.outcomes import Outcome
from repro.runner import watchdog
from repro.runner.protocol import Events
from repro.runner.watchdog import Heartbeats
from repro.scenarios import Case
from repro.signatures import engine as signatures
from repro.signatures.hostfacts import HostFacts
from repro.signatures.table import EVENTS_PROTOCOL

Verdict = tuple[Outcome, str, str]


def phase_text(last_phase: str | None, last_step: object) -> str:
    """``last phase 'batch' step 3``, or ``no heartbeat``."""
    if not last_phase:
        return "no heartbeat"
    step = f" step {last_step}" if last_step is not None else ""
    return f"last phase {last_phase!r}{step}"


def classify(
    returncode: int | None,
    watchdog_verdict: Verdict | None,
    events: Events,
    log_text: str,
    host: HostFacts | None = None,
) -> Verdict:
    """Decide ``(outcome, signature, message)`` for a finished case (order: module docstring).

    A broken events protocol (``events.problem``) is the case's ``error`` with signature
    ``events_protocol`` unless the process crashed or was ended by the watchdog: the crash or
    hang is the more useful fact. A failed case's message is the scenario's, then the log's
    decisive line (:func:`repro.signatures.engine.decisive_line`) when it adds something.
    """
    if watchdog_verdict is not None:
        return watchdog_verdict
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
            f"killed by {name} ({phase_text(events.last_phase, events.last_step)})",
        )

    if events.problem is not None:
        return Outcome.ERROR, EVENTS_PROTOCOL, f"bad events file: {events.problem}"

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
    # Named, or a failure the text shows: a log with no failure line adds nothing to the
    # scenario's verdict, whether or not it shows a run (rule 8 makes such a text without a run
    # ``unknown`` rather than clean for ``repro classify``; the runner knows the case failed).
    evidence = found.name != signatures.UNKNOWN or found.failure_evidence
    if evidence and found.message and found.message not in message:
        # The scenario's verdict, then the log's decisive line: the named row's line, or for an
        # unrecognised failure its root cause ("script.py exited with status 1 | KeyError: 'lr'",
        # issue 21, item 3).
        message = f"{message} | {found.message}"
    return outcome, signature, message[:1000]


def fail_on(
    rules: tuple[tuple[str, str], ...], log_text: str, host: HostFacts | None = None
) -> Verdict | None:
    """A passed ``script:`` case's ``fail_on:`` verdict (issue 21, item 4): ``failed`` with the
    first rule its findings show (``("signature", NAME)``: a line that row names;
    ``("pattern", REGEX)``: a finding (:func:`repro.signatures.engine.findings`) the expression
    matches, named by the table or ``unknown``), or None when no rule matches."""
    if not rules:
        return None
    found = signatures.classify(log_text, host)
    named = {match.signature.name: match.line for match in reversed(found.matches)}
    evidence = signatures.findings(log_text, host, limit=signatures.MAX_KEPT_MATCHES)
    for kind, value in rules:
        if kind == "signature" and value in named:
            return Outcome.FAILED, value, f"passed, but fail_on {value}: {named[value]}"[:1000]
        if kind == "pattern":
            line = next((line for line in evidence if re.search(value, line)), None)
            if line is not None:
                name = signatures.classify(line, host).name
                return Outcome.FAILED, name, f"passed, but fail_on {value!r}: {line}"[:1000]
    return None


def watchdog_verdict(
    case: Case, beats: Heartbeats, slow: bool, dump: str, wchans: list[str], elapsed_s: float
) -> Verdict:
    """Outcome, signature and message when the watchdog ended a case: slow (still beating when
    the timeout ran out) or hung (sub-typed from the stack ``dump`` and wait channels)."""
    phase = phase_text(beats.last_phase, beats.last_step)
    if slow:
        return (
            Outcome.ERROR,
            "timeout_slow_progress",
            f"still making progress when its {case.timeout_s:g} s timeout ran out ({phase}); slow, not hung: raise timeout_s",
        )
    signature, source = watchdog.hang_subtype(dump, wchans)
    if beats.stalled(time.monotonic()) and elapsed_s < case.timeout_s:
        kind = "its declared budget" if beats.declared_budget_s is not None else "a steady phase"
        why = f"no heartbeat for {beats.stall_budget_s():.0f} s ({kind})"
    else:
        why = f"no verdict within {case.timeout_s:g} s"
    sub = f" [{signature}, {source}]" if source else ""
    return Outcome.HUNG, signature, f"{why} ({phase}){sub}; stacks dumped, process tree killed"
