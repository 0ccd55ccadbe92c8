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

from repro.signatures import prefilter
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
_DISTRIBUTED = re.compile(r"NCCL (?:INFO|version)|ProcessGroupNCCL|torch/multiprocessing/spawn\.py")
_DISTRIBUTED_NEEDLES = ("NCCL ", "ProcessGroupNCCL", "multiprocessing/spawn.py")
_INTERRUPTED = re.compile(r"^\^C|^KeyboardInterrupt\s*$", re.MULTILINE)
#: A failure in the person's own words, in a log whose lines show none (rule 7, issue 30, round
#: six): "it ends with Killed error again" (mkocabas/VIBE#83), "the training process was killed"
#: (nnUNet#469, dreamerv3#203), "the code ran stuck" (NVIDIA/nccl#1126), "in deadLock"
#: (pytorch/pytorch#49733), "Loss nan" (deepinsight/insightface#2262), "grad norm is nan"
#: (espnet/espnet#3237), "I keep getting this error" (csuhan/opendet2#29), "HSA_ERROR_INVALID_ISA
#: error occurred" (ROCm/TheRock#3044). Fitted on the studied sets' first-sight records (test3,
#: test4, test5): it holds in 11 of their 15 failures called clean and in none of the 43 logs
#: any corpus labels clean (their "Failed to open ibv device", "cannot assign requested address",
#: "Exception ignored in" are log lines, not these words). Groups: (kind, expression).
_DESCRIBED_FAILURE: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Not a kill the sentence puts on someone ("I killed it", "killed by the user", "manually"):
    # no OOM kill.
    (
        "killed",
        re.compile(
            r"(?i)(?<!I )(?<!we )\bkilled\b(?!\s+(?:by\s+(?:the\s+)?(?:user|me|myself|hand|operator|admin"
            r"|scheduler|slurm|ctrl)|manually))|已杀死|被kill|被杀"
        ),
    ),
    # A process that never ends is a hang too: "the program does not stop and the GPU memory is
    # still occupied" (MIC-DKFZ/nnUNet#842, studied test7), "doesn't exit after training",
    # "never terminates" (issue 30, round eight).
    (
        "a hang",
        re.compile(
            r"(?i)\b(?:hangs?|hanging|hung|stuck|dead-?lock(?:ed|s)?|freez(?:e|es|ing)|froze)\b"
            r"|\b(?:does not|doesn't|does't|won't|will not|never)\s+(?:stops?|exits?|terminates?"
            r"|finish(?:es)?|ends?|quits?)\b"
            r"|卡住|卡死"
        ),
    ),
    # A NaN loss in other words and either case (issue 30, round eight, from the studied test7's
    # three misses): "Nan loss after 20k+ steps" (PKU-YuanGroup/Open-Sora-Plan#333), "the loss
    # value is Nan" / "the loss always becomes Nan" (Xu3XiWang/CACViT-AAAI24#9), "datas(box, obj,
    # cls) are nan" / "many nan and zero" (ultralytics/yolov5#4538); "Get nan loss during
    # training" (facebookresearch/maskrcnn-benchmark#841); an infinite loss alike, as the row's
    # "Loss is inf" and detectron2's "Loss became infinite or NaN": "why the loss goes to inf and
    # nan?" (NVlabs/Deep_Object_Pose#74), "MultiBox loss goes to infinity"
    # (sgrvinod/a-PyTorch-Tutorial-to-Object-Detection#43), "loss is inf when training resnet50"
    # (NVIDIA/DeepLearningExamples#1266). Not "not nan", "no nan", "without nan".
    (
        "NaN in training",
        re.compile(
            r"(?i)\b(?:loss(?:es)?|grad(?:ient)?s?(?: norm)?)\b[^.\n]{0,40}?"
            r"(?<!not )(?<!no )(?<!non-)(?<!without )\b(?:nan|inf(?:inity|inite)?)\b"
            r"|(?<!not )(?<!no )(?<!non-)(?<!without )\bnan\W{0,3}(?:loss(?:es)?|values?"
            r"|gradients?|outputs?|and (?:zero|inf)|or inf)\b"
            r"|\b(?:are|becomes?|became|turns? (?:in)?to|goes to|went to|gets?|getting|got|outputs?"
            r"|many|all) nan\b"
        ),
    ),
    # torch's "The NVIDIA driver on your system is too old" in the person's words: "the msg is that
    # my Nvidia version is too old" (pytorch/pytorch#28195, studied test7), "NVIDIA driver too old
    # error" (pytorch/pytorch#4546's title); issue 30, round eight.
    (
        "a driver too old",
        # The driver, not the GPU ("your GPU is too old" is an architecture the wheel dropped).
        re.compile(r"(?i)\b(?:driver|nvidia version)\b[^.\n]{0,20}?\btoo old\b"),
    ),
    (
        "a crash",
        re.compile(r"(?i)\b(?:crash(?:ed|es|ing)?|segfault\w*|core dumped|aborted)\b|崩溃"),
    ),
    # A run the person says failed or ended silently (issue 30, round eight: symptom titles such
    # as "The training process exit without any Traceback" (open-mmlab/mmdetection#392), "Training
    # fails with 2 GPUs", "training failed after epoch 3"). Not fitted on a studied miss: every
    # corpus's clean logs keep their verdict with it.
    (
        "a failure",
        re.compile(
            r"(?i)\b(?:training|train|it|model|program|process|job|run|script|code)\b[^.\n]{0,30}?"
            r"\b(?:fails?|failed|failing)\b"
            r"|\bexit(?:s|ed)?\b[^.\n]{0,20}?\b(?:without|with no)\b[^.\n]{0,15}?"
            r"\b(?:error|message|output|traceback|log)"
        ),
    ),
    (
        "an error",
        re.compile(
            r"(?i)^\W{0,3}(?:[\w.-]+\s){0,3}errors? (?:when|while|during|in|on|at|after) \w"
            r"|\b(?:I|we|it|this|my|the (?:program|process|training|code|job))\b[^.\n]{0,80}"
            r"\b(?:get|got|getting|gets|meet|met|encounter(?:ed)?|see|saw|ran into|run into"
            r"|occurs?|occurred|throws?|threw|reports?|reported|shows?|showed|appears?|appeared"
            r"|hit)\b[^.\n]{0,60}\berror\b|\berror (?:occurred|occurs|happens|happened"
            r"|appears|appeared)\b|报错"
        ),
    ),
)
#: Rule 7's words are English words in any script: in Chinese or Japanese text they touch the
#: characters around them ("训练到一段时间就出现Killed", QwenLM/Qwen-VL#507), where Unicode's
#: ``\b`` finds no word boundary; ASCII's does (issue 30, round ten).
_DESCRIBED_FAILURE = tuple(
    (kind, re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII))
    for kind, pattern in _DESCRIBED_FAILURE
)
#: The described kinds a row names (rule 7): a process the person says was killed, with no line
#: of the log showing why, is the host's OOM killer's SIGKILL, as the shell's bare "Killed" is
#: (mkocabas/VIBE#83, MIC-DKFZ/nnUNet#469, danijar/dreamerv3#203 in the studied sets;
#: szymanowiczs/splatter-image#30 "the training process will be killed", georghess/neurad-studio#45
#: "it was killed", facebookresearch/SymbolicMathematics#9 "it gets killed when loading the training
#: data", askforalfred/alfred#33 "the training process is still being killed", each answered
#: "out of RAM"); a loss the person says is NaN is nan_detected; a driver the person says is too old
#: is driver_too_old (round eight). The other kinds stay unknown.
_DESCRIBED_ROWS = {
    "killed": "host_oom_killed_hint",
    "NaN in training": "nan_detected",
    "a driver too old": "driver_too_old",
}
#: The person's own words in a log (rule 7c, issue 30, round eight): a line that is not a log
#: line (no timestamp, bracket, path, level or ``XWarning:`` prefix) and speaks as a person does: in
#: the first person ("I tried", "my training"), greeting or thanking someone, or asking a question.
#: A log that holds them was pasted into a report by someone who saw a problem; when no line of
#: it shows a failure and none of rule 7's kinds reads the words, the engine has not understood
#: what went wrong, so it says unknown, not "no failure found". Fitted on the first-sight records
#: of the studied sets (each set classified by the engine as it was when the set was frozen,
#: today's labels): of their 31 "clean" verdicts 25 were failures, 17 of them with such words
#: (test3 cmt#15; test4 pytorch#49733, nccl#1126, opendet2#29; test5 snowfall#71, nnUNet#469,
#: VIBE#83, nccl#447; test6 svraster#7; test7 Open-Sora-Plan#333, CACViT#9, yolov5#4538,
#: nnUNet#842, panopticseg#20, pytorch#28195, unsloth#1175), and 3 of the 6 clean logs
#: (voxceleb_trainer#110, nnUNet#1490, ssd.pytorch#539: a slow run, a log file not updated). No
#: clean log of the seen, train, test or test2 corpora holds them (tensorflow's "I tensorflow/..."
#: lines, banners and warnings are log lines). A greeting or thanks (group ``polite``) decides only
#: when the head holds no other words: "I am trying to run nnUNet ... my training is stopped
#: here" says more than "Hello, nnUNet community," before it (issue 30, item 3).
#: Where rule 7c's words may start: a line that is not a log line (no bracket, parenthesis, digit,
#: path, drive, glog level (``I0814``, ``I tensorflow/.../x.cc:28]``), ``XWarning:``/``XError:``
#: or ``PREFIX:`` at its start, nor Theano's and PyTensor's ``LEVEL (logger):``, their logging
#: handler's format "%(levelname)s (%(name)s): %(message)s": "WARNING (theano.sandbox.cuda): CUDA
#: is installed, but device gpu is not available", fastai/courses#27; issue 30, round eleven).
_NOT_A_LOG_LINE = (
    r"^(?![ \t]*(?:[\[(<0-9/]|[A-Za-z]:\\|[IWEF]\d{4}|[IWEF] [\w./-]+:\d+\]"
    r"|[\w.]*(?:Warning|Error|Exception)\b|[A-Z][A-Z_ ]+:|[A-Z]{4,8} \([\w.]+\):))"
)
_PERSONS_WORDS = re.compile(
    r"(?m)" + _NOT_A_LOG_LINE + r"[^\n]*?(?:"
    r"(?<![\w/.-])I(?:'m|'ve|'d| (?:am|have|had|was|did|do|don't|tried|try|get|got|use|used|run"
    r"|ran|found|see|saw|think|want|wanted|can|cannot|can't|could|would|will|just|also|then"
    r"|noticed|encountered|followed|installed|set|await|met|meet|train|trained|keep|changed"
    r"|checked|start|started|launched|wonder|guess|suspect|believe|only|still|even|really))\b"
    r"|(?<![\w/.-])(?:[Mm]y|[Oo]ur) (?:\w+ ){0,2}?(?:training|model|code|program|job|run|script"
    r"|gpu|GPU|machine|server|dataset|data|computer|laptop|environment|process)\b"
    r"|(?P<polite>^[ \t]*(?:Hi|Hello|Hey|Dear)\b[ ,!]"
    r"|(?i:\bthanks?(?: you)?\b[ ,.!]*(?:in advance|for)?)[ .!]*$)"
    r"|^[ \t]*(?:Why|How|What|Is|Are|Does|Do|Did|Can|Could|Has|Have|Any|Anyone|Should)\b"
    r"[^\n]*\?[ \t]*$"
    r")"
)
#: Rule 7c's words also: a run or a GPU the person says does not work (issue 30, round ten):
#: "Cannot train on gfx803" (ROCm/pytorch#342: the loss stays at 2.303, no error), "Pytorch does
#: not recognize GPU in WSL2" (pytorch/pytorch#84550), "no gpu used to train policy"
#: (huggingface/lerobot#2363), each over a run with no failure line, so called "no failure found"
#: (test8's first sight and the base engine); the same form in titles rules 7c and 8 already read
#: there ("Torch is not detecting cuda", "(WSL2) - No GPU / Cuda detected"). The verb is a run's
#: (work, train, learn, converge) or one that a GPU is the object of (recognize, detect, use): a
#: log line's "could not open", "not found", "were not used when initializing" is not one. Read
#: only on the lines :data:`_NOT_WORKING_GATE` finds (inside :data:`_PERSONS_WORDS`, tried at
#: every position, they took the words scan of the corpora's heads from 0.10 to 0.25 s).
_NOT_WORKING = re.compile(
    r"(?m)" + _NOT_A_LOG_LINE + r"[^\n]*?(?i:"
    r"\b(?:cannot|can't|can ?not|could ?not|couldn't|unable to|does ?not|doesn't|did ?not|didn't"
    r"|is ?not|isn't|are ?not|aren't|won't|not)[ \t]+(?:be(?:ing)?[ \t]+)?(?:\w+[ \t]+)?"
    r"(?:work(?:s|ing)?|train(?:s|ing|ed)?|learn(?:s|ing)?|converg\w*)\b"
    r"|(?:\bnot|n't|\bcannot|\bcan ?not|\bunable to)[ \t]+(?:\w+[ \t]+)?(?:recogni[sz]\w*"
    r"|detect\w*|see|sees|find|finds|use|using|utili[sz]e)[ \t]+(?:\w+[ \t]+)?(?:gpus?|cuda"
    r"|nvidia)\b"
    r"|\bno (?:gpus?|cuda|nvidia gpus?)\b[^.\n]{0,20}?\b(?:used|detected|found|available"
    r"|recogni[sz]ed)\b"
    r"|\b(?:gpus?|cuda)\b[^.\n]{0,20}?\bnot (?:being )?(?:used|utili[sz]ed|detected"
    r"|recogni[sz]ed)\b)"
)
#: Where :data:`_NOT_WORKING` can match: a negation's literal.
_NOT_WORKING_GATE = re.compile(r"(?i)not\b|n't\b|\bno (?:gpus?|cuda|nvidia)\b|\bunable to\b")
#: How much of a log rule 7 reads: the person's words come first (a title, a description over
#: the pasted log); a long machine log after them is not searched for them again (the scan costs
#: 1.8 s per 4 MB otherwise: benchmarks/classify_stream.py --in-process).
_DESCRIBED_CHARS = 64 * 1024
_DESCRIBED_NEEDLES = (
    "ill", "ang", "ung", "tuck", "ock", "reez", "roze", "nan", "NaN", "Nan", "NAN", "rash",
    "egfault", "dumped", "borted", "rror", "too old", "ail", "inf", "Inf", "INF", "top", "xit", "erminat", "inish", "nd", "uit", "杀",
    "卡", "报错", "崩溃",
)  # fmt: skip
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
        left = _DESCRIBED_CHARS - self._described_read
        if left <= 0 or len(self._described) == len(_DESCRIBED_FAILURE):
            return
        self._described_read += len(block)
        part = block if len(block) <= left else block[:left]
        if part is not block:
            present = {}  # the cache holds the whole block's answers
        if self._traceback_open or _TRACEBACK_HEADER in part:
            self._feed_cut_traceback(part, first_line_no)
        if self._words is None and self._not_working is None:
            checked = -1
            for gate in _NOT_WORKING_GATE.finditer(part):
                start, end = _line_bounds(part, gate.start())
                if start != checked and _NOT_WORKING.match(part, start, end):
                    line_no = first_line_no + part.count("\n", 0, start)
                    self._not_working = (line_no, part[start:end].strip())
                    break
                checked = start
        if self._words is None:
            for words in _PERSONS_WORDS.finditer(part):
                start, end = _line_bounds(part, words.start())
                said = (first_line_no + part.count("\n", 0, start), part[start:end].strip())
                if words.group("polite") is None:
                    self._words = said
                    break
                if self._polite is None:
                    self._polite = said
        if not prefilter.present(present, part, _DESCRIBED_NEEDLES):
            return
        for kind, pattern in _DESCRIBED_FAILURE:
            if kind in self._described:
                continue
            key = ("described", kind)
            if key not in present:
                present[key] = pattern.search(part)
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
        the person's words)"; the row name is the row that kind names (:data:`_DESCRIBED_ROWS`),
        ``""`` for the kinds that stay unknown. With no kind: a traceback cut before its exception
        (rule 7b), else the person's first line of words no kind reads (rule 7c, a greeting or
        thanks only when there is no other), coarse "a problem in the person's words"."""
        if not self._described:
            cut = self.cut_traceback()
            if cut is not None:
                coarse = "a Python traceback cut before its exception (the log shows no error line)"
                return cut[0], cut[1], coarse, ""
            said = [w for w in (self._words, self._not_working) if w is not None]
            words = min(said) if said else self._polite
            if words is None:
                return None
            # Rule 7c: the person wrote about the log, and no row, failure line or kind of rule 7
            # reads what they wrote; said plainly rather than "no failure found".
            coarse = (
                "a problem in the person's words (the log shows no error line; no row reads them)"
            )
            return words[0], words[1], coarse, ""
        kind, (line_no, line) = min(self._described.items(), key=lambda item: item[1][0])
        coarse = f"{kind} (in the person's words; the log shows no error line)"
        return line_no, line, coarse, _DESCRIBED_ROWS.get(kind, "")

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
