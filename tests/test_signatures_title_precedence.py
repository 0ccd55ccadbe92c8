"""Named-wrong verdict paths examined in issue 30, round fourteen (precision).

- Rule 2e: a root row read in a log's first line written as a person writes (an issue's title)
  yields to another root row the program's output matches below it: the title says what the
  person thought the failure was, the output what happened (bytedance/byteps#201, studied test8;
  pytorch/pytorch#16831, studied test11; both named wrong at first sight).
- Rule 7c stays before rule 8: a log whose person asks about it keeps "a problem in the person's
  words" even when the text shows a run (the studied figures are in the test's docstring).

Each test runs a real text from a public issue (URL beside it).
"""

from __future__ import annotations

from repro.signatures.engine import UNKNOWN, classify
from repro.signatures.runoutput import shows_run

#: https://github.com/bytedance/byteps/issues/201 (title first, then the description).
BYTEPS_201 = (
    "Segmentation fault docker\n"
    "Running all instances which are 2 workers, scheduler and server on one node with multiple"
    " gpus crashes when one of workers is asked to be run on several gpus.\n"
    "\n"
    "I tried 2 scenarios:\n"
    "a) Running single worker instance in docker without server and scheduler (Setting"
    " `DMLC_NUM_WORKER=1`).\n"
    "`start worker 0: ./run_worker.sh 0`\n"
    "I got segmentation fault and error message:\n"
    "`F byteps/common/nccl_manager.cc:37] Check failed: e == cudaSuccess || e =="
    " cudaErrorCudartUnloading CUDA: an illegal memory access was encountered`\n"
)

#: https://github.com/pytorch/pytorch/issues/16831 (the issue's title, then a comment).
PYTORCH_16831 = (
    "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR on cudnn.benchmark = True\n"
    "\n"
    "GuoleiSun · comment · 2022-07-15\n"
    "Hello, I faced the problem. It is very strange.\n"
    "2. Here is the shown error\n"
    "\"runner.outputs['loss'].backward()\n"
    '  File "/cluster/apps/nss/gcc-6.3.0/python_gpu/3.8.5/torch/tensor.py", line 221, in'
    " backward\n"
    "    torch.autograd.backward(self, gradient, retain_graph, create_graph)\n"
    '  File "/cluster/apps/nss/gcc-6.3.0/python_gpu/3.8.5/torch/autograd/__init__.py", line 130,'
    " in backward\n"
    "    Variable._execution_engine.run_backward(\n"
    'RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"\n'
)


def test_the_output_below_a_title_names_the_failure() -> None:
    found = classify(BYTEPS_201)
    assert (found.name, found.line_no) == ("cuda_illegal_memory_access", 8)
    found = classify(PYTORCH_16831)
    assert (found.name, found.line_no) == ("cudnn_not_initialized", 11)
    assert "CUDNN_STATUS_NOT_INITIALIZED" in found.message


def test_a_first_line_the_program_printed_keeps_the_earliest_error() -> None:
    """Rule 2 (CUDA errors cascade, the first is the cause) is untouched when line 1 is output:
    the same two errors with the first one printed as torch raises it."""
    text = (
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\n" + PYTORCH_16831.split("\n", 1)[1]
    )
    assert classify(text).name == "cudnn_internal_error"


def test_a_title_the_output_repeats_first_keeps_its_row() -> None:
    """The program printed the title's error before the other one: the title's row stands. A
    sentence repeating the title (byteps#201's "I got segmentation fault") is no such print."""
    text = BYTEPS_201.replace(
        "I got segmentation fault and error message:\n",
        "Segmentation fault (core dumped)\n",
    )
    assert classify(text).name == "segfault"
    assert classify(BYTEPS_201).name == "cuda_illegal_memory_access"


def test_a_first_line_with_no_person_writing_below_is_no_title() -> None:
    """Line 1 reads as a title only when the person's words follow (an issue's description):
    the same lines with the comment's own words taken out keep rule 2's earliest error."""
    text = PYTORCH_16831.replace("Hello, I faced the problem. It is very strange.\n", "")
    assert classify(text).name == "cudnn_internal_error"


def test_a_title_alone_still_names_its_row() -> None:
    assert classify(BYTEPS_201.split("\n", 1)[0] + "\n").name == "segfault"
    assert classify(PYTORCH_16831.split("\n", 1)[0] + "\n").name == "cudnn_internal_error"


#: https://github.com/EleutherAI/gpt-neox/issues/947 (labelled unknown: the person asks about an
#: abnormal loss in a run that logs normally).
GPT_NEOX_947 = (
    "When llama uses bf16 training, there is an abnormal loss\n"
    "\n"
    "When loading llama's weights and training, I get abnormal lm_loss\n"
    " samples/sec: 1.702 | iteration        1/   55000 | elapsed time per iteration (ms): 18806.7"
    " | learning rate: 1.212E-09 | approx flops per GPU: 5.7TFLOPS | lm_loss: 2.275809E+00 |"
    " number of skipped iterations:   0 | number of nan iterations:   0 |\n"
    "[2023-05-22 21:15:09,288] [INFO] [logging.py:96:log_dist] [Rank 0] step=2, skipped=0,"
    " lr=[2.4242424242424244e-09, 2.4242424242424244e-09], mom=[[0.9, 0.95], [0.9, 0.95]]\n"
)


def test_the_persons_words_still_decide_before_a_run() -> None:
    """Round fourteen asked whether rule 8's run evidence should outrank rule 7c's words when the
    run lines are the tool's own output. Measured over every studied set (seen ... test11) with
    the base engine: letting any run outrank 7c gains 4 clean-labelled logs and turns 8
    unknown-labelled logs and 5 logs labelled with a family "clean" (13 more named wrong);
    only for 7c's first-person/question lines (not "X does not work"): +4 clean, -5 unknown, 3
    family logs named wrong; only where the text also holds a tool's formatted log or progress
    line and numbered epochs/steps: +2 clean (test10), -1 unknown (this text). 7c stays first."""
    assert shows_run(GPT_NEOX_947)
    found = classify(GPT_NEOX_947)
    assert not found.clean
    assert found.name == UNKNOWN
    assert found.coarse.startswith("a problem in the person's words")
