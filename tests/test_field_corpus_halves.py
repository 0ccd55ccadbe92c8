"""Judgement on logs the rows were not written from (issue 30, the log half).

tests/fixtures/field-logs-train/, tests/fixtures/field-logs-test/ and
tests/fixtures/field-logs-test2/ hold real logs from public issues, none in the "seen" corpus
(tests/fixtures/field-logs/), split by issue URL in two rounds into a train half (rows may be
written from it) and two frozen test sets; rounds three to fifteen added a frozen set each, whole
(tests/fixtures/field-logs-test3/, -test4/, -test5/, -test6/, -test7/, -test8/, -test9/,
-test10/, -test11/, -test12/, -test13/, -test14/, -test15/). Frozen sets are measured
(``benchmarks/classify_corpus.py --split test15``); those a later round studied list their misses
with ``--misses --studied``; test13, test14 and test15 are held out. This module checks the split and the indexes, gates
the train half, and tests each family issue 30 added with train-half texts and their URLs (or
public texts); it never asserts a test-set verdict.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from benchmarks.classify_corpus import CLEAN, FROZEN, SPLITS, STUDIED, judge, load_split, main
from repro.signatures import engine, table
from repro.signatures.engine import classify, findings

ROOT = Path(__file__).resolve().parent.parent
(
    SEEN, TRAIN, TEST, TEST2, TEST3, TEST4, TEST5, TEST6, TEST7, TEST8, TEST9, TEST10, TEST11,
    TEST12, TEST13, TEST14, TEST15,
) = (
    load_split(name)
    for name in (
        "seen", "train", "test", "test2", "test3", "test4", "test5", "test6", "test7", "test8",
        "test9", "test10", "test11", "test12", "test13", "test14", "test15",
    )
)  # fmt: skip
#: The frozen sets no round has studied: measured only, their misses and reasons never listed.
HELD_OUT = ("test13", "test14", "test15")
#: The families issue 30 names, each in both halves.
FAMILIES = (
    "container", "driver", "cudnn", "rocm", "memory", "hang", "process", "distributed", "cuda",
    "compile", "crash", "clean",
)  # fmt: skip


def _train(name: str):
    return next(entry for entry in TRAIN if name in entry.file)


def _text(name: str) -> str:
    return _train(name).path.read_text(encoding="utf-8")


# -- The corpus and its split (item 1) -------------------------------------------------------------


def _issue(url: str) -> str:
    """``owner/repo#N`` of an issue or pull request URL, lower-cased."""
    owner, repo, _, number = url.removeprefix("https://github.com/").split("/")[:4]
    return f"{owner}/{repo}#{number}".lower()


def test_both_halves_are_big_sourced_and_new():
    assert len(TRAIN) + len(TEST) >= 150
    assert len([e for e in TRAIN if e.batch == 2]) + len(TEST2) >= 120  # round two
    seen_urls = {entry.url for entry in SEEN}
    assert len(TEST3) >= 60  # round three, frozen whole
    assert len(TEST4) >= 50  # round four, frozen whole
    assert len(TEST5) >= 60  # round five, frozen whole
    assert len(TEST6) >= 60  # round six, frozen whole
    assert len(TEST7) >= 60  # round seven, frozen whole by a collector who writes no rows
    assert len(TEST8) >= 60  # round eight, frozen whole by a collector who writes no rows
    assert len(TEST9) >= 60  # round nine, frozen whole by a collector who writes no rows
    assert len(TEST10) >= 60  # round ten, frozen whole by a collector who writes no rows
    assert len(TEST11) >= 60  # round eleven, frozen whole by a collector who writes no rows
    assert len(TEST12) >= 60  # round twelve, frozen whole by a collector who writes no rows
    assert len(TEST13) >= 60  # round thirteen, frozen whole by a collector who writes no rows
    assert len(TEST14) >= 60  # round fourteen, frozen whole by a collector who writes no rows
    assert len(TEST15) >= 60  # round fifteen, frozen whole by a collector who writes no rows
    for half in (
        TRAIN, TEST, TEST2, TEST3, TEST4, TEST5, TEST6, TEST7, TEST8, TEST9, TEST10, TEST11,
        TEST12, TEST13, TEST14, TEST15,
    ):  # fmt: skip
        for entry in half:
            assert entry.url.startswith("https://github.com/"), entry.file
            assert entry.expect == CLEAN or table.known(entry.expect), entry.expect
            assert entry.url not in seen_urls, entry.url
        assert len({entry.file for entry in half}) == len(half)
    issues = [
        _issue(e.url)
        for e in (
            *TRAIN, *TEST, *TEST2, *TEST3, *TEST4, *TEST5, *TEST6, *TEST7, *TEST8, *TEST9, *TEST10,
            *TEST11, *TEST12, *TEST13, *TEST14, *TEST15,
        )
    ]  # fmt: skip
    assert len(issues) == len(set(issues))  # one log per issue, in one corpus only
    assert set(issues).isdisjoint(_issue(e.url) for e in SEEN)
    for name in (
        "train", "test", "test2", "test3", "test4", "test5", "test6", "test7", "test8", "test9",
        "test10", "test11", "test12", "test13", "test14", "test15",
    ):  # fmt: skip
        listed = {entry.path.resolve() for entry in load_split(name)}
        on_disk = {p.resolve() for p in SPLITS[name].rglob("*.log")}
        assert on_disk == listed  # no log without provenance, no entry without its log


@pytest.mark.parametrize(("batch", "test_set"), [(1, TEST), (2, TEST2)], ids=["round1", "round2"])
def test_the_split_is_the_documented_hash_of_each_url(batch, test_set):
    """Within each expected signature of one collection round, entries ordered by sha256(url) are
    dealt alternately, the first to that round's test set when the signature's own sha256 is even
    (corpus.yaml headers). A train label corrected after the split keeps the label it was dealt
    under (``dealt_as``)."""
    by_signature = defaultdict(list)
    for half, entries in (("test", test_set), ("train", [e for e in TRAIN if e.batch == batch])):
        for entry in entries:
            by_signature[entry.dealt_as or entry.expect].append((entry.url, half))
    sha = lambda text: int(hashlib.sha256(text.encode()).hexdigest(), 16)  # noqa: E731
    for signature, urls in by_signature.items():
        start = sha(signature) % 2
        for index, (_, half) in enumerate(sorted(urls, key=lambda item: sha(item[0]))):
            assert half == ("test" if (index + start) % 2 == 0 else "train"), signature


def test_misses_of_a_frozen_set_are_refused(capsys):
    """Rows are not written from a test set's misses: the benchmark will not list them."""
    assert {"test", *(f"test{n}" for n in range(2, 16))} == FROZEN
    for split in sorted(FROZEN):
        with pytest.raises(SystemExit) as done:
            main(["--split", "train", "--split", split, "--misses"])
        assert done.value.code == 2
        assert f"--misses refuses the frozen set(s) {split}" in capsys.readouterr().err


def test_only_the_studied_sets_list_their_misses_and_never_the_newest(capsys):
    """Round fifteen studies test, test2, ... test12 (``--misses --studied``); test13, test14 and
    test15 are measured only, studied or not, and a studied set beside them does not open them."""
    assert {f"test{n}" for n in range(2, 13)} | {"test"} == STUDIED
    assert set(HELD_OUT) == FROZEN - STUDIED
    for held in HELD_OUT:
        for argv in (["--split", held], ["--split", "test8", "--split", held]):
            with pytest.raises(SystemExit) as done:
                main([*argv, "--misses", "--studied"])
            assert done.value.code == 2
            assert f"--misses refuses the frozen set(s) {held}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(
            [
                *("--split", "test10", "--split", "test11"),
                *("--split", "test12", "--split", "test13"),
                *("--misses", "--studied"),
            ]
        )
    assert done.value.code == 2
    refused = "--misses refuses the frozen set(s) test13"
    assert refused in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(
            [
                *("--split", "test11", "--split", "test12"),
                *("--split", "test13", "--split", "test14"),
                *("--misses", "--studied"),
            ]
        )
    assert done.value.code == 2
    refused = "--misses refuses the frozen set(s) test13, test14"
    assert refused in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(
            [
                *("--split", "test12", "--split", "test13"),
                *("--split", "test14", "--split", "test15"),
                *("--misses", "--studied"),
            ]
        )
    assert done.value.code == 2
    refused = "--misses refuses the frozen set(s) test13, test14, test15"
    assert refused in capsys.readouterr().err
    assert main(["--split", "test2", "--misses", "--studied"]) == 0
    printed = capsys.readouterr().out
    assert "corpus: test2" in printed
    missed = [line for line in printed.splitlines() if line.startswith("  miss: ")]
    wrong = sum(
        int(line.split()[3]) + int(line.split()[4])  # all, logs, right, wrong, unnamed
        for line in printed.splitlines()
        if line.startswith("all ")
    )
    assert len(missed) == wrong  # every wrong or unnamed verdict of the studied set is listed


def test_no_row_test_or_doc_quotes_a_held_out_log():
    """The held-out sets (test13, test14, test15) are in no example: no row's source or
    reading (repro/**), no test module, README.md or docs/** quotes one of their issues."""
    held = {
        entry.url.removeprefix("https://github.com/").lower()
        for name in HELD_OUT
        for entry in load_split(name)
    }
    places = [*(ROOT / "repro").rglob("*"), *(ROOT / "tests").glob("*.py"), ROOT / "README.md"]
    places += [*(ROOT / "docs").rglob("*")] if (ROOT / "docs").is_dir() else []
    quoted = []
    for path in places:
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_text(encoding="utf-8", errors="replace").lower()
            quoted += [f"{path.relative_to(ROOT)}: {url}" for url in held if url in text]
    assert quoted == []


def test_every_family_issue_30_names_is_in_both_halves():
    train, test = Counter(e.family for e in TRAIN), Counter(e.family for e in TEST)
    assert {family for family in FAMILIES if not (train[family] and test[family])} == set()


#: Train logs left unnamed on purpose (precision over recall, issue 30 round two): the text alone
#: does not support the name a careful engineer gave with the issue's context.
UNNAMED_BY_CHOICE = {
    # https://github.com/pytorch/pytorch/issues/24927: the pasted gdb py-bt shows only a thread
    # waiting in multiprocessing/queues.py get(); any mp.Queue user waits there, so naming the
    # DataLoader would over-claim. Unknown, with the coarse family of a pasted hang.
    "hang/pytorch-24927-gdb-py-bt-pin-memory-get.log": "a hang (a pasted stack no row reads)",
}


@pytest.mark.parametrize("entry", TRAIN, ids=[entry.file for entry in TRAIN])
def test_every_train_log_is_classified_as_a_careful_engineer_would(entry):
    right, said = judge(entry)
    if entry.file in UNNAMED_BY_CHOICE:
        found = engine.classify_stream(io.BytesIO(entry.path.read_bytes()))
        assert (found.name, found.coarse) == (engine.UNKNOWN, UNNAMED_BY_CHOICE[entry.file])
        return
    assert right, f"{entry.url}: expected {entry.expect}, got {said}"


# -- Signals and bus errors in containers: the shared-memory cause (item 2) ---------------------


@pytest.mark.parametrize(
    "name",
    [
        "megatron-516",  # https://github.com/NVIDIA/Megatron-LM/issues/516 (torchrun, exitcode -7)
        "slapo-114",  # https://github.com/awslabs/slapo/issues/114 (Signal 7 (SIGBUS))
        "jax-toolbox-183",  # https://github.com/NVIDIA/JAX-Toolbox/issues/183 (gdb)
        "physicsnemo-1068",  # https://github.com/NVIDIA/physicsnemo/issues/1068 (UCX)
        "mlsh-17",  # https://github.com/openai/mlsh/issues/17 (mpirun, exit code 135)
    ],
)
def test_a_rank_killed_by_sigbus_is_named_by_its_shared_memory_cause(name):
    found = classify(_text(name))
    assert found.name == "shm_bus_error"  # not rank_failed's "read the per-rank log"
    assert "--shm-size" in found.workaround and "/dev/shm" in found.workaround


def test_a_dataloader_worker_s_bus_error_keeps_its_own_row():
    # https://github.com/lidq92/MDTVSFA/issues/10: the worker's sub-type stays the more specific.
    assert classify(_text("mdtvsfa-10")).name == "dataloader_shm_exhausted"
    assert classify("Fatal Python error: Bus error\n").name == "shm_bus_error"


# -- A CUDA initialisation warning, then a CPU run (item 2) ---------------------------------------


def test_a_cuda_init_warning_then_a_cpu_run_is_named_and_is_a_finding():
    # https://github.com/wenet-e2e/wenet/issues/700: training went on (on the CPU) after it.
    text = _text("wenet-700")
    found = classify(text)
    assert found.name == "cuda_driver_init_failed"
    assert "CUDA driver initialization failed" in found.message
    assert any("CUDA driver initialization failed" in line for line in findings(text))


def test_the_cuda_unknown_error_spelling_of_the_same_failure():
    # https://github.com/pytorch/pytorch/issues/159954 (the warning),
    # https://github.com/microsoft/Bringing-Old-Photos-Back-to-Life/issues/52 (raised, then a
    # FileNotFoundError the missing stage-1 output causes).
    assert classify(_text("pytorch-159954")).name == "cuda_driver_init_failed"
    assert classify(_text("old-photos-52")).name == "cuda_driver_init_failed"


# -- cuDNN's engine finder across versions (item 2) ------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "rvc-1840",  # https://github.com/RVC-Project/Retrieval-based-Voice-Conversion-WebUI/issues/1840 (GET)
        "streamer-sales-25",  # https://github.com/PeterH0323/Streamer-Sales/issues/25 (FIND)
        "comfyui-docker-140",  # https://github.com/YanWenKun/ComfyUI-Docker/issues/140 (frontend)
        "e2sri-13",  # https://github.com/gistvision/e2sri/issues/13 (v7 API)
        "opengait-3",  # https://github.com/ShiqiYu/OpenGait/issues/3 (v7 API)
    ],
)
def test_every_spelling_of_the_engine_finder_failure_is_cudnn_no_engine(name):
    assert classify(_text(name)).name == "cudnn_no_engine"


def test_torch_2_3_0_s_plan_warning_names_only_a_run_nothing_else_failed():
    # https://github.com/mseitzer/pytorch-fid/issues/111: the run printed its FID after it.
    warning = _text("pytorch-fid-111")
    assert classify(warning).name == "cudnn_plan_failed_warning"
    after = warning + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert classify(after).name == "cuda_illegal_memory_access"


# -- The ROCm runtime (item 2) ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("legion-1339", "rocm_hsa_error"),  # https://github.com/StanfordLegion/legion/issues/1339
        ("hcc-272", "rocm_hsa_error"),  # https://github.com/ROCm/hcc/issues/272 (INVALID_ISA_NAME)
        ("legacy-rocm-1393", "rocm_hsa_error"),  # .../legacy-rocm-build/issues/1393 (0x100f)
        ("legacy-rocm-6245", "rocm_hsa_error"),  # .../legacy-rocm-build/issues/6245 (EXCEPTION)
        ("whisper-cpp-3576", "rocm_memory_access_fault"),  # ggml-org/whisper.cpp#3576 (aperture)
        ("vllm-13674", "rocm_memory_access_fault"),  # vllm-project/vllm#13674 (wrapped)
        ("amdmigraphx-3517", "rocblas_tensile_missing"),  # ROCm/AMDMIGraphX#3517 (Illegal seek)
        ("sdnext-4737", "rocblas_tensile_missing"),  # vladmandic/sdnext#4737 (no such file)
        ("pytorch-138067", "hipblas_error"),  # pytorch/pytorch#138067 (hipBLASLt, unsupported gfx)
        ("pytorch-150016", "hipblas_error"),  # pytorch/pytorch#150016 (HIPBLAS_STATUS_*)
        ("legacy-rocm-5264", "rocm_no_code_object"),  # .../legacy-rocm-build/issues/5264
    ],
)
def test_the_rocm_runtime_s_status_codes_and_library_errors(name, expected):
    assert classify(_text(name)).name == expected


def test_a_tensile_library_missing_for_the_gfx_target_is_an_arch_environment_failure():
    row = table.row("rocblas_tensile_missing")
    assert (row.kind, row.family) == ("environment", "arch")
    assert "HSA_OVERRIDE_GFX_VERSION" in row.workaround


# -- Kernel OOM kills in their shell and launcher spellings (item 2) -------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "landmark-61",  # https://github.com/InternLandMark/LandMark/issues/61 (the shell's Killed)
        "selfmask-11",  # https://github.com/noelshin/selfmask/issues/11 (exit code 137)
        "logic-llm-10",  # https://github.com/teacherpeterpan/Logic-LLM/issues/10 (exit code 137)
        "mplbm-ut-92",  # https://github.com/je-santos/MPLBM-UT/issues/92 (mpirun: EXIT CODE: 9)
        "colossalai-3514",  # https://github.com/hpcaitech/ColossalAI/issues/3514 (exitcode: -9)
        "rl-vigen-17",  # https://github.com/gemcollector/RL-ViGen/issues/17 (a worker, Killed)
    ],
)
def test_kernel_oom_kills_in_shell_and_launcher_spellings(name):
    assert classify(_text(name)).name == "host_oom_killed_hint"


def test_a_killed_word_inside_a_sentence_is_not_an_oom_kill():
    assert classify("the job was Killed by the user after 3 epochs\n").name != (
        "host_oom_killed_hint"
    )
    assert classify("I killed it manually with Ctrl-C, it was killed manually\n").name != (
        "host_oom_killed_hint"
    )


# -- Hangs known only from a pasted stack (item 2) ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("returnn-1811", "hang.cuda_sync"),  # https://github.com/rwth-i6/returnn/issues/1811
        ("accelerate-3104", "hang.nccl"),  # https://github.com/huggingface/accelerate/issues/3104
        ("pytorch-52916", "hang.nccl"),  # https://github.com/pytorch/pytorch/issues/52916 (gdb)
        ("sglang-17941", "hang.nccl"),  # https://github.com/sgl-project/sglang/issues/17941
        ("pytorch-75147", "hang.fork_lock"),  # https://github.com/pytorch/pytorch/issues/75147
        ("rocm-lab-4", "hang.hsa_wait"),  # https://github.com/evshiron/rocm_lab/issues/4 (gdb)
        ("jetson-inference-854", "hang.dataloader_wait"),  # dusty-nv/jetson-inference#854 (^C)
    ],
)
def test_a_pasted_gdb_or_py_spy_stack_names_the_hang(name, expected):
    text = _text(name)
    found = classify(text)
    assert found.name == expected
    assert found.message in text and found.line_no is not None
    assert found.workaround == table.row(expected).workaround
    assert engine.pasted_hang(text) == expected


def test_an_error_beside_a_pasted_stack_is_the_failure_not_a_hang():
    stack = _text("pytorch-52916")
    error = 'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: bad shape\n'
    found = classify(stack + error)
    assert (found.name, found.message) == (engine.UNKNOWN, "ValueError: bad shape")
    assert classify(stack + "RuntimeError: CUDA error: out of memory\n").name == "oom"


def test_a_collective_named_in_prose_without_a_stack_is_not_a_hang():
    # No row's stack and no NCCL job's lines: not a hang.* row. Since round six (rule 7) the
    # person's "hangs" is no longer "no failure found" either: an unknown failure, said plainly.
    found = classify("my script hangs in barrier after epoch 3, any idea?\n")
    assert not found.name.startswith("hang")
    assert found.name == engine.UNKNOWN and not found.clean
    assert found.coarse.startswith("a hang (in the person's words")


def test_the_watchdog_reads_the_new_stack_patterns_too():
    from repro.runner import watchdog

    dump = (
        "Thread 0x00007f01 (most recent call first):\n"
        '  File "/usr/lib/python3/site-packages/torch/cuda/__init__.py", line 801 in synchronize\n'
        '  File "/work/case.py", line 7 in main\n'
    )
    assert watchdog.hang_subtype(dump, [])[0] == "hang.cuda_sync"


# -- Unknown is still useful (item 3) ------------------------------------------------------------


def test_an_unknown_rocm_runtime_error_names_its_coarse_family():
    found = classify("Thread 1 started\nhipErrorIllegalState: the queue went away\n")
    assert (found.name, found.coarse) == (engine.UNKNOWN, "a ROCm runtime error")
    assert found.message == "hipErrorIllegalState: the queue went away"


def test_an_unknown_signal_names_the_rank_and_its_signal():
    text = (
        "[2025-04-16 00:06:43] step 12\n"
        "  exitcode  : -10 (pid: 100)\n"
        "  traceback : Signal 10 (SIGUSR1) received by PID 100\n"
    )
    found = classify(text)
    assert found.name == "rank_failed"  # the launcher's row; with no row at all:
    bare = classify(text, table=table.Table(()))
    assert bare.coarse == "a process killed by signal 10 (SIGUSR1)"


def test_an_unknown_cpp_abort_names_its_coarse_family_and_its_what_line():
    text = (
        "loading weights\n"
        "terminate called after throwing an instance of 'std::out_of_range'\n"
        "  what():  vector::_M_range_check: __n (which is 7) >= this->size() (which is 7)\n"
        "Aborted (core dumped)\n"
    )
    found = classify(text, table=table.Table(()))
    assert (found.name, found.coarse) == (engine.UNKNOWN, "a C++ abort")
    assert found.message == "terminate called after throwing an instance of 'std::out_of_range'"


def test_repro_classify_says_plainly_that_no_row_matched(tmp_path):
    log = tmp_path / "hip.log"
    log.write_text("Note: You are using GPU for training\nhipErrorIllegalState: queue gone\n")
    done = subprocess.run(
        [sys.executable, "-m", "repro", "classify", str(log)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert f"{log}: unknown: hipErrorIllegalState: queue gone" in done.stdout
    assert "  no row matched; coarse family: a ROCm runtime error" in done.stdout


def test_a_gdb_session_s_banner_and_prompts_are_never_the_decisive_line():
    # https://github.com/pytorch/pytorch/issues/6449 (gdb's report), with a banner in front.
    banner = (
        "GNU gdb (Ubuntu 8.1-0ubuntu3) 8.1.0.20180409-git\n"
        "Copyright (C) 2018 Free Software Foundation, Inc.\n"
        'Type "show copying" and "show warranty" for details.\n'
        "Reading symbols from python...done.\n"
        "(gdb) run train.py\n"
        "[Thread debugging using libthread_db enabled]\n"
    )
    found = classify(banner + _text("pytorch-6449"), table=table.Table(()))
    assert found.message.startswith('Thread 1 "python" received signal SIGSEGV')
    assert found.coarse == "a process killed by signal 11 (SIGSEGV)"


# The issue's examples, and the kinds of line the test below rejects: a debugger's banner, a
# prompt (gdb, pdb, a REPL, a shell), an info line (a level marker, not NCCL_DEBUG=INFO in an
# error's advice). Written apart from the engine's own list.
BANNER = re.compile(
    r"GNU gdb|Copyright \(C\)|Free Software Foundation|There is NO WARRANTY|This GDB was"
    r"|Reading symbols from|\[Thread debugging using|Using host libthread_db|For help, type"
)
PROMPT = re.compile(r"^\((?:gdb|Pdb|\w+-gdb)\)|^>>> |^\S+@\S+:\S*[$#] |^\$ ")
INFO = re.compile(r"^(?:Note|NOTE|INFO|Info)\b|(?<![=\w])INFO\b|^\[?I\d{3,4} \d\d:")


@pytest.mark.parametrize("split", sorted(SPLITS))
@pytest.mark.slow
def test_no_unknown_verdict_s_decisive_line_is_a_banner_a_prompt_or_an_info_line(split):
    """Over every log of the corpus: the verdict as repro classify prints it, and the verdict
    with no row at all (every failure then unknown, its decisive line chosen by item 3)."""
    assert engine.uninformative("(gdb) info threads")
    assert engine.uninformative("Note: You are using GPU for training")
    bad = []
    for entry in load_split(split):
        text = entry.path.read_bytes()
        for rows in (None, table.Table(())):
            found = engine.classify_stream(io.BytesIO(text), table=rows)
            if found.name != engine.UNKNOWN or found.clean:
                continue
            line = found.message
            if not line or BANNER.search(line) or PROMPT.search(line) or INFO.search(line):
                bad.append(f"{entry.file}: {line!r}")
    assert bad == []


# -- Round two (issue 30): rows and readings written from the train half's batch-2 logs --------


@pytest.mark.parametrize(
    "name",
    [
        "pytorch-6461",  # https://github.com/pytorch/pytorch/issues/6461 (at interpreter shutdown)
        "simpletransformers-763",  # ThilinaRajapakse/simpletransformers#763 (training went on)
        "pytorch-13670",  # https://github.com/pytorch/pytorch/issues/13670 (after sys.exit())
    ],
)
def test_an_exception_cpython_ignored_is_no_failure(name):
    # "Exception ignored in: <obj>" is sys.unraisablehook's report: the program went on.
    assert classify(_text(name)).clean


def test_beside_an_ignored_exception_a_raised_one_and_a_row_still_count():
    ignored = _text("pytorch-6461")
    raised = 'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: bad shape\n'
    found = classify(ignored + raised)
    assert (found.name, found.message) == (engine.UNKNOWN, "ValueError: bad shape")
    killed = (
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
        "Traceback (most recent call last):\n"
        '  File "dataloader.py", line 1478, in __del__\n'
        "RuntimeError: DataLoader worker (pid 17) is killed by signal: Killed.\n"
    )
    assert classify(killed).name == "host_oom_killed_hint"  # a row reads every line


def test_a_quoted_gdb_stack_and_a_debugger_attaching_are_a_hang_no_row_names():
    # https://github.com/mlcommons/storage/issues/172: a rank in an MPI broadcast, quoted "> ".
    quoted = classify(_text("mlcommons-storage-172"))
    assert (quoted.name, quoted.coarse) == (engine.UNKNOWN, "a hang (a pasted stack no row reads)")
    # https://github.com/pytorch/pytorch/issues/1355: ps shows defunct workers, gdb attaches.
    attached = classify(_text("pytorch-1355"))
    assert (attached.name, attached.coarse) == (
        engine.UNKNOWN,
        "a hang (a pasted stack no row reads)",
    )
    assert not engine.uninformative(attached.message)


def test_nvml_s_version_mismatch_is_named_and_its_other_failures_are_a_coarse_family():
    # https://github.com/Azure/az-hop/issues/269, https://github.com/fastai/courses/issues/27
    for name in ("az-hop-269", "fastai-courses-27"):
        assert classify(_text(name)).name == "driver_library_mismatch"
    # https://github.com/NVIDIA/nvidia-docker/issues/1671: NVML lost the GPU in a container.
    found = classify(_text("nvidia-docker-1671"))
    assert (found.name, found.coarse) == (engine.UNKNOWN, "an NVIDIA driver (NVML) error")
    assert found.message == "Failed to initialize NVML: Unknown Error"


@pytest.mark.parametrize(
    "name",
    [
        "alpaca-585",  # https://github.com/Jeffser/Alpaca/issues/585
        "sakura-46",  # https://github.com/PiDanShouRouZhouXD/Sakura_Launcher_GUI/issues/46
        "ollama-6423",  # https://github.com/ollama/ollama/issues/6423 (MI300X in Docker)
    ],
)
def test_tensile_host_with_no_devices_is_not_a_missing_tensile_library(name):
    # rocBLAS prints "No devices found" when hipGetDeviceCount fails (tensile_host.cpp): no GPU
    # reached the runtime, so HSA_OVERRIDE_GFX_VERSION is not the answer.
    found = classify(_text(name))
    assert (found.name, found.coarse) == (engine.UNKNOWN, "a ROCm runtime error")
    assert classify("rocBLAS error: Could not initialize Tensile host:\n").name == (
        "rocblas_tensile_missing"
    )


@pytest.mark.parametrize(
    "name",
    [
        "musubi-733",  # https://github.com/kohya-ss/musubi-tuner/issues/733 (SIGHUP)
        "chinese-vicuna-73",  # https://github.com/Facico/Chinese-Vicuna/issues/73 (SIGHUP)
    ],
)
def test_a_launcher_sent_a_signal_is_not_a_failed_rank(name):
    found = classify(_text(name))
    assert found.name == "launcher_signalled"
    assert "nohup" in found.workaround


def test_a_rank_that_failed_first_stays_the_rank_s_failure():
    text = (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 7 closing signal "
        "SIGTERM\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 "
        "(pid: 8) of binary: /usr/bin/python\n"
    )
    assert classify(text).name == "rank_failed"  # the agent's own SIGTERMs are not a signal to it


@pytest.mark.parametrize(
    "name",
    [
        "raylight-102",  # https://github.com/komikndr/raylight/issues/102 (then SIGABRT)
        "therock-2151",  # https://github.com/ROCm/TheRock/issues/2151 (then faulthandler)
        "force-host-alloc-2",  # https://github.com/segurac/force-host-alloction-APU/issues/2
    ],
)
def test_a_rocm_gpu_hang_is_named_before_the_abort_it_causes(name):
    assert classify(_text(name)).name == "rocm_gpu_hang"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("detectron2-460", "cpu_only_torch"),  # facebookresearch/detectron2#460
        ("pydeepfakedet-1", "invalid_device_ordinal"),  # wdrink/PyDeepFakeDet#1
        ("minicpm-v-356", "invalid_device_ordinal"),  # OpenBMB/MiniCPM-V#356 ([rank6])
        ("labs-molt-88", "container_gpu_setup"),  # NVIDIA-NeMo/labs-molt#88
        ("nnunet-294", "dataloader_shm_exhausted"),  # MIC-DKFZ/nnUNet#294
        ("pytorch-siamfc-36", "nan_detected"),  # rafellerc/Pytorch-SiamFC#36 (scikit-learn)
        ("nougat-115", "libcuda_not_found"),  # facebookresearch/nougat#115 (cuDNN's loader)
        ("vllm-21661", "nccl_init_failure"),  # vllm-project/vllm#21661 (pynccl)
        ("video-llava-13", "host_oom_killed_hint"),  # PKU-YuanGroup/Video-LLaVA#13
    ],
)
def test_round_two_spellings_of_known_failures(name, expected):
    assert classify(_text(name)).name == expected


def test_reasons_are_printed_for_studied_sets_and_refused_for_the_newest(capsys):
    """``--reasons`` (issue 30, round six): per log, the winning row, its kind and rule, the
    decisive line and the other rows; refused like ``--misses`` on the frozen sets not studied."""
    for held in HELD_OUT:
        for argv in (["--split", held, "--reasons"], ["--split", held, "--reasons", "--studied"]):
            with pytest.raises(SystemExit) as done:
                main(argv)
            assert done.value.code == 2
            assert f"--reasons refuses the frozen set(s) {held}" in capsys.readouterr().err
    assert main(["--split", "test4", "--reasons", "--studied"]) == 0
    why = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  why: ")]
    assert len(why) == len(load_split("test4"))
    # sglang-1693: rule 2c's terminate report named by its what() line, its own row a competitor.
    (sglang,) = [line for line in why if "sglang-1693" in line]
    assert "said nccl_timeout [rule 2 secondary]" in sglang
    assert "cpp_terminate(secondary,crash,L" in sglang
