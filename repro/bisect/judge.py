"""The verdict of one bisect step from its cases, pure (no processes, no files).

The two ends are run first. The **regression** is what the bad end does that the good end
does not: every selected case whose (outcome, signature) at the bad end differs from the good
end's, e.g. ``losses[...]``: good end ``passed``, bad end ``failed nan_detected``, or a hang
(``hung hang.dataloader_wait``: hangs are judged like any signature). A step's repeat is then

- ``bad``: a regression case ends as at the bad end (same outcome and signature);
- ``skipped``: the environment could not be made (an ``infra.*`` reason from uv: no such
  version, no wheel for this Python, index unreachable), no case ran, a case carries an
  ``infra.*`` signature, or a regression case was skipped (its requirement is absent);
- ``good``: every regression case ends as at the good end;
- ``other``: anything else (a failure that is not the bad end's signature): reported with its
  signature, never a verdict.

Repeats that disagree make the step ``flaky`` (never decided); a repeat skipped for
infrastructure makes the step ``skipped``.

A failure no signature names (``unknown``, or none) is told apart by the exception that ends
its Python traceback (``_pickle.UnpicklingError``): otherwise any unclassified failure of a
step (an ImportError of a missing dependency) would reproduce an unclassified bad end and
name a wrong first bad version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from repro.bisect.search import Verdict
from repro.signatures.table import UNKNOWN

INFRA_PREFIX = "infra."
_TRACEBACK = "Traceback (most recent call last):"
#: Terminal colour codes (torch's own messages carry bold markers); the JUnit writer turns the
#: ESC, which XML cannot hold, into U+FFFD.
_ANSI = re.compile("[\x1b\ufffd]\\[[0-9;?]*[A-Za-z]")
#: An exception line's type: ``ValueError: ...``, ``pkg.mod.SomeError: ...``, ``SystemExit``.
_EXCEPTION_TYPE = re.compile(
    r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Iteration|Warning))"
    r"(?::\s.*)?$"
)


def exception_of(text: str) -> tuple[str, str] | None:
    """``(type, line)`` of the exception that ends the first Python traceback in ``text`` (a
    case's failure excerpt), via :func:`repro.signatures.engine.first_meaningful_line`; None
    without a traceback or when that line names no exception type."""
    from repro.signatures.engine import first_meaningful_line

    if _TRACEBACK not in text:
        return None
    line = _ANSI.sub("", first_meaningful_line(text))
    found = _EXCEPTION_TYPE.match(line)
    return (found.group(1), line) if found else None


@dataclass(frozen=True)
class CaseEnd:
    """How one case ended: ``outcome`` (passed, failed, error, crashed, hung, skipped), its
    ``signature`` (None for a pass), first ``message`` line, and for a failure no signature
    names, ``exception``: the type ending its traceback (see :func:`exception_of`)."""

    case: str
    outcome: str
    signature: str | None = None
    message: str = ""
    exception: str | None = None

    @property
    def unclassified(self) -> bool:
        return self.outcome not in ("passed", "skipped") and self.signature in (None, UNKNOWN)

    @property
    def mark(self) -> tuple[str, str | None, str | None]:
        """What must match for two ends to be the same: outcome and signature, and the
        exception type when no signature names the failure."""
        if self.outcome == "passed":
            return (self.outcome, None, None)
        return (self.outcome, self.signature, self.exception if self.unclassified else None)

    def describe(self) -> str:
        if self.outcome == "passed":
            return f"{self.case}: passed"
        text = f"{self.case}: {self.outcome} {self.signature or '(no signature)'}"
        if self.unclassified and self.exception and not self.message.startswith(self.exception):
            text += f" {self.exception}"
        return text + (f" ({self.message})" if self.message else "")


@dataclass(frozen=True)
class Regression:
    """One case that differs between the ends: its end at the good and at the bad end."""

    case: str
    good: CaseEnd
    bad: CaseEnd


def by_case(cases: Sequence[CaseEnd]) -> dict[str, CaseEnd]:
    return {c.case: c for c in cases}


def regressions(good_end: Sequence[CaseEnd], bad_end: Sequence[CaseEnd]) -> list[Regression]:
    """The cases whose (outcome, signature) at the bad end differs from the good end's and is
    a problem there (not a pass, not a skip); cases of one end only are ignored."""
    good, bad = by_case(good_end), by_case(bad_end)
    out = []
    for case, end in bad.items():
        if (
            case in good
            and end.outcome not in ("passed", "skipped")
            and end.mark != good[case].mark
        ):
            out.append(Regression(case, good[case], end))
    return out


def judge_repeat(
    cases: Sequence[CaseEnd] | None, regs: Sequence[Regression]
) -> tuple[Verdict, str]:
    """One repeat's verdict and why. ``cases`` None: the run produced no results at all."""
    if not cases:
        return Verdict.SKIPPED, "no case ran (the runner produced no results)"
    ended = by_case(cases)
    infra = [c for c in cases if (c.signature or "").startswith(INFRA_PREFIX)]
    bad = [r for r in regs if r.case in ended and ended[r.case].mark == r.bad.mark]
    if bad:
        return Verdict.BAD, "; ".join(ended[r.case].describe() for r in bad)
    if infra:
        return Verdict.SKIPPED, "infrastructure: " + "; ".join(c.describe() for c in infra)
    missing = [r.case for r in regs if r.case not in ended]
    if missing:
        return Verdict.SKIPPED, "did not run: " + ", ".join(missing)
    skipped = [ended[r.case] for r in regs if ended[r.case].outcome == "skipped"]
    if skipped:
        return Verdict.SKIPPED, "; ".join(c.describe() for c in skipped)
    other = [ended[r.case] for r in regs if ended[r.case].mark != r.good.mark]
    if other:
        return Verdict.OTHER, "; ".join(c.describe() for c in other)
    return Verdict.GOOD, "; ".join(ended[r.case].describe() for r in regs)


def judge_step(repeats: Sequence[tuple[Verdict, str]]) -> tuple[Verdict, str]:
    """The step's verdict from its repeats' (see the module docstring)."""
    if not repeats:
        raise ValueError("a step has at least one repeat")
    verdicts = [v for v, _ in repeats]
    if Verdict.SKIPPED in verdicts:
        reason = next(r for v, r in repeats if v is Verdict.SKIPPED)
        n = verdicts.count(Verdict.SKIPPED)
        return Verdict.SKIPPED, f"{n} of {len(verdicts)} repeats: {reason}"
    if len(set(verdicts)) == 1:
        return verdicts[0], repeats[0][1]
    tally = ", ".join(f"{verdicts.count(v)} {v.value}" for v in dict.fromkeys(verdicts))
    return Verdict.FLAKY, f"repeats disagree ({tally})"


def ends_problem(
    good: Mapping[str, CaseEnd], bad: Mapping[str, CaseEnd], regs: Sequence[Regression]
) -> str | None:
    """Why the two ends cannot start a bisect, or None: no common case, or no case differs."""
    if not set(good) & set(bad):
        return "the two ends ran no case in common"
    if not regs:
        return "every selected case ends the same way at both ends: nothing to bisect"
    return None
