"""Read JUnit XML from any producer and merge it into the compatibility matrix.

One record per input file, keyed by (host key, variant id) from trusted metadata: the ``run.json``
sidecar next to the XML first, else the testsuite properties ``host.key`` / ``variant.id`` that
``repro.junit.writer`` writes, else (foreign files) the directory name as the variant and
``"unknown host"``. Files with the same key land in the same cell; nothing is merged by suite
equality (see ../shared/junit-notes.md). Outputs: ``matrix.json`` (canonical, versioned),
``matrix.md`` (GitHub step summary) and ``matrix.html`` (one self-contained file).

On top of the observed outcomes the report shows what people act on: the prediction of each
(host, variant) pair from published facts (``repro.compat.predictions``) and every disagreement with the
observation; cases that ``matrix.yaml`` ``expect:`` marks as known failures ("expected", not red,
or "unexpectedly passing"); variants, runtimes and torch pins of the matrix file with no result
(coverage warnings); and, with ``--history DIR``, what changed since the previous report (newly
red, newly green, red N runs in a row). The shape of ``matrix.json`` is ``repro/data/matrix.schema.json``.

Every input is untrusted: each file is read with a byte cap and parsed with defusedxml with DTDs
forbidden, so no entity is ever expanded and nothing is fetched. A file that cannot be read is
reported with its path and reason and the merge goes on. This module never imports torch and never
reads the case logs it links to.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import re
import statistics
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

import defusedxml
import defusedxml.ElementTree as DET

from repro import __version__, compat
from repro import data as shipped_data
from repro.config import Expectation, Matrix, glob_match
from repro.errors import ConfigError, FatalError, ReproError
from repro.junit.writer import METRIC_PREFIX, PROP_LOG, PROP_OUTCOME, PROP_SIGNATURE, write_atomic
from repro.outcomes import OUTCOME_ORDER, Outcome

SCHEMA_VERSION = 1
GENERATOR = f"repro-matrix {__version__}"

#: Resource limits applied before and while parsing (a file over a cap is invalid, never cut).
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
MAX_TESTCASES_PER_FILE = 100_000
MAX_DEPTH = 64
MAX_SIDECAR_BYTES = 1024 * 1024
MAX_MESSAGE_CHARS = 500
#: Tail of a failure/error body kept as the case's log excerpt (characters).
MAX_EXCERPT_CHARS = 1500
MAX_WARNINGS_PER_FILE = 5

#: Markdown limits: GitHub step summaries are capped at 1 MiB per step.
MD_MAX_BYTES = 900_000
MD_MAX_CASES_PER_CELL = 50
MD_MAX_PROBLEMS = 100
MD_MAX_LIST = 50
#: Above this many cells, matrix.html starts with every cell's drill-down closed.
HTML_MAX_OPEN = 60

#: How many of the newest earlier matrices a ``--history`` directory contributes.
HISTORY_LIMIT = 20
HISTORY_PREFIX = "matrix-"

UNKNOWN_HOST = "unknown host"
SIDECAR_NAME = "run.json"

STATE_OK = "ok"
STATE_INVALID = "invalid"
STATE_SUPERSEDED = "superseded"
STATE_NO_TESTS = "no tests"
STATE_MISSING = "missing"
#: Effective cell states from matrix.yaml ``expect:`` entries.
STATE_EXPECTED = "expected"
STATE_XPASS = "unexpectedly passing"

#: Per-case status against a matching ``expect:`` entry.
EXPECT_EXPECTED = "expected"
EXPECT_XPASS = "unexpectedly passing"
EXPECT_OTHER = "other outcome"
EXPECT_SKIPPED = "skipped"

_RED = frozenset({"hung", "crashed", "error", "failed"})
_GREEN = frozenset({"passed", STATE_EXPECTED, STATE_XPASS})

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
#: Order in which a cell's cases and count summaries are shown (worst first).
SEVERITY_ORDER = (
    Outcome.HUNG,
    Outcome.CRASHED,
    Outcome.ERROR,
    Outcome.FAILED,
    Outcome.PASSED,
    Outcome.SKIPPED,
)
_SEVERITY_RANK = {outcome: rank for rank, outcome in enumerate(SEVERITY_ORDER)}
#: Effective cell state precedence (worst first): expected failures sit below invalid inputs and
#: unexpected passes, above plain passes.
EFFECTIVE_STATE_ORDER = (
    *CELL_STATE_ORDER[:5],
    STATE_XPASS,
    STATE_EXPECTED,
    *CELL_STATE_ORDER[5:],
)

#: Labels of the totals line, in OUTCOME_ORDER.
_TOTALS_LABELS = {
    Outcome.PASSED: "passed",
    Outcome.FAILED: "failed",
    Outcome.ERROR: "errors",
    Outcome.CRASHED: "crashed",
    Outcome.HUNG: "hung",
    Outcome.SKIPPED: "skipped",
}

_EMOJI = {
    Outcome.PASSED.value: "🟩",
    Outcome.FAILED.value: "🟥",
    Outcome.ERROR.value: "🟧",
    Outcome.CRASHED.value: "🟫",
    Outcome.HUNG.value: "🟪",
    Outcome.SKIPPED.value: "⬜",
    STATE_NO_TESTS: "⬜",
    STATE_INVALID: "⚠️",
    STATE_MISSING: "➖",
    STATE_EXPECTED: "🟦",
    STATE_XPASS: "🟨",
}

#: gtest/ctest attribute values that mean "did not run" (junit-notes.md).
_SKIP_STATUS = {"notrun", "disabled"}
_SKIP_RESULT = {"suppressed", "skipped"}
_OUTCOME_VALUES = {outcome.value for outcome in Outcome}


# --------------------------------------------------------------------------------------------
# Records


@dataclass
class CaseRecord:
    """One ``<testcase>`` after classification."""

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
    #: The matching ``expect:`` entry and how the outcome compares, or None (shared, read-only:
    #: ``rule``, ``status``, ``outcome``, ``reason``, ``link``).
    expect: dict[str, Any] | None = None

    @property
    def expect_status(self) -> str | None:
        return self.expect["status"] if self.expect else None

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
        if self.expect is not None:  # the entry itself is in the top-level "expectations"
            out["expect"] = {"rule": self.expect["rule"], "status": self.expect["status"]}
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
        }


@dataclass
class Cell:
    """All inputs with the same (host, variant) key."""

    host: str
    variant: str
    files: list[str] = field(default_factory=list)
    cases: list[CaseRecord] = field(default_factory=list)
    invalid_files: int = 0

    @property
    def counts(self) -> dict[str, int]:
        return _counts(self.cases)

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
        present = set()
        for case in self.cases:
            status = case.expect_status
            if status == EXPECT_EXPECTED:
                present.add(STATE_EXPECTED)
            elif status == EXPECT_XPASS:
                present.add(STATE_XPASS)
            else:
                present.add(case.outcome.value)
        if self.invalid_files:
            present.add(STATE_INVALID)
        for state in EFFECTIVE_STATE_ORDER:
            if state in present:
                return state
        return STATE_NO_TESTS

    def display_counts(self) -> list[tuple[str, int]]:
        """(label, n) worst first: unexpected problems by outcome, then unexpected passes,
        expected failures, the other passes and skips. Without expectations: outcome counts."""
        counts: Counter[str] = Counter()
        for case in self.cases:
            status = case.expect_status
            if status == EXPECT_EXPECTED:
                counts[STATE_EXPECTED] += 1
            elif status == EXPECT_XPASS:
                counts[STATE_XPASS] += 1
            else:
                counts[case.outcome.value] += 1
        order = [o.value for o in SEVERITY_ORDER[:4]] + [STATE_XPASS, STATE_EXPECTED]
        order += [o.value for o in SEVERITY_ORDER[4:]]
        return [(label, counts[label]) for label in order if counts[label]]

    def sorted_cases(self) -> list[CaseRecord]:
        return sorted(
            self.cases, key=lambda c: (_SEVERITY_RANK[c.outcome], c.scenario, c.case, c.file)
        )

    def to_json(self) -> dict[str, Any]:
        return {
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


@dataclass
class Report:
    """The merged result of ``build_report``.

    ``matrix`` is the json-able dict written to ``matrix.json``; ``totals`` maps each outcome value
    (and ``"tests"``) to a count; ``problems`` lists ``(path, reason)`` for every input that was
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

    def __post_init__(self) -> None:
        self._index = {(cell.host, cell.variant): cell for cell in self.cells}

    def cell(self, host: str, variant: str) -> Cell | None:
        """The cell for (host, variant), or None where that combination has no input (missing)."""
        return self._index.get((host, variant))


def _counts(cases: list[CaseRecord]) -> dict[str, int]:
    counts = {outcome.value: 0 for outcome in OUTCOME_ORDER}
    for case in cases:
        counts[case.outcome.value] += 1
    counts["tests"] = len(cases)
    return counts


# --------------------------------------------------------------------------------------------
# Finding and reading inputs


def _display(path: Path) -> str:
    return path.as_posix()


def _find_files(inputs: list[Path]) -> list[Path]:
    """Expand inputs into files: directories recursively (``*.xml``, hidden entries skipped)."""
    for item in inputs:
        if not Path(item).exists():
            raise ConfigError(f"{item}: no such file or directory")
    found: list[Path] = []
    seen: set[Path] = set()
    for item in inputs:
        item = Path(item)
        candidates: list[Path]
        if item.is_dir():
            candidates = []
            for root, dirs, files in os.walk(item, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                candidates.extend(
                    Path(root) / name
                    for name in sorted(files)
                    if name.endswith(".xml") and not name.startswith(".")
                )
        else:
            candidates = [item]
        for path in candidates:
            key = path.resolve()
            if key not in seen:
                seen.add(key)
                found.append(path)
    return sorted(found, key=_display)


def _local(tag: Any) -> str:
    """Element tag without its namespace (``{ns}testsuite`` -> ``testsuite``)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _truncate(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _float_or_none(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _properties(element: ET.Element) -> Iterator[tuple[str, str]]:
    """``(name, value)`` of each ``<properties><property>`` child of ``element``."""
    for child in element:
        if _local(child.tag) != "properties":
            continue
        for prop in child:
            if _local(prop.tag) != "property":
                continue
            name = prop.get("name")
            if not name:
                continue
            value = prop.get("value")
            if value is None:
                value = (prop.text or "").strip()
            yield name, value


def _read_sidecar(xml_path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``run.json`` beside the XML: (data, None), (None, None) when absent, (None, why) when bad."""
    sidecar = xml_path.parent / SIDECAR_NAME
    if not sidecar.is_file():
        return None, None
    try:
        with open(sidecar, "rb") as handle:
            data = handle.read(MAX_SIDECAR_BYTES + 1)
        if len(data) > MAX_SIDECAR_BYTES:
            return None, f"{SIDECAR_NAME} is over {MAX_SIDECAR_BYTES} bytes; ignored"
        loaded = json.loads(data)
    except (OSError, ValueError) as exc:
        return None, f"{SIDECAR_NAME} unreadable ({exc}); ignored"
    if not isinstance(loaded, dict):
        return None, f"{SIDECAR_NAME} is not a JSON object; ignored"
    return loaded, None


NEWLINE = b"\n"


class _Invalid(Exception):
    """Raised inside the per-file reader: the file is invalid for the given reason."""


def _parse(data: bytes) -> ET.Element:
    if not data.strip():
        raise _Invalid("empty file")
    try:
        return DET.fromstring(data, forbid_dtd=True)
    except ET.ParseError as exc:
        reason = f"not well-formed XML: {exc}"
        if str(exc).startswith(("no element found", "unclosed token")):
            reason += " (truncated?)"
        raise _Invalid(reason) from None
    except defusedxml.DefusedXmlException as exc:
        offset = data.find(b"<!DOCTYPE")
        where = f" at line {data.count(NEWLINE, 0, offset) + 1}" if offset >= 0 else ""
        raise _Invalid(
            f"DOCTYPE/entity declaration{where} not allowed ({type(exc).__name__}); "
            "nothing was expanded or fetched"
        ) from None


def _classify(testcase: ET.Element, props: Mapping[str, str]) -> tuple[Outcome, ET.Element | None]:
    """Outcome of one testcase and the result element it came from (if any)."""
    results: dict[str, ET.Element] = {}
    for child in testcase:
        name = _local(child.tag)
        if name in ("error", "failure", "skipped") and name not in results:
            results[name] = child
    if "error" in results:
        outcome, element = Outcome.ERROR, results["error"]
    elif "failure" in results:
        outcome, element = Outcome.FAILED, results["failure"]
    elif "skipped" in results:
        outcome, element = Outcome.SKIPPED, results["skipped"]
    elif (testcase.get("status") or "").lower() in _SKIP_STATUS or (
        testcase.get("result") or ""
    ).lower() in _SKIP_RESULT:
        outcome, element = Outcome.SKIPPED, None
    else:
        outcome, element = Outcome.PASSED, None
    declared = (props.get(PROP_OUTCOME) or "").strip()
    if declared in _OUTCOME_VALUES:
        outcome = Outcome(declared)
    return outcome, element


def _message(element: ET.Element | None) -> str:
    if element is None:
        return ""
    message = element.get("message")
    if message is None:
        message = next(
            (line.strip() for line in (element.text or "").splitlines() if line.strip()), ""
        )
    return _truncate(message)


def _excerpt(element: ET.Element | None) -> str:
    """The tail of a result element's body (a trimmed log in our files), capped."""
    if element is None or _local(element.tag) == "skipped":
        return ""
    text = (element.text or "").strip()
    if len(text) > MAX_EXCERPT_CHARS:
        text = "…" + text[-(MAX_EXCERPT_CHARS - 1) :]
    return text


def _safe_log(log: str) -> PurePosixPath | None:
    """A ``repro.log`` value if it is a plain relative path inside the run directory."""
    log = log.strip().replace("\\", "/")
    if not log or "\x00" in log:
        return None
    path = PurePosixPath(log)
    if path.is_absolute() or ".." in path.parts or ":" in path.parts[0]:
        return None
    return path


def _walk(root: ET.Element) -> Iterator[tuple[ET.Element, bool]]:
    """Yield ``(suite, True)`` for the root and every nested testsuite(s), ``(testcase, False)`` for
    each testcase, in document order, without recursion; nesting deeper than MAX_DEPTH is invalid."""
    yield root, True
    stack: list[Iterator[ET.Element]] = [iter(root)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        name = _local(child.tag)
        if name == "testcase":
            yield child, False
        elif name in ("testsuite", "testsuites"):
            if len(stack) >= MAX_DEPTH:
                raise _Invalid(f"testsuites nested deeper than {MAX_DEPTH}")
            yield child, True
            stack.append(iter(child))


class _FileReader:
    """Reads one JUnit file into an :class:`InputRecord` (never raises for bad content)."""

    def __init__(self, path: Path, budget: list[int]):
        self.path = path
        self.display = _display(path)
        self.budget = budget
        self.warnings: list[str] = []
        self.log_files: dict[str, Path] = {}
        self.bad_times = 0

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def read(self) -> InputRecord:
        sidecar, sidecar_problem = _read_sidecar(self.path)
        if sidecar_problem:
            self.warn(sidecar_problem)
        host, variant, variant_props = self._key_from_sidecar(sidecar)
        record = InputRecord(self.display, STATE_OK, None, host or "", variant or "")
        if sidecar is not None and isinstance(sidecar.get("started"), str):
            record.run_started = sidecar["started"]
        if variant_props:
            record.variant_properties.update(variant_props)
        try:
            self._read_into(record)
        except _Invalid as exc:
            record.state, record.reason, record.cases = STATE_INVALID, str(exc), []
        except Exception as exc:  # a bad file must never stop the merge
            record.state, record.cases = STATE_INVALID, []
            record.reason = (
                f"cannot read as JUnit ({type(exc).__name__}: {_truncate(str(exc), 200)})"
            )
        if not record.host:
            record.host = UNKNOWN_HOST
        if not record.variant:
            record.variant = self.path.resolve().parent.name or "unknown variant"
        if record.state == STATE_OK and sidecar is not None:
            self._check_sidecar(sidecar)
        return record

    def _key_from_sidecar(
        self, sidecar: dict[str, Any] | None
    ) -> tuple[str | None, str | None, dict[str, str]]:
        if sidecar is None:
            return None, None, {}
        host = sidecar.get("host_key")
        variant = sidecar.get("variant")
        props: dict[str, str] = {}
        variant_id = None
        if isinstance(variant, dict):
            variant_id = variant.get("id")
            for name, value in sorted(variant.items()):
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    props[f"variant.{name}"] = str(value)
        host = host if isinstance(host, str) and host.strip() else None
        variant_id = variant_id if isinstance(variant_id, str) and variant_id.strip() else None
        if host is None or variant_id is None:
            self.warn(f"{SIDECAR_NAME} lacks host_key or variant.id; keyed from the XML instead")
        return host, variant_id, props

    def _check_sidecar(self, sidecar: dict[str, Any]) -> None:
        finished = sidecar.get("finished", "")
        total, done = sidecar.get("cases_total"), sidecar.get("cases_done")
        if isinstance(total, int) and isinstance(done, int) and done < total:
            self.warn(f"run incomplete: {done} of {total} cases done")
        elif finished is None:
            self.warn("run not finished (run.json has no finish time)")

    def _read_into(self, record: InputRecord) -> None:
        try:
            size = self.path.stat().st_size
            if not self.path.is_file():
                raise _Invalid("not a regular file")
            if size > MAX_FILE_BYTES:
                raise _Invalid(f"over size cap ({size} bytes > {MAX_FILE_BYTES})")
            if self.budget[0] < min(size, MAX_FILE_BYTES):
                raise _Invalid(f"over the total size cap for one report ({MAX_TOTAL_BYTES} bytes)")
            with open(self.path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise _Invalid(f"cannot read: {exc.strerror or exc}") from None
        if len(data) > MAX_FILE_BYTES:
            raise _Invalid(f"over size cap (> {MAX_FILE_BYTES} bytes)")
        self.budget[0] -= len(data)

        root = _parse(data)
        del data
        root_tag = _local(root.tag)
        if root_tag not in ("testsuites", "testsuite"):
            hint = " (NUnit?)" if root_tag in ("test-run", "test-results") else ""
            raise _Invalid(f"root <{root_tag}> is not JUnit{hint}")

        suite_props: dict[str, str] = {}
        for element, is_suite in _walk(root):
            if is_suite:
                for name, value in _properties(element):
                    suite_props.setdefault(name, value)
                continue
            record.cases.append(self._case(element))
            if len(record.cases) > MAX_TESTCASES_PER_FILE:
                raise _Invalid(f"over testcase cap ({MAX_TESTCASES_PER_FILE})")
        if self.bad_times > MAX_WARNINGS_PER_FILE:
            self.warn(
                f"{self.bad_times - MAX_WARNINGS_PER_FILE} more testcases with a time that is not a number"
            )

        for name, value in suite_props.items():
            if name.startswith("host."):
                record.host_properties[name] = value
            elif name.startswith(("variant.", "runtime.")):
                record.variant_properties.setdefault(name, value)
        prop_host = suite_props.get("host.key", "").strip()
        prop_variant = suite_props.get("variant.id", "").strip()
        if record.host and prop_host and prop_host != record.host:
            self.warn(
                f"{SIDECAR_NAME} host_key {record.host!r} differs from property host.key {prop_host!r}; using {SIDECAR_NAME}"
            )
        if record.variant and prop_variant and prop_variant != record.variant:
            self.warn(
                f"{SIDECAR_NAME} variant.id {record.variant!r} differs from property variant.id {prop_variant!r}; using {SIDECAR_NAME}"
            )
        record.host = record.host or prop_host
        record.variant = record.variant or prop_variant
        if not record.cases:
            record.state, record.reason = STATE_NO_TESTS, "no <testcase> elements"

    def _case(self, testcase: ET.Element) -> CaseRecord:
        props: dict[str, str] = {}
        for name, value in _properties(testcase):
            props.setdefault(name, value)
        outcome, element = _classify(testcase, props)
        signature = (
            props.get(PROP_SIGNATURE)
            or (element.get("type") if element is not None else None)
            or None
        )
        if signature is None and outcome not in (Outcome.PASSED, Outcome.SKIPPED):
            signature = "unknown"
        classname = testcase.get("classname") or ""
        scenario = classname[len("repro.") :] if classname.startswith("repro.") else classname
        name = testcase.get("name") or ""

        raw_time = testcase.get("time")
        time_s = _float_or_none(raw_time)
        bad_time = raw_time is not None and raw_time.strip() != "" and time_s is None
        if bad_time:
            self.bad_times += 1
            if self.bad_times <= MAX_WARNINGS_PER_FILE:
                self.warn(f"testcase {name!r}: time {raw_time!r} is not a number; recorded null")

        metrics = {
            key[len(METRIC_PREFIX) :]: _float_or_none(value)
            for key, value in sorted(props.items())
            if key.startswith(METRIC_PREFIX) and len(key) > len(METRIC_PREFIX)
        }
        log = None
        log_rel = _safe_log(props[PROP_LOG]) if props.get(PROP_LOG) else None
        if log_rel is not None:
            target = self.path.parent / log_rel
            log = _display(target)
            if target.is_file():
                self.log_files[log] = target.resolve()
        return CaseRecord(
            scenario=scenario,
            case=name,
            outcome=outcome,
            signature=_truncate(signature, 200) if signature else None,
            message=_message(element),
            excerpt=_excerpt(element),
            time_s=time_s,
            metrics=metrics,
            log=log,
            file=self.display,
        )


# --------------------------------------------------------------------------------------------
# Merging


def _iso(now: datetime | None) -> str:
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    return now.astimezone(timezone.utc).isoformat(timespec="seconds")


def _supersede_older_runs(records: list[InputRecord]) -> None:
    """Keep only the newest of our runs per (host, variant): running ``repro run`` again on the
    same host must refresh its cell, not add to it. Foreign files (no run.json) always add up."""
    newest: dict[tuple[str, str], InputRecord] = {}
    for record in records:
        if record.run_started is None or record.state == STATE_INVALID:
            continue
        key = (record.host, record.variant)
        kept = newest.get(key)
        if kept is None or (record.run_started, record.path) > (kept.run_started or "", kept.path):
            newest[key] = record
    for record in records:
        kept = newest.get((record.host, record.variant))
        if record.run_started is not None and record.state != STATE_INVALID and kept is not record:
            record.state = STATE_SUPERSEDED
            record.reason = f"superseded by the newer run {kept.path if kept else '?'}"


@dataclass(frozen=True)
class PredictionView:
    """A cell's prediction (``repro.compat.predictions``) next to the observation.

    ``observed`` is ``pass``/``fail`` from the cases the prediction is about (the accelerator
    cases of a GPU variant when the case ids say so, else every case; expected failures left
    out), or None where nothing comparable ran (missing cell, only skips).
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
        return {"previous": self.previous, "change": self.change, "red_runs": self.red_runs}


#: Case-id fragments of cases that use the accelerator (what a GPU variant's prediction is about).
_ACCELERATOR_MARKERS = ("device=cuda", "device=rocm", "backend=nccl")


def _expect_status(rule: Expectation, case: CaseRecord) -> str:
    if case.outcome is Outcome.PASSED:
        return EXPECT_XPASS
    if case.outcome is Outcome.SKIPPED:
        return EXPECT_SKIPPED
    if rule.expects(case.outcome.value, case.signature):
        return EXPECT_EXPECTED
    return EXPECT_OTHER


def _apply_expectations(cells: list[Cell], expectations: Sequence[Expectation]) -> dict[int, int]:
    """Mark each case the first matching ``expect:`` entry covers; matches per entry index.

    Linear in the cases: case globs are evaluated once per distinct (scenario, case id), host and
    variant globs once per cell.
    """
    hits = {rule.index: 0 for rule in expectations}
    if not expectations:
        return hits
    # One shared, read-only dict per (entry, status): no allocation per case.
    infos: dict[tuple[int, str], dict[str, Any]] = {}
    by_case: dict[tuple[str, str], tuple[Expectation, ...]] = {}
    for cell in cells:
        allowed = {
            rule.index
            for rule in expectations
            if glob_match(rule.variant, cell.variant) and glob_match(rule.host, cell.host)
        }
        if not allowed:
            continue
        for case in cell.cases:
            key = (case.scenario, case.case)
            rules = by_case.get(key)
            if rules is None:
                rules = tuple(
                    rule
                    for rule in expectations
                    if glob_match(rule.case, case.case) and glob_match(rule.scenario, case.scenario)
                )
                by_case[key] = rules
            rule = next((r for r in rules if r.index in allowed), None)
            if rule is not None:
                hits[rule.index] += 1
                status = _expect_status(rule, case)
                info = infos.get((rule.index, status))
                if info is None:
                    info = infos[(rule.index, status)] = {
                        "rule": rule.index,
                        "status": status,
                        "outcome": rule.outcome,
                        "reason": rule.reason,
                        "link": rule.link,
                    }
                case.expect = info
    return hits


def _observed(cell: Cell | None, accelerator: str | None) -> str | None:
    """What the prediction is compared with: ``fail``, ``pass`` or None (see PredictionView)."""
    if cell is None:
        return None
    cases = cell.cases
    if accelerator in ("cuda", "rocm"):
        on_device = [c for c in cases if any(m in c.case for m in _ACCELERATOR_MARKERS)]
        cases = on_device or cases
    passed = False
    for case in cases:
        if case.expect_status == EXPECT_EXPECTED:
            continue
        if case.outcome.is_problem:
            return compat.FAIL
        passed = passed or case.outcome is Outcome.PASSED
    return compat.PASS if passed else None


def _predictions(
    hosts: list[dict[str, Any]],
    variants: list[dict[str, Any]],
    index: Mapping[tuple[str, str], Cell],
    facts: compat.Facts,
) -> dict[tuple[str, str], PredictionView]:
    out = {}
    for variant in variants:
        accelerator = compat.accelerator(variant["properties"], variant["id"])
        for host in hosts:
            prediction = compat.predict(
                host["properties"], variant["properties"], variant["id"], facts
            )
            observed = _observed(index.get((host["key"], variant["id"])), accelerator)
            out[(host["key"], variant["id"])] = PredictionView(
                prediction, observed, compat.disagreement(prediction.outcome, observed)
            )
    return out


def _coverage(config: Matrix, cells: list[Cell], variants: list[dict[str, Any]]) -> list[str]:
    """One warning per variant id, runtime and torch pin of the matrix file with no result."""
    props = {v["id"]: v["properties"] for v in variants}
    with_results = {cell.variant for cell in cells if cell.cases}
    out = [
        f"{config.path}: coverage: variant {v.id} has no result"
        for v in config.variants
        if v.id not in with_results
    ]
    runtimes = {compat.runtime_tag(props.get(vid, {}), vid) for vid in with_results}
    for runtime in dict.fromkeys(v.runtime for v in config.variants):
        if runtime not in runtimes:
            ids = ", ".join(v.id for v in config.variants if v.runtime == runtime)
            out.append(f"{config.path}: coverage: runtime {runtime} has no result ({ids})")
    pins: set[str] = set()
    for vid in with_results:
        found = [
            props.get(vid, {}).get(name, "").split("+")[0].strip()
            for name in ("variant.torch", "runtime.torch")
        ]
        found = [pin for pin in found if pin]
        # Without a torch property the id's "torch2.8" stands for every 2.8.x pin.
        pins.update(found or ([f"~{vid.split('-torch', 1)[1]}"] if "-torch" in vid else []))
    for pin in dict.fromkeys(v.torch for v in config.variants):
        major_minor = ".".join(re.split(r"[.+-]", pin)[:2])
        if pin.split("+")[0] not in pins and f"~{major_minor}" not in pins:
            ids = ", ".join(v.id for v in config.variants if v.torch == pin)
            out.append(f"{config.path}: coverage: torch {pin} has no result ({ids})")
    return out


def _trends(
    cells: list[Cell], history: Sequence[Mapping[str, Any]]
) -> dict[tuple[str, str], Trend]:
    """Each cell against earlier matrices (oldest first). A report without the cell neither
    breaks nor extends its red streak: fleets upload partial results."""
    past: list[dict[tuple[Any, Any], Any]] = []
    for matrix in reversed(history):
        cells_json = matrix.get("cells") if isinstance(matrix, Mapping) else None
        past.append(
            {
                (c.get("host"), c.get("variant")): c.get("effective_state") or c.get("state")
                for c in cells_json or []
                if isinstance(c, Mapping)
            }
        )
    trends = {}
    for cell in cells:
        key = (cell.host, cell.variant)
        now = cell.effective_state
        earlier = [states[key] for states in past if key in states]
        previous = earlier[0] if earlier else None
        change = None
        if previous is not None and now in _RED and previous not in _RED:
            change = "newly red"
        elif previous is not None and now in _GREEN and previous in _RED:
            change = "newly green"
        red_runs = 0
        if now in _RED:
            red_runs = 1
            for state in earlier:
                if state not in _RED:
                    break
                red_runs += 1
        trends[key] = Trend(previous, change, red_runs)
    return trends


def build_report(
    inputs: list[Path],
    now: datetime | None = None,
    *,
    config: Matrix | None = None,
    expectations: Sequence[Expectation] | None = None,
    history: Sequence[Mapping[str, Any]] | None = None,
    predict: bool = True,
    facts: compat.Facts | None = None,
    coverage: bool = True,
) -> Report:
    """Read every JUnit file under ``inputs`` and merge them into cells keyed by (host, variant).

    ``now`` fixes ``generated_at`` (for golden tests). ``config`` (a loaded matrix.yaml) adds
    coverage warnings and its ``expect:`` entries unless ``expectations`` is given. ``history``
    holds earlier matrix.json dicts, oldest first (see :func:`load_history`), for newly red /
    newly green / red streaks. ``predict`` compares each (host, variant) with ``repro.compat.predictions``
    (``facts`` defaults to the shipped ones). Raises ConfigError if an input path does not
    exist; unreadable or invalid files become ``problems`` and the merge goes on.
    """
    files = _find_files([Path(p) for p in inputs])
    budget = [MAX_TOTAL_BYTES]
    records: list[InputRecord] = []
    problems: list[tuple[str, str]] = []
    log_files: dict[str, Path] = {}
    for path in files:
        reader = _FileReader(path, budget)
        record = reader.read()
        records.append(record)
        log_files.update(reader.log_files)
        if record.state == STATE_INVALID:
            problems.append((record.path, record.reason or "invalid"))
        problems.extend((record.path, warning) for warning in reader.warnings)

    _supersede_older_runs(records)
    cells: dict[tuple[str, str], Cell] = {}
    host_props: dict[str, dict[str, str]] = {}
    variant_props: dict[str, dict[str, str]] = {}
    for record in records:
        if record.state == STATE_SUPERSEDED:
            continue
        cell = cells.setdefault((record.host, record.variant), Cell(record.host, record.variant))
        cell.files.append(record.path)
        cell.cases.extend(record.cases)
        if record.state == STATE_INVALID:
            cell.invalid_files += 1
        hp = host_props.setdefault(record.host, {})
        for name, value in record.host_properties.items():
            hp.setdefault(name, value)
        vp = variant_props.setdefault(record.variant, {})
        for name, value in record.variant_properties.items():
            # First wins, but a value beats an empty one (a CPU-only host's empty arch list).
            if not vp.get(name):
                vp[name] = value

    ordered_cells = [cells[key] for key in sorted(cells)]
    all_cases = [case for cell in ordered_cells for case in cell.cases]
    totals = _counts(all_cases)
    hosts = [
        {"key": key, "properties": dict(sorted(host_props[key].items()))}
        for key in sorted(host_props)
    ]
    variants = [
        {"id": key, "properties": dict(sorted(variant_props[key].items()))}
        for key in sorted(variant_props)
    ]

    if expectations is None:
        expectations = config.expectations if config is not None else ()
    expectations = tuple(expectations)
    hits = _apply_expectations(ordered_cells, expectations)
    warnings: list[str] = []
    if config is not None and coverage:
        warnings += _coverage(config, ordered_cells, variants)
    source = f"{config.path}: " if config is not None else ""
    warnings += [
        f"{source}{rule.label} matched no case in these results"
        for rule in expectations
        if not hits[rule.index]
    ]
    predictions = (
        _predictions(hosts, variants, cells, facts or compat.default_facts()) if predict else {}
    )
    trends = _trends(ordered_cells, history) if history is not None else {}

    cells_json = []
    for cell in ordered_cells:
        item = cell.to_json()
        trend = trends.get((cell.host, cell.variant))
        if trend is not None:
            item["trend"] = trend.to_json()
        cells_json.append(item)
    generated_at = _iso(now)
    matrix = {
        "schema_version": SCHEMA_VERSION,
        "generator": GENERATOR,
        "generated_at": generated_at,
        "inputs": [record.to_json() for record in records],
        "hosts": hosts,
        "variants": variants,
        "cells": cells_json,
        "problems": [{"path": path, "reason": reason} for path, reason in problems],
        "warnings": list(warnings),
        "totals": dict(totals),
        "expectations": [_expectation_json(rule, ordered_cells) for rule in expectations],
        "predictions": [
            view.to_json(host, variant) for (host, variant), view in sorted(predictions.items())
        ],
        "history": {"runs": len(history)} if history is not None else None,
    }
    return Report(
        generated_at=generated_at,
        inputs=records,
        cells=ordered_cells,
        hosts=hosts,
        variants=variants,
        problems=problems,
        totals=totals,
        matrix=matrix,
        log_files=log_files,
        warnings=warnings,
        predictions=predictions,
        expectations=expectations,
        expectation_hits=hits,
        trends=trends,
        history_runs=len(history) if history is not None else None,
    )


def _expectation_json(rule: Expectation, cells: list[Cell]) -> dict[str, Any]:
    statuses: Counter[str] = Counter(
        case.expect["status"]
        for cell in cells
        for case in cell.cases
        if case.expect is not None and case.expect["rule"] == rule.index
    )
    return {
        **rule.as_dict(),
        "matched": sum(statuses.values()),
        "expected": statuses[EXPECT_EXPECTED],
        "unexpectedly_passing": statuses[EXPECT_XPASS],
        "other_outcome": statuses[EXPECT_OTHER],
        "skipped": statuses[EXPECT_SKIPPED],
    }


def totals_line(report: Report) -> str:
    """``tests: N, passed: N, failed: N, errors: N, crashed: N, hung: N, skipped: N``, plus
    ``expected: N, unexpectedly passing: N`` when ``expect:`` entries were applied."""
    parts = [f"tests: {report.totals.get('tests', 0)}"]
    parts += [f"{_TOTALS_LABELS[o]}: {report.totals.get(o.value, 0)}" for o in OUTCOME_ORDER]
    if report.expectations:
        statuses = Counter(
            case.expect_status for cell in report.cells for case in cell.cases if case.expect
        )
        parts.append(f"expected: {statuses[EXPECT_EXPECTED]}")
        parts.append(f"unexpectedly passing: {statuses[EXPECT_XPASS]}")
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------
# History


def _stamp(generated_at: str) -> str:
    """``2025-06-01T12:00:00+00:00`` -> ``20250601T120000Z`` (file-name safe, sorts by time)."""
    try:
        moment = datetime.fromisoformat(generated_at)
    except (TypeError, ValueError):
        return re.sub(r"[^0-9A-Za-z]", "", str(generated_at))[:32] or "unknown"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def read_matrix(path: Path) -> dict[str, Any]:
    """A matrix.json file as a dict. Raises ConfigError (one line) when it is not one."""
    try:
        with open(path, "rb") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ConfigError(f"{path}: not a matrix.json (expected an object with a 'cells' list)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: matrix.json schema_version {data.get('schema_version')!r} is not supported "
            f"(expected {SCHEMA_VERSION})"
        )
    return data


_HISTORY_NAME_RE = re.compile(r"^matrix-(\d{8}T\d{6}Z)(?:-(\d+))?\.json$")


def _history_order(name: str) -> tuple[str, int, str]:
    """Chronological: by stamp, then by the ``-N`` of reports generated in the same second."""
    match = _HISTORY_NAME_RE.match(name)
    if not match:
        return (name, 0, name)
    return (match.group(1), int(match.group(2) or 0), name)


def load_history(
    history_dir: Path, limit: int = HISTORY_LIMIT
) -> tuple[list[dict[str, Any]], list[str]]:
    """Earlier matrices kept in ``history_dir`` (``matrix-<UTC stamp>.json``), oldest first, at
    most the newest ``limit``; plus one warning per file that could not be read."""
    history_dir = Path(history_dir)
    if not history_dir.is_dir():
        return [], []
    names = sorted(
        (
            p.name
            for p in history_dir.iterdir()
            if p.name.startswith(HISTORY_PREFIX) and p.name.endswith(".json")
        ),
        key=_history_order,
    )
    entries, warnings = [], []
    for name in names[-limit:] if limit > 0 else []:
        try:
            entries.append(read_matrix(history_dir / name))
        except ConfigError as exc:
            warnings.append(f"history: {exc}; skipped")
    return entries, warnings


def archive_previous(
    out_dir: Path, history_dir: Path, previous: Mapping[str, Any] | None = None
) -> Path | None:
    """Copy ``out_dir/matrix.json`` (about to be replaced) into ``history_dir`` as
    ``matrix-<its generated_at>.json`` (``-N`` added for reports of the same second); None when
    there is none or an identical copy is already kept.
    ``previous`` is its already-parsed content, if the caller has it."""
    source = Path(out_dir) / "matrix.json"
    if not source.is_file():
        return None
    if previous is None:
        previous = read_matrix(source)
    history_dir = Path(history_dir)
    history_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{HISTORY_PREFIX}{_stamp(str(previous.get('generated_at')))}"
    data = source.read_bytes()
    for number in range(10_000):
        target = history_dir / (f"{stem}.json" if number == 0 else f"{stem}-{number}.json")
        if not target.exists():
            write_atomic(target, data)
            return target
        if target.read_bytes() == data:
            return None  # already kept
    raise FatalError(f"{history_dir}: too many reports generated at {previous.get('generated_at')}")


# --------------------------------------------------------------------------------------------
# Rendering


def render_json(report: Report) -> str:
    return (
        json.dumps(report.matrix, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


def _counts_text(counts: Mapping[str, int]) -> str:
    return " · ".join(f"{counts[o.value]} {o.value}" for o in SEVERITY_ORDER if counts.get(o.value))


def _cell_label(cell: Cell | None) -> tuple[str, str]:
    """(effective state, short text) of a matrix cell; ``None`` is a missing cell."""
    if cell is None:
        return STATE_MISSING, "missing"
    state = cell.effective_state
    counts = " · ".join(f"{n} {label}" for label, n in cell.display_counts())
    if state == STATE_NO_TESTS:
        return state, "no tests"
    if state == STATE_INVALID:
        return state, "invalid" + (f" · {counts}" if counts else "")
    if cell.invalid_files:
        counts += f" · {cell.invalid_files} invalid"
    return state, counts


def _css(state: str) -> str:
    return state.replace(" ", "-")


_MD_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "~": "\\~",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\r": " ",
        "\n": " ",
        "\t": " ",
    }
)


def md_escape(text: str) -> str:
    """Escape text for a Markdown table cell or list item (one line, no markup, no HTML)."""
    return text.translate(_MD_ESCAPES)


def _marks(report: Report, host: str, variant: str) -> list[tuple[str, str, str]]:
    """(flag, emoji, text) shown beside a cell: change since the previous report, red streak,
    disagreement between prediction and observation."""
    out = []
    trend = report.trends.get((host, variant))
    if trend is not None and trend.change == "newly red":
        out.append(("newly-red", "🆕", "newly red"))
    elif trend is not None and trend.change == "newly green":
        out.append(("newly-green", "✅", "newly green"))
    if trend is not None and trend.red_runs >= 2:
        out.append(("streak", "🔁", f"red {trend.red_runs} runs in a row"))
    view = report.predictions.get((host, variant))
    if view is not None and view.disagreement:
        out.append(("disagree", "⚠️", f"predicted {view.prediction.outcome}"))
    return out


def _md_cell(report: Report, host: str, variant: str, compact: bool = False) -> str:
    state, label = _cell_label(report.cell(host, variant))
    marks = _marks(report, host, variant)
    if compact:  # emoji only: a very large matrix must still fit the step summary
        return _EMOJI[state] + "".join(emoji for _, emoji, _ in marks)
    notes = "".join(f" · {emoji} {md_escape(text)}" for _, emoji, text in marks)
    return f"{_EMOJI[state]} {md_escape(label)}{notes}"


def _md_table(report: Report, compact: bool) -> list[str]:
    variant_ids = [v["id"] for v in report.variants]
    lines = ["| host \\\\ variant | " + " | ".join(md_escape(v) for v in variant_ids) + " |"]
    lines.append("|---" * (len(variant_ids) + 1) + "|")
    for host in (h["key"] for h in report.hosts):
        row = [_md_cell(report, host, variant, compact) for variant in variant_ids]
        lines.append(f"| **{md_escape(host)}** | " + " | ".join(row) + " |")
    return lines


def _case_label(case: CaseRecord) -> str:
    name = case.case or "(no name)"
    return (
        f"{case.scenario} › {name}"
        if case.scenario and not name.startswith(case.scenario)
        else name
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _md_warnings(report: Report) -> list[str]:
    if not report.warnings:
        return []
    lines = ["## Warnings", ""]
    lines += [f"- {md_escape(w)}" for w in report.warnings[:MD_MAX_PROBLEMS]]
    if len(report.warnings) > MD_MAX_PROBLEMS:
        lines.append(f"- … and {len(report.warnings) - MD_MAX_PROBLEMS} more (see matrix.json)")
    return [*lines, ""]


def _md_changes(report: Report) -> list[str]:
    if report.history_runs is None:
        return []
    lines = ["## Changes since the previous report", ""]
    if not report.history_runs:
        return [*lines, "No earlier report in the history directory yet.", ""]
    groups = {
        "Newly red": [k for k, t in report.trends.items() if t.change == "newly red"],
        "Newly green": [k for k, t in report.trends.items() if t.change == "newly green"],
        "Red several runs in a row": [k for k, t in report.trends.items() if t.red_runs >= 2],
    }
    if not any(groups.values()):
        lines.append(
            f"No cell changed colour ({_plural(report.history_runs, 'earlier report')} compared)."
        )
    for title, keys in groups.items():
        if not keys:
            continue
        lines.append(f"**{title}** ({len(keys)}):")
        for host, variant in sorted(keys)[:MD_MAX_LIST]:
            trend = report.trends[(host, variant)]
            state, text = _cell_label(report.cell(host, variant))
            was = f", was {trend.previous}" if trend.previous else ""
            streak = f", red {trend.red_runs} runs" if trend.red_runs >= 2 else ""
            lines.append(
                f"- {_EMOJI[state]} {md_escape(host)} · {md_escape(variant)}: "
                f"{md_escape(text)}{md_escape(was + streak)}"
            )
        if len(keys) > MD_MAX_LIST:
            lines.append(f"- … and {len(keys) - MD_MAX_LIST} more")
        lines.append("")
    return [*lines, ""] if lines[-1] else lines


def _reason_md(reason: compat.Reason) -> str:
    mark = ", unverified" if reason.unverified else ""
    return f"{md_escape(reason.text)} ({md_escape(reason.fact)}{mark})"


def _md_predictions(report: Report) -> list[str]:
    if not report.predictions:
        return []
    outcomes = Counter(view.prediction.outcome for view in report.predictions.values())
    disagreements = sorted(k for k, v in report.predictions.items() if v.disagreement)
    lines = [
        "## Prediction vs observation",
        "",
        f"Predicted from published compatibility facts: {outcomes[compat.PASS]} pass, "
        f"{outcomes[compat.FAIL]} fail, {outcomes[compat.UNKNOWN]} unknown; "
        f"{_plural(len(disagreements), 'disagreement')} with the observed cells.",
        "",
    ]
    if disagreements:
        lines += ["| host | variant | disagreement | predicted because |", "|---|---|---|---|"]
        for key in disagreements[:MD_MAX_LIST]:
            view = report.predictions[key]
            deciding = view.prediction.deciding or view.prediction.reasons
            why = "; ".join(_reason_md(r) for r in deciding[:3])
            lines.append(
                f"| {md_escape(key[0])} | {md_escape(key[1])} | ⚠️ {md_escape(view.disagreement or '')} | {why} |"
            )
        if len(disagreements) > MD_MAX_LIST:
            lines.append(f"| … and {len(disagreements) - MD_MAX_LIST} more | | | |")
        lines.append("")
    failing = sorted(
        k for k, v in report.predictions.items() if v.prediction.outcome == compat.FAIL
    )
    if failing:
        lines += [
            f"<details><summary>Predicted to fail ({len(failing)})</summary>",
            "",
            "| host | variant | observed | reasons |",
            "|---|---|---|---|",
        ]
        for key in failing[:MD_MAX_LIST]:
            view = report.predictions[key]
            state, _ = _cell_label(report.cell(*key))
            why = "; ".join(_reason_md(r) for r in view.prediction.deciding[:3])
            lines.append(
                f"| {md_escape(key[0])} | {md_escape(key[1])} | {_EMOJI[state]} {state} | {why} |"
            )
        if len(failing) > MD_MAX_LIST:
            lines.append(f"| … and {len(failing) - MD_MAX_LIST} more | | | |")
        lines += ["", "</details>", ""]
    return lines


def _md_expectations(report: Report) -> list[str]:
    if not report.expectations:
        return []
    lines = [
        "## Expected failures (matrix.yaml `expect`)",
        "",
        "| entry | outcome | reason | expected | unexpectedly passing | other outcome |",
        "|---|---|---|---|---|---|",
    ]
    labels = {rule.index: rule.label for rule in report.expectations}
    for item in report.matrix["expectations"]:
        reason = md_escape(item["reason"])
        if item["link"]:
            reason += f" ([link]({item['link'].replace(')', '%29').replace(' ', '%20')}))"
        lines.append(
            f"| {md_escape(labels[item['index']])} | {md_escape(item['outcome'])} | {reason} | {item['expected']} "
            f"| {'🟨 ' if item['unexpectedly_passing'] else ''}{item['unexpectedly_passing']} | {item['other_outcome']} |"
        )
    return [*lines, ""]


def _md_problems(report: Report) -> list[str]:
    if not report.problems:
        return []
    lines = ["## Inputs with problems", ""]
    for path, reason in report.problems[:MD_MAX_PROBLEMS]:
        lines.append(f"- {md_escape(path)}: {md_escape(reason)}")
    if len(report.problems) > MD_MAX_PROBLEMS:
        lines.append(f"- … and {len(report.problems) - MD_MAX_PROBLEMS} more (see matrix.json)")
    lines.append("")
    return lines


def _md_throughput(report: Report) -> list[str]:
    data = throughput(report)
    if not data:
        return []
    methods = _methods(data)
    lines = [
        "<details><summary>DataLoader throughput (median it/s per start method, samples in brackets)</summary>",
        "",
        "| device | variant | " + " | ".join(md_escape(m) for m in methods) + " |",
        "|---|---" + "|---" * len(methods) + "|",
    ]
    rows = [(d, v) for d in sorted(data) for v in sorted(data[d])]
    for device, variant in rows[: MD_MAX_LIST * 4]:
        values = data[device][variant]
        cells = [
            f"{statistics.median(values[m]):.4g} ({len(values[m])})" if values.get(m) else ""
            for m in methods
        ]
        lines.append(
            f"| {md_escape(device or '-')} | {md_escape(variant)} | " + " | ".join(cells) + " |"
        )
    if len(rows) > MD_MAX_LIST * 4:
        lines.append(f"| … and {len(rows) - MD_MAX_LIST * 4} more | |" + " |" * len(methods))
    return [*lines, "", "</details>", ""]


def render_markdown(report: Report) -> str:
    """``matrix.md``: fits a GitHub step summary (1 MiB): per-cell details are collapsed and
    dropped, largest sections last, once the fixed sections have taken their share."""
    host_keys = [h["key"] for h in report.hosts]
    variant_ids = [v["id"] for v in report.variants]
    lines = ["# repro-matrix compatibility matrix", "", totals_line(report), ""]
    invalid = sum(1 for r in report.inputs if r.state == STATE_INVALID)
    lines.append(
        f"{len(report.inputs)} input files, {len(report.cells)} cells"
        + (f", {invalid} invalid input{'' if invalid == 1 else 's'}" if invalid else "")
        + f" · generated {report.generated_at}"
    )
    lines.append("")
    if host_keys:
        table = _md_table(report, compact=False)
        if sum(len(line.encode()) + 1 for line in table) > MD_MAX_BYTES // 2:
            table = _md_table(report, compact=True)
            table.insert(
                0,
                "_Large matrix: cells show their state as an emoji only (legend below the table); matrix.html has the counts._\n",
            )
            table.append("\n" + " · ".join(f"{emoji} {state}" for state, emoji in _EMOJI.items()))
        if sum(len(line.encode()) + 1 for line in table) > MD_MAX_BYTES * 3 // 4:
            table = [
                f"_The {len(host_keys)} x {len(variant_ids)} matrix does not fit a step summary; see matrix.html._"
            ]
        lines += [*table, ""]
    else:
        lines += ["No JUnit inputs found.", ""]
    lines += _md_warnings(report)
    lines += _md_changes(report)
    lines += _md_predictions(report)
    lines += _md_expectations(report)
    tail = _md_throughput(report) + _md_problems(report)

    fixed = len("\n".join(lines).encode()) + len("\n".join(tail).encode())
    budget = MD_MAX_BYTES - fixed - 4096
    sections: list[str] = []
    omitted = 0
    for cell in report.cells:
        listed = [
            case
            for case in cell.sorted_cases()
            if (case.outcome is not Outcome.PASSED or case.expect_status == EXPECT_XPASS)
            and case.expect_status != EXPECT_EXPECTED
        ]
        if not listed:
            continue
        section = _md_cell_section(report, cell, listed)
        size = len(section.encode()) + 1
        if size > budget:
            omitted += 1
            continue
        budget -= size
        sections.append(section)
    if sections or omitted:
        lines += ["## Cases that did not pass", ""]
        lines += sections
        if omitted:
            lines += [
                f"_{omitted} more cells omitted to stay under the step-summary size limit; see matrix.html or matrix.json._",
                "",
            ]
    lines += tail
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_cell_section(report: Report, cell: Cell, listed: list[CaseRecord]) -> str:
    state, text = _cell_label(cell)
    summary = html.escape(f"{_EMOJI[state]} {cell.host} · {cell.variant} — {text}")
    out = [f"<details><summary>{summary}</summary>", ""]
    view = report.predictions.get((cell.host, cell.variant))
    if view is not None and view.disagreement:
        out += [f"⚠️ {md_escape(view.disagreement)}: {md_escape(view.prediction.summary())}", ""]
    out += ["| outcome | case | signature | message |", "|---|---|---|---|"]
    for case in listed[:MD_MAX_CASES_PER_CELL]:
        label = case.outcome.value
        note = ""
        if case.expect_status == EXPECT_XPASS:
            label, note = (
                STATE_XPASS,
                f" (expected {case.expect['outcome']}: {case.expect['reason']})",
            )
        elif case.expect_status == EXPECT_OTHER:
            note = f" (expected {case.expect['outcome']}: {case.expect['reason']})"
        out.append(
            f"| {_EMOJI.get(label, '')} {label} | {md_escape(_case_label(case))} "
            f"| {md_escape(case.signature or '')} | {md_escape(case.message + note)} |"
        )
    if len(listed) > MD_MAX_CASES_PER_CELL:
        out.append(f"| | … and {len(listed) - MD_MAX_CASES_PER_CELL} more | | |")
    expected = sum(1 for case in cell.cases if case.expect_status == EXPECT_EXPECTED)
    if expected:
        out += ["", f"{_plural(expected, 'expected failure')} not listed."]
    out += ["", "</details>", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# DataLoader throughput plot

_CASE_PARAMS_RE = re.compile(r"^[^\[\]]*\[(.*)\]$")
_METHOD_ORDER = ("in-process", "fork", "spawn", "forkserver")
_METHOD_COLOURS = ("#0969da", "#1a7f37", "#bc4c00", "#8250df", "#bf3989", "#57606a")


def case_params(case_id: str) -> dict[str, str]:
    """``dataloader[device=cpu,start_method=fork]`` -> {"device": "cpu", "start_method": "fork"}."""
    match = _CASE_PARAMS_RE.match(case_id)
    if not match:
        return {}
    out = {}
    for part in match.group(1).split(","):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


#: Series name for DataLoader cases with ``workers=0`` (batches loaded in the main process).
IN_PROCESS = "in-process"


def throughput(
    report: Report, metric: str = "it_per_s"
) -> dict[str, dict[str, dict[str, list[float]]]]:
    """DataLoader ``metric`` values: device -> variant -> start method -> samples (all hosts)."""
    data: dict[str, dict[str, dict[str, list[float]]]] = {}
    for cell in report.cells:
        for case in cell.cases:
            value = case.metrics.get(metric)
            if value is None or not (
                case.scenario == "dataloader" or case.case.startswith("dataloader[")
            ):
                continue
            params = case_params(case.case)
            method = params.get("start_method")
            if not method:
                continue
            if params.get("workers") == "0":
                method = IN_PROCESS  # no workers: the start method does not apply
            device = params.get("device", "")
            data.setdefault(device, {}).setdefault(cell.variant, {}).setdefault(method, []).append(
                value
            )
    return data


def _methods(data: Mapping[str, Mapping[str, Mapping[str, list[float]]]]) -> list[str]:
    seen = {m for variants in data.values() for methods in variants.values() for m in methods}
    return [m for m in _METHOD_ORDER if m in seen] + sorted(seen - set(_METHOD_ORDER))


def _nice(value: float) -> float:
    """A round axis maximum >= value (1, 2, 2.5, 5 x 10^n)."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * 10**exponent >= value:
            return step * 10**exponent
    return 10 ** (exponent + 1)


def throughput_svg(report: Report, metric: str = "it_per_s") -> str:
    """Inline SVG bar charts (one per device) of the median ``metric`` per variant and start
    method, min-max whiskers, sample counts in the tooltips; "" when no case recorded it."""
    data = throughput(report, metric)
    if not data:
        return ""
    methods = _methods(data)
    colour = {m: _METHOD_COLOURS[i % len(_METHOD_COLOURS)] for i, m in enumerate(methods)}
    esc = html.escape
    charts = []
    for device in sorted(data):
        variants = sorted(data[device])
        top = _nice(max(max(v) for per in data[device].values() for v in per.values() if v))
        bar, gap, left, plot_h, head, foot = 14, 12, 56, 180, 48, 110
        group = bar * len(methods) + gap
        legend_w = 100
        width = max(left + group * len(variants) + 20, left + legend_w * len(methods) + 20, 420)
        height = head + plot_h + foot
        label = f"DataLoader {metric}, device {device or '-'}"
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(label)}">',
            f'<text x="{left}" y="16" class="title">DataLoader {esc(metric)} · device={esc(device or "-")}</text>',
        ]
        for i, method in enumerate(methods):  # legend on its own row under the title
            x = left + i * legend_w
            parts.append(
                f'<rect x="{x}" y="25" width="10" height="10" fill="{colour[method]}"/>'
                f'<text x="{x + 14}" y="34">{esc(method)}</text>'
            )
        for tick in (0, 0.25, 0.5, 0.75, 1.0):
            y = head + plot_h - tick * plot_h
            parts.append(
                f'<line x1="{left}" x2="{width - 20}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{tick * top:.4g}</text>'
            )
        for gi, variant in enumerate(variants):
            x0 = left + gi * group + gap / 2
            for mi, method in enumerate(methods):
                values = data[device][variant].get(method)
                if not values:
                    continue
                median = statistics.median(values)
                x = x0 + mi * bar
                h = median / top * plot_h
                y = head + plot_h - h
                tip = (
                    f"{variant} · {method} · device={device or '-'}: median {median:.4g} {metric} "
                    f"(n={len(values)}, min {min(values):.4g}, max {max(values):.4g})"
                )
                parts.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2}" height="{max(h, 0.5):.1f}" '
                    f'fill="{colour[method]}"><title>{esc(tip)}</title></rect>'
                )
                if len(values) > 1:
                    lo = head + plot_h - min(values) / top * plot_h
                    hi = head + plot_h - max(values) / top * plot_h
                    cx = x + (bar - 2) / 2
                    parts.append(
                        f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{lo:.1f}" y2="{hi:.1f}" class="whisker"/>'
                    )
            lx = x0 + group / 2 - gap / 2
            ly = head + plot_h + 10
            parts.append(
                f'<text x="{lx:.1f}" y="{ly}" transform="rotate(-45 {lx:.1f} {ly})" text-anchor="end">{esc(variant)}</text>'
            )
        parts.append("</svg>")
        charts.append("".join(parts))
    return "\n".join(charts)


# --------------------------------------------------------------------------------------------
# HTML


def _log_href(target: Path, out_dir: Path) -> str | None:
    try:
        rel = os.path.relpath(target, out_dir)
    except ValueError:  # another drive on Windows
        return None
    href = urllib.parse.quote(Path(rel).as_posix())
    return href if href.startswith(("../", "/")) else "./" + href


def _cell_title(report: Report, cell: Cell | None, host: str, variant: str) -> str:
    state, text = _cell_label(cell)
    lines = [f"{host} × {variant}", f"{state}: {text}" if text != state else state]
    if cell is not None:
        groups: Counter[tuple[int, str, str]] = Counter()
        first_message: dict[tuple[int, str, str], str] = {}
        for case in cell.cases:
            if case.outcome is Outcome.PASSED:
                continue
            key = (_SEVERITY_RANK[case.outcome], case.outcome.value, case.signature or "")
            groups[key] += 1
            first_message.setdefault(key, case.message)
        ranked = sorted(groups.items(), key=lambda item: (item[0][0], -item[1], item[0][2]))
        for key, count in ranked[:5]:
            message = _truncate(first_message[key], 120)
            signature = f" {key[2]}" if key[2] else ""
            lines.append(f"{key[1]} ×{count}{signature}" + (f": {message}" if message else ""))
        if len(ranked) > 5:
            lines.append(f"… {len(ranked) - 5} more signatures")
        if cell.invalid_files:
            lines.append(f"{cell.invalid_files} invalid input file(s)")
    view = report.predictions.get((host, variant))
    if view is not None:
        lines.append(f"predicted {_truncate(view.prediction.summary(), 200)}")
        if view.disagreement:
            lines.append(f"⚠ {view.disagreement}")
    trend = report.trends.get((host, variant))
    if trend is not None and trend.note():
        lines.append(trend.note())
    return "\n".join(lines)


def _metrics_text(metrics: Mapping[str, float | None]) -> str:
    return ", ".join(f"{k}={'null' if v is None else format(v, '.4g')}" for k, v in metrics.items())


def _case_view(report: Report, case: CaseRecord, out_abs: Path) -> dict[str, Any]:
    target = report.log_files.get(case.log) if case.log else None
    state = case.outcome.value
    if case.expect_status == EXPECT_EXPECTED:
        state = STATE_EXPECTED
    elif case.expect_status == EXPECT_XPASS:
        state = STATE_XPASS
    expect = None
    if case.expect is not None and case.expect_status != EXPECT_SKIPPED:
        expect = {
            "text": f"{case.expect_status}: expected {case.expect['outcome']} — {case.expect['reason']}",
            "link": case.expect["link"],
        }
    return {
        "outcome": case.outcome.value,
        "css": _css(state),
        "state": state,
        "label": _case_label(case),
        "signature": case.signature or "",
        "message": case.message,
        "excerpt": case.excerpt,
        "expect": expect,
        "time": "" if case.time_s is None else f"{case.time_s:.3g}",
        "metrics": _metrics_text(case.metrics),
        "log": case.log,
        "log_href": _log_href(target, out_abs) if target else None,
        "file": case.file,
    }


def _signatures(cell: Cell | None) -> str:
    if cell is None:
        return ""
    return " ".join(sorted({c.signature for c in cell.cases if c.signature}))


def render_html(report: Report, out_dir: Path) -> str:
    """``matrix.html``: one self-contained page (inline CSS/JS/SVG, links to logs relative to
    out_dir): sticky headers, filters by state/signature/flag, per-cell drill-down."""
    import jinja2
    import markupsafe

    out_abs = Path(out_dir).resolve()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(shipped_data.ROOT),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    anchors = {
        (cell.host, cell.variant): f"cell-{index}" for index, cell in enumerate(report.cells)
    }
    variant_ids = [v["id"] for v in report.variants]
    rows = []
    for host in report.hosts:
        row_cells = []
        for variant in variant_ids:
            cell = report.cell(host["key"], variant)
            state, text = _cell_label(cell)
            marks = _marks(report, host["key"], variant)
            row_cells.append(
                {
                    "css": _css(state),
                    "state": state,
                    "label": text,
                    "title": _cell_title(report, cell, host["key"], variant),
                    "anchor": anchors.get((host["key"], variant)),
                    "sigs": _signatures(cell),
                    "flags": " ".join(flag for flag, _, _ in marks),
                    "marks": [{"flag": f, "emoji": e, "text": t} for f, e, t in marks],
                }
            )
        rows.append(
            {"key": host["key"], "title": _props_title(host["properties"]), "cells": row_cells}
        )
    details = []
    for cell in report.cells:
        state, text = _cell_label(cell)
        key = (cell.host, cell.variant)
        cases = [_case_view(report, case, out_abs) for case in cell.sorted_cases()]
        view = report.predictions.get(key)
        trend = report.trends.get(key)
        marks = _marks(report, *key)
        details.append(
            {
                "anchor": anchors[key],
                "host": cell.host,
                "variant": cell.variant,
                "css": _css(state),
                "state": state,
                "label": text,
                # Red cells start open on a small matrix; on a large one a click opens them.
                "open": len(report.cells) <= HTML_MAX_OPEN
                and state
                not in (
                    Outcome.PASSED.value,
                    Outcome.SKIPPED.value,
                    STATE_NO_TESTS,
                    STATE_EXPECTED,
                ),
                "files": cell.files,
                "sigs": _signatures(cell),
                "flags": " ".join(flag for flag, _, _ in marks),
                "problem_cases": [
                    c
                    for c in cases
                    if c["outcome"] != Outcome.PASSED.value or c["state"] == STATE_XPASS
                ],
                "passed_cases": [
                    c
                    for c in cases
                    if c["outcome"] == Outcome.PASSED.value and c["state"] != STATE_XPASS
                ],
                "prediction": _prediction_view(view) if view is not None else None,
                "trend": trend.note() if trend is not None else "",
            }
        )
    disagreements = [
        {
            "host": host,
            "variant": variant,
            "anchor": anchors.get((host, variant)),
            "text": view.disagreement,
            "summary": view.prediction.summary(),
        }
        for (host, variant), view in sorted(report.predictions.items())
        if view.disagreement
    ]
    changes = [
        {
            "host": h,
            "variant": v,
            "anchor": anchors.get((h, v)),
            "text": t.note(),
            "state": _cell_label(report.cell(h, v))[0],
        }
        for (h, v), t in sorted(report.trends.items())
        if t.note()
    ]
    outcomes = Counter(view.prediction.outcome for view in report.predictions.values())
    template = env.get_template(shipped_data.HTML_TEMPLATE.name)
    states = [*EFFECTIVE_STATE_ORDER, STATE_MISSING]
    return template.render(
        generator=GENERATOR,
        generated_at=report.generated_at,
        totals_line=totals_line(report),
        n_inputs=len(report.inputs),
        variants=[{"id": v["id"], "title": _props_title(v["properties"])} for v in report.variants],
        rows=rows,
        details=details,
        problems=report.problems,
        warnings=report.warnings,
        legend=[
            _css(s) for s in states if s not in (STATE_EXPECTED, STATE_XPASS) or report.expectations
        ],
        filter_states=[(s, _css(s)) for s in states],
        signatures=sorted(
            {c.signature for cell in report.cells for c in cell.cases if c.signature}
        ),
        disagreements=disagreements,
        predicted={o: outcomes[o] for o in compat.OUTCOMES} if report.predictions else None,
        history_runs=report.history_runs,
        changes=changes,
        expectations=report.matrix["expectations"],
        expectation_labels={r.index: r.label for r in report.expectations},
        plot=markupsafe.Markup(throughput_svg(report)),
    )


def _prediction_view(view: PredictionView) -> dict[str, Any]:
    return {
        "outcome": view.prediction.outcome,
        "unverified": view.prediction.unverified,
        "observed": view.observed,
        "disagreement": view.disagreement,
        "reasons": [r.to_json() for r in view.prediction.reasons],
    }


def _props_title(props: Mapping[str, str]) -> str:
    return "\n".join(f"{k} = {v}" for k, v in props.items())


def write_outputs(report: Report, out_dir: Path) -> list[Path]:
    """Write matrix.json, matrix.md and matrix.html into ``out_dir`` (created), atomically."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rendered = [
        (out_dir / "matrix.json", render_json(report)),
        (out_dir / "matrix.md", render_markdown(report)),
        (out_dir / "matrix.html", render_html(report, out_dir)),
    ]
    for path, text in rendered:
        write_atomic(path, text.encode("utf-8"))
    return [path for path, _ in rendered]


# --------------------------------------------------------------------------------------------
# Command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``repro report`` arguments (shared by :func:`main` and ``repro.cli.main``)."""
    parser.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        metavar="DIR_OR_FILE",
        help="results directories or JUnit XML files",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="output directory (default: .)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="PATH",
        help="matrix.yaml: show its `expect:` entries as expected failures and warn about "
        "variants, runtimes and torch pins without results",
    )
    parser.add_argument(
        "--history",
        type=Path,
        metavar="DIR",
        help="keep the previous matrix.json in DIR and mark what changed since then",
    )
    parser.add_argument(
        "--no-predict",
        dest="predict",
        action="store_false",
        help="do not predict cells from the compatibility facts",
    )
    parser.add_argument(
        "--no-coverage",
        dest="coverage",
        action="store_false",
        help="with --config: do not warn about variants, runtimes and pins without results "
        "(a single-host run covers one variant)",
    )


def main(argv: list[str] | None = None) -> int:
    """``repro report DIR_OR_FILE... [-o OUTDIR] [--config PATH] [--history DIR]``.

    0 even with problems; 2 for a missing input or a bad matrix file; 3 when outputs cannot be
    written. ``--config`` applies the matrix file's ``expect:`` entries and adds coverage
    warnings; ``--history DIR`` keeps the previous ``matrix.json`` of the output directory in DIR
    (``matrix-<UTC stamp>.json``) and marks newly red / newly green cells and red streaks.
    """
    parser = argparse.ArgumentParser(
        prog="repro report",
        description="Merge JUnit XML results (directories are searched for *.xml) into "
        "matrix.json, matrix.md and matrix.html.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Build and write the report for parsed ``repro report`` arguments; returns the exit status."""
    try:
        config = None
        if args.config is not None:
            from repro import config as matrix_mod

            config = matrix_mod.load(args.config)
        history, previous, notes = None, None, []
        if args.history is not None:
            history, notes = load_history(args.history)
            previous_path = args.output / "matrix.json"
            if previous_path.is_file():
                try:
                    previous = read_matrix(previous_path)
                except ConfigError as exc:
                    notes.append(f"history: {exc}; not kept")
            if previous is not None and not any(
                h.get("generated_at") == previous.get("generated_at") and h == previous
                for h in history
            ):
                history.append(previous)
        report = build_report(
            args.inputs,
            config=config,
            history=history,
            predict=args.predict,
            coverage=args.coverage,
        )
        for path, reason in report.problems:
            print(f"repro report: {path}: {reason}", file=sys.stderr)
        for line in notes + report.warnings:
            print(f"repro report: warning: {line}", file=sys.stderr)
        if previous is not None:
            archive_previous(args.output, args.history, previous)
        written = write_outputs(report, args.output)
    except ReproError as exc:
        for line in str(exc).splitlines():
            print(f"repro report: error: {line}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        where = exc.filename or args.output
        print(f"repro report: error: cannot write {where}: {exc.strerror or exc}", file=sys.stderr)
        return 3
    for path in written:
        print(path)
    print(totals_line(report))
    return 0
