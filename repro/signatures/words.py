"""A person's words around a pasted log (issue 30, rules 7 and 7c): the failures people describe
in their own words ("it gets killed", "loss is nan", "the code ran stuck"), the rows those kinds
name, and the lines that speak as a person does (first person, greetings, questions, a GPU or run
they say does not work) as opposed to lines a program logged.

Data only: :class:`repro.signatures.unmatched._Unmatched` reads a log's head with these
expressions (rule 7: a described failure; rule 7c: the person's words where nothing else reads
them). The run evidence of rule 8 (what a healthy run prints) is
:mod:`repro.signatures.runoutput`.
"""

from __future__ import annotations

import re

#: A failure in the person's own words, in a log whose lines show none (rule 7, issue 30, round
#: six): "it ends with Killed error again" (mkocabas/VIBE#83), "the training process was killed"
#: (nnUNet#469, dreamerv3#203), "the code ran stuck" (NVIDIA/nccl#1126), "in deadLock"
#: (pytorch/pytorch#49733), "Loss nan" (deepinsight/insightface#2262), "grad norm is nan"
#: (espnet/espnet#3237), "I keep getting this error" (csuhan/opendet2#29), "HSA_ERROR_INVALID_ISA
#: error occurred" (ROCm/TheRock#3044). Fitted on the studied sets' first-sight records (test3,
#: test4, test5): it holds in 11 of their 15 failures called clean and in none of the 43 logs
#: any corpus labels clean (their "Failed to open ibv device", "cannot assign requested address",
#: "Exception ignored in" are log lines, not these words). Groups: (kind, expression).
DESCRIBED_FAILURE: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Not a kill the sentence puts on someone ("I killed it", "killed by the user", "manually"):
    # no OOM kill. Nor a kill the person only supposes (issue 30, round fifteen): a conditional
    # earlier in the same sentence ("However, if it says `Killed`, it means your system ran out of
    # memory", huggingface/autotrain-advanced#136, test12) or a modal alternative ("Unreasonable
    # crash or be killed", microsoft/pai#1635, test8), both labelled unknown and named
    # host_oom_killed_hint at first sight (the conditional: :data:`SUPPOSED`).
    (
        "killed",
        re.compile(
            r"(?i)(?<!I )(?<!we )(?<!or be )(?<!may be )(?<!might be )(?<!could be )(?<!would be )"
            r"\bkilled\b(?!\s+(?:by\s+(?:the\s+)?(?:user|me|myself|hand|operator|admin"
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
    # (NVIDIA/DeepLearningExamples#1266); "Finetuning goes NAN after 1/2 epochs" (SWivid/F5-TTS#341,
    # round fourteen). Not "not nan", "no nan", "without nan".
    (
        "NaN in training",
        re.compile(
            r"(?i)\b(?:loss(?:es)?|grad(?:ient)?s?(?: norm)?)\b[^.\n]{0,40}?"
            r"(?<!not )(?<!no )(?<!non-)(?<!without )\b(?:nan|inf(?:inity|inite)?)\b"
            r"|(?<!not )(?<!no )(?<!non-)(?<!without )\bnan\W{0,3}(?:loss(?:es)?|values?"
            r"|gradients?|outputs?|and (?:zero|inf)|or inf)\b"
            r"|\b(?:are|becomes?|became|turns? (?:in)?to|(?:goes|going|went)(?: to)?|gets?|getting|got|outputs?"
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
    # A GPU running out of memory in the person's words, said on a line that names the GPU or
    # the batch size and not the host's memory (issue 30, round fourteen): "I can run train on my
    # GPU with batch size = 24, but on validation I've got OOM" (MhLiao/DB#320), "out of memory in
    # training with batch size 1" (timothybrooks/instruct-pix2pix#65), "Exhausted GPU memory with
    # batch size of 1" (HRNet/DEKR#16), "on an RTX 5090 ... out-of-memory (OOM) issues"
    # (ML-GSAI/LLaDA-V#25), "a single 4090 24G GPU ... Out of memory" (ljy0ustc/LLaRA#8). Not a
    # line that names RAM, CPU, system or host memory or a node (torchtune#1871's 500 GB of system
    # RAM, a GKE node "ran out of memory"), not the OOM killer (the host's: "killed" above), not
    # "no OOM", "without OOM", "not out of memory"; a bare "OOM" title says nothing of which memory.
    (
        "out of memory",
        re.compile(
            r"(?im)^(?=[^\n]*?(?<!not )(?<!no )(?<!without )(?<!never )(?<!n't )"
            r"(?:\bout[- ]of[- ](?:(?:gpu|cuda|video|vram|device)\s)?memory\b"
            r"|\bexhaust(?:ed|s|ing)? (?:the )?(?:gpu|cuda|vram) memory\b"
            r"|(?-i:\bOOM\b)(?![-_ ]?kill)))"
            r"(?=[^\n]*(?<![-\w])(?:gpus?|cuda|vram|rtx|geforce|batch[ _-]?size|batchsize)(?![-\w]))"
            r"(?![^\n]*\b(?:ram|cpu|system memory|host memory|swap|nodes?|oom[-_ ]?kill\w*)\b)"
        ),
    ),
    # A GPU WSL does not give CUDA, in the person's words on a line that names WSL (issue 30,
    # round fifteen): "Pytorch does not recognize GPU in WSL2" (pytorch/pytorch#84550), "CUDA
    # won't detect GPU in WSL" (microsoft/WSL#9254), "not recognizing GPU on WSL"
    # (microsoft/WSL#8102), "'torch.cuda.is_available()' always returns 'false' in wsl"
    # (microsoft/WSL#7056), "WSL: Training on CPU even when having compatible NVIDIA GPU"
    # (ivadomed/ivadomed#953): five logs in four studied sets whose lines no row reads. The GPU
    # or CUDA is the object of the negated verb (as rule 7c's NOT_WORKING reads it), or
    # is_available() is false, or the run is on the CPU; "WSL" must be a word of that line.
    (
        "no GPU in WSL",
        re.compile(
            r"(?im)^(?=[^\n]*(?<![\w/.-])wsl ?2?(?![\w/-]|\.\w))[^\n]*?(?:"
            r"(?:\bnot|n't|\bcannot|\bcan ?not|\bunable to)[ \t]+(?:\w+[ \t]+)?(?:recogni[sz]\w*"
            r"|detect\w*|see|sees|find|finds|use|using|utili[sz]e|pick(?:s|ing)? up)[ \t]+"
            r"(?:\w+[ \t]+)?(?:gpus?|cuda|nvidia)\b"
            r"|\bno (?:gpus?|cuda|nvidia gpus?)\b[^.\n]{0,20}?\b(?:detected|found|available"
            r"|recogni[sz]ed)\b"
            r"|\b(?:gpus?|cuda)\b[^.\n]{0,20}?\bnot (?:being )?(?:detected|recogni[sz]ed|found"
            r"|available)\b"
            r"|is_available\(\)[^\n]{0,30}?\bfalse\b"
            r"|\b(?:training|trains|runs|running|run) on (?:the )?cpu\b)"
        ),
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
#: A described failure the person only supposes (rule 7, issue 30, round fifteen): "if" earlier
#: in the same sentence as the kind's word ("However, if it says `Killed`, it means your system
#: ran out of memory", huggingface/autotrain-advanced#136, test12, labelled unknown and named
#: host_oom_killed_hint at first sight). A sentence ends at [.!?;] and white space: a dotted file
#: name ("txt2img.py always get killed") or a rate ("2.91s/it]Killed") does not end one.
SUPPOSED = re.compile(r"(?i)\bif\b")
#: Where a sentence ends (:data:`SUPPOSED` reads from the last one before the word).
SENTENCE_END = re.compile(r"[.!?;]\s")
#: The kinds :data:`SUPPOSED` applies to: a kill only. A NaN under a condition is one the person
#: saw under it ("If the precision is fp16, ... nan", jinxixiang/magic_animate_unofficial#6, test9,
#: nan_detected: read for every kind, the studied sets lost that verdict and gained nothing more).
SUPPOSED_KINDS = frozenset({"killed"})
#: Rule 7's words are English words in any script: in Chinese or Japanese text they touch the
#: characters around them ("训练到一段时间就出现Killed", QwenLM/Qwen-VL#507), where Unicode's
#: ``\b`` finds no word boundary; ASCII's does (issue 30, round ten).
DESCRIBED_FAILURE = tuple(
    (kind, re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII))
    for kind, pattern in DESCRIBED_FAILURE
)
#: The described kinds a row names (rule 7): a process the person says was killed, with no line
#: of the log showing why, is the host's OOM killer's SIGKILL, as the shell's bare "Killed" is
#: (mkocabas/VIBE#83, MIC-DKFZ/nnUNet#469, danijar/dreamerv3#203 in the studied sets;
#: szymanowiczs/splatter-image#30 "the training process will be killed", georghess/neurad-studio#45
#: "it was killed", facebookresearch/SymbolicMathematics#9 "it gets killed when loading the training
#: data", askforalfred/alfred#33 "the training process is still being killed", each answered
#: "out of RAM"); a loss the person says is NaN is nan_detected; a driver the person says is too old
#: is driver_too_old (round eight). The other kinds stay unknown.
DESCRIBED_ROWS = {
    "killed": "host_oom_killed_hint",
    "out of memory": "oom",
    "NaN in training": "nan_detected",
    "a driver too old": "driver_too_old",
    "no GPU in WSL": "wsl_gpu_unavailable",
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
NOT_A_LOG_LINE = (
    r"^(?![ \t]*(?:[\[(<0-9/]|[A-Za-z]:\\|[IWEF]\d{4}|[IWEF] [\w./-]+:\d+\]"
    r"|[\w.]*(?:Warning|Error|Exception)\b|[A-Z][A-Z_ ]+:|[A-Z]{4,8} \([\w.]+\):))"
)
PERSONS_WORDS = re.compile(
    r"(?m)" + NOT_A_LOG_LINE + r"[^\n]*?(?:"
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
#: only on the lines :data:`NOT_WORKING_GATE` finds (inside :data:`PERSONS_WORDS`, tried at
#: every position, they took the words scan of the corpora's heads from 0.10 to 0.25 s).
NOT_WORKING = re.compile(
    r"(?m)" + NOT_A_LOG_LINE + r"[^\n]*?(?i:"
    r"\b(?:cannot|can't|can ?not|could ?not|couldn't|unable to|does ?not|doesn't|did ?not|didn't"
    r"|is ?not|isn't|are ?not|aren't|won't|not)[ \t]+(?:be(?:ing)?[ \t]+)?(?:\w+[ \t]+)?"
    r"(?:work(?:s|ing)?|train(?:s|ing|ed)?|learn(?:s|ing)?|converg\w*)\b"
    r"|(?:\bnot|n't|\bcannot|\bcan ?not|\bunable to)[ \t]+(?:\w+[ \t]+)?(?:recogni[sz]\w*"
    r"|detect\w*|see|sees|find|finds|use|using|utili[sz]e)[ \t]+(?:\w+[ \t]+)?(?:gpus?|cuda"
    r"|nvidia)\b"
    r"|\bno (?:gpus?|cuda|nvidia gpus?)\b[^.\n]{0,20}?\b(?:used|detected|found|available"
    r"|recogni[sz]ed)\b"
    r"|\b(?:gpus?|cuda)\b[^.\n]{0,20}?\bnot (?:being )?(?:used|utili[sz]ed|detected"
    r"|recogni[sz]ed)\b"
    # torch's own test said false in a sentence ("torch.cuda.is_available() returns False",
    # pytorch/pytorch#6041, test12) and a program the person says fails with an error they
    # quote ('libtorch fails with "no kernel image is available..."', pytorch/pytorch#31007,
    # test11): both titles over nvidia-smi's table, the text's only run output, so "no failure
    # found" at first sight (issue 30, round fifteen). Over the studied sets no text labelled
    # clean holds either form.
    r"|\bis_available\(\)[ \t]*(?:returns?|returned|is|gives|gave|=+)[ \t]*false\b"
    r"|\bfail(?:s|ed)? with\b)"
)
#: Where :data:`NOT_WORKING` can match: a negation's literal, torch's availability test, "fails
#: with".
NOT_WORKING_GATE = re.compile(
    r"(?i)not\b|n't\b|\bno (?:gpus?|cuda|nvidia)\b|\bunable to\b|is_available\(\)"
    r"|\bfail(?:s|ed)? with\b"
)
#: How much of a log rule 7 reads: the person's words come first (a title, a description over
#: the pasted log); a long machine log after them is not searched for them again (the scan costs
#: 1.8 s per 4 MB otherwise: benchmarks/classify_stream.py --in-process).
DESCRIBED_CHARS = 64 * 1024
DESCRIBED_NEEDLES = (
    "ill", "ang", "ung", "tuck", "ock", "reez", "roze", "nan", "NaN", "Nan", "NAN", "rash",
    "egfault", "dumped", "borted", "rror", "too old", "ail", "inf", "Inf", "INF", "top", "xit", "erminat", "inish", "nd", "uit", "杀",
    "卡", "报错", "崩溃", "emory", "EMORY", "OOM", "WSL", "wsl", "Wsl",
)  # fmt: skip
