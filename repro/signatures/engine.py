"""Failure signatures: name the cause of a failing case from its output.

The runner hands :func:`classify` the text a non-passing case left behind (stderr, stdout, rank
logs, a DataLoader worker's ``Original Traceback``, a torchrun summary, a faulthandler dump, host
kernel-log lines) and gets back one signature name, the line that decided it, and every match.
Hung cases are named by the watchdog (``hang_timeout``, ``hang.*``) and killed ones by
:func:`signal_signature`; this module only reads text and never imports torch.

The table (rows, sources, workarounds) is :mod:`repro.signatures.table`; this module is the
classify API over the modules that match its pattern rows line by line, in precedence order:
:mod:`~repro.signatures.scanner` (the scanner), :mod:`~repro.signatures.precedence` (tiers and
the table compiled per host), :mod:`~repro.signatures.grammar` (the traceback grammar),
:mod:`~repro.signatures.unmatched` (failures no row names), :mod:`~repro.signatures.findings`
and :mod:`~repro.signatures.signals`; it re-exports their public names.

Each line is attributed to at most one signature, the first row of the table that matches it, so
specific sub-types (``nccl_shm``, ``nccl_duplicate_gpu``, ``dataloader_shm_exhausted``,
``host_oom_killed_hint``) sit above their general parents (``nccl_init_failure``,
``dataloader_worker_killed``) and a crash name (``segfault``) above the launcher line that reports
it (``rank_failed``). One rule is not a plain pattern: the DB Dice loss's ``assert loss <= 1``
counts as ``nan_detected`` only when the traceback it is in ends in ``AssertionError`` (``nan <=
1`` is False, so NaN surfaces there without the word "nan"; F4-4).

Precedence (the cases each rule comes from are cited at the code that applies it):

1. ``environment`` rows (driver too old, forward compatibility, no kernel image and its hint,
   no ROCm code object, CUDA init failed / device busy on a native host, no GPU visible to the
   process, WSL GPU unavailable, container GPU setup) pre-empt everything else; the
   earliest wins, except that ``no_kernel_image`` beats the ``no_kernel_image_hint`` warning
   printed before it.
2. Otherwise the earliest ``root`` error wins, with demotions: an illegal instruction / illegal
   memory access after a cuDNN or NaN match is a secondary (poisoned-context) error;
   ``secondary`` rows (``nccl_timeout``, ``cpp_terminate``) lose to any root error. When the
   winner is a general report (an NCCL error code, cudaGetDeviceCount()'s unexpected error), a
   more specific row (higher in the table, same tier and family, or both ``environment``)
   matching within a few lines after it names the report instead (issue 30, round three). When
   the winner only announces an exception whose message follows ("terminate called after
   throwing ..." then "what(): MSG"), a row of the same tier reading MSG names it, whatever its
   family (issue 30, round five); when no row reads MSG and MSG is a GPU runtime's error ("CUDA
   error: unspecified launch failure"), that error is the failure: ``unknown``, the what() line
   deciding (2d, issue 30, round eight).
3. ``wrapper`` rows (``Caught X in DataLoader worker process N``, torchrun's ``ChildFailedError``
   summary) win only when nothing inside or beside them matched.
4. ``warning`` and ``evidence`` rows (fork warning, CUDA-IPC producer warning, KFD workqueue and
   amdgpu kernel-log lines) win only when they are all there is: no other match and no Python
   traceback ending in an exception no row matched (that exception is then the ``unknown``
   failure's message). 4b (issue 30, round six): likewise a ``secondary`` row loses to an
   exception no row matched that ended a traceback before its line ("terminate called" after
   ``RuntimeError: CUDA error: unspecified launch failure``): ``unknown``, that exception deciding.

5. Pasted stacks (issue 30): when no error row decides and the only exception (if any) is a
   ``KeyboardInterrupt``, a stack dump pasted into the log (gdb ``bt``, ``py-spy dump``,
   faulthandler, the traceback Ctrl-C printed) is read against the watchdog's ``hang.*`` rows'
   ``stacks``, as the watchdog reads its own dumps (:func:`pasted_hang`).
6. A described hang (issue 30, round five): when rule 5 names nothing either, a log in which the
   person says the job hangs (stuck, hangs, deadlock, 卡住) and whose own lines show a
   distributed job on NCCL (lines NCCL or ProcessGroupNCCL printed, torch's spawn in a stack;
   not the words init_process_group, DistributedDataParallel, torch.distributed or torchrun in
   a title, a sentence, a command or pasted code: issue 30, round ten; nor "NCCL version" inside
   a sentence: issue 30, round thirteen) is ``hang.nccl``, the line that says so deciding.
7. A described failure (issue 30, round six; an abstention): when nothing matched and no line of
   the log shows a failure, but the person's words say one happened (killed, hangs, stuck, a NaN
   loss, crashed, "I keep getting this error"), the verdict is ``unknown``, not "no failure
   found": that line decides and :attr:`Classification.coarse` says the failure is only
   described ("killed (in the person's words; ...)"). 7c (issue 30, round eight): likewise when
   the log holds the person's own words (a first-person line, a greeting or thanks, a question)
   that no kind reads: a log pasted by someone who saw a problem the engine did not understand
   is ``unknown`` ("a problem in the person's words"), not "no failure found"; a run or a GPU
   the person says does not work ("Cannot train on gfx803", "does not recognize GPU", "no gpu
   used") is such words too (issue 30, round ten).
8. "No failure found" needs a run (issue 30, round eight): when nothing matched, no line shows a
   failure and rules 5-7 name nothing, the text is :attr:`Classification.clean` only when it
   shows output a job or a tool prints while it runs normally (progress bars and it/s, numbered
   epoch/step lines, a metric with its value, logging lines with a timestamp or a level that is
   not an error (glog's E and F lines log a failure: issue 30, round thirteen), NCCL INFO
   lines, an nvidia-smi or rocminfo report, a finished summary: :func:`shows_run`). A text with
   neither a failure line nor a run (a few command lines, an environment listing, a banner) is an
   excerpt cut before its failure or a failure only described: ``unknown``, coarse
   :data:`NO_RUN_COARSE`, its first meaningful line as the message.

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

from typing import BinaryIO

from repro.signatures.classification import Classification, Match
from repro.signatures.findings import MAX_FINDINGS, findings
from repro.signatures.grammar import MAX_MESSAGE_CHARS
from repro.signatures.hostfacts import HostFacts
from repro.signatures.lines import CHUNK_BYTES, LineReader
from repro.signatures.precedence import _NEEDLES  # noqa: F401 (tests read the shipped rows' needles)
from repro.signatures.runoutput import NO_RUN_COARSE, shows_run
from repro.signatures.scanner import MAX_KEPT_MATCHES, _feed, _for_host, _scan_text
from repro.signatures.signals import signal_name, signal_signature
from repro.signatures.table import SIGNATURES, UNKNOWN, Table
from repro.signatures.unmatched import _is_compiler, informative_line, uninformative

__all__ = [
    "CHUNK_BYTES",
    "MAX_FINDINGS",
    "MAX_KEPT_MATCHES",
    "MAX_MESSAGE_CHARS",
    "NO_RUN_COARSE",
    "SIGNATURES",
    "UNKNOWN",
    "Classification",
    "Match",
    "classify",
    "classify_stream",
    "coarse_family",
    "decisive_line",
    "findings",
    "first_meaningful_line",
    "informative_line",
    "pasted_hang",
    "signal_name",
    "shows_run",
    "signal_signature",
    "uninformative",
]


def classify(
    text: str, host: HostFacts | None = None, table: Table | None = None
) -> Classification:
    """Name the cause of a failure from its output (see the module docstring for the rules).

    ``host``: what is known about the host the text came from; rows (and lines) with a ``when``
    condition apply only where it holds (repro.signatures.hostfacts). When ``host`` does not say
    whether it is WSL2 (``None``, or ``wsl2=None``), the log's own evidence decides (``uname``
    kernel strings, ``/usr/lib/wsl`` paths, the nvidia-smi header, a pasted log's "WSL2" or
    "Ubuntu subsystem" in the person's own words); with none, the
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


def first_meaningful_line(text: str) -> str:
    """The line that best names an unmatched failure, stripped, at most 500 characters.

    Prefers the exception line that ends the first Python traceback (``ValueError: text``,
    ``pkg.mod.SomeError: text``, a bare ``AssertionError``); otherwise the first non-blank line
    that is not a traceback frame, a source line under one, a ``^^^`` marker, or a
    traceback/faulthandler header. ``""`` for blank text.
    """
    return _scan_text(text).unknown_message()


def coarse_family(text: str) -> str:
    """The coarse family a failure no row names still shows (issue 30, item 3): ``"a ROCm
    runtime error"``, ``"a CUDA error"``, ``"an NCCL error"``, ``"a process killed by signal 7
    (SIGBUS)"``, ``"a C++ abort"``, ``"a torch.compile (Dynamo/Inductor) error"``, ``"a
    compiler error"``, ``"a hang (a pasted stack no row reads)"``; ``""`` when it shows none."""
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
