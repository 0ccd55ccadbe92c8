"""Read JUnit XML from any producer, untrusted, into the report's records.

Every input is untrusted (../shared/junit-notes.md): each file is opened as a regular file only
(never blocking on a FIFO or device), read with a byte cap, and parsed with defusedxml with DTDs
forbidden, so no entity is ever expanded and nothing is fetched. ``<testcase>`` elements are
counted and classified here, one outcome each (error > failure > skipped > passed, plus gtest/ctest
attribute-only skips), never from the declared counts. A file that cannot be read becomes an
``invalid`` record with its path and reason; nothing a file contains can stop the merge.

Inside a directory input, symlinks that lead outside that directory are not followed (neither
JUnit files, nor ``run.json``, nor case logs). Every text taken from a file is length-capped
(``repro.junit.records.MAX_*``). This module never imports torch and never reads case logs.
"""

from __future__ import annotations

import hashlib
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import defusedxml
import defusedxml.ElementTree as DET

from repro import properties as property_names
from repro.junit.excerpt import log_excerpt
from repro.junit.files import InputRefused, is_under, read_capped
from repro.junit.inputs import (  # noqa: F401 (re-exported for repro.report)
    ORIGIN_FOREIGN,
    ORIGIN_RUN,
    ORIGIN_STRAY,
    STRAY_VARIANT,
    InputFile,
    display,
    find_files,
    origin_of_file,
)
from repro.junit.records import (
    MAX_EXCERPT_CHARS,
    MAX_KEY_CHARS,
    MAX_NAME_CHARS,
    MAX_PROPERTY_CHARS,
    STATE_INVALID,
    STATE_NO_TESTS,
    STATE_OK,
    UNKNOWN_HOST,
    CaseRecord,
    InputRecord,
    finding_fields,
    rerun_fields,
    truncate,
)
from repro.junit.sidecar import RESULT_NAME, SIDECAR_NAME, read_sidecar, recorded_digest
from repro.junit.writer import METRIC_PREFIX
from repro.outcomes import Outcome

#: Resource limits applied before and while parsing (a file over a cap is invalid, never cut).
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
MAX_TESTCASES_PER_FILE = 100_000
#: Testcases of one report. What bounds ``repro report``'s memory: each case kept costs about
#: 0.7 KB (its record and its matrix.json entry), so a report at this cap peaks near 1 GB
#: (benchmarks/memory_at_scale.py; 2,000,000 died at 6.2 GB, issue 25). A fleet of 20 hosts x 50
#: variants x 112 cases is 112,000.
MAX_TESTCASES_TOTAL = 1_000_000
MAX_DEPTH = 64
MAX_WARNINGS_PER_FILE = 5
#: Properties kept per testsuite and per testcase (the rest are ignored, with a warning).
MAX_PROPERTIES = 500
#: A metric beyond this magnitude is recorded null: 1.7e308 would overflow every mean and plot.
MAX_METRIC = 1e15
#: Length cap of a signature (``type=`` or ``repro.signature``).
MAX_SIGNATURE_CHARS = 200

#: gtest/ctest attribute values that mean "did not run" (junit-notes.md).
_SKIP_STATUS = {"notrun", "disabled"}
_SKIP_RESULT = {"suppressed", "skipped"}
_OUTCOME_VALUES = {outcome.value for outcome in Outcome}
NEWLINE = b"\n"


@dataclass
class Budget:
    """What is left of the per-report caps (bytes read, testcases) while files are read."""

    bytes_left: int = MAX_TOTAL_BYTES
    testcases_left: int = MAX_TESTCASES_TOTAL


def _local(tag: Any) -> str:
    """Element tag without its namespace (``{ns}testsuite`` -> ``testsuite``)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _number(text: str | None) -> float | None:
    """A finite number within ±MAX_METRIC, else None (``"1,5"``, ``"nan"``, ``"1e999"``)."""
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and abs(value) <= MAX_METRIC else None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _properties(element: ET.Element) -> Iterator[tuple[str, str]]:
    """``(name, value)`` of each ``<properties><property>`` child of ``element`` (capped)."""
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
            yield truncate(name, MAX_KEY_CHARS), truncate(value, MAX_PROPERTY_CHARS)


class _Invalid(Exception):
    """Raised inside the per-file reader: the file is invalid for the given reason."""


def parse(data: bytes) -> ET.Element:
    """The root element of untrusted XML ``data``; DOCTYPE and entities are refused.

    Raises ``_Invalid`` (caught by :class:`FileReader`) with a one-line reason.
    """
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


def classify(testcase: ET.Element, props: Mapping[str, str]) -> tuple[Outcome, ET.Element | None]:
    """Outcome of one testcase and the result element it came from (if any).

    Precedence error > failure > skipped > passed; gtest ``status="notrun"``/``result="suppressed"``
    and ctest ``status="disabled"`` are skips (junit-notes.md); our ``repro.outcome`` property
    (crashed, hung) wins over the element.
    """
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
    declared = (props.get(property_names.OUTCOME) or "").strip()
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
    return truncate(message)


def _excerpt(element: ET.Element | None, signature: str | None = None) -> str:
    """The part of a result element's body a person reads first (``repro.junit.excerpt``)."""
    if element is None or _local(element.tag) == "skipped":
        return ""
    return log_excerpt((element.text or "").strip(), signature, MAX_EXCERPT_CHARS)


def safe_log(log: str) -> PurePosixPath | None:
    """A ``repro.log`` value if it is a plain relative path inside the run directory."""
    log = log.strip().replace("\\", "/")
    if not log or "\x00" in log or len(log) > MAX_NAME_CHARS:
        return None
    path = PurePosixPath(log)
    if path.is_absolute() or ".." in path.parts or ":" in path.parts[0]:
        return None
    return path


def walk(root: ET.Element) -> Iterator[tuple[ET.Element, bool]]:
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


@dataclass
class _Counters:
    """Warnings given once per kind and file, with a count of the rest."""

    seen: dict[str, int] = field(default_factory=dict)

    def first(self, kind: str) -> bool:
        self.seen[kind] = self.seen.get(kind, 0) + 1
        return self.seen[kind] <= MAX_WARNINGS_PER_FILE


class FileReader:
    """Reads one JUnit file into an :class:`InputRecord` (never raises for bad content).

    After :meth:`read`: ``warnings`` lists one-line notes about the file, ``log_files`` maps each
    case's ``log`` string to the existing log file (inside the input tree only).
    """

    def __init__(self, source: InputFile, budget: Budget):
        self.source = source
        self.path = source.path
        self.display = display(source.path)
        self.budget = budget
        self.warnings: list[str] = []
        self.log_files: dict[str, Path] = {}
        self.counters = _Counters()
        self.root_real = os.path.realpath(source.root)
        #: SHA-256 (hex) of the bytes read, once read.
        self.digest: str | None = None

    def warn(self, text: str, kind: str | None = None) -> None:
        if kind is None or self.counters.first(kind):
            self.warnings.append(text)

    def read(self) -> InputRecord:
        origin, run_dir = self.source.resolved()
        sidecar = None
        if origin == ORIGIN_RUN:  # only a run's own result is keyed by its run.json
            sidecar, sidecar_problem = read_sidecar(self.path, self.source.root)
            if sidecar_problem:
                self.warn(sidecar_problem)
        host, variant, variant_props = self._key_from_sidecar(sidecar)
        record = InputRecord(self.display, STATE_OK, None, host or "", variant or "")
        record.origin = origin
        if sidecar is not None and isinstance(sidecar.get("started"), str):
            record.run_started = truncate(sidecar["started"], MAX_KEY_CHARS)
        if sidecar is not None and isinstance(sidecar.get("closes"), str):
            record.closes = truncate(sidecar["closes"], MAX_KEY_CHARS)
        record.variant_properties.update(variant_props)
        try:
            if self.source.refused:
                raise _Invalid(self.source.refused)
            self._read_into(record)
        except _Invalid as exc:
            record.state, record.reason, record.cases = STATE_INVALID, str(exc), []
        except Exception as exc:  # a bad file must never stop the merge
            record.state, record.cases = STATE_INVALID, []
            record.reason = (
                f"cannot read as JUnit ({type(exc).__name__}: {truncate(str(exc), 200)})"
            )
        if origin == ORIGIN_STRAY and run_dir is not None:
            self._stray(record, run_dir)
        expected = recorded_digest(sidecar) if sidecar is not None else None
        if expected is not None and self.digest is not None and self.digest != expected:
            record.changed = (
                f"changed after the run: its SHA-256 is {self.digest[:12]}…, the one "
                f"{SIDECAR_NAME} recorded when the run wrote it is {expected[:12]}…"
            )
            if sidecar is not None and not sidecar.get("finished"):
                # killed between rewriting junit.xml and recording its digest (one fsync)
                record.changed += " (or the run was killed as it wrote it: it never finished)"
        if not record.host:
            record.host = UNKNOWN_HOST
        if not record.variant:
            parent = os.path.basename(os.path.dirname(os.path.realpath(self.path)))
            record.variant = self._key(parent, "variant id") or "unknown variant"
        if record.state == STATE_OK and sidecar is not None:
            record.partial = self._check_sidecar(sidecar)
        return record

    def _stray(self, record: InputRecord, run_dir: Path) -> None:
        """Key a stray file (an XML file inside a run directory that is not its ``junit.xml``)
        as an input of its own: its own column, named after its path, so nothing it claims
        (a run's host and variant, a case restated as passed) can reach that run's cell; its
        host properties are not taken (they would describe a host from a file a case wrote)."""
        try:
            rel = self.path.relative_to(run_dir.parent).as_posix()
        except ValueError:
            rel = self.display
        record.variant = truncate(STRAY_VARIANT.format(path=rel), MAX_KEY_CHARS)
        record.variant_properties.pop(property_names.VARIANT_ID, None)
        record.host_properties.clear()
        self.warn(
            f"not the run's result: an XML file inside the run directory {display(run_dir)} "
            f"that is not its {RESULT_NAME}; merged as an input of its own (column {record.variant!r}), "
            "never as that run's results"
        )

    def _key(self, value: str, what: str) -> str:
        """A host key or variant id, stripped and capped (with a warning when it was cut)."""
        value = value.strip()
        if len(value) > MAX_KEY_CHARS:
            self.warn(f"{what} longer than {MAX_KEY_CHARS} characters; cut")
            value = truncate(value, MAX_KEY_CHARS)
        return value

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
            for name, value in sorted(variant.items())[:MAX_PROPERTIES]:
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    props[property_names.variant_field(truncate(name, MAX_KEY_CHARS))] = truncate(
                        str(value), MAX_PROPERTY_CHARS
                    )
        host = self._key(host, "run.json host_key") if isinstance(host, str) else None
        variant_id = (
            self._key(variant_id, "run.json variant.id") if isinstance(variant_id, str) else None
        )
        if not host or not variant_id:
            self.warn(f"{SIDECAR_NAME} lacks host_key or variant.id; keyed from the XML instead")
        if variant_id:
            props[property_names.VARIANT_ID] = variant_id
        return host or None, variant_id or None, props

    def _check_sidecar(self, sidecar: dict[str, Any]) -> str | None:
        """Why the run did not finish (``interrupted``, fewer ``cases_done`` than
        ``cases_total``, no ``finished`` time), warned once, or None for a complete run."""
        finished = sidecar.get("finished", "")
        total, done = sidecar.get("cases_total"), sidecar.get("cases_done")
        why = None
        if isinstance(total, int) and isinstance(done, int) and done < total:
            why = f"run incomplete: {done} of {total} cases done"
        elif finished is None:
            why = "run not finished (run.json has no finish time)"
        if sidecar.get("interrupted") is True:
            why = f"{why}, interrupted" if why else "run interrupted"
        if why:
            self.warn(why)
        return why

    def _read_into(self, record: InputRecord) -> None:
        if self.budget.bytes_left <= 0:
            raise _Invalid(f"over the total size cap for one report ({MAX_TOTAL_BYTES} bytes)")
        try:
            data = read_capped(self.path, MAX_FILE_BYTES)
        except InputRefused as exc:
            raise _Invalid(str(exc)) from None
        self.digest = hashlib.sha256(data).hexdigest()
        if len(data) > self.budget.bytes_left:
            raise _Invalid(f"over the total size cap for one report ({MAX_TOTAL_BYTES} bytes)")
        self.budget.bytes_left -= len(data)

        root = parse(data)
        del data
        root_tag = _local(root.tag)
        if root_tag not in ("testsuites", "testsuite"):
            hint = " (NUnit?)" if root_tag in ("test-run", "test-results") else ""
            raise _Invalid(f"root <{truncate(root_tag, 100)}> is not JUnit{hint}")

        suite_props: dict[str, str] = {}
        for element, is_suite in walk(root):
            if is_suite:
                for name, value in _properties(element):
                    if len(suite_props) < MAX_PROPERTIES:
                        suite_props.setdefault(name, value)
                    else:
                        self.warn("testsuite property over the cap ignored", "properties")
                continue
            if len(record.cases) >= MAX_TESTCASES_PER_FILE:
                raise _Invalid(f"over testcase cap ({MAX_TESTCASES_PER_FILE})")
            if self.budget.testcases_left <= 0:
                raise _Invalid(
                    f"over the total testcase cap for one report ({MAX_TESTCASES_TOTAL})"
                )
            self.budget.testcases_left -= 1
            record.cases.append(self._case(element))
        for kind, seen in self.counters.seen.items():
            if seen > MAX_WARNINGS_PER_FILE:
                self.warn(f"{seen - MAX_WARNINGS_PER_FILE} more {kind}")

        for name, value in suite_props.items():
            if name.startswith("host."):
                record.host_properties[name] = value
            elif name.startswith(("variant.", "runtime.")):
                record.variant_properties.setdefault(name, value)
        prop_host = self._key(suite_props.get(property_names.HOST_KEY, ""), "property host.key")
        prop_variant = self._key(
            suite_props.get(property_names.VARIANT_ID, ""), "property variant.id"
        )
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
            if len(props) < MAX_PROPERTIES:
                props.setdefault(name, value)
        outcome, element = classify(testcase, props)
        signature = (
            props.get(property_names.SIGNATURE)
            or (element.get("type") if element is not None else None)
            or None
        )
        if signature is None and outcome not in (Outcome.PASSED, Outcome.SKIPPED):
            signature = "unknown"
        classname = testcase.get("classname") or ""
        scenario = classname[len("repro.") :] if classname.startswith("repro.") else classname
        name = testcase.get("name") or ""
        if len(name) > MAX_NAME_CHARS:
            self.warn(
                f"testcase name of {len(name)} characters cut to {MAX_NAME_CHARS}", "long names"
            )

        raw_time = testcase.get("time")
        time_s = _number(raw_time)
        if raw_time is not None and raw_time.strip() != "" and time_s is None:
            self.warn(
                f"testcase {truncate(name, 100)!r}: time {truncate(raw_time, 40)!r} is not a number; recorded null",
                "testcases with a time that is not a number",
            )
        metrics: dict[str, float | None] = {}
        for key, value in sorted(props.items()):
            if key.startswith(METRIC_PREFIX) and len(key) > len(METRIC_PREFIX):
                metrics[key[len(METRIC_PREFIX) :]] = number = _number(value)
                if number is None and _is_float(value):
                    self.warn(
                        f"testcase {truncate(name, 100)!r}: {key} {truncate(value, 40)!r} is not a "
                        f"finite number within ±{MAX_METRIC:g}; recorded null",
                        "metrics that are not a usable number",
                    )
        found = finding_fields(props)["findings"] if outcome is Outcome.PASSED else ()
        message = _message(element)
        if found and not message:  # "1 finding: RuntimeError: context has already been set"
            noun = "finding" if len(found) == 1 else "findings"
            message = truncate(f"{len(found)} {noun}: " + "; ".join(found))
        return CaseRecord(
            scenario=truncate(scenario, MAX_KEY_CHARS),
            case=truncate(name, MAX_NAME_CHARS),
            outcome=outcome,
            signature=truncate(signature, MAX_SIGNATURE_CHARS) if signature else None,
            message=message,
            excerpt=_excerpt(element, signature),
            time_s=time_s,
            metrics=metrics,
            log=self._log(props.get(property_names.LOG)),
            file=self.display,
            findings=found,
            **rerun_fields(props),
        )

    def _log(self, value: str | None) -> str | None:
        """The displayed log path; the file is linked only when it exists inside the input tree."""
        log_rel = safe_log(value) if value else None
        if log_rel is None:
            return None
        target = self.path.parent / log_rel
        log = display(target)
        if target.is_file():
            real = os.path.realpath(target)
            if is_under(real, self.root_real):  # a log symlinked out of the tree is not linked
                self.log_files[log] = Path(real)
        return log
