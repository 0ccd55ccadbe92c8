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
   no ROCm code object, CUDA init failed / device busy on a native host, WSL GPU unavailable,
   container GPU setup) pre-empt everything else; the
   earliest wins, except that ``no_kernel_image`` beats the ``no_kernel_image_hint`` warning
   printed before it.
2. Otherwise the earliest ``root`` error wins, with demotions: an illegal instruction / illegal
   memory access after a cuDNN or NaN match is a secondary (poisoned-context) error;
   ``secondary`` rows (``nccl_timeout``, ``cpp_terminate``) lose to any root error. When the
   winner is a general report (an NCCL error code, cudaGetDeviceCount()'s unexpected error), a
   more specific row (higher in the table, same tier and family, or both ``environment``)
   matching within a few lines after it names the report instead (issue 30, round three).
3. ``wrapper`` rows (``Caught X in DataLoader worker process N``, torchrun's ``ChildFailedError``
   summary) win only when nothing inside or beside them matched.
4. ``warning`` and ``evidence`` rows (fork warning, CUDA-IPC producer warning, KFD workqueue and
   amdgpu kernel-log lines) win only when they are all there is: no other match and no Python
   traceback ending in an exception no row matched (that exception is then the ``unknown``
   failure's message).

5. Pasted stacks (issue 30): when no error row decides and the only exception (if any) is a
   ``KeyboardInterrupt``, a stack dump pasted into the log (gdb ``bt``, ``py-spy dump``,
   faulthandler, the traceback Ctrl-C printed) is read against the watchdog's ``hang.*`` rows'
   ``stacks``, as the watchdog reads its own dumps (:func:`pasted_hang`).

When nothing matches the name is :data:`UNKNOWN` and the message is
:func:`first_meaningful_line`, so unknown failures still group by their real first line: a
traceback's exception, else the most informative error line, never a debugger banner, a prompt
or an info line (:func:`informative_line`); :attr:`Classification.coarse` names the coarse family
the text shows (:func:`coarse_family`), and ``repro classify`` says plainly that no row matched.

Memory is bounded whatever the input size (issue 9): :func:`classify_stream` reads a byte stream
in chunks, lines longer than ``lines.MAX_LINE_CHARS`` are cut, and a "line" longer than
``lines.MAX_LINE_SKIP_CHARS`` (a binary blob) is skipped past its head with a note, the lines
after it still read (:mod:`repro.signatures.lines`). The verdict is the same as reading the whole text at once (rules
1-4 need only the earliest match of each signature); :attr:`Classification.matches` keeps at most
:data:`MAX_KEPT_MATCHES` matches, the earliest.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import signal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from repro.signatures import prefilter
from repro.signatures import table as tables
from repro.signatures.hostfacts import Evidence, HostFacts
from repro.signatures.lines import CHUNK_BYTES, LineReader
from repro.signatures.table import (
    ENVIRONMENT,
    EVIDENCE,
    ROOT,
    SECONDARY,
    SIGNAL_PREFIX,
    SIGNATURES,
    UNKNOWN,
    WARNING,
    WRAPPER,
    Signature,
    Table,
)

#: Longest message kept (characters); longer lines are cut and end in "...".
MAX_MESSAGE_CHARS = 500
#: How far after the deciding line a more specific row still belongs to the same error report
#: (a wrapped message, an exception and its cause on the next lines: rule 2b).
_SAME_REPORT_LINES = 5
#: Rows whose line reports an error code or a generic failure whose cause a more specific row
#: reads on the next lines (rule 2b); any other deciding row keeps "the earliest error is the
#: cause" (a CUDA error cascade names its first error).
_GENERAL_REPORTS = frozenset({"nccl_init_failure", "cuda_unavailable_host_unknown"})
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
        message: the decisive line, stripped, at most :data:`MAX_MESSAGE_CHARS` characters: the
            winning row's line; for a wrapper row (``rank_failed``, ``dataloader_worker_error``)
            and for unknown the root cause (:func:`decisive_line`).
        line_no: line number of the message's line; ``None`` when it has none.
        source: the winning row's ``source``; ``""`` for unknown.
        workaround: the winning row's ``workaround``; ``""`` for unknown.
        matches: the matches in line order (at most :data:`MAX_KEPT_MATCHES`, the earliest).
        notes: what was cut or not read (over-long lines, a read stopped), one sentence each.
        failure_evidence: whether the text shows any failure at all (see :attr:`clean`).
        host_evidence: the log lines that told whether the host is WSL2 / native / a container
            when no host facts were given (:class:`repro.signatures.hostfacts.Evidence`).
        coarse: for an unknown failure, the coarse family its text shows ("a ROCm runtime
            error", "a process killed by signal 7 (SIGBUS)", "a C++ abort", ...; issue 30,
            item 3), ``""`` when it shows none or a row matched.
    """

    name: str
    message: str
    line_no: int | None
    source: str
    workaround: str
    matches: tuple[Match, ...]
    notes: tuple[str, ...] = ()
    failure_evidence: bool = True
    host_evidence: tuple[str, ...] = ()
    coarse: str = ""

    @property
    def clean(self) -> bool:
        """No row matched and nothing in the text looks like a failure (no traceback, no
        exception line, no compiler ``error:``, no crash or ``FAILED`` text): "no failure
        found", not an ``unknown`` failure (issue 21, item 6)."""
        return self.name == UNKNOWN and not self.failure_evidence


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
#: Exceptions that only carry another one: the root cause is inside (mp.spawn, torchrun,
#: DataLoader workers, subprocess launchers).
_WRAPPER_EXCEPTION = re.compile(
    r"^(?:[\w.]+\.)?(?:ProcessRaisedException|ChildFailedError|CalledProcessError)\b"
    r"|Caught \w+ in DataLoader worker process \d+"
)
#: Exceptions that say "a compiler failed": its first ``error:`` line is the decisive one.
_COMPILE_EXCEPTION = re.compile(
    r"CppCompileError|CompilationError|CalledProcessError|BackendCompilerFailed|InductorError"
    r"|CUDACompileError|CompileError"
)
#: A compiler's diagnostic: ``file.cpp:12:3: error: ...``, ``gcc: fatal error: ...``.
_COMPILER_ERROR = re.compile(r"^(?:\S+?:(?:\d+:(?:\d+:)?)? )?(?:fatal )?error: \S.*$", re.MULTILINE)
#: torchrun's "Root Cause (first observed failure)" block carries the rank's traceback here, on
#: the ``traceback :`` line or the next one (pytorch/pytorch#66182's format).
_ROOT_CAUSE_TRACEBACK = re.compile(
    r"^[ \t]*traceback[ \t]*:[ \t]*(?:\n[ \t]*)?Traceback \(most recent call last\):[ \t]*$",
    re.MULTILINE,
)
#: mp.spawn's marker before the failing process's own traceback (torch.multiprocessing.spawn).
_SPAWN_CHILD = re.compile(
    r"^-- Process \d+ terminated with the following error:[ \t]*$", re.MULTILINE
)
#: Text that shows a failure happened (a clean log has none of it; issue 21, item 6).
_FAILURE_EVIDENCE = re.compile(
    r"^(?:\[(?:rank|default)\d+\]: ?)?(?:Original )?Traceback \(most recent call last\):"
    # An exception line, also as pasted in a Markdown code span or quote (`RuntimeError: ...`:
    # wmyw96/FAST-NN#1) or raised from a module's ``errors`` namespace under another name
    # (triton.runtime.errors.OutOfResources: pytorch/helion#470).
    r"|^(?:`|> ?)?(?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt)(?::|$)"
    r"|^[\w.]+\.errors\.\w+: "
    r"|Segmentation fault|core dumped|Fatal Python error|^Aborted\b|^Killed\s*$|\bFAILED\b"
    r"|exit(?:ed)? (?:with )?(?:status|code)[: ]+-?[1-9]|exitcode\s*:\s*-?[1-9]",
    re.MULTILINE,
)
#: Literals one of which every :data:`_FAILURE_EVIDENCE` match contains (a cheap pre-check: the
#: expression itself costs about 0.5 s on a 3 MB progress log).
_FAILURE_NEEDLES = (
    "Traceback",
    "Error",
    "Exception",
    "Interrupt",
    "Segmentation fault",
    "core dumped",
    "Aborted",
    "Killed",
    "FAILED",
    "exit",
    "error: ",
    ".errors.",
)
#: CPython's report of an exception it ignored (sys.unraisablehook: raised in ``__del__``, a
#: weakref callback, at interpreter shutdown): ``Exception ignored in: <obj>``, its traceback and
#: exception line; the program went on, so none of it is a failure (issue 30, round two). The
#: frames and source lines are indented, the exception line is not.
_IGNORED_TRACEBACK = re.compile(
    r"^Exception ignored\b[^\n]*\n"
    r"(?:(?:Original )?Traceback \(most recent call last\):[ \t]*\n)?"
    r"(?:[ \t][^\n]*\n|\n)*"
    r"(?:(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::[^\n]*)?$)?",
    re.MULTILINE,
)
_DB_DICE_ASSERT = re.compile(r"assert loss <= 1\b")
_DB_DICE_LITERAL = "assert loss <= 1"


@dataclass(frozen=True)
class _Compiled:
    """A table's output rows as matched on one kind of host: per row, the pattern of its lines
    whose host condition holds (``None``: the row is inactive there) and that pattern's needles."""

    table: Table
    rows: tuple[Signature, ...]
    patterns: tuple[re.Pattern[str] | None, ...]
    needles: tuple[tuple[str, ...] | None, ...]
    nan_index: int | None


_COMPILED: dict[tuple[int, HostFacts], _Compiled] = {}


def _compile_for(table: Table, facts: HostFacts) -> _Compiled:
    key = (id(table), facts)
    found = _COMPILED.get(key)
    if found is not None and found.table is table:
        return found
    patterns: list[re.Pattern[str] | None] = []
    for sig in table.patterns:
        lines = [line.pattern for line in sig.lines if facts.applies(line.when)]
        if not facts.applies(sig.when) or not lines:
            patterns.append(None)
        elif len(lines) == len(sig.lines):
            patterns.append(sig.pattern)
        else:
            patterns.append(re.compile("|".join(lines)))
    names = [sig.name for sig in table.patterns]
    compiled = _Compiled(
        table,
        table.patterns,
        tuple(patterns),
        tuple(None if p is None else prefilter.needles(p) for p in patterns),
        names.index("nan_detected") if "nan_detected" in names else None,
    )
    if len(_COMPILED) > 64:  # users' tables come and go (tests); the shipped ones stay few
        _COMPILED.clear()
    _COMPILED[key] = compiled
    return compiled


_NEEDLES: tuple[tuple[str, ...] | None, ...] = tuple(
    prefilter.needles(sig.pattern) for sig in SIGNATURES
)

_TIER_BY_KIND = {ENVIRONMENT: 0, ROOT: 2, SECONDARY: 3, WRAPPER: 4, WARNING: 5, EVIDENCE: 5}
_TIER_DEMOTED_ENVIRONMENT = 1
_TIER_WEAK = 5


def classify(
    text: str, host: HostFacts | None = None, table: Table | None = None
) -> Classification:
    """Name the cause of a failure from its output (see the module docstring for the rules).

    ``host``: what is known about the host the text came from; rows (and lines) with a ``when``
    condition apply only where it holds (repro.signatures.hostfacts). When ``host`` does not say
    whether it is WSL2 (``None``, or ``wsl2=None``), the log's own evidence decides (``uname``
    kernel strings, ``/usr/lib/wsl`` paths, the nvidia-smi header); with none, the
    ``unknown_host`` rows name the alternatives instead of assuming WSL2. ``table``: default
    :func:`repro.signatures.table.active`. ``text`` may be several MB. There is no per-line loop
    in Python: a row's pattern scans the text once, and only if the text contains one of the
    literals every match of that row must contain (most rows are skipped at memory speed); then
    only matching lines are examined.
    """
    scanner = _for_host(host, table)
    _feed(scanner, text)
    return scanner.result()


def classify_stream(
    stream: BinaryIO,
    chunk_bytes: int = CHUNK_BYTES,
    host: HostFacts | None = None,
    table: Table | None = None,
) -> Classification:
    """:func:`classify` over a byte stream (a file opened ``"rb"``, ``sys.stdin.buffer``).

    Reads ``chunk_bytes`` at a time and decodes UTF-8 (invalid bytes become U+FFFD); memory stays
    bounded by a few chunks plus ``lines.MAX_LINE_CHARS``, whatever the stream's size. Reading
    goes to the end of the stream; a line longer than ``lines.MAX_LINE_SKIP_CHARS`` is skipped
    past its head (``notes`` says so). ``host`` and ``table`` as for :func:`classify`. Raises OSError if the
    stream cannot be read.
    """
    scanner = _for_host(host, table)
    reader = LineReader(scanner.feed_block)
    reader.feed_stream(stream, chunk_bytes)
    reader.close()
    scanner.notes.extend(reader.notes)
    return scanner.result()


def decisive_line(text: str) -> str:
    """The root cause line of a failure's output, stripped, at most 500 characters (issue 21,
    item 3): a compiler's first ``error:`` line when a compile step failed (or no Python
    exception was printed); else the exception of torchrun's "Root Cause (first observed
    failure)" traceback; else the first traceback exception that is not a wrapper
    (``ProcessRaisedException``, ``ChildFailedError``, ``Caught X in DataLoader worker process``
    give way to the rank's or worker's own traceback; Python prints a chain's innermost cause
    first), with a message on the line after a bare ``AssertionError:`` joined to it; else
    :func:`first_meaningful_line`."""
    return _scan_text(text).unknown_message()


#: Most findings :func:`findings` returns.
MAX_FINDINGS = 5
#: A printed tensor holding NaN or Inf (``tensor(nan)``, ``tensor([1., inf])``).
_PRINTED_NONFINITE = re.compile(r"tensor\([^\n]*?(?<![\w.])(?:nan|-?inf)(?![\w.])")


def findings(
    text: str, host: HostFacts | None = None, table: Table | None = None, limit: int = MAX_FINDINGS
) -> tuple[str, ...]:
    """Failure evidence in the output of a case that passed (issue 21, item 4): lines a row
    names, the exception of every traceback (a child process's, a worker's), printed tensors
    holding NaN/Inf; each line once, in log order, stripped and cut like a message, at most
    ``limit``. ``()`` when the output is clean. ``host`` and ``table`` as for :func:`classify`.
    """
    scanner = _for_host(host, table)
    _feed(scanner, text)
    inner = scanner.chosen() if isinstance(scanner, _HostNeutral) else scanner
    inner._finish()
    found: dict[str, int] = {}
    for match in inner._kept:
        found.setdefault(_clip(match.line), match.line_no)
    for line_no, exception in inner._exceptions:
        found.setdefault(_clip(exception), line_no)
    if "tensor(" in text:
        for hit in _PRINTED_NONFINITE.finditer(text):
            start, end = _line_bounds(text, hit.start())
            found.setdefault(_clip(text[start:end]), text.count("\n", 0, start) + 1)
    return tuple(line for line, _ in sorted(found.items(), key=lambda item: item[1])[:limit])


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
    known = tables.active().signals.get(n)
    if known is not None:
        return known
    name = signal_name(n)
    if name.startswith("SIG"):
        return f"{SIGNAL_PREFIX}{name.lower()}"
    return f"{SIGNAL_PREFIX}{n}"


# -- Internals ----------------------------------------------------------------------------------


def _quiet(block: str) -> str:
    """``block`` with every exception CPython ignored blanked out (:data:`_IGNORED_TRACEBACK`),
    one empty line for each of its lines, so line numbers hold."""
    if "Exception ignored" not in block:
        return block
    return _IGNORED_TRACEBACK.sub(lambda found: "\n" * found.group(0).count("\n"), block)


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


def _traceback_end(lines: Iterable[str]) -> tuple[bool, str | None, int]:
    """``(decided, exception, index)``: how a traceback whose frames start at ``lines`` ends,
    and the index (0-based, in ``lines``) of its exception line.

    Frames, source lines and ``^^^`` markers are indented; the first unindented line shaped like
    ``pkg.Error: message`` ends the traceback (``(True, line, i)``); an exception line with an
    empty message (``AssertionError:``) takes the next non-blank line as its message when that
    line is not a frame or a header (old-style multi-line assertion messages). Stray unindented
    lines (another process writing to the same stream) are skipped; a new traceback header means
    this one was cut off (``(True, None, i)``). ``(False, None, -1)``: ``lines`` ran out first.
    """
    found: str | None = None
    at = -1
    for index, raw in enumerate(lines):
        line = _body(raw)
        if found is not None:
            if not line.strip():
                continue
            text = line.strip()
            if _FRAME.match(line) or _STACK_HEADER.search(line) or _TRACEBACK_HEADER.match(line):
                return True, found, at
            return True, f"{found} {text}", at
        if not line.strip() or line[:1].isspace():
            continue
        if _TRACEBACK_HEADER.match(line):
            return True, None, index
        stripped = line.strip()
        if _EXCEPTION_LINE.match(stripped):
            if stripped.endswith(":") and not _WRAPPER_EXCEPTION.search(stripped):
                found, at = stripped, index  # the message may be on the next line
                continue
            return True, stripped, index
    if found is not None:
        return True, found, at
    return False, None, -1


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
        # ("header", is_first, line_no) or ("dice", line_no, line, index of the row that held it).
        self._waiting: list[tuple] = []
        self._first_header: str = "none"  # none | waiting | done
        self._first_exception: str | None = None
        self._first_line: str | None = None
        self._under_frame = False
        # The decisive line (issue 21, item 3): traceback exceptions in order, (line_no, text).
        self._exceptions: list[tuple[int, str]] = []
        self._root_cause: tuple[int, str] | None = None  # torchrun's "Root Cause" traceback
        self._compiler_error: tuple[int, str] | None = None
        self.failure_evidence = False
        self._issue30 = _Unmatched(compiled.table)  # pasted stacks, informative line, coarse family

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
        self.lines += present["newlines"]

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
        if winner is None:
            return Classification(
                UNKNOWN,
                self.unknown_message(),
                None,
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
        """
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
        best = self._more_specific(best)
        if self._tier(best) >= _TIER_WEAK and (self._unmatched or self._unmatched_overflow):
            # Rule 4 (precedence rule 1, F1-8, F5-7): the fork and CUDA-IPC warnings and
            # kernel-log evidence print in runs that pass; when an unmatched exception is what
            # failed the run, report it as unknown with its own line, not under a bystander.
            return None
        return best


# -- Logs nobody's watchdog dumped, and failures no row names (issue 30) -------------------------
#
# Kept apart from the scanner above: :class:`_Unmatched` reads each block after it, and the
# scanner asks it only when no error row decided (rule 5) or nothing matched at all (unknown).

#: A stack dump pasted into a log: gdb's frames, thread headers and backtrace commands, py-spy's
#: thread headers, faulthandler's, and the ``^C`` a terminal echoes before the traceback Ctrl-C
#: prints.
_STACK_DUMP = re.compile(
    r"^(?:>[ \t]?)?(?:"  # a markdown quote of someone else's dump
    r"#\d+[ \t]+(?:0x[0-9a-fA-F]+ in )?\S"
    r"|Thread \d+ \(Thread 0x[0-9a-fA-F]+"
    r"|Thread (?:0x)?[0-9a-fA-F]+ \((?:idle|active)\b"
    r"|\(\w*-?gdb\) (?:bt|backtrace|where|thread apply all|py-bt)"
    r"|(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):"
    r"|Attaching to process \d+"  # gdb -p: a debugger attached to a live (stuck) process
    r"|\^C"
    r"|KeyboardInterrupt\s*$)",
    re.MULTILINE,
)
_STACK_NEEDLES = (
    "#", "Thread ", "gdb) ", "most recent call first", "^C", "KeyboardInterrupt",
    "Attaching to process",
)  # fmt: skip
_KEYBOARD_INTERRUPT = re.compile(r"^(?:[\w.]+\.)?KeyboardInterrupt\b")
_INTERRUPTED = re.compile(r"^\^C|^KeyboardInterrupt\s*$", re.MULTILINE)

#: Lines that never name a failure, whatever words they hold: a debugger's banner and its
#: status lines, a prompt (gdb, pdb, a REPL, a shell) with the command typed after it, info and
#: debug log lines, separators.
_UNINFORMATIVE = re.compile(
    r"(?:GNU gdb\b|Copyright \(C\)|License GPLv\d|This is free software|There is NO WARRANTY"
    r"|Type \"(?:show|apropos|help)|For bug reporting|Find the GDB manual|<https?://www\.gnu\.org"
    r"|This GDB was configured|For help, type|Reading symbols from|\[Thread debugging using"
    r"|Using host libthread_db|\[New (?:Thread|LWP)|\[Switching to thread|\[Inferior \d+"
    r"|\[Detaching after|Attaching to process|Missing separate debuginfo|Starting program:"
    r"|Downloading separate debug info|--Type <RET> for more"
    r"|Id\s+Target Id\s+Frame|\[\d+,\d+\]<std(?:out|err)>:\s*$"
    r"|\(\w*-?gdb\)|\(Pdb\)|>>> |In \[\d+\]:"
    r"|\$ |[\w.-]+@[\w.-]+:\S*[$#] |\([\w.-]+\) \S*[$#>] |[A-Za-z]:\\[^>\n]*>|PS [A-Za-z]:\\"
    r"|(?:Note|NOTE|Info|INFO|DEBUG|TRACE)\b[ \t]*[:\]-]?"
    r"|(?:\S+[ \t]+){0,3}?\[?(?:INFO|DEBUG|TRACE)\]?(?:[ \t:]|$)"
    r"|(?:\[[^\]\n]*\])+\[(?:INFO|DEBUG)\]"
    r"|\[?[IDV]\d{3,4} \d\d:\d\d:\d\d"
    r"|[-=*#~+_|]{3,}[ \t]*$)"
)
#: A timestamp a log line starts with (docker's, logging's), read past before judging the line.
_TIMESTAMP = re.compile(r"^\[?\d{4}-\d\d-\d\d[T ][\d:.,]+Z?\]?[ \t]*")
#: A Python traceback's frame line.
_FRAME_LINE = re.compile(r'^[ \t]*File "[^"\n]*", line \d+[^\n]*', re.MULTILINE)
#: A C++ exception's frame (c10::Error's backtrace).
_CPP_FRAME = re.compile(r"^\s*frame #\d+:")
#: The innermost frame of a pasted stack: gdb's ``#0``, or the first frame of py-spy's active
#: thread.
_TOP_FRAME = re.compile(
    r"^#0[ \t]+\S[^\n]*|^Thread [0-9a-fA-Fx]+ \(active[^\n]*\n[ \t]+(\S[^\n]*)", re.MULTILINE
)
#: Lines that are frames of a stack, not its error: Python's, gdb's, C++ exceptions', py-spy's.
_ANY_FRAME = re.compile(
    r'^\s*File "[^"]*", line \d+|^#\d+\s|^\s*frame #\d+:|^\s{4,}\S+ \(\S*:\d+\)\s*$|^\s{4,}'
)
#: An error line, strongly (the words a failure prints) or weakly (a refusal, an exit status).
_ERROR_STRONG = re.compile(
    r"(?i)(?:error|exception)\b|(?-i:[a-z]Error[A-Z])|\b(?:fatal|abort(?:ed|ing)?|segmentation fault|bus error"
    r"|illegal (?:hardware )?instruction|core dumped|killed|terminate called"
    r"|(?:received|caught) signal|panic|assert(?:ion)? failed|SIG(?:SEGV|BUS|ILL|ABRT|KILL|FPE))\b"
)
_ERROR_WEAK = re.compile(
    r"(?i)\b(?:fail(?:ed|ure|s)?|cannot|can't|could not|unable|not found|no such|denied|refused"
    r"|timed out|exit(?:ed)? (?:with )?(?:code|status)|exitcode|terminated|unexpected(?:ly)?)\b"
    r"|\bNCCL WARN\b"
)
#: The words of :data:`_ERROR_STRONG` that only a failure prints (see
#: :meth:`_Unmatched.shows_failure`).
_FAILURE_WORDS = re.compile(
    r"(?i:\b(?:fatal|abort(?:ed|ing)?|segmentation fault|bus error|illegal (?:hardware )?instruction"
    r"|core dumped|terminate called|(?:received|caught) signal|panic)\b)"
    r"|\bSIG(?:SEGV|BUS|ILL|ABRT|KILL|FPE)\b|[A-Z]\w*(?:Error|Exception)\b|\bERROR\b"
)
#: Lower-case words one of which every error line holds (a cheap pre-check on big logs).
_ERROR_NEEDLES = (
    "error", "fatal", "abort", "exception", "fault", "killed", "signal", "terminate", "panic",
    "assert", "illegal", "sigsegv", "sigbus", "sigill", "sigabrt", "sigkill", "sigfpe", "fail",
    "cannot", "can't", "could not", "unable", "not found", "no such", "denied", "refused",
    "timed out", "exit", "unexpected", "nccl warn",
)  # fmt: skip
#: The coarse families a failure no row names can still show (issue 30, item 3): label, needles,
#: expression. The first that holds is named, in this order.
_COARSE: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "a ROCm runtime error",
        (
            "HSA_STATUS_",
            "hipError",
            "HIP error",
            "hipBLAS",
            "HIPBLAS_STATUS",
            "rocBLAS error",
            "rocblas_status",
            "MIOpen",
            "rocdevice.cpp",
            "amdgpu",
            "/dev/kfd",
            "Tensile host",
        ),  # fmt: skip
        re.compile(
            r"HSA_STATUS_|hipError\w+|HIP error|hipBLAS|HIPBLAS_STATUS|rocBLAS error|rocblas_status"
            r"|MIOpen(?:\(HIP\))?:? ?Error|rocdevice\.cpp|\bamdgpu\b|/dev/kfd"
            r"|Could not initialize Tensile host"
        ),
    ),
    (
        # nvidia-smi / NVML's "Failed to initialize NVML: <nvmlErrorString>", the container
        # toolkit's "nvml error: ...".
        "an NVIDIA driver (NVML) error",
        ("NVML", "nvml error"),
        re.compile(r"Failed to initialize NVML|NVML_ERROR_\w+|nvml error: "),
    ),
    (
        "a CUDA error",
        (
            "CUDA error",
            "CUDA driver error",
            "cudaError",
            "CUDA_ERROR_",
            "CUBLAS_STATUS_",
            "CUDNN_STATUS_",
            "cuDNN error",
        ),  # fmt: skip
        re.compile(
            r"CUDA (?:driver )?error|cudaError\w+|CUDA_ERROR_\w+|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+"
            r"|cuDNN error"
        ),
    ),
    (
        "an NCCL error",
        ("NCCL error", "NCCL WARN", "Error", "NCCL_"),
        re.compile(r"NCCL (?:error|WARN)|nccl\w*Error\b|NCCL_\w+ failed"),
    ),
    (
        "signal",
        ("exitcode", "Signal", "signal", "Signals."),
        re.compile(
            r"exitcode\s*:\s*-(?P<n1>\d+)|Signal (?P<n2>\d+) \(SIG\w+\) received"
            r"|killed by signal:? (?P<name1>[A-Za-z][A-Za-z ]*[a-z])"
            r"|(?:received|[Cc]aught|terminated with) signal (?P<name2>SIG[A-Z0-9]+|\d+)"
            r"|died with <Signals\.(?P<name3>SIG[A-Z0-9]+)"
        ),
    ),
    (
        "a C++ abort",
        ("terminate called", "what():", "Aborted", "c10::Error", "SIGABRT", "std::"),
        re.compile(
            r"terminate called|what\(\):|Aborted(?: \(core dumped\))?\s*$|c10::Error|\bSIGABRT\b"
            r"|std::(?:runtime_error|logic_error|bad_alloc|system_error)",
            re.MULTILINE,
        ),
    ),
)
#: strsignal(3)'s descriptions (what a DataLoader's "killed by signal: X" prints) -> names.
_SIGNAL_DESCRIPTIONS = {
    "killed": "SIGKILL",
    "bus error": "SIGBUS",
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "terminated": "SIGTERM",
    "illegal instruction": "SIGILL",
    "floating point exception": "SIGFPE",
}


def uninformative(line: str) -> bool:
    """Whether ``line`` can never be the decisive line of a failure: a debugger's banner or status
    line (``GNU gdb ...``, ``[New LWP 65]``), a prompt with its command (``(gdb) info threads``,
    ``user@host:~$ python train.py``, ``>>> ``), an info or debug log line (``INFO ...``,
    ``Note: You are using GPU for training``, glog's ``I0814 ...``), a separator (issue 30,
    item 3)."""
    line = _body(line).strip()
    return bool(_UNINFORMATIVE.match(_TIMESTAMP.sub("", line, count=1) or line))


def informative_line(text: str) -> str:
    """The most informative error line of ``text``, stripped and cut like a message: the first
    line holding a failure's words (``error``, ``fatal``, ``Aborted``, ``Killed``, a signal, ...)
    that is not :func:`uninformative` and not a stack frame, else the first holding weaker ones
    (``failed``, ``cannot``, an exit status, ...); ``""`` when there is none. A warning holding
    them counts as weak."""
    scanner = _Unmatched(tables.active())
    reader = LineReader(lambda block: scanner.feed(block, {}, 1))
    reader.feed(text)
    reader.close()
    return _clip(scanner.informative())


def coarse_family(text: str) -> str:
    """The coarse family a failure no row names still shows (issue 30, item 3): ``"a ROCm
    runtime error"``, ``"a CUDA error"``, ``"an NCCL error"``, ``"a process killed by signal 7
    (SIGBUS)"``, ``"a C++ abort"``, ``"a compiler error"``, ``"a hang (a pasted stack no row
    reads)"``; ``""`` when it shows none."""
    scanner = _scan_text(text)
    return scanner._issue30.coarse(_is_compiler(scanner._compiler_error))


def pasted_hang(text: str) -> str | None:
    """The ``hang.*`` row a stack dump pasted into ``text`` names (gdb ``bt``, ``py-spy dump``,
    faulthandler, a Ctrl-C traceback), read against the rows' ``stacks`` in the table's order as
    the watchdog reads its own dumps; ``None`` when there is no dump or no row's stacks match.
    :func:`classify` names it only when no error row decides (rule 5)."""
    scanner = _scan_text(text)
    found = scanner._issue30.hang(True)
    return None if found is None else found[0].name


class _Unmatched:
    """What issue 30 reads beside the rows, block by block in bounded memory: whether the log
    holds a pasted stack dump and which ``hang.*`` rows' stacks it matches (first line each), the
    first strong and weak error lines, and the first line of each coarse family."""

    def __init__(self, table: Table) -> None:
        self._hang_rows = tuple(row for row in table.hangs if row.stacks is not None)
        self.stack_dump = False
        self._stack_hits: dict[str, tuple[int, str]] = {}
        self._strong: str | None = None
        self._weak: str | None = None
        self._coarse: dict[str, str] = {}
        self._top: str | None = None
        self._last_python_frame: str | None = None
        self._interrupted = False  # Ctrl-C printed the Python stack

    def feed(self, block: str, present: dict[object, Any], first_line_no: int) -> None:
        """Read ``block``, whose first line is line ``first_line_no``; ``present`` caches what
        scanners of the same block share (:class:`_HostNeutral`)."""
        self._feed_stacks(block, present, first_line_no)
        if self._strong is None or self._weak is None:
            self._feed_error_lines(block, present)
        if len(self._coarse) < len(_COARSE):
            self._feed_coarse(block, present)

    def _feed_stacks(self, block: str, present: dict[object, Any], first_line_no: int) -> None:
        if not self.stack_dump:
            if not prefilter.present(present, block, _STACK_NEEDLES):
                return
            found = present.get(_STACK_DUMP)
            if found is None:
                found = present[_STACK_DUMP] = _STACK_DUMP.search(block) is not None
            if not found:
                return
            self.stack_dump = True
        if self._top is None:
            top = _TOP_FRAME.search(block)
            if top is not None:
                self._top = (top.group(1) or top.group(0)).strip()
        if not self._interrupted and ("^C" in block or "KeyboardInterrupt" in block):
            self._interrupted = _INTERRUPTED.search(block) is not None
        if 'File "' in block:
            frames = _FRAME_LINE.findall(block)
            if frames:
                self._last_python_frame = frames[-1].strip()
        for row in self._hang_rows:
            if row.name in self._stack_hits:
                continue
            key = ("stacks", row.name)
            if key not in present:
                present[key] = row.stacks.search(block)  # type: ignore[union-attr]
            hit = present[key]
            if hit is not None:
                start, end = _line_bounds(block, hit.start())
                line_no = first_line_no + block.count("\n", 0, start)
                self._stack_hits[row.name] = (line_no, block[start:end].strip())

    def _feed_error_lines(self, block: str, present: dict[object, Any]) -> None:
        key = ("error-lines",)
        if key not in present:
            present[key] = _first_error_lines(block)
        strong, weak = present[key]
        if self._strong is None:
            self._strong = strong
        if self._weak is None:
            self._weak = weak

    def _feed_coarse(self, block: str, present: dict[object, Any]) -> None:
        for label, needles, pattern in _COARSE:
            if label in self._coarse or not prefilter.present(present, block, needles):
                continue
            key = ("coarse", label)
            if key not in present:
                present[key] = pattern.search(block)
            found = present[key]
            if found is not None:
                self._coarse[label] = _coarse_label(label, found)

    def hang(self, only_interrupted: bool) -> tuple[Signature, int, str] | None:
        """``(row, line_no, line)`` of the first ``hang.*`` row (table order) the pasted stack
        matches, when the log holds one and no other exception than a KeyboardInterrupt."""
        if not self.stack_dump or not only_interrupted:
            return None
        for row in self._hang_rows:
            hit = self._stack_hits.get(row.name)
            if hit is not None:
                return row, hit[0], hit[1]
        return None

    def informative(self) -> str:
        """The first strong error line, else the first weak one, else ``""``."""
        return self._strong or self._weak or ""

    def top_frame(self) -> str:
        """The innermost frame of a pasted stack (gdb's ``#0``, py-spy's active thread, or the
        last Python frame of the stack a Ctrl-C printed), ``""`` without one."""
        if not self.stack_dump:
            return ""
        if self._top:
            return self._top
        return (self._last_python_frame if self._interrupted else None) or ""

    def shows_failure(self) -> bool:
        """Whether the text shows a failure no row and no traceback told (issue 30, item 3): a
        coarse family's line (a ROCm or CUDA error, a signal, a C++ abort), a pasted stack dump,
        or an error line in a failure's words (``Fatal``, ``Aborted``, ``core dumped``, a
        ``...Error``/``ERROR``; not ``error`` alone, which metrics lines print)."""
        if self._coarse or self.stack_dump:
            return True
        return self._strong is not None and bool(_FAILURE_WORDS.search(self._strong))

    def coarse(self, compiler_error: bool) -> str:
        """The coarse family (see :func:`coarse_family`)."""
        for label, _, _ in _COARSE:
            if label in self._coarse:
                return self._coarse[label]
        if compiler_error:
            return "a compiler error"
        if self.stack_dump:
            return "a hang (a pasted stack no row reads)"
        return ""


def _first_error_lines(block: str) -> tuple[str | None, str | None]:
    """The first strong and the first weak error line of ``block`` (see :func:`informative_line`).

    Only lines holding one of :data:`_ERROR_NEEDLES` are examined, in order: each needle's next
    occurrence is looked up with ``str.find`` (memory speed) and again only once passed, so a
    multi-MB log costs a few scans, not a case-insensitive expression over every character."""
    lower = block.lower()
    if not any(needle in lower for needle in _ERROR_NEEDLES):
        return None, None
    strong = weak = None
    upcoming = {needle: lower.find(needle) for needle in _ERROR_NEEDLES}
    pos = 0
    while True:
        for needle, at in upcoming.items():
            if 0 <= at < pos:
                upcoming[needle] = lower.find(needle, pos)
        hits = [at for at in upcoming.values() if at >= 0]
        if not hits:
            return strong, weak
        start, end = _line_bounds(block, min(hits))
        pos = end + 1
        raw = _body(block[start:end])
        if _ANY_FRAME.match(raw) or uninformative(raw):
            continue
        line = raw.strip()
        if _STACK_HEADER.search(raw):
            if weak is None and line.startswith("Exception raised from"):
                weak = line  # c10's "where": the best line when its what() was cut
            continue
        if _ERROR_STRONG.search(line):
            if "warn" not in line.lower():
                return line, weak
            weak = weak or line
        elif weak is None and _ERROR_WEAK.search(line):
            weak = line


#: A compiler's diagnostic (a source file's line, or the compiler's name), not argparse's
#: ``prog.py: error: unrecognized arguments``.
_COMPILER_SOURCE = re.compile(
    r"\.(?:c|cc|cpp|cxx|h|hh|hpp|cu|cuh|m|mm)\b|\b(?:gcc|g\+\+|cc1(?:plus)?|clang(?:\+\+)?|nvcc|ptxas"
    r"|ld|collect2|cl)\b"
)


def _is_compiler(found: tuple[int, str] | None) -> bool:
    return found is not None and bool(_COMPILER_SOURCE.search(found[1]))


def _coarse_label(label: str, found: re.Match[str]) -> str:
    if label != "signal":
        return label
    groups = found.groupdict()
    number = groups["n1"] or groups["n2"]
    name = groups["name2"] or groups["name3"] or ""
    description = groups["name1"]
    if description:
        name = _SIGNAL_DESCRIPTIONS.get(description.strip().lower(), "")
    if name.isdigit():
        number, name = name, ""
    if number and not name:
        name = signal_name(int(number))
    if name and not number:
        try:
            number = str(int(signal.Signals[name]))
        except KeyError:
            number = ""
    if number and name.startswith("SIG"):
        return f"a process killed by signal {number} ({name})"
    if name:
        return f"a process killed by {name}"
    return "a process killed by a signal"
