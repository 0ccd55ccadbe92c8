"""The scanner: blocks of whole lines in, one :class:`~repro.signatures.classification.Classification`
out, in bounded memory (:class:`_Scanner`); with no host facts, one scanner per hypothesis
(unknown, native, WSL2) and the log's own evidence picks (:class:`_HostNeutral`).

The public API over it is :mod:`repro.signatures.engine`."""

from __future__ import annotations

import bisect
import dataclasses
import re
from typing import Any

from repro.signatures import prefilter, words
from repro.signatures import table as tables
from repro.signatures.classification import Classification, Match
from repro.signatures.grammar import (
    _ANSI,
    _ASSERTION_ERROR,
    _CARETS,
    _COMPILE_EXCEPTION,
    _COMPILER_ERROR,
    _DB_DICE_ASSERT,
    _DB_DICE_LITERAL,
    _EXCEPTION_LINE,
    _FAILURE_EVIDENCE,
    _FAILURE_NEEDLES,
    _FRAME,
    _ROOT_CAUSE_TRACEBACK,
    _SPAWN_CHILD,
    _STACK_HEADER,
    _TRACEBACK_HEADER,
    _TRACEBACK_HEADER_ANYWHERE,
    _WRAPPER_EXCEPTION,
    _body,
    _clip,
    _line_bounds,
    _lines_from,
    _quiet,
    _traceback_end,
)
from repro.signatures.hostfacts import Evidence, HostFacts
from repro.signatures.lines import LineReader
from repro.signatures.precedence import (
    _ANNOUNCING_REPORTS,
    _CUDA_ASYNC,
    _GENERAL_REPORTS,
    _POISONERS,
    _SAME_REPORT_LINES,
    _TIER_BY_KIND,
    _TIER_DEMOTED_ENVIRONMENT,
    _TIER_WEAK,
    _WHAT_GPU_ERROR,
    _compile_for,
    _Compiled,
)
from repro.signatures.runoutput import NO_RUN_COARSE, RUN_CHARS, shows_run
from repro.signatures.table import SECONDARY, UNKNOWN, WRAPPER, Table
from repro.signatures.unmatched import (
    _CPP_FRAME,
    _KEYBOARD_INTERRUPT,
    _is_compiler,
    _Unmatched,
    uninformative,
)

#: A Python frame line anywhere in a block (rule 4c).
_FRAME_ANYWHERE = re.compile(r'^[ \t]*File "[^"]*", line \d+', re.MULTILINE)
#: The row rule 6 names: a hang the person describes (stuck, hangs, deadlock) in a log whose own
#: lines show a distributed job on NCCL (issue 30, round five).
_DESCRIBED_HANG = "hang.nccl"
#: Most matches :attr:`Classification.matches` keeps (the earliest lines).
MAX_KEPT_MATCHES = 1000
# Distinct exception lines / matched lines remembered for precedence rule 4 (hashes).
_MAX_REMEMBERED = 100_000


def _feed(scanner: _Scanner | _HostNeutral, text: str) -> None:
    reader = LineReader(scanner.feed_block)
    reader.feed(text)
    reader.close()
    scanner.notes.extend(reader.notes)


def _scan_text(text: str, host: HostFacts | None = None) -> _Scanner:
    scanner = _Scanner(_compile_for(tables.active(), host or HostFacts()))
    _feed(scanner, text)
    return scanner


def _for_host(host: HostFacts | None, table: Table | None) -> _Scanner | _HostNeutral:
    table = table or tables.active()
    if host is not None and host.wsl2 is not None:
        return _Scanner(_compile_for(table, host))
    return _HostNeutral(table, host or HostFacts())


#: How many GPU-error "what():" lines rule 2d keeps (the first ones; it reads the one within a
#: few lines after the deciding "terminate called").
_MAX_WHAT_ERRORS = 8


#: A line written as a person writes (rule 2e: an issue's title, a sentence), not one a program
#: logged (:data:`repro.signatures.words.NOT_A_LOG_LINE`: no exception name, log prefix, path or
#: timestamp first).
_PERSONS_LINE = re.compile(words.NOT_A_LOG_LINE + r"[ \t]*[A-Za-z]")

#: Rule 2e reads line 1 as a title only when the person's own words (a first-person line, a
#: question, a greeting) follow within this many lines, as an issue's description follows its
#: title (byteps#201: "As a setup I have ..." on line 4; pytorch#16831: "Hello, I faced ..." on
#: line 4); a log a program wrote alone keeps rule 2.
_TITLE_HEAD_LINES = 10

#: A shell or REPL prompt before a command (rule 8's fallback line reads past it).
_PROMPT_PREFIX = re.compile(r"^(?:\([\w.-]+\)[ \t]*)?(?:[\w.-]+@[\w.-]+:\S*|\S*)?[$#>%][ \t]+")


class _HostNeutral:
    """No host facts say whether the log came from WSL2: read the log's own evidence as it
    streams past, with one scanner per hypothesis (unknown, native, WSL2), and answer with the
    one the evidence picks (:class:`repro.signatures.hostfacts.Evidence`). Three times the
    matching work, in the same bounded memory."""

    def __init__(self, table: Table, facts: HostFacts) -> None:
        self.evidence = Evidence()
        self.facts = facts
        self.scanners = {
            wsl2: _Scanner(_compile_for(table, dataclasses.replace(facts, wsl2=wsl2)))
            for wsl2 in (None, False, True)
        }
        self.notes: list[str] = []

    def feed_block(self, block: str) -> None:
        self.evidence.feed(block)
        present: dict[object, Any] = {}  # each needle and pattern searched once, not per scanner
        for scanner in self.scanners.values():
            scanner.feed_block(block, present)

    def chosen(self) -> _Scanner:
        """The scanner of the hypothesis the log's evidence picks."""
        return self.scanners[self.evidence.facts().wsl2]

    def result(self) -> Classification:
        found = self.evidence.facts()
        scanner = self.scanners[found.wsl2]
        scanner.notes.extend(self.notes)
        return dataclasses.replace(scanner.result(), host_evidence=tuple(self.evidence.lines))


class _Scanner:
    """Blocks of whole lines in, one :class:`Classification` out, in bounded memory.

    Per block it runs the whole-text matching (needles, then each row's pattern over the block);
    what needs lines beyond the block, a traceback's closing exception line (for the first
    meaningful line, the DB Dice rule and precedence rule 4), waits in ``_waiting``. It keeps
    the earliest match of each signature (enough to pick the winner: see :meth:`_tier`).
    """

    def __init__(self, compiled: _Compiled) -> None:
        # Rows (lines) whose host condition does not hold are not in ``compiled``.
        self._rows = compiled.rows
        self._patterns = compiled.patterns
        self._needles = compiled.needles
        self._nan_index = compiled.nan_index
        self.notes: list[str] = []
        self.lines = 0  # line breaks seen: the next block starts at line self.lines + 1
        self._kept: list[Match] = []
        self._first: dict[str, Match] = {}
        self._matched: set[int] = set()  # hashes of matched lines (rule 4)
        self._unmatched: set[int] = set()  # hashes of traceback exceptions no match has named
        self._unmatched_overflow = False
        # Rule 2d: "what():" lines that carry a GPU runtime's error, (line_no, line), the first
        # few; and the one that decided an unknown failure.
        self._what_errors: list[tuple[int, str]] = []
        self._what_decides: tuple[int, str] | None = None
        # ("header", is_first, line_no) or ("dice", line_no, line, index of the row that held it).
        self._waiting: list[tuple] = []
        self._first_header: str = "none"  # none | waiting | done
        # Rule 4c: frames pasted before any traceback header (the header cut off) end in an
        # exception like a traceback's; read once per log.
        self._headerless = False
        self._first_exception: str | None = None
        self._first_line: str | None = None
        self._under_frame = False
        # The decisive line (issue 21, item 3): traceback exceptions in order, (line_no, text).
        self._exceptions: list[tuple[int, str]] = []
        self._root_cause: tuple[int, str] | None = None  # torchrun's "Root Cause" traceback
        self._compiler_error: tuple[int, str] | None = None
        self.failure_evidence = False
        # Rule 8: whether the text shows a run (and how much was read for one); its last
        # non-blank line (the decisive line's fallback when every line is a prompt or banner).
        self._run = False
        self._run_read = 0
        self._last_line = ""
        self._table = compiled.table
        self._issue30 = _Unmatched(compiled.table)  # pasted stacks, informative line, coarse family
        # Rule 6's row: a hang the person describes in an NCCL job's log.
        self._described_hang_row = compiled.table.by_name.get(_DESCRIBED_HANG)

    def feed_block(self, block: str, present: dict[object, Any] | None = None) -> None:
        """Scan the next whole lines; ``present``: a cache of ``needle in block`` and of each
        pattern's matches that scanners of the same block share (:class:`_HostNeutral`)."""
        present = {} if present is None else present
        if "block" not in present:  # what every scanner of this block shares, computed once
            clean = _ANSI.sub("", block) if "\x1b" in block else block
            present["block"] = clean
            present["newlines"] = clean.count("\n")
            # Rows read every line; what decides whether and what failed (tracebacks, failure
            # evidence, issue 30's error lines) reads past the exceptions CPython ignored.
            quiet = _quiet(clean)
            present["quiet"] = quiet
            # Its own cache only when it differs (no reference from present to itself: a cycle
            # would keep every block alive until the cyclic GC ran).
            present["quiet_present"] = None if quiet is clean else {}
            present["headers"] = (
                [(m.start(), m.end()) for m in _TRACEBACK_HEADER_ANYWHERE.finditer(quiet)]
                if "Traceback" in quiet
                else []
            )
        block, quiet = present["block"], present["quiet"]
        quiet_present = present["quiet_present"]
        if quiet_present is None:
            quiet_present = present
        if self._waiting:
            decided, exception, index = _traceback_end(_lines_from(quiet, 0))
            if decided:
                waiting, self._waiting = self._waiting, []
                for waiter in waiting:
                    self._resolve(waiter, exception, self.lines + 1 + index)
        self._match(block, present)
        if "what()" in block and len(self._what_errors) < _MAX_WHAT_ERRORS:
            for found in _WHAT_GPU_ERROR.finditer(block):
                line_no = self.lines + 1 + block.count("\n", 0, found.start())
                self._what_errors.append((line_no, found.group(0).strip()))
                if len(self._what_errors) >= _MAX_WHAT_ERRORS:
                    break
        if not self._headerless and self._first_header == "none" and 'File "' in quiet:
            self._headerless_frames(quiet, present["headers"])
        line_no, counted_to = self.lines + 1, 0
        for start, end in present["headers"]:
            line_no += quiet.count("\n", counted_to, start)
            counted_to = start
            waiter = ("header", self._first_header == "none", line_no)
            if waiter[1]:
                self._first_header = "waiting"
            self._wait_or_resolve(waiter, quiet, end, line_no)
        if self._first_line is None:
            self._scan_first_line(quiet)
        self._scan_decisive(quiet, quiet_present)
        self._issue30.feed(quiet, quiet_present, self.lines + 1)
        self._feed_run(block, present)
        self.lines += present["newlines"]

    def _feed_run(self, block: str, present: dict[object, Any]) -> None:
        """Rule 8: look for run output (:func:`repro.signatures.runoutput.shows_run`) in the raw block (CPython's
        "Exception ignored in" counts: the program ran on), in the first :data:`RUN_CHARS`."""
        tail = block.rstrip()
        if tail:
            self._last_line = tail[tail.rfind("\n") + 1 :].strip()
        if self._run or self._run_read >= RUN_CHARS or self.failure_evidence or self._first:
            return  # found, read far enough, or moot (a failure line or a row's match decides)
        part = (
            block
            if self._run_read + len(block) <= RUN_CHARS
            else block[: RUN_CHARS - self._run_read]
        )
        self._run_read += len(part)
        key = ("run", len(part))
        if key not in present:
            present[key] = shows_run(part)
        self._run = present[key]

    def _headerless_frames(self, quiet: str, headers: list[tuple[int, int]]) -> None:
        """Rule 4c (issue 30, round eight): Python frames pasted with their traceback header cut
        off (pytorch/pytorch#2567: the person's sentence, then ``File "..."`` lines, then
        ``RuntimeError: cuda runtime error (4) : unspecified launch failure``) end in an
        exception as a traceback does; it counts among the log's exceptions (an exception no
        row names still beats a secondary row after it: rule 4b). Only frames before the log's
        first header, once per log."""
        frame = _FRAME_ANYWHERE.search(quiet)
        if frame is None or (headers and headers[0][0] < frame.start()):
            self._headerless = bool(headers)
            return
        self._headerless = True
        line_no = self.lines + 1 + quiet.count("\n", 0, frame.start())
        self._wait_or_resolve(("header", False, line_no), quiet, frame.start() - 1, line_no - 1)

    def _scan_decisive(self, block: str, present: dict[object, Any]) -> None:
        """Remember the first compiler ``error:`` line and torchrun's root-cause exception."""
        if (
            not self.failure_evidence
            and prefilter.present(present, block, _FAILURE_NEEDLES)
            and (_FAILURE_EVIDENCE.search(block) or _COMPILER_ERROR.search(block))
        ):
            self.failure_evidence = True
        if self._compiler_error is None and "error: " in block:
            found = _COMPILER_ERROR.search(block)
            if found:
                line_no = self.lines + 1 + block.count("\n", 0, found.start())
                self._compiler_error = (line_no, found.group(0).strip())
        if self._root_cause is None and "traceback" in block:
            for header in _ROOT_CAUSE_TRACEBACK.finditer(block):
                base = self.lines + 2 + block.count("\n", 0, header.end())
                for index, raw in enumerate(_lines_from(block, header.end() + 1)):
                    if not raw.strip() or raw.startswith("    "):
                        continue  # frames and source lines are indented deeper
                    stripped = raw.strip()
                    if _EXCEPTION_LINE.match(stripped) and not _FRAME.match(raw):
                        self._root_cause = (base + index, stripped)
                    break
                if self._root_cause is not None:
                    break
        if self._root_cause is None and "terminated with the following error" in block:
            # mp.spawn: the child's exception is the first unindented exception-shaped line
            # after the marker (its traceback's frames are indented; users often elide them).
            for marker in _SPAWN_CHILD.finditer(block):
                base = self.lines + 2 + block.count("\n", 0, marker.start())
                for index, raw in enumerate(_lines_from(block, marker.end() + 1)):
                    stripped = raw.strip()
                    if not stripped or raw[:1].isspace() or _TRACEBACK_HEADER.match(raw):
                        continue
                    if _EXCEPTION_LINE.match(stripped):
                        self._root_cause = (base + index, stripped)
                        break
                if self._root_cause is not None:
                    break

    def decisive(self) -> tuple[int | None, str] | None:
        """``(line_no, line)`` of the root cause (see :func:`decisive_line`), or None."""
        self._finish()
        root = next(
            (e for e in self._exceptions if not _WRAPPER_EXCEPTION.search(e[1])),
            self._exceptions[0] if self._exceptions else None,
        )
        if self._root_cause is not None and (
            root is None or _WRAPPER_EXCEPTION.search(root[1]) or root[0] > self._root_cause[0]
        ):
            root = self._root_cause
        if self._compiler_error is not None and (
            root is None or _COMPILE_EXCEPTION.search(root[1])
        ):
            return self._compiler_error
        return root

    def result(self) -> Classification:
        self._finish()
        kept = tuple(self._kept)
        winner = self._pick()
        evidence = self.failure_evidence or bool(self._first) or self._issue30.shows_failure()
        if winner is None or self._tier(winner) >= _TIER_WEAK:
            hang = self._issue30.hang(self._only_interrupted())
            if hang is not None:  # rule 5: a pasted stack names the hang
                row, line_no, line = hang
                return Classification(
                    row.name,
                    _clip(line),
                    line_no,
                    row.source,
                    row.workaround,
                    kept,
                    tuple(self.notes),
                )
            said = self._issue30.described_hang(self._only_interrupted())
            if said is not None and self._described_hang_row is not None:
                # Rule 6: the person says the job hangs and the log is an NCCL job's.
                row = self._described_hang_row
                return Classification(
                    row.name,
                    _clip(said[1]),
                    said[0],
                    row.source,
                    row.workaround,
                    kept,
                    tuple(self.notes),
                )
        if winner is None and not evidence:
            described = self._issue30.described_failure()
            if described is not None:
                # Rule 7 (issue 30, round six): nothing matched and no line of the log shows a
                # failure, but the person says one happened (killed, stuck, NaN loss, "I got
                # this error"): not "no failure found" but an unknown failure, that line deciding.
                # A process killed and a NaN loss name their rows (host_oom_killed_hint,
                # nan_detected); the other kinds stay unknown, said plainly.
                line_no, line, coarse, name = described
                row = self._table.by_name.get(name) if name else None
                if row is not None:
                    return Classification(
                        row.name, _clip(line), line_no, row.source, row.workaround, kept,
                        tuple(self.notes), True,
                    )  # fmt: skip
                return Classification(
                    UNKNOWN, _clip(line), line_no, "", "", kept, tuple(self.notes), True,
                    coarse=coarse,
                )  # fmt: skip
        if winner is None and not evidence and not self._run:
            # Rule 8 (issue 30, round eight): no failure line, and no output of a run either (a
            # few command lines, an environment listing): an excerpt cut before its failure or a
            # failure only described, not a healthy run. Unknown, said plainly.
            message = self.unknown_message() or _PROMPT_PREFIX.sub("", self._last_line)
            return Classification(
                UNKNOWN, _clip(message), None, "", "", kept, tuple(self.notes), False,
                coarse=NO_RUN_COARSE, run_evidence=False,
            )  # fmt: skip
        if winner is None:
            what = self._what_decides
            return Classification(
                UNKNOWN,
                self.unknown_message() if what is None else _clip(what[1]),
                None if what is None else what[0],
                "",
                "",
                kept,
                tuple(self.notes),
                evidence,
                coarse=self._issue30.coarse(_is_compiler(self._compiler_error)) if evidence else "",
            )
        sig = winner.signature
        message, line_no = _clip(winner.line), winner.line_no
        if sig.kind == WRAPPER:
            # A wrapper's own line says only "a rank / worker failed": the message is what
            # failed inside it (issue 21, item 3), the row stays the wrapper's.
            decisive = self.decisive()
            if decisive is not None and not _WRAPPER_EXCEPTION.search(decisive[1]):
                line_no, message = decisive[0], _clip(decisive[1])
        elif sig.family == "compile" and self._compiler_error is not None:
            # "C++ compile error" says only that the compiler failed: its first error: line
            # says why (issue 21, item 3).
            line_no, message = self._compiler_error[0], _clip(self._compiler_error[1])
        return Classification(
            sig.name,
            message,
            line_no,
            sig.source,
            sig.workaround,
            kept,
            tuple(self.notes),
            evidence,
        )

    def unknown_message(self) -> str:
        """:func:`decisive_line` of everything fed."""
        self._finish()
        decisive = self.decisive()
        informative = self._issue30.informative()
        if decisive is not None:
            if informative and _KEYBOARD_INTERRUPT.match(decisive[1]):
                return _clip(informative)  # Ctrl-C ended the traceback: the error line says more
            return _clip(decisive[1])
        if self._first_exception is not None:
            return _clip(self._first_exception)
        if informative:
            return _clip(informative)
        # A pasted stack with no error line: its innermost frame says where it waits.
        return _clip(self._issue30.top_frame() or self._first_line or "")

    def _only_interrupted(self) -> bool:
        """Whether no traceback ended in an exception no row named, other than the
        ``KeyboardInterrupt`` a Ctrl-C on a hung process prints (rule 5)."""
        if self._unmatched_overflow:
            return False
        return all(
            _KEYBOARD_INTERRUPT.match(exception) or hash(exception) not in self._unmatched
            for _, exception in self._exceptions
        )

    # -- matching ---------------------------------------------------------------------------

    def _match(self, block: str, present: dict[object, Any]) -> None:
        """Attribute each line of ``block`` some row matches to the first such row; ``present``
        caches needle look-ups and each pattern's match offsets."""
        hits: dict[int, tuple[int, int]] = {}  # line start offset -> (row index, line end)
        for index, pattern in enumerate(self._patterns):
            if pattern is None:
                continue
            needles = self._needles[index]
            if needles is not None and not prefilter.present(present, block, needles):
                continue
            offsets = present.get(pattern)
            if offsets is None:
                offsets = present[pattern] = [m.start() for m in pattern.finditer(block)]
            for offset in offsets:
                start, end = _line_bounds(block, offset)
                held = hits.get(start)
                if held is None or index < held[0]:
                    hits[start] = (index, end)
        dice: dict[int, tuple[int, int | None]] = {}  # line start -> (line end, row that held it)
        if _DB_DICE_LITERAL in block and self._nan_index is not None:
            for found in _DB_DICE_ASSERT.finditer(block):
                start, end = _line_bounds(block, found.start())
                held = hits.get(start)
                if held is None or held[0] > self._nan_index:
                    hits.pop(start, None)  # decided by how its traceback ends
                    dice[start] = (end, None if held is None else held[0])
        line_no, counted_to = self.lines + 1, 0
        for start in sorted(hits.keys() | dice.keys()):
            line_no += block.count("\n", counted_to, start)
            counted_to = start
            if start in dice:
                end, held_index = dice[start]
                waiter = ("dice", line_no, block[start:end].strip(), held_index)
                self._wait_or_resolve(waiter, block, end, line_no)
            else:
                index, end = hits[start]
                self._record(Match(self._rows[index], line_no, block[start:end].strip()))

    def _wait_or_resolve(self, waiter: tuple, block: str, line_end: int, line_no: int) -> None:
        """Resolve ``waiter`` (on line ``line_no``, ending at offset ``line_end``) from the lines
        after it, or keep it waiting."""
        if self._waiting:  # an earlier waiter is still open: this one ends the same way
            self._waiting.append(waiter)
            return
        decided, exception, index = _traceback_end(_lines_from(block, line_end + 1))
        if decided:
            self._resolve(waiter, exception, line_no + 1 + index)
        else:
            self._waiting.append(waiter)

    def _resolve(self, waiter: tuple, exception: str | None, line_no: int | None = None) -> None:
        if waiter[0] == "header":
            if exception is not None:
                self._remember_exception(exception)
                if len(self._exceptions) < MAX_KEPT_MATCHES and line_no is not None:
                    self._exceptions.append((line_no, exception))
            if waiter[1]:
                self._first_header, self._first_exception = "done", exception
            return
        _, at, line, held_index = waiter
        if exception is not None and _ASSERTION_ERROR.match(exception):
            # nan <= 1 is False: NaN reaches the DB Dice loss's assertion as a bare
            # AssertionError and never prints "nan" (F4-4, O1). Elsewhere the line proves nothing.
            self._record(Match(self._rows[self._nan_index], at, line))
        elif held_index is not None:
            self._record(Match(self._rows[held_index], at, line))

    def _finish(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            self._resolve(waiter, None)

    def _record(self, match: Match) -> None:
        name = match.signature.name
        held = self._first.get(name)
        if held is None or match.line_no < held.line_no:
            self._first[name] = match
        key = hash(_body(match.line).strip())
        self._unmatched.discard(key)
        if len(self._matched) < _MAX_REMEMBERED:
            self._matched.add(key)
        kept = self._kept
        if len(kept) < MAX_KEPT_MATCHES or match.line_no < kept[-1].line_no:
            bisect.insort(kept, match, key=lambda m: m.line_no)
            del kept[MAX_KEPT_MATCHES:]

    def _remember_exception(self, exception: str) -> None:
        key = hash(exception)
        if key in self._matched:
            return
        if len(self._unmatched) < _MAX_REMEMBERED:
            self._unmatched.add(key)
        else:
            self._unmatched_overflow = True

    def _scan_first_line(self, block: str) -> None:
        """The first line that is not blank, a frame, a source line under one, a marker or a
        header (the fallback of :func:`first_meaningful_line`)."""
        for raw in _lines_from(block, 0):
            line = _body(raw)
            if not line.strip():
                continue
            if _FRAME.match(line):
                self._under_frame = True
                continue
            if self._under_frame and line[:1].isspace():
                continue  # the source line (or carets) printed under a frame
            self._under_frame = False
            if (
                _CARETS.match(line)
                or _STACK_HEADER.search(line)
                or _CPP_FRAME.match(line)
                or uninformative(line)
            ):
                continue
            self._first_line = line.strip()
            return

    # -- precedence -------------------------------------------------------------------------

    def _tier(self, match: Match) -> int:
        """Precedence tier of one match (lower wins; ties go to the earliest line).

        Exact from the earliest match of each signature: a demotion depends only on whether a
        signature occurs at all (no_kernel_image) or before the match (the poisoners).
        """
        name = match.signature.name
        if name == "no_kernel_image_hint" and "no_kernel_image" in self._first:
            # The "sm_120 is not compatible" warning only announces the error; let the error name
            # the cell so hint-then-error and error-alone runs group together (#150733).
            return _TIER_DEMOTED_ENVIRONMENT
        if name in _CUDA_ASYNC and any(
            poisoner in self._first and self._first[poisoner].line_no < match.line_no
            for poisoner in _POISONERS
        ):
            # CUDA errors are asynchronous and poison the context: O1 printed
            # CUDNN_STATUS_EXECUTION_FAILED first and the illegal instruction only at teardown,
            # and "NaN/Inf gradient detected" at step 122 before an illegal memory access at 162.
            return _TIER_BY_KIND[SECONDARY]
        return _TIER_BY_KIND[match.signature.kind]

    def _more_specific(self, best: Match) -> Match:
        """Rule 2b (issue 30, round three): one error report printed over a few lines is named
        by its most specific row. When ``best`` is a general report (:data:`_GENERAL_REPORTS`),
        a row above its row in the table (a sub-type sits above its
        parent) at the same tier, matching within :data:`_SAME_REPORT_LINES` lines after it,
        decides instead when both rows are of one family or both are ``environment`` rows:
        verl-project/verl#161 prints the DistBackendError (nccl_init_failure), then "Duplicate
        GPU detected" (nccl_duplicate_gpu); chenfei-wu/TaskMatrix#379 wraps the
        cudaGetDeviceCount() message before its "Error 804" (forward_compat_unsupported).

        Rule 2c (issue 30, round five): when ``best`` only announces an exception whose message
        follows (:data:`_ANNOUNCING_REPORTS`: "terminate called after throwing ..." then
        "what(): MSG"), the earliest row of the same tier matching within
        :data:`_SAME_REPORT_LINES` lines after it, of any family, names it (sgl-project/sglang#1693:
        the watchdog's timeout in c10::DistBackendError's what() is nccl_timeout).
        """
        if best.signature.name in _ANNOUNCING_REPORTS:
            tier = self._tier(best)
            told = [
                m
                for m in self._first.values()
                if 0 < m.line_no - best.line_no <= _SAME_REPORT_LINES and self._tier(m) == tier
            ]
            return min(told, key=lambda m: m.line_no) if told else best
        if best.signature.name not in _GENERAL_REPORTS:
            return best
        order = {sig.name: at for at, sig in enumerate(self._rows)}
        tier = self._tier(best)
        rank = order.get(best.signature.name, len(order))
        closer = [
            m
            for m in self._first.values()
            if 0 < m.line_no - best.line_no <= _SAME_REPORT_LINES
            and self._tier(m) == tier
            and order.get(m.signature.name, len(order)) < rank
            and (
                m.signature.family == best.signature.family or tier == _TIER_BY_KIND["environment"]
            )
        ]
        if not closer:
            return best
        return min(closer, key=lambda m: (order[m.signature.name], m.line_no))

    def _pick(self) -> Match | None:
        """The deciding match, or ``None`` when the failure is unknown."""
        if not self._first:
            return None
        # Rule 1, environment first (field reports, precedence rule 3): driver_too_old, no
        # kernel image, ... explain every error after them; F3-2 shows an arch-unsupported wheel
        # surfacing as CUDNN_STATUS_EXECUTION_FAILED after the "not compatible" warning.
        # Rule 2, earliest root wins (precedence rule 1): CUDA errors cascade, so the first one
        # is the cause. Secondary rows lose to any root: nccl_timeout fires on ranks that
        # survived another rank's crash (F5-8), and "terminate called ..." follows a Python
        # exception or prints its cause on the next "what():" line (F1-3).
        # Rule 3, wrappers last among errors (precedence rule 2): "Caught X in DataLoader worker
        # process N" (F1-1) and ChildFailedError (F5-5, F5-6) contain the real error; their own
        # line only decides when nothing inside them matched.
        best = min(self._first.values(), key=lambda m: (self._tier(m), m.line_no))
        best = self._below_the_title(self._more_specific(best))
        if self._tier(best) >= _TIER_WEAK and (self._unmatched or self._unmatched_overflow):
            # Rule 4 (precedence rule 1, F1-8, F5-7): the fork and CUDA-IPC warnings and
            # kernel-log evidence print in runs that pass; when an unmatched exception is what
            # failed the run, report it as unknown with its own line, not under a bystander.
            return None
        if self._tier(best) == _TIER_BY_KIND[SECONDARY] and self._unnamed_before(best.line_no):
            # Rule 4b (issue 30, round six): a secondary row (terminate called, the NCCL
            # watchdog's timeout) loses to any root error; an exception no row names, ended a
            # traceback before it, is such an error: unknown, that exception deciding
            # (facebookresearch/DeepSDF#40: "RuntimeError: CUDA error: unspecified launch
            # failure", then "terminate called after throwing an instance of 'c10::Error'").
            return None
        if best.signature.name in _ANNOUNCING_REPORTS:
            # Rule 2d (issue 30, round eight): "terminate called" whose "what():" carries a GPU
            # runtime's error no row read (rule 2c found none) only reports that error: unknown,
            # the what() line deciding, as rule 4b for an unnamed Python exception before it
            # (facebookresearch/DeepSDF#40, pytorch/pytorch#2567: "unspecified launch failure").
            told = next(
                (w for w in self._what_errors if 0 < w[0] - best.line_no <= _SAME_REPORT_LINES),
                None,
            )
            if told is not None:
                self._what_decides = told
                return None
        return best

    def _below_the_title(self, best: Match) -> Match:
        """Rule 2e (issue 30, round fourteen): a root row read on the log's first line written as
        a person writes (a title: :data:`_PERSONS_LINE`) yields to another root row (not a general
        report, :data:`_GENERAL_REPORTS`) the program's output matches on a later line. The title
        names what the person thought the failure was; the output below it names the error that
        happened. Line 1 is a title only when the person's words follow within
        :data:`_TITLE_HEAD_LINES` lines. First-sight errors in two sets: bytedance/byteps#201
        (test8, title "Segmentation fault docker", then BytePS's "Check failed: ... CUDA: an
        illegal memory access was encountered") and pytorch/pytorch#16831 (test11, title "cuDNN error:
        CUDNN_STATUS_INTERNAL_ERROR on cudnn.benchmark = True", a comment's traceback ending
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"). A log whose first line the
        program printed ("RuntimeError: ...") keeps rule 2's earliest error, and so does a log
        whose program printed the title's error before the other one (a line in the person's
        words repeating it, byteps#201's "I got segmentation fault", does not count:
        :data:`repro.signatures.words.PERSONS_WORDS`)."""
        root = _TIER_BY_KIND[tables.ROOT]
        if best.line_no != 1 or self._tier(best) != root or not _PERSONS_LINE.match(best.line):
            return best
        said = self._issue30.persons_line()
        if said is None or said > _TITLE_HEAD_LINES:
            return best  # no person writes under it: line 1 is the program's, not a title
        below = [
            m
            for m in self._first.values()
            if m.line_no > 1
            and m.signature.name != best.signature.name
            and m.signature.name not in _GENERAL_REPORTS
            and self._tier(m) == root
        ]
        if not below:
            return best
        told = min(below, key=lambda m: m.line_no)
        if any(
            m.signature.name == best.signature.name
            and 1 < m.line_no < told.line_no
            and not words.PERSONS_WORDS.search(m.line)
            for m in self._kept
        ):
            return best  # the program printed the title's error first: rule 2 stands
        return told

    def _unnamed_before(self, line_no: int) -> bool:
        """Whether a traceback ended before line ``line_no`` in an exception no row named (not
        a KeyboardInterrupt)."""
        return any(
            at < line_no
            and not _KEYBOARD_INTERRUPT.match(exception)
            and hash(exception) in self._unmatched
            for at, exception in self._exceptions
        )
