"""What :func:`repro.signatures.engine.classify` returns: the :class:`Classification` (the
signature name, the decisive line, the matches) and each :class:`Match`."""

from __future__ import annotations

from dataclasses import dataclass

from repro.signatures.table import UNKNOWN, Signature


@dataclass(frozen=True)
class Match:
    """A line attributed to a signature.

    Attributes:
        signature: the row that matched.
        line_no: 1-based line number in the text (``\\r`` and ``\\r\\n`` count as line breaks).
        line: the matching line, stripped.
    """

    signature: Signature
    line_no: int
    line: str


@dataclass(frozen=True)
class Classification:
    """The verdict of :func:`classify` / :func:`classify_stream`.

    Attributes:
        name: the winning signature name, or :data:`UNKNOWN`.
        message: the decisive line, stripped, at most :data:`MAX_MESSAGE_CHARS` characters: the
            winning row's line; for a wrapper row (``rank_failed``, ``dataloader_worker_error``)
            and for unknown the root cause (:func:`decisive_line`).
        line_no: line number of the message's line; ``None`` when it has none.
        source: the winning row's ``source``; ``""`` for unknown.
        workaround: the winning row's ``workaround``; ``""`` for unknown.
        matches: the matches in line order (at most :data:`MAX_KEPT_MATCHES`, the earliest).
        notes: what was cut or not read (over-long lines, a read stopped), one sentence each.
        failure_evidence: whether the text shows any failure at all (see :attr:`clean`).
        run_evidence: whether the text shows a run: output a job or a tool prints while it runs
            normally (progress, numbered epochs or steps, logging lines, a GPU tool's report;
            rule 8, issue 30, round eight). A text with neither a failure nor a run is an
            ``unknown`` failure, not :attr:`clean`: ``False`` only for that verdict (a run is
            not looked for once a failure line or a row's match decides).
        host_evidence: the log lines that told whether the host is WSL2 / native / a container
            when no host facts were given (:class:`repro.signatures.hostfacts.Evidence`).
        coarse: for an unknown failure, the coarse family its text shows ("a ROCm runtime
            error", "a process killed by signal 7 (SIGBUS)", "a C++ abort", ...; issue 30,
            item 3), ``""`` when it shows none or a row matched.
    """

    name: str
    message: str
    line_no: int | None
    source: str
    workaround: str
    matches: tuple[Match, ...]
    notes: tuple[str, ...] = ()
    failure_evidence: bool = True
    host_evidence: tuple[str, ...] = ()
    coarse: str = ""
    run_evidence: bool = True

    @property
    def clean(self) -> bool:
        """No row matched, nothing in the text looks like a failure (no traceback, no
        exception line, no compiler ``error:``, no crash or ``FAILED`` text; issue 21, item 6)
        and the text shows a run (:attr:`run_evidence`; rule 8, issue 30, round eight): "no
        failure found", not an ``unknown`` failure. Whether the text adds evidence of a failure
        the runner already knows of is :attr:`failure_evidence` (repro/runner/verdict.py)."""
        return self.name == UNKNOWN and not self.failure_evidence and self.run_evidence
