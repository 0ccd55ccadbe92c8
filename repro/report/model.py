"""The report's data model: one record per input file, cells keyed by (host, variant), the report.

Words follow ../shared/DESIGN.md. The reader's records (:class:`CaseRecord`, one ``<testcase>``
after classification; :class:`InputRecord`, one input file with its key and state) and the caps on
input text live in ``repro.junit.records`` and are re-exported here; a :class:`Cell` gathers the inputs of one (host key, variant id); a :class:`Report` is
the merged whole (``repro.report.merge.build_report``). Cell states besides the outcomes:
``invalid``, ``no tests``, ``missing`` (junit-notes.md "Cell states the matrix needs").

This module never reads files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro import __version__
from repro.junit.records import (  # noqa: F401 (the reader's records, re-exported for repro.report)
    MAX_EXCERPT_CHARS,
    MAX_FINDINGS,
    MAX_KEY_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
    MAX_PROPERTY_CHARS,
    MAX_SUPERSEDED_BY,
    STATE_EXPECTED,
    STATE_FLAKY,
    STATE_INVALID,
    STATE_MISSING,
    STATE_NO_TESTS,
    STATE_OK,
    STATE_SUPERSEDED,
    STATE_XPASS,
    UNKNOWN_HOST,
    CaseRecord,
    InputRecord,
    finding_fields,
    rerun_fields,
    truncate,
)
from repro.outcomes import (
    SEVERITY_RANK,
    Outcome,
    Totals,
)

if TYPE_CHECKING:
    from repro import compat
    from repro.config import Expectation
    from repro.report.start_methods import Summary

#: matrix.json's schema_version: 2 counts doctor checks apart and adds the verdicts to ``totals``
#: and each cell's ``counts`` (issue 29); the cells and cases read back (history, compare) are
#: the same in 1 and 2, so both are read.
SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)
GENERATOR = f"repro-matrix {__version__}"

RED_STATES = frozenset({"hung", "crashed", "error", "failed"})
GREEN_STATES = frozenset({"passed", STATE_EXPECTED, STATE_XPASS, STATE_FLAKY})

#: Cell state precedence, worst first. An unreadable file outranks a pass: a cell with a passing
#: file and a truncated one must not look green.
CELL_STATE_ORDER = (
    Outcome.HUNG.value,
    Outcome.CRASHED.value,
    Outcome.ERROR.value,
    Outcome.FAILED.value,
    STATE_INVALID,
    Outcome.PASSED.value,
    Outcome.SKIPPED.value,
    STATE_NO_TESTS,
)
#: Effective cell state precedence (worst first): expected failures sit below invalid inputs and
#: unexpected passes, above plain passes.
EFFECTIVE_STATE_ORDER = (
    *CELL_STATE_ORDER[:5],
    STATE_XPASS,
    STATE_EXPECTED,
    STATE_FLAKY,
    *CELL_STATE_ORDER[5:],
)


def column_id(variant: str, lane: str, lanes: set[str] | frozenset[str]) -> str:
    """The matrix column of ``variant``'s results from ``lane``, among all ``lanes`` the
    variant has results from: the variant id while it has one lane (or for results that name
    none), else ``ID (LANE)``: ``cpu-torch2.13 (venv)``."""
    return f"{variant} ({lane})" if lane and len(set(lanes)) > 1 else variant


@dataclass
class Cell:
    """All inputs with the same (host, variant, lane) key: one row, one column.

    ``lane`` is the inputs' ``variant.lane`` (host, venv, container; "" where none is written).
    ``column``: the matrix column, the variant id, or ``ID (LANE)`` when the variant has results
    from more than one lane (:func:`column_id`): the host and the venv lane of one variant are
    two columns, neither hides the other (issue 31; issue 33's two-lane Slurm array)."""

    host: str
    variant: str
    lane: str = ""
    column: str = ""
    files: list[str] = field(default_factory=list)
    cases: list[CaseRecord] = field(default_factory=list)
    invalid_files: int = 0
    #: Inputs of this cell whose junit.xml changed after its run (``InputRecord.changed``).
    changed_files: list[str] = field(default_factory=list)

    def totals(self) -> Totals:
        """The cell's cases counted by the one rule of every totals line (``repro.outcomes.
        Totals``): verdicts applied, doctor checks apart."""
        return count_cases(self.cases)

    @property
    def counts(self) -> dict[str, int]:
        """matrix.json's ``counts`` of the cell (:meth:`repro.outcomes.Totals.to_json`)."""
        return self.totals().to_json()

    @property
    def state(self) -> str:
        present = {case.outcome.value for case in self.cases}
        if self.invalid_files:
            present.add(STATE_INVALID)
        for state in CELL_STATE_ORDER:
            if state in present:
                return state
        return STATE_NO_TESTS

    @property
    def effective_state(self) -> str:
        """The state after ``expect:`` entries: failures they predict become ``expected``,
        predicted failures that passed ``unexpectedly passing``. Equals ``state`` without them."""
        present = {case.display_state for case in self.cases}
        if self.invalid_files:
            present.add(STATE_INVALID)
        for state in EFFECTIVE_STATE_ORDER:
            if state in present:
                return state
        return STATE_NO_TESTS

    def display_counts(self) -> list[tuple[str, int]]:
        """(label, n) worst first, in the totals line's words (:meth:`repro.outcomes.Totals.
        labels`): unexpected problems by outcome, unexpected passes, expected reproductions,
        flaky passes, passes, skips, then the doctor checks, counted apart."""
        return self.totals().labels()

    def __post_init__(self) -> None:
        self.column = self.column or self.variant

    def sorted_cases(self) -> list[CaseRecord]:
        return sorted(
            self.cases, key=lambda c: (SEVERITY_RANK[c.outcome], c.scenario, c.case, c.file)
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "host": self.host,
            "variant": self.variant,
            "state": self.state,
            "effective_state": self.effective_state,
            "counts": self.counts,
            "files": list(self.files),
            "cases": [
                c.to_json() for c in sorted(self.cases, key=lambda c: (c.scenario, c.case, c.file))
            ],
        }
        if self.changed_files:
            out["changed_after_run"] = list(self.changed_files)
        if self.column != self.variant:  # a variant split by lane: say which column
            out["lane"] = self.lane
            out["column"] = self.column
        return out


@dataclass
class Report:
    """The merged result of ``build_report``.

    ``matrix`` is the json-able dict written to ``matrix.json``; ``totals`` is its ``totals``, every
    case counted by the one rule (``repro.outcomes.Totals.to_json``); ``problems`` lists ``(path, reason)`` for every input that was
    invalid or needs a warning. ``log_files`` maps a case's ``log`` string to the existing file.
    """

    generated_at: str
    inputs: list[InputRecord]
    cells: list[Cell]
    hosts: list[dict[str, Any]]
    variants: list[dict[str, Any]]
    problems: list[tuple[str, str]]
    totals: dict[str, int]
    matrix: dict[str, Any]
    log_files: dict[str, Path] = field(default_factory=dict, repr=False)
    #: Coverage and expectation warnings about the matrix file (one line each).
    warnings: list[str] = field(default_factory=list)
    #: (host, variant) -> prediction vs observation, for every pair (missing cells included).
    predictions: dict[tuple[str, str], PredictionView] = field(default_factory=dict, repr=False)
    #: The ``expect:`` entries applied, and how many cases each matched.
    expectations: tuple[Expectation, ...] = ()
    expectation_hits: dict[int, int] = field(default_factory=dict)
    #: (host, variant) -> change since the previous report (``--history``).
    trends: dict[tuple[str, str], Trend] = field(default_factory=dict, repr=False)
    history_runs: int | None = None
    #: The start-method summaries (``repro.report.start_methods``), per host, variant and
    #: device with dataloader results.
    start_methods: list[Summary] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._index = {(cell.host, cell.column): cell for cell in self.cells}

    def cell(self, host: str, column: str) -> Cell | None:
        """The cell for (host, column) (a column is a variant id, or ``ID (LANE)`` for a
        variant split by lane: :attr:`Cell.column`), or None where that combination has no
        input (missing)."""
        return self._index.get((host, column))


def count_cases(cases: list[CaseRecord]) -> Totals:
    """``cases`` counted once each by the one rule (``repro.outcomes.Totals``): problems apart
    from expected reproductions, doctor checks apart from scenario cases."""
    totals = Totals()
    for case in cases:
        totals.add(case.scenario, case.outcome, case.expect, flaky=case.is_flaky)
    return totals


@dataclass(frozen=True)
class PredictionView:
    """A cell's prediction (``repro.compat.predictions``) next to the observation.

    ``observed`` is ``pass``/``fail`` from the cases the prediction is about (the accelerator
    cases of a GPU variant when the case ids say so, else every case; expected failures left
    out), or None where nothing comparable ran (missing cell, only skips). ``disagreement``
    "predicted to pass but failed" needs a failure with an environment signature (driver, arch,
    runtime, device, container, WSL2): a failure of the user's own code never raises it (issue 21,
    item 7).
    """

    prediction: compat.Prediction
    observed: str | None
    disagreement: str | None

    def to_json(self, host: str, variant: str) -> dict[str, Any]:
        return {
            "host": host,
            "variant": variant,
            "predicted": self.prediction.outcome,
            "unverified": self.prediction.unverified,
            "summary": self.prediction.summary(),
            "observed": self.observed,
            "disagreement": self.disagreement,
            "reasons": [reason.to_json() for reason in self.prediction.reasons],
        }


@dataclass(frozen=True)
class Trend:
    """A cell against earlier reports: its previous effective state, the change, the red streak."""

    previous: str | None
    change: str | None
    red_runs: int

    def note(self) -> str:
        parts = [self.change] if self.change else []
        if self.red_runs >= 2:
            parts.append(f"red {self.red_runs} runs in a row")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
