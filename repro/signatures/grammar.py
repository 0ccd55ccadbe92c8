"""The traceback grammar: what Python tracebacks, faulthandler dumps, torchrun's and mp.spawn's
reports and compilers' diagnostics look like, line by line (the expressions), and the helpers that
read a traceback to its exception line (:func:`_traceback_end`) or strip a line to its body.

Names keep their leading underscore: they are the signatures package's own, read by
:mod:`repro.signatures.scanner`, :mod:`repro.signatures.unmatched` and
:mod:`repro.signatures.findings`; the public API is :mod:`repro.signatures.engine`. Never imports
torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

#: Longest message kept (characters); longer lines are cut and end in "...".
MAX_MESSAGE_CHARS = 500
# Structure of Python tracebacks, faulthandler dumps and launcher logs.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]: ?")
_TRACEBACK_HEADER = re.compile(r"^(?:Original )?Traceback \(most recent call last\):\s*$")
#: Also a header pasted inside markdown inline code, its opening backtick(s) kept on the line
#: (issue 30, round six: facebookresearch/DeepSDF#40, noahzn/Lite-Mono#59 "`Traceback (most
#: recent call last):").
_TRACEBACK_HEADER_ANYWHERE = re.compile(
    r"^(?:\[(?:rank|default)\d+\]: ?)?`{0,3}(?:Original )?Traceback \(most recent call last\):"
    r"[ \t]*$",
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
    # Autograd's anomaly mode reporting the backward function that failed (its warning comes
    # before the error it explains; QiangAIResearcher/sahp_repo#4 pasted only the warning).
    r"|Warning: Error detected in \w+"
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
