"""Pasted stack dumps in every tool's format name their hang rows (issue 30, round eleven, recall).

Rule 5 reads a stack pasted into a log against the ``hang.*`` rows' ``stacks``. A person pastes
what their tool printed: ``py-spy dump`` ("Thread N (idle): ..." then "    func (file.py:line)",
benfred/py-spy src/dump.rs), gdb's ``bt`` / ``info threads`` and CPython's gdb extension
``py-bt`` ("#4 Frame 0x..., for file F, line N, in func (", Tools/gdb/libpython.py),
faulthandler ("File "F", line N in func" with no comma, under "Thread 0x... (most recent call
first):" or "Stack (most recent call first):", Python/traceback.c) or the traceback Ctrl-C
prints ("File "F", line N, in func", innermost last). Real dumps from public issues where one was
found (URL beside it); otherwise the row's own frame written in each tool's format above."""

from __future__ import annotations

import pytest

from repro.signatures.engine import classify, coarse_family, pasted_hang
from repro.signatures.table import UNKNOWN

# bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles.md ("2022-05-18 hanging at eval
# redux"): py-spy dump of the rank whose DataLoader never returned a batch.
PY_SPY_DATALOADER = (
    'Thread 1439102 (idle): "MainThread"\n'
    "    wait (threading.py:306)\n"
    "    get (queue.py:179)\n"
    "    _try_get_data (torch/utils/data/dataloader.py:1011)\n"
    "    _get_data (torch/utils/data/dataloader.py:1163)\n"
    "    _next_data (torch/utils/data/dataloader.py:1207)\n"
    "    __next__ (torch/utils/data/dataloader.py:530)\n"
    "    _next_batch (deepspeed/runtime/pipe/engine.py:631)\n"
)

# pytorch/pytorch#75147: gdb attached to the stuck main process, "info threads".
GDB_INFO_THREADS = (
    "(gdb) info threads\n"
    "  Id   Target Id         Frame\n"
    '* 1    Thread 0x7fc73ac5d700 (LWP 52422) "" select_poll_poll () at'
    " /usr/local/src/conda/python-3.8.12/Modules/clinic/selectmodule.c.h:219\n"
    '  2    Thread 0x7fc6b59e6700 (LWP 52574) "" pthread_cond_wait@@GLIBC_2.3.2 () at'
    " ../sysdeps/unix/sysv/linux/x86_64/pthread_cond_wait.S:185\n"
)


def test_a_py_spy_dump_of_a_dataloader_wait_names_it() -> None:
    assert pasted_hang(PY_SPY_DATALOADER) == "hang.dataloader_wait"
    result = classify(PY_SPY_DATALOADER)
    assert result.name == "hang.dataloader_wait"
    assert "_try_get_data" in result.message


def test_gdbs_info_threads_is_a_pasted_stack() -> None:
    # No hang row's frame is in it: unknown, but said to be a pasted stack (a hang).
    assert classify(GDB_INFO_THREADS).name == UNKNOWN
    assert coarse_family(GDB_INFO_THREADS) == "a hang (a pasted stack no row reads)"
    # Its rows alone (the command cut off) are still gdb's.
    rows = GDB_INFO_THREADS.split("\n", 1)[1]
    assert coarse_family(rows) == "a hang (a pasted stack no row reads)"


def test_a_gdb_py_bt_of_a_generic_wait_stays_unnamed() -> None:
    # pytorch/pytorch#12011 (studied train, labelled unknown): py-bt's frame in threading.wait
    # names no row, whatever the format.
    text = (
        "Thread 1 (Thread 0x7f384e2dc740 (LWP 237)):\n"
        "(gdb) py-bt\n"
        "#4 Frame 0x7f3484000910, for file /av/lib/third_party/python2.7/threading.py, line 358,"
        " in wait (self=<_Condition(_Verbose__verbose=False) at remote 0x7f36be885f50>)\n"
    )
    assert pasted_hang(text) is None
    assert classify(text).name == UNKNOWN


def _forms(path: str, line: int, func: str) -> dict[str, str]:
    """One Python frame as each tool prints it, under the tool's own header."""
    short = path.split("site-packages/", 1)[-1]
    return {
        "traceback after Ctrl-C": (
            "^CTraceback (most recent call last):\n"
            f'  File "{path}", line {line}, in {func}\n'
            "    pass\n"
            "KeyboardInterrupt\n"
        ),
        "faulthandler": (
            "Thread 0x00007f2b0c9f4740 (most recent call first):\n"
            f'  File "{path}", line {line} in {func}\n'
        ),
        "faulthandler, one thread": (
            f'Stack (most recent call first):\n  File "{path}", line {line} in {func}\n'
        ),
        "gdb py-bt (new)": (
            "(gdb) py-bt\nTraceback (most recent call first):\n"
            f'  File "{path}", line {line}, in {func}\n'
        ),
        "gdb py-bt-full": (
            "(gdb) py-bt-full\n"
            f"#5 Frame 0x7f3484000910, for file {path}, line {line}, in {func} (self=<x>)\n"
        ),
        "py-spy dump": f'Thread 688514 (idle): "MainThread"\n    {func} ({short}:{line})\n',
    }


_SITE = "/opt/conda/lib/python3.10/site-packages/"
FRAMES = [
    ("hang.dataloader_wait", _SITE + "torch/utils/data/dataloader.py", 1133, "_try_get_data"),
    ("hang.dataloader_wait", _SITE + "torch/utils/data/dataloader.py", 1479, "_shutdown_workers"),
    ("hang.nccl", _SITE + "torch/distributed/distributed_c10d.py", 1316, "all_reduce"),
    ("hang.cuda_sync", _SITE + "torch/cuda/__init__.py", 792, "synchronize"),
    (
        "hang.cuda_sync",
        "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\cuda\\__init__.py",
        792,
        "synchronize",
    ),
]


@pytest.mark.parametrize(("row", "path", "line", "func"), FRAMES)
def test_a_hang_rows_python_frame_names_it_in_every_dump_format(
    row: str, path: str, line: int, func: str
) -> None:
    for tool, text in _forms(path, line, func).items():
        assert pasted_hang(text) == row, tool
        assert classify(text).name == row, tool


def test_the_fork_finalizer_pair_of_frames_names_it_in_every_dump_format() -> None:
    # wandb/wandb#12079's two frames (a Future's result() waited on inside a weakref finalizer),
    # as faulthandler printed them there, then as py-spy, py-bt-full and a Ctrl-C traceback
    # print the same frames (the last innermost last).
    result = "/usr/lib/python3.10/concurrent/futures/_base.py"
    weak = "/usr/lib/python3.10/weakref.py"
    texts = {
        "faulthandler": (
            "Thread 0x00007f0e3b7fe640 (most recent call first):\n"
            f'  File "{result}", line 451 in result\n'
            f'  File "{weak}", line 591 in __call__\n'
        ),
        "py-spy dump": (
            'Thread 3301 (idle): "MainThread"\n'
            "    wait (threading.py:320)\n"
            "    result (concurrent/futures/_base.py:451)\n"
            "    teardown (wandb/sdk/wandb_manager.py:170)\n"
            "    __call__ (weakref.py:591)\n"
        ),
        "gdb py-bt-full": (
            "(gdb) py-bt-full\n"
            f"#4 Frame 0x55d0c1e0, for file {result}, line 451, in result (self=<Future>)\n"
            f"#9 Frame 0x55d0c2f0, for file {weak}, line 591, in __call__ (self=<finalize>)\n"
        ),
        "traceback after Ctrl-C": (
            "Traceback (most recent call last):\n"
            f'  File "{weak}", line 591, in __call__\n'
            "    return info.func(*info.args, **(info.kwargs or {}))\n"
            f'  File "{result}", line 451, in result\n'
            "    self._condition.wait(timeout)\n"
            "KeyboardInterrupt\n"
        ),
    }
    for tool, text in texts.items():
        assert pasted_hang(text) == "hang.fork_finalizer", tool


def test_a_python_traceback_is_not_a_pasted_stack() -> None:
    # "most recent call last" is Python's own traceback of an exception: not a dump.
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py", line 792,'
        " in synchronize\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    assert pasted_hang(text) is None
    assert classify(text).name == "cuda_illegal_memory_access"
