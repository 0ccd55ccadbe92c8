"""The one matcher of ``expect:`` entries (and scenario modules' ``EXPECT``) against results.

``repro run`` applies it as each case ends (``repro.runner.run_all``) and ``repro report``
applies it to the merged cells (``repro.report.merge``), so a reproduction that is red by design
reads as expected in the progress line, the totals line, the exit status and every report
alike (issue 29). The first entry that covers a case decides: matrix.yaml's ``expect:`` list,
then the ``script:`` entries' inline ``expect:``, then the modules' ``EXPECT``
(``Matrix.expectations`` is in that order, so the file wins).

Linear in the cases: case and scenario globs are evaluated once per distinct (scenario, case
id), variant and host globs once per cell; verdicts are shared, immutable objects (one per
entry and status), so a report of 100 000 cases allocates none per case. Never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.config.model import Expectation
from repro.config.select import glob_match
from repro.outcomes import (
    EXPECT_EXPECTED,
    EXPECT_OTHER,
    EXPECT_SKIPPED,
    EXPECT_XPASS,
    ExpectVerdict,
    Outcome,
)


def status_of(rule: Expectation, outcome: Outcome, signature: str | None) -> str:
    """How ``outcome`` (and its signature) compares with what ``rule`` predicts: ``expected``,
    ``unexpectedly passing``, ``skipped`` or ``other outcome`` (a red the entry does not
    predict: still a problem)."""
    if outcome is Outcome.PASSED:
        return EXPECT_XPASS
    if outcome is Outcome.SKIPPED:
        return EXPECT_SKIPPED
    if rule.expects(outcome.value, signature):
        return EXPECT_EXPECTED
    return EXPECT_OTHER


class Expectations:
    """The entries of one matrix (``Matrix.expectations``), ready to judge results.

    ``cell(variant, host)`` gives the judge of one matrix cell; ``hits`` counts the cases each
    entry covered (by entry index), for "matched no case" warnings.
    """

    def __init__(self, rules: Sequence[Expectation]) -> None:
        self.rules = tuple(rules)
        self.hits: dict[int, int] = {rule.index: 0 for rule in self.rules}
        self._by_case: dict[tuple[str, str], tuple[Expectation, ...]] = {}
        self._verdicts: dict[tuple[int, str], ExpectVerdict] = {}

    def cell(self, variant: str, host: str) -> CellExpectations:
        """The judge of the cell (``variant`` id, ``host`` key): the entries whose variant and
        host globs match it."""
        allowed = frozenset(
            rule.index
            for rule in self.rules
            if glob_match(rule.variant, variant) and glob_match(rule.host, host)
        )
        return CellExpectations(self, allowed)

    def _covering(self, scenario: str, case: str, allowed: frozenset[int]) -> Expectation | None:
        key = (scenario, case)
        rules = self._by_case.get(key)
        if rules is None:
            rules = tuple(
                rule
                for rule in self.rules
                if glob_match(rule.case, case) and glob_match(rule.scenario, scenario)
            )
            self._by_case[key] = rules
        return next((rule for rule in rules if rule.index in allowed), None)

    def _verdict(self, rule: Expectation, status: str) -> ExpectVerdict:
        verdict = self._verdicts.get((rule.index, status))
        if verdict is None:
            verdict = self._verdicts[(rule.index, status)] = ExpectVerdict(
                rule=rule.index,
                status=status,
                outcome=rule.outcome,
                reason=rule.reason,
                label=rule.label,
                link=rule.link,
                strict=rule.strict,
            )
        return verdict


class CellExpectations:
    """Judges the cases of one (host, variant) cell (:meth:`Expectations.cell`)."""

    def __init__(self, owner: Expectations, allowed: frozenset[int]) -> None:
        self._owner = owner
        self._allowed = allowed

    def verdict(
        self, scenario: str, case: str, outcome: Outcome, signature: str | None
    ) -> ExpectVerdict | None:
        """The verdict of the first entry covering the case (counted in ``hits``), or None."""
        if not self._allowed:
            return None
        rule = self._owner._covering(scenario, case, self._allowed)
        if rule is None:
            return None
        self._owner.hits[rule.index] += 1
        return self._owner._verdict(rule, status_of(rule, Outcome(outcome), signature))
