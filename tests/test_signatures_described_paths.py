"""Named-wrong verdict paths examined in issue 30, round fifteen (precision), each over texts
from two studied sets (first-sight errors of both):

- Rule 8 called "no failure found" on a GPU tool's report (nvidia-smi's table, its only run
  output) under a title that says the failure: "torch.cuda.is_available() returns False"
  (pytorch/pytorch#6041, test12), "... fails with \"no kernel image ...\"" (pytorch/pytorch#31007,
  test11). Rule 7c reads both forms now; nvidia-smi's report alone stays clean.
- Rule 7's "killed" kind named host_oom_killed_hint on a kill the person only supposes: a
  conditional ("if it says `Killed`, ...", huggingface/autotrain-advanced#136, test12) or a
  modal alternative ("crash or be killed", microsoft/pai#1635, test8).
- Python's subprocess.CalledProcessError for a SIGKILLed child ("died with <Signals.SIGKILL:
  9>.", CPython Lib/subprocess.py) is the host's OOM kill, not only a wrapper's "a rank failed"
  (huggingface/autotrain-advanced#456, test12).

Each test runs a real text from a public issue (URL beside it).
"""

from __future__ import annotations

from repro.signatures.engine import UNKNOWN, classify

_SMI_410 = (
    "Wed Mar  4 12:07:52 2020\n"
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 410.78       Driver Version: 410.78       CUDA Version: 10.0     |\n"
    "|-------------------------------+----------------------+----------------------+\n"
    "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
    "|===============================+======================+======================|\n"
    "|   0  Quadro P2000        Off  | 00000000:01:00.0 Off |                  N/A |\n"
    "| 50%   30C    P0    18W /  75W |      0MiB /  5058MiB |      3%      Default |\n"
    "+-------------------------------+----------------------+----------------------+\n"
)

#: https://github.com/pytorch/pytorch/issues/6041 (the title, then a comment; studied test12).
PYTORCH_6041 = (
    "torch.cuda.is_available() returns False\n"
    "\n"
    "pyotr777 · comment · 2020-03-04\n"
    "Have the same problem.\n"
    "Installed Pytorch with\n"
    "pip3 install torch torchvision\n"
    "\n"
    "Ubuntu 16.04\n"
    "\n"
    "print(torch.__version__)\n"
    "1.4.0\n"
    "\n"
    "$ nvidia-smi\n" + _SMI_410
)

#: https://github.com/pytorch/pytorch/issues/31007 (the title, then nvidia-smi; studied test11).
PYTORCH_31007 = (
    'GPU version of minimal example for libtorch fails with "no kernel image is available..."\n'
    "\n"
    "\t+-----------------------------------------------------------------------------+\n"
    "\t| NVIDIA-SMI 440.33.01    Driver Version: 440.33.01    CUDA Version: 10.2     |\n"
    "\t|-------------------------------+----------------------+----------------------+\n"
    "\t| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "\t| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
    "\t|===============================+======================+======================|\n"
    "\t|   0  GeForce GTX 780     On   | 00000000:01:00.0 N/A |                  N/A |\n"
    "\t| 37%   41C    P0    N/A /  N/A |    488MiB /  3016MiB |     N/A      Default |\n"
    "\t+-------------------------------+----------------------+----------------------+\n"
)

#: https://github.com/Holmeyoung/crnn-pytorch/issues/3 (nvidia-smi's report alone, labelled
#: clean; studied test).
CRNN_PYTORCH_3 = (
    "Sun Apr 28 17:44:06 2019\n"
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 410.104\t  Driver Version: 410.104      CUDA Version: 10.0     |\n"
    "|-------------------------------+----------------------+----------------------+\n"
    "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
    "|===============================+======================+======================|\n"
    "|   0  Tesla P40           Off  | 00000000:3B:00.0 Off |                    0 |\n"
    "| N/A   36C    P0   128W / 250W |   1063MiB / 22919MiB |     66%      Default |\n"
)

#: https://github.com/huggingface/autotrain-advanced/issues/136 (studied test12).
AUTOTRAIN_136 = (
    "LLM finetune stopped without any error logs\n"
    "\n"
    "NajiAboo · description · 2023-06-13\n"
    "I am trying to fine tune LLM with my data. After starting the autotrain, it seems to be"
    " stopped. I dont see any logs to identify the problem\n"
    "\n"
    "guidodinello · comment · 2023-08-09\n"
    "I'm facing the same problem. Could this be due to insufficient RAM for loading the shards?\n"
    "\n"
    "abhishekkrthakur · comment · 2023-08-20\n"
    "A solution cannot be provided without error logs.\n"
    "However, if it says `Killed`, it means your system ran out of memory.\n"
)

#: https://github.com/microsoft/pai/issues/1635 (studied test8).
PAI_1635 = (
    "Unreasonable crash or be killed when model training\n"
    "When training model with pytorch(multi-gpus), sometimes the container will be killed,"
    " although both cpu, gpu, memory, disk metrics are normally.\n"
)

#: https://github.com/huggingface/autotrain-advanced/issues/456 (studied test12).
AUTOTRAIN_456 = (
    "AutoTrain died with <Signals.SIGKILL:9>\n"
    "\n"
    "HGPai · description · 2024-01-10\n"
    "I'm trying to fine tune a Falcon-7B-instruct model using the LLM finetuning colab script.\n"
    "It returns this error:\n"
    "\n"
    "Downloading shards: 100% 2/2 [01:41<00:00, 51.00s/it]\n"
    "Loading checkpoint shards:   0% 0/2 [00:00<?, ?it/s]Traceback (most recent call last):\n"
    '  File "/usr/local/bin/accelerate", line 8, in <module>\n'
    "    sys.exit(main())\n"
    '  File "/usr/local/lib/python3.10/dist-packages/accelerate/commands/launch.py", line 637,'
    " in simple_launcher\n"
    "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
    "subprocess.CalledProcessError: Command '['/usr/bin/python3', '-m', 'autotrain.trainers.clm',"
    " '--training_config', 'autotrain-LLM/training_params.json']' died with <Signals.SIGKILL:"
    " 9>.\n"
    "\n"
    "How to solve this?\n"
)


def test_a_title_saying_the_failure_is_not_a_clean_gpu_report() -> None:
    for text in (PYTORCH_6041, PYTORCH_31007):
        found = classify(text)
        assert not found.clean
        assert (found.name, found.line_no) == (UNKNOWN, 1)
        assert "the person's words" in found.coarse


def test_nvidia_smi_s_report_alone_is_still_clean() -> None:
    assert classify(CRNN_PYTORCH_3).clean
    assert classify(_SMI_410).clean


def test_is_available_false_is_read_only_as_a_sentence() -> None:
    """The person's sentence, not code that tests the call ("if torch.cuda.is_available():")."""
    code = "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n" + CRNN_PYTORCH_3
    assert classify(code).clean


def test_a_supposed_kill_names_no_oom_kill() -> None:
    for text in (AUTOTRAIN_136, PAI_1635):
        found = classify(text)
        assert found.name == UNKNOWN
    # A kill the person reports still does, also after an "if" in an earlier sentence
    # (huggingface/transformers#20987, studied test12) and after a dotted file name
    # (CompVis/stable-diffusion#21, studied test12).
    reported = (
        "Currently, when you load a model into memory that is too large or if you try to train a"
        " model with insufficient memory. The process gets killed without an error message.\n"
    )
    assert classify(reported).name == "host_oom_killed_hint"
    assert classify("txt2img.py always get killed\n").name == "host_oom_killed_hint"


def test_a_subprocess_sigkilled_is_the_hosts_oom_kill() -> None:
    found = classify(AUTOTRAIN_456)
    assert found.name == "host_oom_killed_hint"
    assert "died with <Signals.SIGKILL: 9>" in found.message
    # Another signal keeps the wrapper's reading (CPython's same message for SIGTERM).
    other = AUTOTRAIN_456.replace("SIGKILL: 9>.", "SIGTERM: 15>.").replace("SIGKILL:9", "x")
    assert classify(other).name != "host_oom_killed_hint"
