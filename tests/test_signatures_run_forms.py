"""Rule 8's run output in the forms training frameworks print (issue 30, round eleven, precision).

"No failure found" needs a run (rule 8, :func:`repro.signatures.runoutput.shows_run`): a text
with no failure line and no run output is ``unknown``. These are the forms transformers' Trainer,
Lightning, accelerate, torchrun, DeepSpeed, datasets and tqdm print while a run goes on, taken
from their sources (cited in repro/signatures/runoutput.py) and tested on real texts from public
issues (URL beside each); before this round the first seven were "no run" and so ``unknown``.
And the other direction: none of them turns a text with a failure line clean.
"""

from __future__ import annotations

import pytest

from repro.signatures.engine import NO_RUN_COARSE, UNKNOWN, classify, shows_run

#: (real text, its public source): only the tool's own lines, each a run with no failure line.
RUN_TEXTS = [
    # transformers' Trainer: each logged dict, as ProgressCallback writes str(logs).
    (
        "{'loss': 0.0923, 'grad_norm': 2.383980345174379, 'learning_rate': 9.659320146057262e-05,"
        " 'epoch': 0.38}\n"
        "{'loss': 0.0981, 'grad_norm': 2.0199484401564374, 'learning_rate': 9.60561826557425e-05,"
        " 'epoch': 0.4}\n",
        "https://github.com/modal-labs/llm-finetuning/pull/82",
    ),
    (
        "{'loss': 10.5949, 'grad_norm': 188.28981018066406, 'learning_rate': 4.5833333333333334e-05,"
        " 'epoch': 0.25}\n",
        "https://github.com/huggingface/transformers/pull/35207",
    ),
    # transformers' Trainer banner, printed bare (LlamaFactory's console).
    (
        "***** Running training *****\n  Num examples = 900\n  Num Epochs = 10\n"
        "  Instantaneous batch size per device = 1\n  Total optimization steps = 560\n",
        "https://github.com/hiyouga/LlamaFactory/issues/4783",
    ),
    # The examples' logging format, datefmt "%m/%d/%Y %H:%M:%S" (run_glue.py, accelerate's
    # no_trainer scripts), with accelerate's state.
    (
        "05/15/2024 15:32:01 - INFO - __main__ - Distributed environment: MULTI_GPU  Backend: nccl\n"
        "Num processes: 1\nProcess index: 0\nLocal process index: 0\nDevice: cuda:0\n\n"
        "Mixed precision type: fp16\n",
        "https://github.com/navervision/lincir/issues/14",
    ),
    (
        "12/04/2019 05:56:10 - INFO - transformers.tokenization_utils -   loading file"
        " https://s3.amazonaws.com/models.huggingface.co/bert/bert-large-uncased-vocab.txt\n",
        "https://github.com/google-research/bert/issues/948",
    ),
    # Lightning's device summary, model summary and the fit loop's end.
    (
        "GPU available: False, used: False\nTPU available: False, using: 0 TPU cores\n"
        "IPU available: False, using: 0 IPUs\nHPU available: False, using: 0 HPUs\n\n"
        "  | Name    | Type       | Params\n---------------------------------------\n"
        "0 | encoder | Sequential | 50.4 K\n1 | decoder | Sequential | 51.2 K\n"
        "---------------------------------------\n101 K     Trainable params\n"
        "0         Non-trainable params\n101 K     Total params\n"
        "0.407     Total estimated model params size (MB)\n",
        "https://github.com/Lightning-AI/pytorch-lightning/issues/14428",
    ),
    (
        "`Trainer.fit` stopped: `max_steps=400000` reached.\n",
        "https://github.com/uzh-rpg/RVT/issues/40",
    ),
    # Already read before this round (locked in): torchrun 2.2's launcher lines, DeepSpeed's
    # log_dist lines (a bracketed timestamp), Lightning's tqdm bar.
    (
        "[2024-03-05 07:01:31,834] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS"
        " environment variable for each process to be 1 in default, to avoid your system being"
        " overloaded, please further tune the variable for optimal performance in your"
        " application as needed.\n",
        "https://github.com/pytorch/pytorch/issues/121209",
    ),
    (
        "Epoch 2: : 115816it [7:03:13,  4.56it/s, loss=2.1, v_num=3hqp]\n",
        "https://github.com/uzh-rpg/RVT/issues/40",
    ),
]


@pytest.mark.parametrize(("text", "source"), RUN_TEXTS)
def test_a_frameworks_run_lines_with_no_failure_line_are_clean(text: str, source: str) -> None:
    assert shows_run(text), source
    assert classify(text).clean, source


@pytest.mark.parametrize(
    "line",
    [
        # tqdm's unit_scale prefix (format_sizeof) and datasets' "examples" unit, with no total.
        "12.3kit [00:01, 9.87kit/s]",
        "Generating train split: 1000 examples [00:01, 987.65 examples/s]",
        # Values transformers >= 4.5x may print quoted; the run's end summary.
        "{'loss': '0.0923', 'grad_norm': '2.384', 'learning_rate': '9.659e-05', 'epoch': '0.38'}",
        "{'train_runtime': 1234.5, 'train_samples_per_second': 12.3, 'train_loss': 0.41,"
        " 'epoch': 3.0}",
        "***** eval metrics *****",
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]",
        "GPU available: True (cuda), used: True",
        "Distributed environment: DistributedType.NO",
    ],
)
def test_each_framework_form_is_run_output(line: str) -> None:
    assert shows_run(line)


@pytest.mark.parametrize(
    "text",
    [
        # A person's own check prints, a command's options, a config's keys: no run.
        "GPU available: False\n",
        "python train.py --lr=0.01 --epoch 10 --batch 8\n",
        "***** Running training\n",
        "Distributed environment: unknown\n",
    ],
)
def test_look_alikes_of_the_framework_forms_are_no_run(text: str) -> None:
    assert not shows_run(text)
    result = classify(text)
    assert (result.name, result.coarse) == (UNKNOWN, NO_RUN_COARSE)


def test_run_lines_never_make_a_failure_text_clean() -> None:
    """A run form only ever decides between "no failure found" and "no run": a failure line
    after (or before) the run's own lines still names the failure."""
    dicts = RUN_TEXTS[0][0]
    failure = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a"
        " total capacity of 79.15 GiB of which 5.44 MiB is free.\n"
    )
    for text in (dicts + failure, failure + dicts, RUN_TEXTS[5][0] + failure):
        result = classify(text)
        assert (result.name, result.clean) == ("oom", False), text
    # A logged NaN loss is the failure line, whatever the dict form (nan_detected reads it).
    nan = "{'loss': nan, 'grad_norm': nan, 'learning_rate': 0.0001, 'epoch': 0.04}\n"
    assert classify(dicts + nan).name == "nan_detected"
    # The person's words still decide over a run (rule 7): a NaN told in words is not clean.
    told = "the loss becomes nan after a few steps\n" + dicts
    assert not classify(told).clean


def test_theanos_level_and_logger_line_is_a_log_line_not_the_persons_words() -> None:
    """Theano's and PyTensor's handler writes "%(levelname)s (%(name)s): %(message)s"; rule 7c
    read such a line's "no CUDA-capable device is detected" as a person saying no GPU was
    detected, and called the run after it unknown (fastai/courses#27's line, studied train set)."""
    theano = (
        "WARNING (theano.sandbox.cuda): CUDA is installed, but device gpu is not available  (error:"
        " Unable to get the number of gpus available: no CUDA-capable device is detected)\n"
    )
    assert classify(theano + "Epoch 1/10 loss: 0.52\n").clean
    # A person's own sentence of the same form is still the person's words.
    said = "The GPU is not detected, no CUDA-capable device is detected on my machine\n"
    assert not classify(said + "Epoch 1/10 loss: 0.52\n").clean
