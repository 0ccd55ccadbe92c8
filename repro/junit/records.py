"""The records the JUnit reader makes: one :class:`CaseRecord` per ``<testcase>`` after
classification, one :class:`InputRecord` per input file with its key and state (``repro.junit.reader``
makes them; ``repro.report`` merges them into cells). Input states besides the outcomes:
``invalid``, ``no tests`` (junit-notes.md "Cell states the matrix needs").

Every text that comes from an input is capped here (:data:`MAX_KEY_CHARS`, ...), so one hostile
file cannot make the outputs grow without bound. This module never reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from repro import properties as property_names
from repro.outcomes import EXPECT_EXPECTED, EXPECT_XPASS, ExpectVerdict, Outcome

#: Caps on text taken from an input (characters). A longer value is cut with "…" and the input
#: gets a warning: a 10 MB host key must not be repeated into every cell of matrix.html.
MAX_KEY_CHARS = 200
MAX_NAME_CHARS = 500
MAX_MESSAGE_CHARS = 500
MAX_PROPERTY_CHARS = 1000
#: Tail of a failure/error body kept as the case's log excerpt (characters).
MAX_EXCERPT_CHARS = 1500
#: Newer inputs named per superseded input (the count of cases is always exact).
MAX_SUPERSEDED_BY = 20

UNKNOWN_HOST = "unknown host"

STATE_OK = "ok"
STATE_INVALID = "invalid"
STATE_SUPERSEDED = "superseded"
STATE_NO_TESTS = "no tests"
STATE_MISSING = "missing"
#: Effective cell states from matrix.yaml ``expect:`` entries.
STATE_EXPECTED = "expected"
STATE_XPASS = "unexpectedly passing"
#: A case red first and passed on a rerun (``repro run --rerun-failures``; ``repro.flaky=true``),
#: and a cell whose worst case is one.
STATE_FLAKY = "flaky"


#: Most findings a case record keeps (``repro.runner`` writes at most this many).
MAX_FINDINGS = 5


def finding_fields(props: dict[str, str]) -> dict[str, Any]:
    """``CaseRecord`` keyword arguments from a testcase's ``repro.finding.N`` properties:
    ``findings`` in N's order (at most :data:`MAX_FINDINGS`, each cut to 500 characters)."""
    numbered = []
    for key, value in props.items():
        number = property_names.finding_number(key) or ""
        if number.isdigit() and len(number) < 4 and value.strip():
            numbered.append((int(number), value.strip()[:500]))
    return {"findings": tuple(value for _, value in sorted(numbered)[:MAX_FINDINGS])}


def rerun_fields(props: dict[str, str]) -> dict[str, Any]:
    """``CaseRecord`` keyword arguments from a testcase's rerun properties: ``flaky`` (True:
    passed on a rerun, False: red every time, None: never rerun), ``reruns`` (count) and
    ``first_signature``. Values that are not ``true``/``false`` or a whole number read as none."""
    flaky = {"true": True, "false": False}.get(props.get(property_names.FLAKY, "").strip().lower())
    reruns = props.get(property_names.RERUNS, "").strip()
    first = props.get(property_names.FIRST_SIGNATURE) or None
    return {
        "flaky": flaky,
        "reruns": int(reruns) if reruns.isdigit() and len(reruns) < 6 else 0,
        "first_signature": first[:MAX_KEY_CHARS] if first else None,
    }


# --------------------------------------------------------------------------------------------
# Records


@dataclass(slots=True)
class CaseRecord:
    """One ``<testcase>`` after classification (``__slots__``: a report holds up to
    ``repro.junit.reader.MAX_TESTCASES_TOTAL`` of them, so each one's size bounds its memory)."""

    scenario: str
    case: str
    outcome: Outcome
    signature: str | None
    message: str
    time_s: float | None
    metrics: dict[str, float | None]
    log: str | None
    file: str
    #: Tail of the failure/error body (the trimmed log our writer puts there), "" for none.
    excerpt: str = ""
    #: The covering ``expect:`` entry's verdict (``repro.config.expect``; shared, immutable), or None.
    expect: ExpectVerdict | None = None
    #: ``repro.flaky``: True passed on a rerun, False red on every rerun, None never rerun.
    flaky: bool | None = None
    reruns: int = 0
    #: The first attempt's signature of a flaky case.
    first_signature: str | None = None
    #: Failure evidence in a passed case's output (``repro.finding.N``; issue 21, item 4).
    findings: tuple[str, ...] = ()

    @property
    def expect_status(self) -> str | None:
        return self.expect.status if self.expect else None

    @property
    def is_flaky(self) -> bool:
        """Passed, but only on a rerun (a ``repro.flaky=true`` pass)."""
        return bool(self.flaky) and self.outcome is Outcome.PASSED

    @property
    def display_state(self) -> str:
        """The case's state as shown: its outcome, or ``expected``, ``unexpectedly passing``
        (``expect:`` entries) or ``flaky``."""
        if self.expect_status == EXPECT_EXPECTED:
            return STATE_EXPECTED
        if self.expect_status == EXPECT_XPASS:
            return STATE_XPASS
        if self.is_flaky:
            return STATE_FLAKY
        return self.outcome.value

    def to_json(self) -> dict[str, Any]:
        out = {
            "scenario": self.scenario,
            "case": self.case,
            "outcome": self.outcome.value,
            "signature": self.signature,
            "message": self.message,
            "excerpt": self.excerpt,
            "time_s": self.time_s,
            "metrics": dict(self.metrics),
            "log": self.log,
            "file": self.file,
        }
        if self.findings:
            out["findings"] = list(self.findings)
        if self.flaky is not None:
            out["flaky"] = self.flaky
            out["reruns"] = self.reruns
            if self.first_signature:
                out["first_signature"] = self.first_signature
        if self.expect is not None:  # the entry itself is in the top-level "expectations"
            out["expect"] = {"rule": self.expect.rule, "status": self.expect.status}
        return out


@dataclass
class InputRecord:
    """One input file: its key, its state and what it contained."""

    path: str
    state: str
    reason: str | None
    host: str
    variant: str
    cases: list[CaseRecord] = field(default_factory=list)
    host_properties: dict[str, str] = field(default_factory=dict)
    variant_properties: dict[str, str] = field(default_factory=dict)
    #: ``started`` from our run.json sidecar; None for foreign files.
    run_started: str | None = None
    #: ``closes`` from run.json: the run_id of the run whose end this one records (a Slurm
    #: scheduler cell), or None. Ordered after runs started in the same second.
    closes: str | None = None
    #: Why our run did not finish (run.json: interrupted, no finish time, fewer cases done than
    #: planned), or None. A partial run adds its cases and never hides older ones.
    partial: str | None = None
    #: Scenario cases a newer run of the same (host, variant) also has (``repro.report.merge``):
    #: they are not in the matrix; ``superseded_by`` names those newer inputs (at most
    #: :data:`MAX_SUPERSEDED_BY`). Doctor checks, which every run repeats, are not counted.
    superseded_cases: int = 0
    superseded_by: list[str] = field(default_factory=list)
    #: ``run`` (a runner's junit.xml), ``stray`` (another XML file inside a run directory: an
    #: input of its own, never that run's results) or ``foreign`` (``repro.junit.reader``).
    origin: str = "foreign"
    #: Why this run's junit.xml is not the file its runner wrote (its SHA-256 differs from the
    #: one run.json recorded), or None (issue 32).
    changed: str | None = None

    @property
    def tests(self) -> int:
        return len(self.cases)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "state": self.state,
            "reason": self.reason,
            "host": self.host,
            "variant": self.variant,
            "tests": self.tests,
            "partial": self.partial,
            "superseded_cases": self.superseded_cases,
            "superseded_by": list(self.superseded_by),
            "origin": self.origin,
            "changed_after_run": self.changed,
        }


def truncate(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, the last one "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
