"""Write a run's results as JUnit XML with junitparser, atomically.

Layout (../shared/DESIGN.md "The runner"): one ``<testsuite name=SCENARIO>`` per scenario;
each case is ``<testcase classname="repro.SCENARIO" name=CASE_ID time=SECONDS>``. Suite
properties carry the fingerprint (``host.*``, ``runtime.*``, ``variant.*``) and ``repro.*`` run
metadata; testcase properties carry ``repro.outcome``, ``repro.signature`` and ``metric.*``.
Non-passes use ``<failure>`` (outcome failed) or ``<error>`` (error, crashed, hung) with
``type=SIGNATURE`` and ``message=`` the first line; skips use ``<skipped message=REASON>``.
Other JUnit readers see a normal file; ``repro.outcome`` keeps crashed/hung distinct for ours.

Every string that reaches the XML (suite names, case ids, class names, signatures, messages,
details, property and metric names and values, the hostname) passes :func:`xml_safe`, so nothing a
case, a matrix.yaml parameter or a crashed process prints can make the file unreadable (issue 9).

This module only writes. Reading (untrusted, any producer) lives in ``repro.report.report``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from repro import properties as property_names
from repro.outcomes import CaseResult, Outcome

METRIC_PREFIX = "metric."

#: JUnit bodies are capped so one chatty case cannot make the file unreadable (bytes of text).
MAX_DETAIL_CHARS = 16_000


#: What stands in for a character XML 1.0 cannot carry.
REPLACEMENT = "\ufffd"
_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
# The complement of XML 1.0's Char production (https://www.w3.org/TR/xml/#charsets):
# #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: object) -> str:
    """``str(text)`` with every character XML 1.0 cannot carry replaced by U+FFFD.

    Replaced: NUL and the other C0 controls but tab, LF and CR (crashed processes, ESC colour
    codes, a ``\\x01`` in a matrix.yaml parameter), lone surrogates (``os.fsdecode(b"\\xff")``:
    they cannot be encoded as UTF-8 and would crash the writer), U+FFFE and U+FFFF. Never
    written as character references: ``&#1;`` is not well-formed XML 1.0 either.
    """
    return _NOT_XML_CHAR.sub(REPLACEMENT, str(text))


def _testcase(result: CaseResult) -> TestCase:
    case = TestCase(
        xml_safe(result.case_id),
        classname=xml_safe(f"repro.{result.scenario}"),
        time=round(result.duration_s, 3),
    )
    signature = xml_safe(result.signature)
    props = Properties()
    props.add_property(Property(property_names.OUTCOME, result.outcome.value))
    if signature:
        props.add_property(Property(property_names.SIGNATURE, signature))
    if result.log_path:
        props.add_property(Property(property_names.LOG, xml_safe(result.log_path)))
    for name, value in sorted(result.properties.items()):
        props.add_property(Property(xml_safe(name), xml_safe(value)))
    for name, value in sorted(result.metrics.items()):
        props.add_property(Property(xml_safe(METRIC_PREFIX + name), repr(float(value))))
    case.append(props)

    message = xml_safe(result.message)[:1000]
    detail = xml_safe(result.detail)[-MAX_DETAIL_CHARS:]
    if result.outcome is Outcome.SKIPPED:
        case.result = [Skipped(message or "skipped")]
    elif result.outcome is Outcome.FAILED:
        element = Failure(message, signature or "unknown")
        element.text = detail
        case.result = [element]
    elif result.outcome in (Outcome.ERROR, Outcome.CRASHED, Outcome.HUNG):
        element = Error(message, signature or "unknown")
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
            suite = TestSuite(xml_safe(result.scenario))
            if hostname:
                suite.hostname = xml_safe(hostname)
            for name, value in sorted(suite_properties.items()):
                suite.add_property(xml_safe(name), xml_safe(value))
            suites[result.scenario] = suite
        suite.add_testcase(_testcase(result))
    xml = JUnitXml("repro-matrix")
    for suite in suites.values():
        suite.update_statistics()
        xml.add_testsuite(suite)
    xml.update_statistics()
    return xml


#: A temporary file younger than this (seconds) is never swept: its writer may not hold its
#: lock yet (it is taken right after the file is created).
STALE_TEMP_AGE_S = 60.0


def _create_temp(path: Path) -> tuple[int, str]:
    """Open a new, unique temporary file beside ``path`` with mode 0o666 less the umask, and hold
    an exclusive flock on it until it is closed (:func:`sweep_stale_temps` leaves locked ones).

    ``tempfile.mkstemp`` always creates 0600, which would leave results unreadable to the group
    and others however the user's umask is set (issue 12); ``os.open`` lets the kernel apply it.
    """
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
        except FileExistsError:
            continue
        with contextlib.suppress(OSError):  # a filesystem without flock: never swept early
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd, str(tmp)
    raise FileExistsError(f"{path.parent}: no free temporary file name for {path.name}")


def sweep_stale_temps(path: Path, now: float | None = None) -> list[Path]:
    """Remove the temporary files :func:`_create_temp` left beside ``path`` when their writer
    died (a killed ``repro report`` left an 18.9 MB ``.matrix.json.*.tmp``, issue 25): those no
    process holds a lock on and older than :data:`STALE_TEMP_AGE_S`. Judged by the lock, not by
    a pid, so a live writer in another pid namespace is never swept. Returns what was removed;
    never raises."""
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.[0-9a-f]{{12}}\.tmp$")
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        if not pattern.match(name):
            continue
        tmp = path.parent / name
        try:
            fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if now - os.fstat(fd).st_mtime < STALE_TEMP_AGE_S:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while its writer lives
            os.unlink(tmp)
            removed.append(tmp)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader (or a crash) sees either the old or the new file.

    Writes a temporary file in the same directory, created with the user's umask (0644 under the
    usual 022), fsyncs it, then ``os.replace``s it. Raises OSError if the directory is not
    writable.
    """
    tmp = write_temp(path, lambda handle: handle.write(data))
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_temp(path: Path, write: Callable[[IO[bytes]], object]) -> str:
    """Stream a new version of ``path`` into a locked temporary file beside it: ``write`` gets
    the binary file handle (so a large output is never held in memory whole). Returns the
    temporary file's path, fsynced, for the caller to ``os.replace`` onto ``path``; removes it
    and re-raises when ``write`` or the I/O fails."""
    fd, tmp = _create_temp(Path(path))
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


@dataclass(frozen=True)
class Digest:
    """What was written: the SHA-256 (hex) and size (bytes) of a file's content, recorded in
    ``run.json`` so the report can tell the runner's ``junit.xml`` from one changed later."""

    sha256: str
    size: int

    @classmethod
    def of(cls, data: bytes) -> Digest:
        return cls(hashlib.sha256(data).hexdigest(), len(data))


def write_junit(
    path: Path,
    results: Iterable[CaseResult],
    suite_properties: Mapping[str, str],
    hostname: str = "",
) -> Digest:
    """Atomically (re)write ``path`` with every result so far; the :class:`Digest` of what was
    written. Raises OSError on I/O failure."""
    xml = build_xml(results, suite_properties, hostname)
    data = b'<?xml version="1.0" encoding="utf-8"?>\n' + xml.tostring()
    write_atomic(path, data)
    return Digest.of(data)
