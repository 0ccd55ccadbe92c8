"""Write a run's results as JUnit XML with junitparser, atomically.

Layout (../shared/DESIGN.md "The runner"): one ``<testsuite name=SCENARIO>`` per scenario;
each case is ``<testcase classname="repro.SCENARIO" name=CASE_ID time=SECONDS>``. Suite
properties carry the fingerprint (``host.*``, ``runtime.*``, ``variant.*``) and ``repro.*`` run
metadata; testcase properties carry ``repro.outcome``, ``repro.signature`` and ``metric.*``.
Non-passes use ``<failure>`` (outcome failed) or ``<error>`` (error, crashed, hung) with
``type=SIGNATURE`` and ``message=`` the first line; skips use ``<skipped message=REASON>``.
Other JUnit readers see a normal file; ``repro.outcome`` keeps crashed/hung distinct for ours.

This module only writes. Reading (untrusted, any producer) lives in ``repro.report.report``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from repro.outcomes import CaseResult, Outcome

#: Testcase property names (also read back by repro.report.report).
PROP_OUTCOME = "repro.outcome"
PROP_SIGNATURE = "repro.signature"
PROP_LOG = "repro.log"
METRIC_PREFIX = "metric."

#: JUnit bodies are capped so one chatty case cannot make the file unreadable (bytes of text).
MAX_DETAIL_CHARS = 16_000


def xml_safe(text: str) -> str:
    """Drop characters XML 1.0 cannot carry (NUL and other C0 controls from crashed processes)."""
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)


def _testcase(result: CaseResult) -> TestCase:
    case = TestCase(
        result.case_id, classname=f"repro.{result.scenario}", time=round(result.duration_s, 3)
    )
    props = Properties()
    props.add_property(Property(PROP_OUTCOME, result.outcome.value))
    if result.signature:
        props.add_property(Property(PROP_SIGNATURE, result.signature))
    if result.log_path:
        props.add_property(Property(PROP_LOG, result.log_path))
    for name, value in sorted(result.properties.items()):
        props.add_property(Property(name, xml_safe(str(value))))
    for name, value in sorted(result.metrics.items()):
        props.add_property(Property(METRIC_PREFIX + name, repr(float(value))))
    case.append(props)

    message = xml_safe(result.message)[:1000]
    detail = xml_safe(result.detail)[-MAX_DETAIL_CHARS:]
    if result.outcome is Outcome.SKIPPED:
        case.result = [Skipped(message or "skipped")]
    elif result.outcome is Outcome.FAILED:
        element = Failure(message, result.signature or "unknown")
        element.text = detail
        case.result = [element]
    elif result.outcome in (Outcome.ERROR, Outcome.CRASHED, Outcome.HUNG):
        element = Error(message, result.signature or "unknown")
        element.text = detail
        case.result = [element]
    return case


def build_xml(
    results: Iterable[CaseResult], suite_properties: Mapping[str, str], hostname: str = ""
) -> JUnitXml:
    """Group results by scenario into testsuites (first-seen order) with the given properties."""
    suites: dict[str, TestSuite] = {}
    for result in results:
        suite = suites.get(result.scenario)
        if suite is None:
            suite = TestSuite(result.scenario)
            if hostname:
                suite.hostname = hostname
            for name, value in sorted(suite_properties.items()):
                suite.add_property(name, xml_safe(str(value)))
            suites[result.scenario] = suite
        suite.add_testcase(_testcase(result))
    xml = JUnitXml("repro-matrix")
    for suite in suites.values():
        suite.update_statistics()
        xml.add_testsuite(suite)
    xml.update_statistics()
    return xml


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader (or a crash) sees either the old or the new file.

    Writes a temporary file in the same directory, fsyncs it, then ``os.replace``s it.
    Raises OSError if the directory is not writable.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_junit(
    path: Path,
    results: Iterable[CaseResult],
    suite_properties: Mapping[str, str],
    hostname: str = "",
) -> None:
    """Atomically (re)write ``path`` with every result so far. Raises OSError on I/O failure."""
    xml = build_xml(results, suite_properties, hostname)
    data = b'<?xml version="1.0" encoding="utf-8"?>\n' + xml.tostring()
    write_atomic(path, data)
