"""One side of ``repro compare``: the compact index of a matrix's cases (:class:`Side`), read
from a matrix.json as a stream (:func:`read_side`: memory grows with the cases kept, about 0.5 KB
each, at most ``repro.report.stream.MAX_MATRIX_CASES``, not with the file's text), from a results
directory or JUnit file merged in memory (:func:`load_side`), and several runs of one build pooled
into one side (:func:`pool`, :func:`load_sides`; issue 29). The comparison itself is
``repro.report.compare``. Never imports torch.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro import measurement
from repro.errors import ConfigError
from repro.junit.reader import MAX_METRIC
from repro.measurement import Measurement
from repro.outcomes import SEVERITY_RANK
from repro.report.merge import build_report
from repro.report.stream import read_cells

# --------------------------------------------------------------------------------------------
# Indexing one matrix


@dataclass(slots=True)
class _Case:
    """One case id in one cell; duplicates (foreign files adding up) keep the worst outcome."""

    outcome: str
    signature: str | None
    message: str
    expected: bool
    #: Rate metrics only (the ones compared), one Measurement per input that recorded it; None
    #: until the first one (most cases have none).
    metrics: dict[str, list[Measurement]] | None = None
    #: Passed only on a rerun (matrix.json ``"flaky": true`` on a passed case).
    flaky: bool = False
    first_signature: str | None = None

    def add(self, item: Mapping[str, Any]) -> None:
        outcome = str(item.get("outcome"))
        if SEVERITY_RANK.get(outcome, 99) < SEVERITY_RANK.get(self.outcome, 99):
            self.outcome = outcome
            self.signature = item.get("signature")
            self.message = _text(item.get("message") or "")
            self.expected = _is_expected(item)
            self.flaky, self.first_signature = _flaky_of(item)
        self.metrics = _add_metrics(self.metrics, item.get("metrics"))

    def absorb(self, other: _Case) -> None:
        """Merge the same case id from another cell with the same key (as :meth:`add` does)."""
        if SEVERITY_RANK.get(other.outcome, 99) < SEVERITY_RANK.get(self.outcome, 99):
            self.outcome, self.signature, self.message = (
                other.outcome,
                other.signature,
                other.message,
            )
            self.expected, self.flaky = other.expected, other.flaky
            self.first_signature = other.first_signature
        for name, values in (other.metrics or {}).items():
            if self.metrics is None:
                self.metrics = {}
            self.metrics.setdefault(name, []).extend(values)


def _is_expected(item: Mapping[str, Any]) -> bool:
    expect = item.get("expect")
    return isinstance(expect, Mapping) and expect.get("status") == "expected"


def _flaky_of(item: Mapping[str, Any]) -> tuple[bool, str | None]:
    """(passed only on a rerun, first attempt's signature) of a matrix.json case."""
    flaky = item.get("flaky") is True and item.get("outcome") == "passed"
    first = item.get("first_signature")
    return flaky, (str(first) if flaky and first else None)


def _add_metrics(
    into: dict[str, list[Measurement]] | None, metrics: Any
) -> dict[str, list[Measurement]] | None:
    """``into`` (created when needed) with the usable rate metrics (``*_per_s``, ``*_per_cpu_s``)
    of ``metrics`` added as measurements (median, spread, samples: ``repro.measurement``); the others are never
    compared, so never kept."""
    if not isinstance(metrics, Mapping):
        return into
    for name in metrics:
        if not measurement.is_rate(str(name)) and name != measurement.HOST_BUSY:
            continue
        found = measurement.from_metrics(metrics, name)
        # A hand-edited matrix.json may hold 1e308: it would overflow every median.
        if found is None or abs(found.median) > MAX_METRIC:
            continue
        if found.spread is not None and found.spread > MAX_METRIC:
            found = Measurement(found.median, None, found.n)
        into = {} if into is None else into
        into.setdefault(_text(name), []).append(found)
    return into


Index = dict[tuple[str, str], dict[tuple[str, str], _Case]]


@dataclass
class Side:
    """One side of a comparison, indexed: ``index`` (cell key -> case key -> case), ``states``
    (cell key -> effective state), the matrix's ``generated_at``, and how many runs of one build
    it pools (:func:`pool`)."""

    index: Index
    states: dict[tuple[str, str], str]
    generated_at: Any = None
    runs: int = 1


def pool(sides: Sequence[Side]) -> Side:
    """Several runs of one build as one side (``repro compare BASE --base-run MORE ...``).

    A cell key found in several runs keeps one entry per case: the worst outcome of its runs
    (a case that failed in any run of the candidate is a regression) and every run's rate
    measurements, so :func:`repro.measurement.combine` weighs the spread *between* runs, not
    only inside each (on the 2-core host one build's steady it per CPU second moved up to 47 %
    between runs and 1-5 % within one: issue 29). A cell's state is the first run's that has the
    cell; ``generated_at`` the newest. ``sides`` are consumed (their indexes are reused).
    Raises ValueError for none.
    """
    if not sides:
        raise ValueError("no side to pool")
    first, *others = sides
    index, states = first.index, first.states
    stamps = [side.generated_at for side in sides if side.generated_at]
    for other in others:
        for key, cases in other.index.items():
            into = index.setdefault(key, {})
            states.setdefault(key, other.states.get(key, ""))
            for case_key, case in cases.items():
                if case_key in into:
                    into[case_key].absorb(case)
                else:
                    into[case_key] = case
    newest = max(stamps, key=str) if stamps else None
    return Side(index, states, newest, sum(side.runs for side in sides))


def _text(value: Any) -> str:
    """``str(value)``, interned: outcomes, scenarios, signatures and messages repeat across many
    cases (one copy each keeps a side's index small)."""
    return sys.intern(str(value))


def _add_case(cases: dict[tuple[str, str], _Case], item: Any, where: str) -> None:
    """Index one matrix.json case into ``cases``; raises ConfigError naming ``where``."""
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}: expected an object")
    case_key = (_text(item.get("scenario") or ""), str(item.get("case") or ""))
    existing = cases.get(case_key)
    if existing is None:
        signature = item.get("signature")
        case = _Case(
            _text(item.get("outcome")),
            _text(signature) if isinstance(signature, str) else signature,
            _text(item.get("message") or ""),
            _is_expected(item),
        )
        case.flaky, case.first_signature = _flaky_of(item)
        case.metrics = _add_metrics(None, item.get("metrics"))
        cases[case_key] = case
    else:
        existing.add(item)


def _cell_key(cell: Mapping[str, Any]) -> tuple[tuple[str, str], str]:
    key = (_text(cell.get("host")), _text(cell.get("column") or cell.get("variant")))
    return key, _text(cell.get("effective_state") or cell.get("state") or "")


def side_of(matrix: Mapping[str, Any] | Side, side: str) -> Side:
    """The :class:`Side` of a matrix.json dict (a Side is returned as it is). Raises
    ConfigError on a malformed matrix."""
    if isinstance(matrix, Side):
        return matrix
    cells = matrix.get("cells")
    if not isinstance(cells, list):
        raise ConfigError(f"{side}: not a matrix (no 'cells' list)")
    index: Index = {}
    states: dict[tuple[str, str], str] = {}
    for position, cell in enumerate(cells):
        if not isinstance(cell, Mapping) or not isinstance(cell.get("cases"), list):
            raise ConfigError(f"{side}: cells[{position}]: expected an object with a 'cases' list")
        key, states[key] = _cell_key(cell)
        cases = index.setdefault(key, {})
        for number, item in enumerate(cell["cases"]):
            _add_case(cases, item, f"{side}: cells[{position}].cases[{number}]")
    return Side(index, states, matrix.get("generated_at"))


def read_side(path: Path) -> Side:
    """The :class:`Side` of the matrix.json file ``path``, streamed (bounded memory: see the
    module docstring). Raises ConfigError (one line) as ``repro.report.stream.read_cells``."""
    index: Index = {}
    states: dict[tuple[str, str], str] = {}
    pending: dict[tuple[str, str], _Case] = {}

    def on_case(item: Mapping[str, Any], cell: int, number: int) -> None:
        _add_case(pending, item, f"{path}: cells[{cell}].cases[{number}]")

    def on_cell(cell: Mapping[str, Any], _position: int) -> None:
        key, states[key] = _cell_key(cell)
        cases = index.get(key)
        if cases is None:
            index[key] = dict(pending)
        else:  # a second cell with the same key: its cases add up, as in side_of
            for case_key, case in pending.items():
                if case_key in cases:
                    cases[case_key].absorb(case)
                else:
                    cases[case_key] = case
        pending.clear()

    top = read_cells(path, on_case, on_cell)
    return Side(index, states, top.get("generated_at"))


# --------------------------------------------------------------------------------------------
# Inputs


def load_side(path: Path, config: Any = None) -> Side:
    """The :class:`Side` of a matrix.json file (streamed: :func:`read_side`), or of a results
    directory / JUnit file merged in memory (``build_report``, within the reader's caps).

    Raises ConfigError (one line) for a missing path, a file that is not a matrix, or a
    directory without JUnit files.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_dir() or path.suffix.lower() == ".xml":
        merged = build_report([path], config=config, predict=False)
        if not merged.inputs:
            raise ConfigError(
                f"{path}: no JUnit XML files found (expected a results directory or a matrix.json)"
            )
        return side_of(merged.matrix, str(path))
    return read_side(path)


def load_sides(paths: Sequence[Path], config: Any = None) -> Side:
    """The runs of one build at ``paths`` (matrix.json files or results directories, as
    :func:`load_side`) pooled into one :class:`Side` (:func:`pool`). Raises ConfigError as
    :func:`load_side`, naming the path that failed."""
    return pool([load_side(path, config) for path in paths])
