"""Whether a text shows a run (rule 8, issue 30, round eight): the output a training job or a
GPU tool prints while it runs normally, which "no failure found" needs besides the absence of a
failure line. Kept apart from :mod:`repro.signatures.unmatched` (the decisive line and coarse
family of a failure no row names): this module reads what a healthy text holds, not a failure.
The scanner (:mod:`repro.signatures.scanner`) calls :func:`shows_run` on the first
:data:`RUN_CHARS` of a log that shows no failure.
"""

from __future__ import annotations

import re

#: Output a job or a tool prints while it runs normally (rule 8, issue 30, round eight): what
#: "no failure found" needs besides the absence of a failure line. A text with neither (a few
#: command lines, an environment listing, a person's words no rule reads) is an excerpt cut
#: before its failure or a failure only described, not a healthy run: ``unknown``, coarse
#: :data:`NO_RUN_COARSE`. The forms are those of the labelled-clean logs of the studied corpora
#: (seen, train, test ... test7; each form's example named) and of the tools' documented formats:
#: tqdm's ``[elapsed<remaining, N it/s]`` (https://tqdm.github.io/docs/tqdm/, afn#8,
#: closerlookfewshot#60), Keras' ``N/M [====>...]``; numbered epoch/step/iteration lines and a
#: metric with its value (wlasl#74, u2net#299, insightface#697, tensorflow#28405; dreamerv3's
#: ``train/loss/con 0.04``); logging lines
#: with a timestamp or a level (Python logging's ``LEVEL:logger:`` and ``%(asctime)s`` formats,
#: https://docs.python.org/3/library/logging.html; glog's ``I0814 17:34:01``, mlcommons#124;
#: c10's ``[W reducer.cpp:1050]``, speechbrain#701, doctr#915; ``NCCL INFO``/``NCCL WARN``,
#: nccl#229, horovod#685; a warning a library or Python printed, ``UserWarning:``
#: latent-diffusion#281, ``libibverbs: Warning:`` dockermonitor#7; CPython's ``Exception ignored
#: in``, pytorch#6461); a GPU tool's report (nvidia-smi's table, crnn-pytorch#3; rocminfo,
#: ROCm/ROCm#1530; ``nvcc --version``, hvm1#283; ldconfig/ldd resolving a library, WSL#8587;
#: nccl-tests' header, nccl#352; deviceQuery's ``Result = PASS``); a finished run's summary
#: ("save weights done", yolov4-pytorch#58; "Checkpoint saved"). An optional markdown quote or
#: backtick and torchrun's ``[rankN]:`` prefix are read past.
_LINE_START = r"^[ \t>`]*(?:\[(?:rank|default)\d*\]:[ \t]*)?"


def _led(words: tuple[str, ...], tail: str) -> tuple[re.Pattern[str], ...]:
    """One expression per word, led by the word itself (so the scan is a literal search, near
    memory speed), with no word character or ``-`` before it (``--lr=0.1`` is a command's
    option, not a metric), then ``tail``."""
    return tuple(
        re.compile(rf"{re.escape(word)}(?<![\w-]{re.escape(word)}){tail}") for word in words
    )


_PROGRESS_UNITS = (
    "it", "s", "ex", "examples", "img", "imgs", "samples", "tokens", "step", "steps", "batches",
)  # fmt: skip
_RUN_OUTPUT = (
    # Progress bars: a rate (tqdm's N it/s or N s/it, with unit_scale's SI prefix "1.23kit/s",
    # tqdm's format_sizeof; datasets' "N examples/s"; Keras' N ms/step), tqdm's
    # [elapsed<remaining and N%|bar|.
    re.compile(
        r"/s\b(?:"
        + "|".join(
            rf"(?<=\d{unit}/s)|(?<=\d {unit}/s)|(?<=\d[kMGT]{unit}/s)" for unit in _PROGRESS_UNITS
        )
        + r")|s/it\b(?<=\ds/it)|/step\b(?<=\ds/step)|<(?<=\d:\d\d<)|%\|(?<=\d%\|)"
    ),
    # Logging lines: a timestamp, detectron2's, a level, glog's, c10's, a printed warning, CPython's
    # ignored exception; ldconfig's and ldd's library lines. glog's and c10's prefixes count at
    # levels I and W only, as Python logging's count at INFO, WARNING, DEBUG and NOTICE: an E
    # (ERROR) or F (FATAL) line is the program logging a failure, not a run going on (glog's
    # severities INFO, WARNING, ERROR, FATAL, https://github.com/google/glog; torch._logging's
    # formatter writes them as glog does). Issue 30, round thirteen: pytorch/pytorch#148551
    # (test10), torch._inductor's triton_heuristics logging a failed kernel's source at level E,
    # a title and E lines only, was "no failure found".
    re.compile(
        r"(?m)^[ \t>`]*(?:\[(?:rank|default)\d*\]:[ \t]*)?(?:"
        r"\[?\d{2,4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d"
        r"|\[?\d\d/\d\d/\d{4},? \d\d:\d\d"
        r"|\[\d\d/\d\d \d\d:\d\d:\d\d"
        r"|\[?(?:INFO|WARNING|WARN|DEBUG|NOTICE)\]?(?:[ \t]*[:|\]-]|[ \t]+\d)"
        r"|\[?[IW]\d{4} \d\d:\d\d:\d\d"
        r"|[IW] [\w/.-]+\.(?:cc|cpp|h|py):\d+\]"
        r"|\[[IW](?:\d{3,4} [\d:.]+)?[ \t]+[\w./-]+\.(?:cpp|cc|h|cu|py):\d+\]"
        r"|(?:[\w./-]+:[ \t]*){0,4}(?:[A-Z]\w*Warning|Warning|WARNING):[ \t]"
        r"|Exception ignored in\b"
        r"|lib[\w.+-]*\.so[\w.]* (?:\(libc6|=> /))"
    ),
    # NCCL's log lines, a level between bars; GPU tools' reports.
    re.compile(
        r"NCCL (?:INFO|WARN)\b|\|[ \t]*(?:INFO|WARNING|DEBUG)[ \t]*\|"
        r"|NVIDIA-SMI \d|ROCk module is loaded|HSA System Attributes|ROCm System Management Interface"
        r"|Cuda compilation tools, release|Result = PASS|# Avg bus bandwidth|# nThread \d"
    ),
    # Training frameworks' own run lines (issue 30, round eleven): transformers' Trainer banners
    # (trainer.py "***** Running training *****", "***** Running Evaluation *****";
    # log_metrics' "***** train metrics *****"); Lightning's device summary, model summary and
    # fit loop's end (trainer/setup.py _log_device_info "GPU available: True (cuda), used: True",
    # "TPU available: False, using: 0 TPU cores"; accelerators/cuda.py "LOCAL_RANK: 0 -
    # CUDA_VISIBLE_DEVICES: [0]"; model_summary "Total estimated model params size (MB)";
    # "`Trainer.fit` stopped: `max_epochs=10` reached."); accelerate's state
    # (state.py __repr__ "Distributed environment: MULTI_GPU  Backend: nccl").
    # One expression each, led by a literal (a scan near memory speed; as one alternation the
    # scan took 76 ms per MB of text, each apart a few ms).
    re.compile(
        r"\*\*\*\*\* (?:Running (?:[Tt]raining|[Ee]valuation|[Pp]rediction)|\w+ metrics) \*{5}"
    ),
    re.compile(
        r"PU available: (?<=\b[GTIH]PU available: )(?:True|False)(?: \(\w+\))?, us(?:ed|ing): "
    ),
    re.compile(r"LOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES: \["),
    re.compile(r"Total estimated model params size \(MB\)"),
    re.compile(r"`Trainer\.fit` stopped: "),
    re.compile(r"Distributed environment: (?:DistributedType\.)?[A-Z][A-Z_]+\b"),
)
#: Rule 8's word forms, matched in the lowercased text, each led by its word
#: (:func:`_led`): numbered epochs, steps, iterations, batches; a metric with its value; a
#: finished run's summary. A key may be quoted and its value too: transformers' Trainer prints
#: each logged dict as Python writes it, ``{'loss': 0.0923, 'grad_norm': 2.38, 'learning_rate':
#: 9.66e-05, 'epoch': 0.38}`` (trainer_callback.py: ProgressCallback.on_log's
#: ``training_bar.write(str(logs))``, PrinterCallback's ``print(logs)``; issue 30, round eleven).
_RUN_WORDS = (
    _led(
        ("epoch", "step", "iteration", "iter", "ite", "batch", "global_step"),
        r"\b['\"]?[ \t:=#\[]*['\"]?\d",
    )
    + _led(
        (
            "loss", "accuracy", "acc", "lr", "learning_rate", "learning rate", "psnr", "ssim",
            "map", "f1", "precision", "recall", "perplexity", "ppl", "bleu", "wer",
            "cross_entropy",
        ),
        r"\b[\w/-]*['\"]?(?:[ \t]*[:=][ \t]*['\"]?-?\.?\d|[ \t]+-?\d+\.\d)",
    )
    + _led(
        ("training", "train", "inference", "evaluation", "testing"),
        r" (?:is )?(?:complete|completed|finished|done)\b",
    )
    + _led(("checkpoint", "model", "weights", "weight"), r" saved\b")
    + _led(("saved", "saving"), r" (?:the )?(?:model|checkpoint|weights)\b")
    + _led(("finished training", "save weights done"), r"\b")
)  # fmt: skip
#: The coarse family of a text with no failure line and no run output (rule 8).
NO_RUN_COARSE = (
    "no failure line and no run output in the text: the failure is cut off or only described"
)
#: How much of a text rule 8 reads for a run (bytes of text): a run prints early and often; a
#: longer head with none is read no further (bounds the scan on a multi-MB log).
RUN_CHARS = 1 << 20


def shows_run(text: str) -> bool:
    """Whether ``text`` holds output a job or a tool prints while it runs normally (progress,
    numbered epochs/steps, a metric with its value, logging lines, a GPU tool's report, a
    finished summary: :data:`_RUN_OUTPUT`, :data:`_RUN_WORDS`); rule 8 calls a text "clean" only when it does."""
    if any(pattern.search(text) for pattern in _RUN_OUTPUT):
        return True
    lower = text.lower()
    return any(pattern.search(lower) for pattern in _RUN_WORDS)
