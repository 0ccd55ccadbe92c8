"""Failure signatures: name the cause of a failing case from its output.

The runner hands :func:`classify` the text a non-passing case left behind (stderr, stdout, rank
logs, a DataLoader worker's ``Original Traceback``, a torchrun summary, a faulthandler dump, host
kernel-log lines) and gets back one signature name, the line that decided it, and every match.
Hung cases are named by the watchdog (``hang_timeout``, ``hang.*``) and killed ones by
:func:`signal_signature`; this module only reads text and never imports torch.

The table (rows, sources, workarounds) is :mod:`repro.signatures.table`; this module matches its
pattern rows (:data:`~repro.signatures.table.SIGNATURES`) line by line, in precedence order.

Each line is attributed to at most one signature, the first row of the table that matches it, so
specific sub-types (``nccl_shm``, ``nccl_duplicate_gpu``, ``dataloader_shm_exhausted``,
``host_oom_killed_hint``) sit above their general parents (``nccl_init_failure``,
``dataloader_worker_killed``) and a crash name (``segfault``) above the launcher line that reports
it (``rank_failed``). One rule is not a plain pattern: the DB Dice loss's ``assert loss <= 1``
counts as ``nan_detected`` only when the traceback it is in ends in ``AssertionError`` (``nan <=
1`` is False, so NaN surfaces there without the word "nan"; F4-4).

Precedence (the cases each rule comes from are cited at the code that applies it):

1. ``environment`` rows (driver too old, forward compatibility, no kernel image and its hint,
   no ROCm code object, WSL GPU unavailable, container GPU setup) pre-empt everything else; the
   earliest wins, except that ``no_kernel_image`` beats the ``no_kernel_image_hint`` warning
   printed before it.
2. Otherwise the earliest ``root`` error wins, with demotions: an illegal instruction / illegal
   memory access after a cuDNN or NaN match is a secondary (poisoned-context) error;
   ``secondary`` rows (``nccl_timeout``, ``cpp_terminate``) lose to any root error.
3. ``wrapper`` rows (``Caught X in DataLoader worker process N``, torchrun's ``ChildFailedError``
   summary) win only when nothing inside or beside them matched.
4. ``warning`` and ``evidence`` rows (fork warning, CUDA-IPC producer warning, KFD workqueue and
   amdgpu kernel-log lines) win only when they are all there is: no other match and no Python
   traceback ending in an exception no row matched (that exception is then the ``unknown``
   failure's message).

When nothing matches the name is :data:`UNKNOWN` and the message is
:func:`first_meaningful_line`, so unknown failures still group by their real first line.

Memory is bounded whatever the input size (issue 9): :func:`classify_stream` reads a byte stream
in chunks, lines longer than ``lines.MAX_LINE_CHARS`` are cut, and a "line" longer than
``lines.MAX_LINE_SKIP_CHARS`` (``/dev/zero``, a binary file) ends the read with a note
(:mod:`repro.signatures.lines`). The verdict is the same as reading the whole text at once (rules
1-4 need only the earliest match of each signature); :attr:`Classification.matches` keeps at most
:data:`MAX_KEPT_MATCHES` matches, the earliest.
"""

from __future__ import annotations

import bisect
import re
import signal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from repro.signatures.lines import CHUNK_BYTES, LineReader
from repro.signatures.table import (
    ENVIRONMENT,
    EVIDENCE,
    ROOT,
    SECONDARY,
    SIGNAL_PREFIX,
    SIGNAL_SIGNATURES,
    SIGNATURE_BY_NAME,
    SIGNATURES,
    UNKNOWN,
    WARNING,
    WRAPPER,
    Signature,
)

#: Longest message kept (characters); longer lines are cut and end in "...".
MAX_MESSAGE_CHARS = 500
#: Most matches :attr:`Classification.matches` keeps (the earliest lines).
MAX_KEPT_MATCHES = 1000
# Distinct exception lines / matched lines remembered for precedence rule 4 (hashes).
_MAX_REMEMBERED = 100_000


@dataclass(frozen=True)
class Match:
    """A line attributed to a signature.

    Attributes:
        signature: the row that matched.
        line_no: 1-based line number in the text (``\\r`` and ``\\r\\n`` count as line breaks).
        line: the matching line, stripped.
    """

    signature: Signature
    line_no: int
    line: str


@dataclass(frozen=True)
class Classification:
    """The verdict of :func:`classify` / :func:`classify_stream`.

    Attributes:
        name: the winning signature name, or :data:`UNKNOWN`.
        message: the winning line (for unknown: :func:`first_meaningful_line`), stripped, at most
            :data:`MAX_MESSAGE_CHARS` characters.
        line_no: line number of the winning line; ``None`` for unknown.
        source: the winning row's ``source``; ``""`` for unknown.
        workaround: the winning row's ``workaround``; ``""`` for unknown.
        matches: the matches in line order (at most :data:`MAX_KEPT_MATCHES`, the earliest).
        notes: what was cut or not read (over-long lines, a read stopped), one sentence each.
    """

    name: str
    message: str
    line_no: int | None
    source: str
    workaround: str
    matches: tuple[Match, ...]
    notes: tuple[str, ...] = ()


# Names the precedence rules refer to.
_CUDA_ASYNC = frozenset({"cuda_illegal_instruction", "cuda_illegal_memory_access"})
_POISONERS = frozenset(
    {"cudnn_execution_failed", "cudnn_internal_error", "cudnn_no_engine", "nan_detected"}
)

# Structure of Python tracebacks, faulthandler dumps and launcher logs.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]: ?")
_TRACEBACK_HEADER = re.compile(r"^(?:Original )?Traceback \(most recent call last\):\s*$")
_TRACEBACK_HEADER_ANYWHERE = re.compile(
    r"^(?:\[(?:rank|default)\d+\]: ?)?(?:Original )?Traceback \(most recent call last\):[ \t]*$",
    re.MULTILINE,
)
_STACK_HEADER = re.compile(
    r"\(most recent call (?:last|first)\):\s*$"  # Traceback / Current thread 0x... / Stack
    r"|^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\s*$"  # faulthandler.dump_traceback_later
    r"|^Extension modules: "
    r"|^<no Python frame>\s*$"
    r"|^During handling of the above exception, another exception occurred:"
    r"|^The above exception was the direct cause of the following exception:"
)
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_CARETS = re.compile(r"^\s*[~^]+\s*$")
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::(?:\s.*)?)?$")
_ASSERTION_ERROR = re.compile(r"^(?:[A-Za-z_]\w*\.)*AssertionError\b")
_DB_DICE_ASSERT = re.compile(r"assert loss <= 1\b")
_DB_DICE_LITERAL = "assert loss <= 1"

_REGEX_META = frozenset(".^$*+?{}[]()|\\")
_QUANTIFIERS = frozenset("?*+{")
_MIN_NEEDLE = 3


def _split_alternatives(pattern: str) -> list[str]:
    """The top-level ``|`` alternatives of a pattern (groups and classes left whole)."""
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


def _literal_prefix(alternative: str) -> str:
    """The text every match of ``alternative`` starts with (``""`` when there is none)."""
    out: list[str] = []
    i = 0
    while i < len(alternative):
        c = alternative[i]
        if c == "\\":
            if i + 1 >= len(alternative) or alternative[i + 1].isalnum():
                break  # \d, \w, \b, ... are classes or assertions, not literals
            char, width = alternative[i + 1], 2
        elif c in _REGEX_META:
            break
        else:
            char, width = c, 1
        if alternative[i + width : i + width + 1] in _QUANTIFIERS:
            break  # "x?" / "x*" / "x{2}": that character may be absent or repeated
        out.append(char)
        i += width
    return "".join(out)


def _needles(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literals of which every match contains at least one, or ``None`` if some branch has none.

    ``needle in text`` runs at memory speed, so :func:`classify` skips a row's regular expression
    on a multi-MB log that contains none of its needles (most rows, for most logs).
    """
    if pattern.flags & re.IGNORECASE:
        return None
    needles = tuple(_literal_prefix(alt) for alt in _split_alternatives(pattern.pattern))
    if any(len(needle) < _MIN_NEEDLE for needle in needles):
        return None
    return needles


_NEEDLES: tuple[tuple[str, ...] | None, ...] = tuple(_needles(sig.pattern) for sig in SIGNATURES)
_NAN_INDEX = SIGNATURES.index(SIGNATURE_BY_NAME["nan_detected"])

_TIER_BY_KIND = {ENVIRONMENT: 0, ROOT: 2, SECONDARY: 3, WRAPPER: 4, WARNING: 5, EVIDENCE: 5}
_TIER_DEMOTED_ENVIRONMENT = 1
_TIER_WEAK = 5


def classify(text: str) -> Classification:
    """Name the cause of a failure from its output (see the module docstring for the rules).

    ``text`` may be several MB. There is no per-line loop in Python: a row's pattern scans the
    text once, and only if the text contains one of the literals every match of that row must
    contain (most rows are skipped at memory speed); then only matching lines are examined.
    """
    return _scan_text(text).result()


def classify_stream(stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> Classification:
    """:func:`classify` over a byte stream (a file opened ``"rb"``, ``sys.stdin.buffer``).

    Reads ``chunk_bytes`` at a time and decodes UTF-8 (invalid bytes become U+FFFD); memory stays
    bounded by a few chunks plus ``lines.MAX_LINE_CHARS``, whatever the stream's size. Reading
    stops at end of stream or at a line longer than ``lines.MAX_LINE_SKIP_CHARS`` (then
    ``notes`` says so). Raises OSError if the stream cannot be read.
    """
    scanner = _Scanner()
    reader = LineReader(scanner.feed_block)
    reader.feed_stream(stream, chunk_bytes)
    reader.close()
    scanner.notes.extend(reader.notes)
    return scanner.result()


def first_meaningful_line(text: str) -> str:
    """The line that best names an unmatched failure, stripped, at most 500 characters.

    Prefers the exception line that ends the first Python traceback (``ValueError: text``,
    ``pkg.mod.SomeError: text``, a bare ``AssertionError``); otherwise the first non-blank line
    that is not a traceback frame, a source line under one, a ``^^^`` marker, or a
    traceback/faulthandler header. ``""`` for blank text.
    """
    return _scan_text(text).unknown_message()


def signal_name(signum: int) -> str:
    """``11 -> "SIGSEGV"`` (from the :mod:`signal` module); unknown numbers give ``"signal N"``.

    A negative number (a ``Popen.returncode``) is read as the signal it stands for.
    """
    try:
        return signal.Signals(abs(signum)).name
    except ValueError:
        return f"signal {abs(signum)}"


def signal_signature(signum: int) -> str:
    """Signature name of a case killed by a signal (see "Exit status conventions").

    ``11 -> "segfault"``, ``6 -> "sigabrt"``, ``7 -> "sigbus"``, ``4 -> "host_sigill"``,
    ``9 -> "sigkill"``, ``15 -> "sigterm"`` (:data:`~repro.signatures.table.SIGNAL_SIGNATURES`),
    others ``"signal_<name>"`` (``"signal_sigusr1"``, ``"signal_99"`` for a number the
    :mod:`signal` module does not know). A negative number (a ``Popen.returncode``) is read as
    the signal it stands for.
    """
    n = abs(signum)
    known = SIGNAL_SIGNATURES.get(n)
    if known is not None:
        return known
    name = signal_name(n)
    if name.startswith("SIG"):
        return f"{SIGNAL_PREFIX}{name.lower()}"
    return f"{SIGNAL_PREFIX}{n}"


# -- Internals ----------------------------------------------------------------------------------


def _body(line: str) -> str:
    """A line without the ``[rank0]: `` prefix torchrun puts on each rank's output."""
    if line.startswith("["):
        return _RANK_PREFIX.sub("", line, count=1)
    return line


def _clip(line: str) -> str:
    line = line.strip()
    if len(line) > MAX_MESSAGE_CHARS:
        return line[: MAX_MESSAGE_CHARS - 3] + "..."
    return line


def _line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def _lines_from(text: str, pos: int) -> Iterator[str]:
    """The lines of ``text`` from offset ``pos`` (the start of a line) on."""
    while pos <= len(text):
        nxt = text.find("\n", pos)
        if nxt < 0:
            yield text[pos:]
            return
        yield text[pos:nxt]
        pos = nxt + 1


def _scan_text(text: str) -> _Scanner:
    scanner = _Scanner()
    reader = LineReader(scanner.feed_block)
    reader.feed(text)
    reader.close()
    scanner.notes.extend(reader.notes)
    return scanner


def _traceback_end(lines: Iterable[str]) -> tuple[bool, str | None]:
    """``(decided, exception)``: how a traceback whose frames start at ``lines`` ends.

    Frames, source lines and ``^^^`` markers are indented; the first unindented line shaped like
    ``pkg.Error: message`` ends the traceback (``(True, line)``). Stray unindented lines (another
    process writing to the same stream) are skipped; a new traceback header means this one was
    cut off (``(True, None)``). ``(False, None)``: ``lines`` ran out first.
    """
    for raw in lines:
        line = _body(raw)
        if not line.strip() or line[:1].isspace():
            continue
        if _TRACEBACK_HEADER.match(line):
            return True, None
        stripped = line.strip()
        if _EXCEPTION_LINE.match(stripped):
            return True, stripped
    return False, None


class _Scanner:
    """Blocks of whole lines in, one :class:`Classification` out, in bounded memory.

    Per block it runs the whole-text matching (needles, then each row's pattern over the block);
    what needs lines beyond the block, a traceback's closing exception line (for the first
    meaningful line, the DB Dice rule and precedence rule 4), waits in ``_waiting``. It keeps
    the earliest match of each signature (enough to pick the winner: see :meth:`_tier`).
    """

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.lines = 0  # line breaks seen: the next block starts at line self.lines + 1
        self._kept: list[Match] = []
        self._first: dict[str, Match] = {}
        self._matched: set[int] = set()  # hashes of matched lines (rule 4)
        self._unmatched: set[int] = set()  # hashes of traceback exceptions no match has named
        self._unmatched_overflow = False
        # ("header", is_first) or ("dice", line_no, line, index of the row that matched it).
        self._waiting: list[tuple] = []
        self._first_header: str = "none"  # none | waiting | done
        self._first_exception: str | None = None
        self._first_line: str | None = None
        self._under_frame = False

    def feed_block(self, block: str) -> None:
        if "\x1b" in block:
            block = _ANSI.sub("", block)
        if self._waiting:
            decided, exception = _traceback_end(_lines_from(block, 0))
            if decided:
                waiting, self._waiting = self._waiting, []
                for waiter in waiting:
                    self._resolve(waiter, exception)
        self._match(block)
        for header in _TRACEBACK_HEADER_ANYWHERE.finditer(block):
            waiter = ("header", self._first_header == "none")
            if waiter[1]:
                self._first_header = "waiting"
            self._wait_or_resolve(waiter, block, header.end())
        if self._first_line is None:
            self._scan_first_line(block)
        self.lines += block.count("\n")

    def result(self) -> Classification:
        self._finish()
        kept = tuple(self._kept)
        winner = self._pick()
        if winner is None:
            return Classification(
                UNKNOWN, self.unknown_message(), None, "", "", kept, tuple(self.notes)
            )
        sig = winner.signature
        return Classification(
            sig.name,
            _clip(winner.line),
            winner.line_no,
            sig.source,
            sig.workaround,
            kept,
            tuple(self.notes),
        )

    def unknown_message(self) -> str:
        """:func:`first_meaningful_line` of everything fed."""
        self._finish()
        if self._first_exception is not None:
            return _clip(self._first_exception)
        return _clip(self._first_line or "")

    # -- matching ---------------------------------------------------------------------------

    def _match(self, block: str) -> None:
        """Attribute each line of ``block`` some row matches to the first such row."""
        hits: dict[int, tuple[int, int]] = {}  # line start offset -> (row index, line end)
        for index, sig in enumerate(SIGNATURES):
            needles = _NEEDLES[index]
            if needles is not None and not any(needle in block for needle in needles):
                continue
            for found in sig.pattern.finditer(block):
                start, end = _line_bounds(block, found.start())
                held = hits.get(start)
                if held is None or index < held[0]:
                    hits[start] = (index, end)
        dice: dict[int, tuple[int, int | None]] = {}  # line start -> (line end, row that held it)
        if _DB_DICE_LITERAL in block:
            for found in _DB_DICE_ASSERT.finditer(block):
                start, end = _line_bounds(block, found.start())
                held = hits.get(start)
                if held is None or held[0] > _NAN_INDEX:
                    hits.pop(start, None)  # decided by how its traceback ends
                    dice[start] = (end, None if held is None else held[0])
        line_no, counted_to = self.lines + 1, 0
        for start in sorted(hits.keys() | dice.keys()):
            line_no += block.count("\n", counted_to, start)
            counted_to = start
            if start in dice:
                end, held_index = dice[start]
                waiter = ("dice", line_no, block[start:end].strip(), held_index)
                self._wait_or_resolve(waiter, block, end)
            else:
                index, end = hits[start]
                self._record(Match(SIGNATURES[index], line_no, block[start:end].strip()))

    def _wait_or_resolve(self, waiter: tuple, block: str, line_end: int) -> None:
        """Resolve ``waiter`` from the lines after offset ``line_end``, or keep it waiting."""
        if self._waiting:  # an earlier waiter is still open: this one ends the same way
            self._waiting.append(waiter)
            return
        decided, exception = _traceback_end(_lines_from(block, line_end + 1))
        if decided:
            self._resolve(waiter, exception)
        else:
            self._waiting.append(waiter)

    def _resolve(self, waiter: tuple, exception: str | None) -> None:
        if waiter[0] == "header":
            if exception is not None:
                self._remember_exception(exception)
            if waiter[1]:
                self._first_header, self._first_exception = "done", exception
            return
        _, line_no, line, held_index = waiter
        if exception is not None and _ASSERTION_ERROR.match(exception):
            # nan <= 1 is False: NaN reaches the DB Dice loss's assertion as a bare
            # AssertionError and never prints "nan" (F4-4, O1). Elsewhere the line proves nothing.
            self._record(Match(SIGNATURES[_NAN_INDEX], line_no, line))
        elif held_index is not None:
            self._record(Match(SIGNATURES[held_index], line_no, line))

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
            if _CARETS.match(line) or _STACK_HEADER.search(line):
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
        if self._tier(best) >= _TIER_WEAK and (self._unmatched or self._unmatched_overflow):
            # Rule 4 (precedence rule 1, F1-8, F5-7): the fork and CUDA-IPC warnings and
            # kernel-log evidence print in runs that pass; when an unmatched exception is what
            # failed the run, report it as unknown with its own line, not under a bystander.
            return None
        return best
