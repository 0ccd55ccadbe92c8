"""What a prediction is: one :class:`Reason` per check, combined into a :class:`Prediction`,
and how a prediction compares with what a run observed. Pure data; never imports torch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PASS = "pass"
FAIL = "fail"
UNKNOWN = "unknown"
NOTE = "note"
OUTCOMES = (PASS, FAIL, UNKNOWN)


@dataclass(frozen=True)
class Reason:
    """One check and its verdict (``pass``/``fail``/``unknown``/``note``).

    ``fact`` names what the verdict rests on: a dotted path into compat-facts.yaml, or
    ``observed runtime.arch_list`` for what the run itself recorded; ``unverified`` is true when
    that fact carries an ``# unverified`` mark.
    """

    check: str
    verdict: str
    text: str
    fact: str
    unverified: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "text": self.text,
            "fact": self.fact,
            "unverified": self.unverified,
        }

    def line(self) -> str:
        mark = ", unverified" if self.unverified else ""
        return f"{self.verdict}: {self.text} [{self.fact}{mark}]"


@dataclass(frozen=True)
class Prediction:
    """The predicted outcome of one (host, variant) cell and every reason behind it."""

    outcome: str
    reasons: tuple[Reason, ...]

    @property
    def deciding(self) -> tuple[Reason, ...]:
        """The reasons whose verdict is the outcome (the failing checks of a ``fail``)."""
        return tuple(r for r in self.reasons if r.verdict == self.outcome)

    @property
    def unverified(self) -> bool:
        """A ``fail`` resting only on unverified facts, or a ``pass`` resting on any."""
        deciding = self.deciding
        if not deciding:
            return False
        if self.outcome == FAIL:
            return all(r.unverified for r in deciding)
        return any(r.unverified for r in deciding)

    def summary(self) -> str:
        """One line: the outcome and its first deciding reason."""
        first = self.deciding[0].text if self.deciding else ""
        mark = " (unverified)" if self.unverified else ""
        return f"{self.outcome}{mark}" + (f": {first}" if first else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "unverified": self.unverified,
            "reasons": [r.to_json() for r in self.reasons],
        }


def combine(reasons: Iterable[Reason]) -> Prediction:
    reasons = tuple(reasons)
    verdicts = {r.verdict for r in reasons}
    if FAIL in verdicts:
        outcome = FAIL
    elif UNKNOWN in verdicts or PASS not in verdicts:
        outcome = UNKNOWN
    else:
        outcome = PASS
    return Prediction(outcome, reasons)


def disagreement(predicted: str, observed: str | None) -> str | None:
    """``"predicted to fail but passed"`` / ``"predicted to pass but failed"`` or None.

    ``observed`` is ``pass``, ``fail`` or None (nothing comparable ran).
    """
    if observed is None or predicted == UNKNOWN:
        return None
    if predicted == FAIL and observed == PASS:
        return "predicted to fail but passed"
    if predicted == PASS and observed == FAIL:
        return "predicted to pass but failed"
    return None
