"""The field corpus and the decisive line (issue 21, items 2, 3, 5 and 6).

tests/fixtures/field-logs/corpus.yaml lists real logs from public issues, each with its URL, the
family a careful engineer files it under and the signature repro should name (``clean``: "no
failure found"); benchmarks/classify_corpus.py prints the accuracy per family. Every entry is
checked here, classified as ``repro classify`` does with no host facts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.classify_corpus import CLEAN, CORPUS, judge, load
from repro.signatures import engine, table
from repro.signatures.engine import classify, decisive_line

ENTRIES = load()
ROOT = Path(__file__).resolve().parent.parent
#: The families issue 21 asks the corpus to cover, at least 3 logs each.
FAMILIES = ("process", "distributed", "compile", "cuda", "driver", "container", "wsl2", "rocm")


def test_the_corpus_is_big_sourced_and_covers_every_family():
    assert len(ENTRIES) >= 80
    counts = Counter(entry.family for entry in ENTRIES)
    assert {family for family in FAMILIES if counts[family] < 3} == set()
    assert counts[CLEAN] >= 3
    for entry in ENTRIES:
        assert entry.url.startswith("https://github.com/"), entry.file
        assert entry.path.is_file(), entry.file
        assert entry.expect == CLEAN or table.known(entry.expect), entry.expect
    listed = {entry.path.resolve() for entry in ENTRIES}
    on_disk = {p.resolve() for p in CORPUS.rglob("*.log")}
    assert on_disk - listed == set()  # no log without provenance
    assert len({entry.file for entry in ENTRIES}) == len(ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.file for entry in ENTRIES])
def test_every_corpus_log_is_classified_as_a_careful_engineer_would(entry):
    right, said = judge(entry)
    assert right, f"{entry.url}: expected {entry.expect}, got {said}"


# -- The decisive line (item 3) -------------------------------------------------------------------


def _entry(name: str):
    return next(entry for entry in ENTRIES if name in entry.file)


def test_mp_spawn_wrapper_names_the_child_exception_even_with_its_frames_elided():
    text = _entry("edgeyolo-20").path.read_text()
    found = classify(text)
    assert (found.name, found.message) == ("rank_failed", "AssertionError")
    assert text.splitlines()[found.line_no - 1] == "AssertionError"


# mp.spawn's report as torch.multiprocessing.spawn prints it: the parent's traceback ending in the
# wrapper, then the failing process's own traceback.
SPAWN = """\
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    mp.spawn(main_worker, nprocs=2, args=(2,))
  File ".../torch/multiprocessing/spawn.py", line 240, in spawn
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
  File ".../torch/multiprocessing/spawn.py", line 158, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException:

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File ".../torch/multiprocessing/spawn.py", line 69, in _wrap
    fn(i, *args)
  File "train.py", line 21, in main_worker
    load(path)
FileNotFoundError: [Errno 2] No such file or directory: 'data/train.pt'
"""


def test_mp_spawn_wrapper_names_the_failing_process_traceback():
    found = classify(SPAWN)
    assert found.name == "rank_failed"
    assert found.message == (
        "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.pt'"
    )
    assert found.line_no == len(SPAWN.splitlines())
    assert decisive_line(SPAWN) == found.message


@pytest.mark.parametrize("next_line", [False, True])
def test_torchrun_root_cause_traceback_is_the_decisive_line(next_line):
    """torchrun's summary with the rank's traceback under "Root Cause (first observed failure)"
    (pytorch/pytorch#66182: ``traceback :`` then the traceback, on the same or the next line)."""
    header = "  traceback :\n  Traceback" if next_line else "  traceback : Traceback"
    text = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2021-10-05_17:37:22\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 1 (pid: 3296201)\n"
        "  error_file: /tmp/elastic/none_3_lsytqe/attempt_0/0/error.json\n"
        f"{header} (most recent call last):\n"
        '    File ".../torch/distributed/elastic/multiprocessing/errors/__init__.py", line 372\n'
        "      return f(*args, **kwargs)\n"
        '    File "train.py", line 9, in main\n'
        '      raise KeyError("lr")\n'
        "  KeyError: 'lr'\n"
        "============================================================\n"
    )
    found = classify(text)
    assert (found.name, found.message) == ("rank_failed", "KeyError: 'lr'")
    assert text.splitlines()[found.line_no - 1].strip() == "KeyError: 'lr'"


def test_a_chained_exception_names_its_innermost_cause():
    """Python prints the cause first; "During handling" / "direct cause" wrappers come after."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "data.py", line 12, in __getitem__\n'
        "    return self.items[index]\n"
        "IndexError: list index out of range\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 30, in <module>\n'
        "    batch = next(it)\n"
        "RuntimeError: could not load the batch\n"
    )
    assert decisive_line(text) == "IndexError: list index out of range"
    found = classify(text)
    assert (found.name, found.message) == (engine.UNKNOWN, "IndexError: list index out of range")
    assert not found.clean


def test_an_old_style_assertion_joins_the_message_on_its_next_line():
    """torch 0.4 raised AssertionError with the message starting on the next line
    (maciej-sypetkowski/kaggle-rcic-1st#5)."""
    text = _entry("kaggle-rcic-5").path.read_text()
    assert decisive_line(text) == (
        "AssertionError: Found no NVIDIA driver on your system. Please check that you"
    )


def test_a_compile_failure_names_the_compiler_first_error_line():
    text = _entry("pytorch-97146").path.read_text()
    found = classify(text)
    assert found.name == "compile_toolchain_missing"
    assert found.message.endswith("main.c:4:10: fatal error: Python.h: No such file or directory")
    assert found.line_no == 1


def test_nccl_async_error_in_a_collective_is_not_an_init_failure():
    text = _entry("pytorch-105287").path.read_text()
    assert classify(text).name == "nccl_async_error"
    assert table.row("nccl_async_error").family == "distributed"


# -- Host evidence from the log (item 5) ----------------------------------------------------------

CAPTURED = ROOT / "tests" / "fixtures" / "captured"


@pytest.mark.parametrize(
    ("log", "native"),
    [
        ("cuda-802-fabric-manager.log", "cuda_init_failed"),
        ("cuda-802-samples.log", "cuda_init_failed"),
        ("cuda-802-runtime-error.log", "cuda_init_failed"),
        ("cuda-803-mismatch.log", "cuda_init_failed"),
        ("cuda-busy-exclusive-process.log", "cuda_unavailable_host_unknown"),
        ("cuda-busy-runtime-error.log", "cuda_unavailable_host_unknown"),
    ],
)
def test_native_texts_without_a_fingerprint_never_name_wsl2(log, native):
    found = classify((CAPTURED / log).read_text())
    assert found.name == native
    assert "wsl" not in found.name
    if native == "cuda_unavailable_host_unknown":  # the alternatives, native first
        assert "nvidia-fabricmanager" in found.workaround and "wsl --update" in found.workaround


def test_a_uname_line_in_the_log_decides_the_host():
    busy = (CAPTURED / "cuda-busy-exclusive-process.log").read_text()
    native = "Linux gpu01 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023 x86_64\n"
    wsl2 = "Linux pc 5.15.167.4-microsoft-standard-WSL2 #1 SMP Tue Nov 5 00:21:55 UTC 2024 x86_64\n"
    on_native, on_wsl2 = classify(native + busy), classify(wsl2 + busy)
    assert on_native.name == "cuda_device_busy"
    assert on_native.host_evidence == (native.strip(),)
    assert on_wsl2.name == "wsl_gpu_unavailable"
    assert on_wsl2.host_evidence == (wsl2.strip(),)


# -- A clean log (item 6) -------------------------------------------------------------------------


def _classify_cli(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "repro", "classify", "--json", *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_classify_says_no_failure_found_for_a_clean_log_and_exits_0():
    clean = _entry("afn-8-training-progress").path
    done = _classify_cli(clean)
    assert done.returncode == 0, done.stderr
    [out] = json.loads(done.stdout)["logs"]
    assert (out["signature"], out["verdict"]) == (None, "no failure found")


def test_classify_exits_1_for_an_unrecognised_failure_with_its_decisive_line(tmp_path):
    log = tmp_path / "chained.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    main()\n"
        "ZeroDivisionError: division by zero\n"
    )
    clean = _entry("afn-8-training-progress").path
    done = _classify_cli(log, clean)
    assert done.returncode == 1, done.stderr
    unknown, ok = json.loads(done.stdout)["logs"]
    assert (unknown["verdict"], unknown["message"]) == (
        "unknown",
        "ZeroDivisionError: division by zero",
    )
    assert ok["verdict"] == "no failure found"


# -- Rows that must not over-reach (a wrong verdict is worse than none) ---------------------------


def test_a_communicator_aborted_after_a_timeout_stays_a_timeout():
    text = (
        "[E ProcessGroupNCCL.cpp:464] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=10000) ran for 10917 milliseconds "
        "before timing out.\n"
        "[E ProcessGroupNCCL.cpp:1] [Rank 0] NCCL communicator was aborted on rank 0.\n"
    )
    assert classify(text).name == "nccl_timeout"


def test_tensorflow_s_routine_libcuda_warning_does_not_name_a_python_failure():
    """TensorFlow logs "Could not load dynamic library 'libcuda.so.1'" on every CPU-only host;
    only the loaders that need libcuda (triton, cuda-python) name libcuda_not_found."""
    text = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
        "library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object file: No such "
        "file or directory\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 1, in <module>\n'
        "KeyError: 'lr'\n"
    )
    found = classify(text)
    assert (found.name, found.message) == (engine.UNKNOWN, "KeyError: 'lr'")
