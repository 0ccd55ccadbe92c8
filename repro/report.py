"""Read JUnit XML from any producer and merge it into the compatibility matrix.

One record per input file, keyed by (host key, variant id) from trusted metadata: the ``run.json``
sidecar next to the XML first, else the testsuite properties ``host.key`` / ``variant.id`` that
``repro.junit`` writes, else (foreign files) the directory name as the variant and
``"unknown host"``. Files with the same key land in the same cell; nothing is merged by suite
equality (see ../shared/junit-notes.md). Outputs: ``matrix.json`` (canonical, versioned),
``matrix.md`` (GitHub step summary) and ``matrix.html`` (one self-contained file).

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
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

import defusedxml
import defusedxml.ElementTree as DET

from repro import __version__
from repro.errors import ConfigError, ReproError
from repro.junit import METRIC_PREFIX, PROP_LOG, PROP_OUTCOME, PROP_SIGNATURE, write_atomic
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
MAX_WARNINGS_PER_FILE = 5

#: Markdown limits: GitHub step summaries are capped at 1 MiB per step.
MD_MAX_BYTES = 900_000
MD_MAX_CASES_PER_CELL = 50
MD_MAX_PROBLEMS = 100

UNKNOWN_HOST = "unknown host"
SIDECAR_NAME = "run.json"

STATE_OK = "ok"
STATE_INVALID = "invalid"
STATE_SUPERSEDED = "superseded"
STATE_NO_TESTS = "no tests"
STATE_MISSING = "missing"

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

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "case": self.case,
            "outcome": self.outcome.value,
            "signature": self.signature,
            "message": self.message,
            "time_s": self.time_s,
            "metrics": dict(self.metrics),
            "log": self.log,
            "file": self.file,
        }


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

    def sorted_cases(self) -> list[CaseRecord]:
        return sorted(
            self.cases, key=lambda c: (_SEVERITY_RANK[c.outcome], c.scenario, c.case, c.file)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "variant": self.variant,
            "state": self.state,
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


def build_report(inputs: list[Path], now: datetime | None = None) -> Report:
    """Read every JUnit file under ``inputs`` and merge them into cells keyed by (host, variant).

    ``now`` fixes ``generated_at`` (for golden tests). Raises ConfigError if an input path does
    not exist; unreadable or invalid files become ``problems`` and the merge goes on.
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
            vp.setdefault(name, value)

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
    generated_at = _iso(now)
    matrix = {
        "schema_version": SCHEMA_VERSION,
        "generator": GENERATOR,
        "generated_at": generated_at,
        "inputs": [record.to_json() for record in records],
        "hosts": hosts,
        "variants": variants,
        "cells": [cell.to_json() for cell in ordered_cells],
        "problems": [{"path": path, "reason": reason} for path, reason in problems],
        "totals": dict(totals),
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
    )


def totals_line(report: Report) -> str:
    """``tests: N, passed: N, failed: N, errors: N, crashed: N, hung: N, skipped: N``."""
    parts = [f"tests: {report.totals.get('tests', 0)}"]
    parts += [f"{_TOTALS_LABELS[o]}: {report.totals.get(o.value, 0)}" for o in OUTCOME_ORDER]
    return ", ".join(parts)


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
    """(state, short text) of a matrix cell; ``None`` is a missing cell."""
    if cell is None:
        return STATE_MISSING, "missing"
    state = cell.state
    counts = _counts_text(cell.counts)
    if state == STATE_NO_TESTS:
        return state, "no tests"
    if state == STATE_INVALID:
        return state, "invalid" + (f" · {counts}" if counts else "")
    if cell.invalid_files:
        counts += f" · {cell.invalid_files} invalid"
    return state, counts


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


def _md_cell(cell: Cell | None) -> str:
    state, text = _cell_label(cell)
    return f"{_EMOJI[state]} {md_escape(text)}"


def _case_label(case: CaseRecord) -> str:
    name = case.case or "(no name)"
    return (
        f"{case.scenario} › {name}"
        if case.scenario and not name.startswith(case.scenario)
        else name
    )


def render_markdown(report: Report) -> str:
    """``matrix.md``: fits a GitHub step summary (case lists and sections capped)."""
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
        lines.append(
            "| host \\\\ variant | " + " | ".join(md_escape(v) for v in variant_ids) + " |"
        )
        lines.append("|---" * (len(variant_ids) + 1) + "|")
        for host in host_keys:
            row = [_md_cell(report.cell(host, variant)) for variant in variant_ids]
            lines.append(f"| **{md_escape(host)}** | " + " | ".join(row) + " |")
        lines.append("")
    else:
        lines += ["No JUnit inputs found.", ""]

    head = "\n".join(lines)
    budget = MD_MAX_BYTES - len(head.encode()) - 4096
    sections: list[str] = []
    omitted = 0
    for cell in report.cells:
        bad = [case for case in cell.sorted_cases() if case.outcome is not Outcome.PASSED]
        if not bad:
            continue
        section = _md_cell_section(cell, bad)
        size = len(section.encode())
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

    if report.problems:
        lines += ["## Inputs with problems", ""]
        for path, reason in report.problems[:MD_MAX_PROBLEMS]:
            lines.append(f"- {md_escape(path)}: {md_escape(reason)}")
        if len(report.problems) > MD_MAX_PROBLEMS:
            lines.append(f"- … and {len(report.problems) - MD_MAX_PROBLEMS} more (see matrix.json)")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_cell_section(cell: Cell, bad: list[CaseRecord]) -> str:
    state, text = _cell_label(cell)
    summary = html.escape(f"{_EMOJI[state]} {cell.host} · {cell.variant} — {text}")
    out = [
        f"<details><summary>{summary}</summary>",
        "",
        "| outcome | case | signature | message |",
        "|---|---|---|---|",
    ]
    for case in bad[:MD_MAX_CASES_PER_CELL]:
        out.append(
            f"| {_EMOJI[case.outcome.value]} {case.outcome.value} | {md_escape(_case_label(case))} "
            f"| {md_escape(case.signature or '')} | {md_escape(case.message)} |"
        )
    if len(bad) > MD_MAX_CASES_PER_CELL:
        out.append(f"| | … and {len(bad) - MD_MAX_CASES_PER_CELL} more | | |")
    out += ["", "</details>", ""]
    return "\n".join(out)


def _log_href(target: Path, out_dir: Path) -> str | None:
    try:
        rel = os.path.relpath(target, out_dir)
    except ValueError:  # another drive on Windows
        return None
    href = urllib.parse.quote(Path(rel).as_posix())
    return href if href.startswith(("../", "/")) else "./" + href


def _cell_title(cell: Cell | None, host: str, variant: str) -> str:
    state, text = _cell_label(cell)
    lines = [f"{host} × {variant}", f"{state}: {text}" if text != state else state]
    if cell is None:
        return "\n".join(lines)
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
    return "\n".join(lines)


def _metrics_text(metrics: Mapping[str, float | None]) -> str:
    return ", ".join(f"{k}={'null' if v is None else format(v, '.4g')}" for k, v in metrics.items())


def render_html(report: Report, out_dir: Path) -> str:
    """``matrix.html``: one self-contained page (inline CSS/JS, links to logs relative to out_dir)."""
    import jinja2

    out_abs = Path(out_dir).resolve()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
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
            row_cells.append(
                {
                    "css": state.replace(" ", "-"),
                    "label": text,
                    "title": _cell_title(cell, host["key"], variant),
                    "anchor": anchors.get((host["key"], variant)),
                }
            )
        rows.append(
            {"key": host["key"], "title": _props_title(host["properties"]), "cells": row_cells}
        )
    details = []
    for cell in report.cells:
        state, text = _cell_label(cell)
        cases = []
        for case in cell.sorted_cases():
            target = report.log_files.get(case.log) if case.log else None
            cases.append(
                {
                    "outcome": case.outcome.value,
                    "label": _case_label(case),
                    "signature": case.signature or "",
                    "message": case.message,
                    "time": "" if case.time_s is None else f"{case.time_s:.3g}",
                    "metrics": _metrics_text(case.metrics),
                    "log": case.log,
                    "log_href": _log_href(target, out_abs) if target else None,
                    "file": case.file,
                }
            )
        details.append(
            {
                "anchor": anchors[(cell.host, cell.variant)],
                "host": cell.host,
                "variant": cell.variant,
                "css": state.replace(" ", "-"),
                "state": state,
                "label": text,
                "open": state not in (Outcome.PASSED.value, Outcome.SKIPPED.value, STATE_NO_TESTS),
                "files": cell.files,
                "cases": cases,
            }
        )
    template = env.get_template("matrix.html.j2")
    return template.render(
        generator=GENERATOR,
        generated_at=report.generated_at,
        totals_line=totals_line(report),
        n_inputs=len(report.inputs),
        variants=[{"id": v["id"], "title": _props_title(v["properties"])} for v in report.variants],
        rows=rows,
        details=details,
        problems=report.problems,
        legend=[s.replace(" ", "-") for s in (*CELL_STATE_ORDER, STATE_MISSING)],
    )


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


def main(argv: list[str] | None = None) -> int:
    """``repro report DIR_OR_FILE... [-o OUTDIR]``: 0 even with problems, 2 for a missing input."""
    parser = argparse.ArgumentParser(
        prog="repro report",
        description="Merge JUnit XML results (directories are searched for *.xml) into "
        "matrix.json, matrix.md and matrix.html.",
    )
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
    args = parser.parse_args(argv)
    try:
        report = build_report(args.inputs)
        for path, reason in report.problems:
            print(f"repro report: {path}: {reason}", file=sys.stderr)
        written = write_outputs(report, args.output)
    except ReproError as exc:
        print(f"repro report: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(
            f"repro report: error: cannot write outputs to {args.output}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 3
    for path in written:
        print(path)
    print(totals_line(report))
    return 0
