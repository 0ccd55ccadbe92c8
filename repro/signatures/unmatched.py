"""Logs nobody's watchdog dumped, and failures no row names (issue 30).

Kept apart from the scanner (:mod:`repro.signatures.scanner`): :class:`_Unmatched` reads each
block after it, and the scanner asks it only when no error row decided (rule 5) or nothing matched at all (unknown).

The public entry points are :func:`uninformative` and :func:`informative_line` (re-exported by
:mod:`repro.signatures.engine`).
"""

from __future__ import annotations

import re
import signal
from typing import Any

from repro.signatures import prefilter, words
from repro.signatures import table as tables
from repro.signatures.grammar import _STACK_HEADER, _body, _clip, _line_bounds
from repro.signatures.lines import LineReader
from repro.signatures.signals import _SIGNAL_DESCRIPTIONS, signal_name
from repro.signatures.table import Signature, Table

#: A stack dump pasted into a log: gdb's frames, thread headers and backtrace commands, py-spy's
#: thread headers, faulthandler's, and the ``^C`` a terminal echoes before the traceback Ctrl-C
#: prints.
_STACK_DUMP = re.compile(
    r"^(?:>[ \t]?)?(?:"  # a markdown quote of someone else's dump
    r"#\d+[ \t]+(?:0x[0-9a-fA-F]+ in )?\S"
    r"|Thread \d+ \(Thread 0x[0-9a-fA-F]+"
    r"|Thread (?:0x)?[0-9a-fA-F]+ \((?:idle|active)\b"
    r"|\(\w*-?gdb\) (?:bt|backtrace|where|thread apply all|py-bt|info threads"
    r"|info cuda (?:kernels|threads))"
    # gdb's "info threads" rows ("* 1    Thread 0x7fc73ac5d700 (LWP 52422) ...", the gdb manual's
    # "Debugging Programs with Multiple Threads"; pytorch/pytorch#75147), issue 30, round eleven
    r"|[* ][ \t]+\d+[ \t]+Thread 0x[0-9a-fA-F]+ \(LWP \d+\)"
    r"|\[Switching focus to CUDA kernel"  # cuda-gdb attached to a live kernel (issue 30, round 8)
    r"|(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):"
    # faulthandler's header for one thread, gdb py-bt's (CPython Python/traceback.c,
    # Tools/gdb/libpython.py): a Python traceback says "most recent call last"
    r"|(?:Stack|Traceback) \(most recent call first\):"
    r"|Attaching to process \d+"  # gdb -p: a debugger attached to a live (stuck) process
    r"|\^C"
    r"|KeyboardInterrupt\s*$)",
    re.MULTILINE,
)
_STACK_NEEDLES = (
    "#", "Thread ", "gdb) ", "most recent call first", "^C", "KeyboardInterrupt",
    "Attaching to process", "Switching focus",
)  # fmt: skip
_KEYBOARD_INTERRUPT = re.compile(r"^(?:[\w.]+\.)?KeyboardInterrupt\b")
#: A hang in the person's own words (rule 6, issue 30, round five): "the code ran stuck"
#: (NVIDIA/nccl#1126), "the training process is in deadLock" (pytorch/pytorch#49733), "NCCL INFO
#: Launch mode Parallel hangs during training" (horovod/horovod#3658), "Parallel training hangs"
#: (stas00/ml-engineering#1), "torch.distributed.reduce hangs with nccl backend"
#: (pytorch/pytorch#47498), "NCCL hangs and causes timeout" (vllm-project/vllm#5484), 卡住.
_HANG_WORDS = re.compile(
    r"\b(?:[Hh]angs?|[Hh]anging|[Hh]ung|[Ss]tuck|[Dd]ead-?[Ll]ock(?:ed|s)?|[Ff]reez(?:es|ing)"
    r"|[Ff]rozen)\b|卡住|卡死"
)
_HANG_NEEDLES = (
    "ang", "ung", "tuck", "ead", "reez", "rozen", "卡住", "卡死",
)  # fmt: skip
#: What shows the hung job is a distributed one on NCCL: lines NCCL or its process group printed
#: (``NCCL INFO``, ``NCCL version``, ``ProcessGroupNCCL``), torch.multiprocessing's spawn in a
#: stack (which DDP examples start ranks with). Not the words a person types in a title, a
#: sentence, a command or the code they paste: torchrun (issue 30, round eight:
#: stepfun-ai/Step1X-3D#12 "will hung on the first gpu initialization" under torchrun shows no
#: NCCL line; the job may hang anywhere before NCCL), nor ``init_process_group``,
#: ``DistributedDataParallel``, ``torch.distributed(.launch)`` or ``backend='nccl'`` (issue 30,
#: round ten: a hang at init_process_group or the DDP constructor with no NCCL line is a hang in
#: the rendezvous or TCPStore before NCCL starts, which the hang.nccl row does not describe;
#: first-sight records: 0 right of 5 named by these words, test7 Step1X-3D#12 and test8
#: NVIDIA/DeepLearningExamples#1157, pytorch/pytorch#53395, #15638, #23074, all labelled
#: unknown; the 4 right rule-6 verdicts of the studied sets show NCCL INFO lines or spawn.py).
#: "NCCL version X" counts only where NCCL or torch prints it: after NCCL's ``NCCL INFO`` prefix
#: (init.cc's showVersion), at a line's start, or after torch's ", " in a ProcessGroupNCCL error;
#: not inside a person's sentence (issue 30, round thirteen: huggingface/accelerate#412, test10,
#: "the last debug message is NCCL version 2.10.3+cuda11.3", a comment with no log, labelled
#: unknown, named hang.nccl at first sight and since; the studied sets also hold "My NCCL
#: version" and "because of the NCCL version" in sentences).
_DISTRIBUTED = re.compile(
    r"NCCL INFO|(?:^[ \t]*|, )NCCL version|ProcessGroupNCCL|torch/multiprocessing/spawn\.py",
    re.MULTILINE,
)
_DISTRIBUTED_NEEDLES = ("NCCL ", "ProcessGroupNCCL", "multiprocessing/spawn.py")
_INTERRUPTED = re.compile(r"^\^C|^KeyboardInterrupt\s*$", re.MULTILINE)
#: A Python traceback's header: a log whose last traceback is cut before its exception line (a
#: search excerpt, a paste cut short, a logger's warning that dumps the stack) shows a failure
#: no line names (rule 7b, issue 30, round eight: unslothai/unsloth#1175's dynamo trace).
_TRACEBACK_HEADER = "Traceback (most recent call last):"

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
            "TensileLibrary",
            "No paths matched",
            "rocblaslt",
            "hipBLASLt error",
        ),  # fmt: skip
        re.compile(
            r"HSA_STATUS_|hipError\w+|HIP error|hipBLAS|HIPBLAS_STATUS|rocBLAS error|rocblas_status"
            r"|MIOpen(?:\(HIP\))?:? ?Error|rocdevice\.cpp|\bamdgpu\b|/dev/kfd"
            r"|Could not initialize Tensile host"
            # rocBLAS's and hipBLASLt's kernel libraries missing for the GPU (tensile_host.cpp;
            # issue 30, round ten): a library file not found, no code object for the gfx target.
            r"|TensileLibrary\S* not found|(?:rocBLAS|rocblaslt) warning: No paths matched"
            r"|hipBLASLt error|rocblaslt error"
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
            "cuda runtime error",
        ),  # fmt: skip
        # THC's spelling too: "cuda runtime error (4) : unspecified launch failure"
        # (pytorch/pytorch#2567).
        re.compile(
            r"CUDA (?:driver )?error|cudaError\w+|CUDA_ERROR_\w+|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+"
            r"|cuDNN error|cuda runtime error \(\d+\)"
        ),
    ),
    (
        "an NCCL error",
        ("NCCL error", "NCCL WARN", "Error", "NCCL_"),
        # Not NCCL's InfiniBand probing notes it carries on after (it falls back to another
        # device or to sockets and says "Using network ..."): they show no failure on their own
        # (issue 30, round four: horovod/horovod#685, zai-org/ImageReward#65,
        # deepspeedai/DeepSpeedExamples#310).
        re.compile(
            r"NCCL (?:error|WARN(?! (?:Failed to open libibverbs|Call to ibv_open_device failed"
            r"|NET/IB ?: (?:Unable to open device|Got async event)\b)))"
            r"|nccl\w*Error\b|NCCL_\w+ failed"
        ),
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
    (
        # torch.compile's own exceptions (torch/_dynamo/exc.py, torch/_inductor/exc.py): Dynamo's
        # BackendCompilerFailed / Unsupported / TorchRuntimeError, Inductor's errors, when no row
        # reads the error inside them (a triton version mismatch: FoundationVision/Infinity#31,
        # studied test4; issue 30, round ten, item 3).
        "a torch.compile (Dynamo/Inductor) error",
        ("torch._dynamo.exc.", "torch._inductor.exc.", "BackendCompilerFailed"),
        re.compile(r"torch\._(?:dynamo|inductor)\.exc\.\w+|BackendCompilerFailed: "),
    ),
)


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


def _reported(pattern: re.Pattern[str], part: str) -> re.Match[str] | None:
    """The first match of a described kind's ``pattern`` in ``part`` that the person does not
    only suppose: no "if" earlier in its sentence (:data:`repro.signatures.words.SUPPOSED`)."""
    for hit in pattern.finditer(part):
        start = part.rfind("\n", 0, hit.start()) + 1
        for end in words.SENTENCE_END.finditer(part, start, hit.start()):
            start = end.end()
        if words.SUPPOSED.search(part, start, hit.start()) is None:
            return hit
    return None


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
        self._hang_said: tuple[int, str] | None = None  # the first line saying the job hangs
        self._distributed = False  # NCCL's or torch.distributed's own lines are in the log
        # Rule 7: the first line where the person describes a failure, per kind; characters read.
        self._described: dict[str, tuple[int, str]] = {}
        self._described_read = 0
        # Rule 7c: the first line in the person's words (a greeting or thanks only when no other).
        self._words: tuple[int, str] | None = None
        self._polite: tuple[int, str] | None = None
        self._not_working: tuple[int, str] | None = None  # a run or GPU said not to work
        # Rule 7b: the last traceback header in the head (line, text, prefix length), whether no
        # line after it has closed it yet, and how many frames it holds.
        self._traceback: tuple[int, str, int] | None = None
        self._traceback_open = False
        self._traceback_frames = 0

    def feed(self, block: str, present: dict[object, Any], first_line_no: int) -> None:
        """Read ``block``, whose first line is line ``first_line_no``; ``present`` caches what
        scanners of the same block share (:class:`_HostNeutral`)."""
        self._feed_stacks(block, present, first_line_no)
        self._feed_described_hang(block, present, first_line_no)
        self._feed_described_failure(block, present, first_line_no)
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

    def _feed_described_hang(
        self, block: str, present: dict[object, Any], first_line_no: int
    ) -> None:
        if self._hang_said is None and prefilter.present(present, block, _HANG_NEEDLES):
            key = ("hang-words",)
            if key not in present:
                present[key] = _HANG_WORDS.search(block)
            hit = present[key]
            if hit is not None:
                start, end = _line_bounds(block, hit.start())
                line_no = first_line_no + block.count("\n", 0, start)
                self._hang_said = (line_no, block[start:end].strip())
        if not self._distributed and prefilter.present(present, block, _DISTRIBUTED_NEEDLES):
            key = ("distributed",)
            if key not in present:
                present[key] = _DISTRIBUTED.search(block) is not None
            self._distributed = present[key]

    def _feed_described_failure(
        self, block: str, present: dict[object, Any], first_line_no: int
    ) -> None:
        left = words.DESCRIBED_CHARS - self._described_read
        if left <= 0 or len(self._described) == len(words.DESCRIBED_FAILURE):
            return
        self._described_read += len(block)
        part = block if len(block) <= left else block[:left]
        if part is not block:
            present = {}  # the cache holds the whole block's answers
        if self._traceback_open or _TRACEBACK_HEADER in part:
            self._feed_cut_traceback(part, first_line_no)
        if self._words is None and self._not_working is None:
            checked = -1
            for gate in words.NOT_WORKING_GATE.finditer(part):
                start, end = _line_bounds(part, gate.start())
                if start != checked and words.NOT_WORKING.match(part, start, end):
                    line_no = first_line_no + part.count("\n", 0, start)
                    self._not_working = (line_no, part[start:end].strip())
                    break
                checked = start
        if self._words is None:
            for spoken in words.PERSONS_WORDS.finditer(part):
                start, end = _line_bounds(part, spoken.start())
                said = (first_line_no + part.count("\n", 0, start), part[start:end].strip())
                if spoken.group("polite") is None:
                    self._words = said
                    break
                if self._polite is None:
                    self._polite = said
        if not prefilter.present(present, part, words.DESCRIBED_NEEDLES):
            return
        for kind, pattern in words.DESCRIBED_FAILURE:
            if kind in self._described:
                continue
            key = ("described", kind)
            if key not in present:
                present[key] = (
                    _reported(pattern, part)
                    if kind in words.SUPPOSED_KINDS
                    else pattern.search(part)
                )
            hit = present[key]
            if hit is not None:
                start, end = _line_bounds(part, hit.start())
                line_no = first_line_no + part.count("\n", 0, start)
                self._described[kind] = (line_no, part[start:end].strip())

    def _feed_cut_traceback(self, part: str, first_line_no: int) -> None:
        """Follow the last traceback of the head: a header opens it; an indented line (a frame,
        its source line, a ``^^^`` marker) keeps it open; any other non-blank line (the exception,
        the person's words) closes it. Lines carry the header's log prefix, if any."""
        for offset, line in enumerate(part.split("\n")):
            at = line.find(_TRACEBACK_HEADER)
            if at >= 0:
                self._traceback = (first_line_no + offset, line.strip(), at)
                self._traceback_open, self._traceback_frames = True, 0
                continue
            if not self._traceback_open or self._traceback is None:
                continue
            body = line[self._traceback[2] :]
            if not body.strip():
                continue
            if body[0] in " \t^~":
                self._traceback_frames += 'File "' in body
                continue
            self._traceback_open = False

    def cut_traceback(self) -> tuple[int, str] | None:
        """``(line_no, header line)`` when the head's last Python traceback holds frames and ends
        before any exception line (rule 7b), else ``None``; not for a Ctrl-C (whose traceback
        a KeyboardInterrupt ends)."""
        if (
            self._traceback is None
            or not self._traceback_open
            or self._traceback_frames == 0
            or self._interrupted
        ):
            return None
        return self._traceback[0], self._traceback[1]

    def described_failure(self) -> tuple[int, str, str, str] | None:
        """``(line_no, line, coarse family, row name)`` of the earliest line where the person
        describes a failure (killed, hangs, stuck, NaN loss, crashed, "I got this error", ...;
        rule 7), or ``None``. The coarse family says the failure is only described: "killed (in
        the person's words)"; the row name is the row that kind names
        (:data:`repro.signatures.words.DESCRIBED_ROWS`), ``""`` for the kinds that stay unknown. With no kind: a traceback cut before its exception
        (rule 7b), else the person's first line of words no kind reads (rule 7c, a greeting or
        thanks only when there is no other), coarse "a problem in the person's words"."""
        if not self._described:
            cut = self.cut_traceback()
            if cut is not None:
                coarse = "a Python traceback cut before its exception (the log shows no error line)"
                return cut[0], cut[1], coarse, ""
            said = [w for w in (self._words, self._not_working) if w is not None]
            first = min(said) if said else self._polite
            if first is None:
                return None
            # Rule 7c: the person wrote about the log, and no row, failure line or kind of rule 7
            # reads what they wrote; said plainly rather than "no failure found".
            coarse = (
                "a problem in the person's words (the log shows no error line; no row reads them)"
            )
            return first[0], first[1], coarse, ""
        kind, (line_no, line) = min(self._described.items(), key=lambda item: item[1][0])
        coarse = f"{kind} (in the person's words; the log shows no error line)"
        return line_no, line, coarse, words.DESCRIBED_ROWS.get(kind, "")

    def persons_line(self) -> int | None:
        """The number of the first line in the person's words (a first-person line, a question,
        a greeting or thanks: :data:`repro.signatures.words.PERSONS_WORDS`) within
        :data:`repro.signatures.words.DESCRIBED_CHARS` of the head, or ``None`` (rule 2e)."""
        said = [w[0] for w in (self._words, self._polite) if w is not None]
        return min(said) if said else None

    def described_hang(self, only_interrupted: bool) -> tuple[int, str] | None:
        """``(line_no, line)`` of the line where the person says the job hangs (stuck, hangs,
        deadlock, ...), when the log is a distributed job's on NCCL (its INFO lines, the process
        group, the launcher) and no other exception than a KeyboardInterrupt ended it (rule 6)."""
        if self._hang_said is None or not self._distributed or not only_interrupted:
            return None
        return self._hang_said

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
