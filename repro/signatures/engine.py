"""Failure signatures: name the cause of a failing case from its output.

The runner hands :func:`classify` the text a non-passing case left behind (stderr, stdout, rank
logs, a DataLoader worker's ``Original Traceback``, a torchrun summary, a faulthandler dump, host
kernel-log lines) and gets back one signature name, the line that decided it, and every match.
Hung cases are named :data:`HANG` by the watchdog and killed ones by :func:`signal_signature`;
this module only reads text and never imports torch.

:data:`SIGNATURES` is the ordered table, one row per failure category of the field reports
(../shared/field-reports.md, "Failure signatures"). Each row's ``source`` field names the public
issues, pull requests and origin reports (O1-O3) its pattern and workaround come from. Patterns
are Python regular expressions applied line by line and match messages, never exception class
names alone: the same CUDA failure prints ``RuntimeError: CUDA error: ...`` on torch <= 2.7 and
``torch.AcceleratorError: CUDA error: ...`` on >= 2.8.

Each line is attributed to at most one signature, the first row of the table that matches it, so
specific sub-types (``nccl_shm``, ``nccl_duplicate_gpu``, ``dataloader_shm_exhausted``,
``host_oom_killed_hint``) sit above their general parents (``nccl_init_failure``,
``dataloader_worker_killed``) and a crash name (``segfault``) above the launcher line that reports
it (``rank_failed``). One rule is not a plain pattern: the DB Dice loss's ``assert loss <= 1``
counts as ``nan_detected`` only when the traceback it is in ends in ``AssertionError`` (``nan <=
1`` is False, so NaN surfaces there without the word "nan"; F4-4).

Precedence (the cases each rule comes from are cited at the code that applies it):

1. ``environment`` rows (driver too old, forward compatibility, no kernel image and its hint,
   no ROCm code object, WSL GPU unavailable, container GPU setup) pre-empt everything else; the
   earliest wins, except that ``no_kernel_image`` beats the ``no_kernel_image_hint`` warning
   printed before it.
2. Otherwise the earliest ``root`` error wins, with demotions: an illegal instruction / illegal
   memory access after a cuDNN or NaN match is a secondary (poisoned-context) error;
   ``secondary`` rows (``nccl_timeout``, ``cpp_terminate``) lose to any root error.
3. ``wrapper`` rows (``Caught X in DataLoader worker process N``, torchrun's ``ChildFailedError``
   summary) win only when nothing inside or beside them matched.
4. ``warning`` and ``evidence`` rows (fork warning, CUDA-IPC producer warning, KFD workqueue and
   amdgpu kernel-log lines) win only when they are all there is: no other match and no Python
   traceback ending in an exception no row matched (that exception is then the ``unknown``
   failure's message).

When nothing matches the name is :data:`UNKNOWN` and the message is
:func:`first_meaningful_line`, so unknown failures still group by their real first line.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

#: Signature the runner gives a case its watchdog killed (no stderr pattern; see DESIGN.md).
HANG = "hang_timeout"
#: Signature of a failure no row matched.
UNKNOWN = "unknown"
#: Longest message kept (characters); longer lines are cut and end in "...".
MAX_MESSAGE_CHARS = 500

# Kinds of rows, in the order they are considered (see the module docstring).
ENVIRONMENT = "environment"
ROOT = "root"
SECONDARY = "secondary"
WRAPPER = "wrapper"
WARNING = "warning"
EVIDENCE = "evidence"
KINDS = (ENVIRONMENT, ROOT, SECONDARY, WRAPPER, WARNING, EVIDENCE)


@dataclass(frozen=True)
class Signature:
    """One row of the table.

    Attributes:
        name: category name, e.g. ``"cudnn_execution_failed"``.
        pattern: compiled regular expression, applied to one line at a time.
        source: the public issues / origin reports it came from, e.g.
            ``"O1; pytorch/pytorch#32881"``.
        kind: one of :data:`KINDS`; decides precedence in :func:`classify`.
        workaround: the known workaround in one sentence, ``""`` if the reports give none.
    """

    name: str
    pattern: re.Pattern[str]
    source: str
    kind: str
    workaround: str


@dataclass(frozen=True)
class Match:
    """A line attributed to a signature.

    Attributes:
        signature: the row that matched.
        line_no: 1-based line number in the text (``\\r`` and ``\\r\\n`` count as line breaks).
        line: the matching line, stripped.
    """

    signature: Signature
    line_no: int
    line: str


@dataclass(frozen=True)
class Classification:
    """The verdict of :func:`classify`.

    Attributes:
        name: the winning signature name, or :data:`UNKNOWN`.
        message: the winning line (for unknown: :func:`first_meaningful_line`), stripped, at most
            :data:`MAX_MESSAGE_CHARS` characters.
        line_no: line number of the winning line; ``None`` for unknown.
        source: the winning row's ``source``; ``""`` for unknown.
        workaround: the winning row's ``workaround``; ``""`` for unknown.
        matches: every match, in line order (for the report and ``repro classify``).
    """

    name: str
    message: str
    line_no: int | None
    source: str
    workaround: str
    matches: tuple[Match, ...]


# The table. One row per category: (name, kind, pattern, source, workaround). Order matters only
# for a line that two rows match: the first row takes it (sub-types above their parents).
_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    # -- Environment: the host/driver/wheel combination cannot work; explains what follows. ------
    (
        "container_gpu_setup",
        ENVIRONMENT,
        r"nvidia-container-cli: (?:mount error|initialization error)|OCI runtime create failed",
        "NVIDIA/nvidia-docker#1225; NVIDIA/nvidia-container-toolkit#289",
        "",
    ),
    (
        "driver_too_old",
        ENVIRONMENT,
        r"CUDA driver version is insufficient for CUDA runtime version"
        r"|The NVIDIA driver on your system is too old \(found version (\d+)\)",
        "pytorch/pytorch#162531 (PR); NVIDIA/nvidia-docker#700; NVIDIA/nvidia-docker#781; "
        "NVIDIA/nvidia-docker#414; wuhuikai/FastFCN#37",
        "Use a wheel built for a CUDA runtime the host driver supports, or a newer driver "
        "(a newer driver runs older runtimes, not the reverse).",
    ),
    (
        "forward_compat_unsupported",
        ENVIRONMENT,
        r"forward compatibility was attempted on non supported HW|Error 804:",
        "pytorch/pytorch#40671; DeepVAC/TorchPod#43",
        "Do not load the CUDA forward-compatibility libraries on GPUs without forward-compat "
        "support (e.g. GeForce); use a CUDA runtime the host driver supports.",
    ),
    (
        "no_kernel_image",
        ENVIRONMENT,
        r"no kernel image is available for execution on the device",
        "pytorch/pytorch#150733; pytorch/pytorch#167244; pytorch/pytorch#45028; "
        "HybridRobotics/berkeley-humanoid-lite#49; mmartial/ComfyUI-Nvidia-Docker#61",
        "Install a wheel whose arch list covers the GPU (e.g. cu128 for sm_120, cu126 for sm_61).",
    ),
    (
        "no_kernel_image_hint",
        ENVIRONMENT,
        r"with CUDA capability sm_(\d+) is not compatible with the current PyTorch installation"
        r"|Minimum and Maximum cuda capability supported by this version of PyTorch",
        "pytorch/pytorch#150733; mmartial/ComfyUI-Nvidia-Docker#61; F3-2",
        "Install a wheel whose arch list covers the GPU (e.g. cu128 for sm_120, cu126 for sm_61).",
    ),
    (
        "rocm_no_code_object",
        ENVIRONMENT,
        r"hipErrorNoBinaryForGpu|HIP error: invalid device function",
        "pytorch/pytorch#73534; pytorch/pytorch#53738; ROCm/pytorch#882; pytorch/pytorch#164346; "
        "easydiffusion/easydiffusion#1400",
        "Use a ROCm build that ships the GPU's gfx target, or set HSA_OVERRIDE_GFX_VERSION "
        "(10.3.0 for RDNA2-like GPUs, 11.0.0 for gfx1151).",
    ),
    (
        # After forward_compat_unsupported/driver_too_old: "Unexpected error from
        # cudaGetDeviceCount()" often carries their more specific text on the same line.
        "wsl_gpu_unavailable",
        ENVIRONMENT,
        r"GPU access blocked by the operating system|all CUDA-capable devices are busy or unavailable"
        r"|Unexpected error from cudaGetDeviceCount\(\)",
        "microsoft/WSL#9938; microsoft/WSL#9962; microsoft/WSL#10289; microsoft/WSL#5598; "
        "microsoft/WSL#6014; pytorch/pytorch#150048",
        "",
    ),
    # -- CUDA / cuDNN / ROCm runtime errors. -----------------------------------------------------
    (
        "cudnn_execution_failed",
        ROOT,
        r"CUDNN_STATUS_EXECUTION_FAILED",
        "O1; pytorch/pytorch#32881; pytorch/pytorch#50475; fatchord/WaveRNN#215; uci-cbcl/UFold#20",
        "Use a torch build whose arch list covers the GPU (cu10x builds fail on sm_86, F3-2); "
        "torch.backends.cudnn.enabled=False also works but is slow.",
    ),
    (
        "cudnn_internal_error",
        ROOT,
        r"CUDNN_STATUS_(?:INTERNAL|MAPPING)_ERROR",
        "pytorch/pytorch#27115; pytorch/pytorch#36333; fatchord/WaveRNN#215",
        "Upgrade torch/cuDNN (pytorch/pytorch#27115 was resolved in 1.3.1); disabling cuDNN works "
        "but is very slow.",
    ),
    (
        "cudnn_no_engine",
        ROOT,
        r"FIND was unable to find an engine|Unable to find a valid cuDNN algorithm",
        "O1; pytorch/pytorch#34853 (PR); WenmuZhou/DBNet.pytorch#61",
        "Set torch.backends.cudnn.enabled=False in the eval function (WenmuZhou/DBNet.pytorch#61).",
    ),
    (
        "cuda_illegal_instruction",
        ROOT,
        r"CUDA (?:driver )?error: an illegal instruction was encountered|cudaErrorIllegalInstruction",
        "O1; pytorch/pytorch#17301; zai-org/ChatGLM2-6B#383; NVIDIA/TensorRT-LLM#11313",
        "Look for an earlier cuDNN or NaN error it follows (O1); otherwise try another torch pin "
        "(zai-org/ChatGLM2-6B#383: gone after 2.0.0 -> 2.0.1).",
    ),
    (
        "cuda_illegal_memory_access",
        ROOT,
        r"an illegal memory access was encountered|cudaErrorIllegalAddress",
        "O1; pytorch/pytorch#45038; pytorch/pytorch#51382; ultralytics/yolov5#11519",
        "",
    ),
    (
        "cuda_internal_assert",
        ROOT,
        r'INTERNAL ASSERT FAILED at "[^"]*(?:driver_api|CUDACachingAllocator)\.cpp"',
        "pytorch/pytorch#112957; pytorch/pytorch#115618; pytorch/pytorch#166234",
        "",
    ),
    (
        "cuda_unknown_error",
        ROOT,
        r"CUDA (?:driver )?error: unknown error",
        "pytorch/pytorch#192330; nanoporetech/bonito#249",
        "On WSL2, run without PYTORCH_ALLOC_CONF=expandable_segments:True "
        "(pytorch/pytorch#192330).",
    ),
    (
        "oom",
        ROOT,
        r"CUDA out of memory|OutOfMemoryError|HIP out of memory|CUDA (?:driver )?error: out of memory",
        "pytorch/pytorch#18853; microsoft/WSL#8447; pytorch/pytorch#121702 (PR)",
        "On WSL2 an OOM at about half of VRAM with pin_memory=True is a pinned-memory limit: "
        "try pin_memory=False (microsoft/WSL#8447).",
    ),
    (
        "cuda_reinit_in_forked_subprocess",
        ROOT,
        r"Cannot re-initialize CUDA in forked subprocess",
        "pytorch/pytorch#77159; pytorch/pytorch#40403; pytorch/pytorch#2971; F1-2",
        "Keep datasets on CPU and move batches to the GPU in the main loop, or use "
        "multiprocessing_context='spawn'/'forkserver'.",
    ),
    (
        "cuda_init_error_in_worker",
        ROOT,
        r"CUDA error: initialization error|CUDA initialization error",
        "pytorch/pytorch#144687; pytorch/pytorch#153143; "
        "epic-kitchens/C1-Action-Recognition-TSN-TRN-TSM#25; NVIDIA/recsys-examples#412 (PR)",
        "Use multiprocessing_context='forkserver' or 'spawn' (pytorch/pytorch#144687), or do not "
        "initialise CUDA in the parent before the workers start.",
    ),
    (
        # Above cpp_terminate: "terminate called after throwing an instance of 'ihipException'".
        "hip_fork_abort",
        ROOT,
        r"ihipException",
        "pytorch/pytorch#14497",
        "",
    ),
    # -- DataLoader workers. ---------------------------------------------------------------------
    (
        # Sub-type of dataloader_worker_killed ("killed by signal: Bus error").
        "dataloader_shm_exhausted",
        ROOT,
        r"Unexpected bus error encountered in worker|out of shared memory"
        r"|killed by signal: Bus error|unable to allocate shared memory\(shm\)",
        "pytorch/pytorch#5040; msr-fiddle/pipedream#28; bytedance/Protenix#2; "
        "Docker's 64 MB /dev/shm default (DESIGN.md measurement)",
        "Give the container a larger /dev/shm (--shm-size=1g) or --ipc=host.",
    ),
    (
        # Sub-type of dataloader_worker_killed ("killed by signal: Killed") and kernel-log lines.
        "host_oom_killed_hint",
        ROOT,
        r"killed by signal: Killed|Out of memory: Killed process|oom-kill",
        "metatensor/metatrain#1229 (PR); showlab/EgoVLP#21; lzhxmu/CPPO#6",
        "Use spawn/forkserver or fewer workers: fork workers slowly copy the parent's Python "
        "objects (metatensor/metatrain#1229).",
    ),
    (
        "dataloader_worker_killed",
        ROOT,
        r"DataLoader worker \(pid(?:\(s\))? ([\d, ]+)\) "
        r"(?:is killed by signal: ([A-Za-z ]+)|exited unexpectedly)",
        "pytorch/pytorch#5040; pytorch/pytorch#108861; aimhubio/aim#2540",
        "",
    ),
    (
        "dataloader_timeout",
        ROOT,
        r"DataLoader timed out after \d+ seconds",
        "torch/utils/data/dataloader.py",
        "",
    ),
    (
        "pin_memory_thread_died",
        ROOT,
        r"Pin memory thread exited unexpectedly",
        "pytorch/pytorch#47445; huggingface/lerobot#3520 (PR)",
        "",
    ),
    # -- Distributed (torchrun, NCCL, c10d). -----------------------------------------------------
    (
        # Sub-type of nccl_init_failure.
        "nccl_shm",
        ROOT,
        r"Error while creating shared memory segment|posix_fallocate failed"
        r"|failed to extend /dev/shm|shm_open failed",
        "NVIDIA/nccl#342; NVIDIA/nccl#290; NVIDIA/nccl#525; NVIDIA/nccl#328; "
        "pytorch/pytorch#37004; pytorch/ci-infra#490 (PR)",
        "Give the container a larger --shm-size or --ipc=host, or set NCCL_SHM_DISABLE=1.",
    ),
    (
        # Sub-type of nccl_init_failure (same line: "DistBackendError: NCCL error in: ...").
        "nccl_duplicate_gpu",
        ROOT,
        r"Duplicate GPU detected : rank \d+ and rank \d+ both on CUDA device",
        "Peterande/D-FINE#289; csguoh/MambaIR#39; NVIDIA/Megatron-LM#661; "
        "Lightning-AI/pytorch-lightning#4420",
        "Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) in every rank before "
        "init_process_group.",
    ),
    (
        "nccl_timeout",
        SECONDARY,
        r"Watchdog caught collective operation timeout|Some NCCL operations have failed or timed out"
        r"|watchdog got stuck for \d+ seconds",
        "limuloo/PyDIff#31; huggingface/accelerate#3380; hiyouga/LlamaFactory#7396; "
        "hiyouga/LlamaFactory#6964; snowflakedb/ArcticTraining#219",
        "Find the earliest failing rank first; for P2P hangs try NCCL_P2P_DISABLE=1 or a newer "
        "driver (dmlc/xgboost#11242: 560 hangs, 570 works).",
    ),
    (
        # The trailing look-behind skips the C++ type in "terminate called ... 'c10::DistBackendError'":
        # that is how the NCCL watchdog takes a process down after a timeout (cpp_terminate).
        "nccl_init_failure",
        ROOT,
        r"NCCL error in: .*(?:ProcessGroupNCCL|NCCLUtils)|ncclSystemError|ncclInternalError"
        r"|ncclUnhandledCudaError|ncclInvalidUsage|unhandled system error|NCCL Error \d+"
        r"|DistBackendError(?<!::DistBackendError)",
        "pytorch/pytorch#37004; NVIDIA/nccl#473; NVIDIA/Megatron-LM#71; pytorch/pytorch#54822; "
        "Lightning-AI/pytorch-lightning#4420",
        "Rerun with NCCL_DEBUG=INFO for the cause; in containers --ipc=host fixed "
        "'unhandled system error' (NVIDIA/nccl#473).",
    ),
    (
        "address_in_use",
        ROOT,
        r"EADDRINUSE|errno: 98 - Address already in use|Address already in use"
        r"|The server socket has failed to listen on any local network address",
        "pytorch/pytorch#72816; meta-pytorch/torchtune#1025; hunto/DIST_KD#10; "
        "om-ai-lab/VLM-R1#289; modelscope/ms-swift#3988; O3",
        "Use torchrun --standalone, a free --master_port, or --rdzv-endpoint=localhost:0.",
    ),
    (
        "local_rank_arg_mismatch",
        ROOT,
        r"unrecognized arguments: --local[-_]rank",
        "pytorch/pytorch#94505 (PR); huggingface/pytorch-image-models#1724; ziplab/SN-Net#2; "
        "Project-MONAI/tutorials#1665",
        "Accept both --local-rank and --local_rank, or read os.environ['LOCAL_RANK'].",
    ),
    # -- Numerics. -------------------------------------------------------------------------------
    (
        # Also the DB Dice "assert loss <= 1" rule, applied in _dice_matches (not a plain pattern).
        "nan_detected",
        ROOT,
        r"returned nan values in its \d+(?:st|nd|rd|th) output|Found inf or nan"
        r"|NaN/Inf gradient detected|loss(?<!\wloss)[:= ]+(?i:nan)\b",
        "O1; MhLiao/DB#14; PaddlePaddle/PaddleOCR#10874; pytorch/pytorch#119320; F4-4",
        "Guard batches against non-finite values and empty masks (epsilon in mask denominators), "
        "and clamp DB predictions to [0, 1] before the Dice loss (O1, MhLiao/DB#14).",
    ),
    (
        "amp_bce_unsafe",
        ROOT,
        r"are unsafe to autocast",
        "pytorch/pytorch#61098; Lightning-AI/pytorch-lightning#13871; "
        "Megvii-BaseDetection/YOLOX#336; SysCV/transfiner#43",
        "Use binary_cross_entropy_with_logits on logits, or compute the loss outside autocast.",
    ),
    # -- Logger. ---------------------------------------------------------------------------------
    (
        "wandb_backend_error",
        ROOT,
        r"The wandb backend process has shutdown|Error communicating with wandb process",
        "wandb/wandb#3018; wandb/wandb#3045",
        "Set WANDB_START_METHOD=thread (wandb/wandb#3018).",
    ),
    # -- Process crashes (often the consequence of an error printed earlier). -------------------
    (
        "cpp_terminate",
        SECONDARY,
        r"terminate called after throwing an instance of '([\w:]+)'",
        "pytorch/pytorch#14497; thangvubk/SoftGroup#157; "
        "epic-kitchens/C1-Action-Recognition-TSN-TRN-TSM#25",
        "",
    ),
    (
        # Above rank_failed: "Signal 11 (SIGSEGV) received by PID" names the crash.
        "segfault",
        ROOT,
        r"Segmentation fault|Fatal Python error: Segmentation fault|SIGSEGV",
        "NVIDIA/Megatron-LM#1880; pytorch/pytorch#61839; ROCm/rocm-systems#356 (PR)",
        "",
    ),
    (
        "host_sigill",
        ROOT,
        r"Illegal instruction \(core dumped\)",
        "ubergarm/r1-ktransformers-guide#6; NVIDIA/TensorRT#4308; "
        "leoxiaobin/deep-high-resolution-net.pytorch#150",
        "",
    ),
    # -- Wrappers: containers of another error; classify what is inside. ------------------------
    (
        "dataloader_worker_error",
        WRAPPER,
        r"Caught (\w+) in DataLoader worker process (\d+)",
        "pytorch/pytorch#77159; pytorch/pytorch#106837",
        "",
    ),
    (
        "rank_failed",
        WRAPPER,
        r"ChildFailedError|failed \(exitcode: (-?\d+)\) local_rank: (\d+)"
        r"|exitcode[ \t]*:[ \t]*(-?\d+)|Signal (\d+) \((SIG[A-Z]+)\) received by PID"
        r"|died with <Signals\.(SIG[A-Z]+): (\d+)>",
        "NVIDIA/Megatron-LM#1880; lzhxmu/CPPO#6; showlab/EgoVLP#21; pytorch/pytorch#61839; "
        "torch-spyre#3835 (PR); O3",
        "Read the per-rank log of the rank named under 'Root Cause (first observed failure)' "
        "(run torchrun with --tee 3 or --log-dir).",
    ),
    # -- Warnings and kernel-log evidence: never decide a run that has a real error. ------------
    (
        "cuda_ipc_producer_terminated",
        WARNING,
        r"Producer process has been terminated before all shared CUDA tensors released"
        r"|Producer process tried to deallocate over \d+ memory blocks",
        "zju3dv/Vox-Fusion#6; pytorch/pytorch#118859; Lucaslab-Berkeley/Leopard-EM#72 (PR); O3",
        "Keep dataset tensors on CPU and copy them to the GPU inside each worker "
        "(Lucaslab-Berkeley/Leopard-EM#72, O3).",
    ),
    (
        "fork_multithread_warning",
        WARNING,
        r"is multi-threaded, use of fork\(\) may lead to deadlocks",
        "pyg-team/pytorch_geometric#10810 (PR); F1-8",
        "Use multiprocessing_context='forkserver' or 'spawn' (forkserver is the Linux default "
        "from Python 3.14).",
    ),
    (
        "rocm_kfd_workqueue_hog",
        EVIDENCE,
        r"hogged CPU for >\d+us|amdgpu_amdkfd_restore_userptr_worker|svm_range_restore_work",
        "O2; ROCm/legacy-rocm-build#5997; ROCm/legacy-rocm-build#5952",
        "Use num_workers=0 (O2: stable but slower).",
    ),
    (
        "amdgpu_gpu_fault",
        EVIDENCE,
        r"ring \S+ timeout|GCVM_L2_PROTECTION_FAULT_STATUS|\[gfxhub\] page fault|device wedged",
        "ROCm/legacy-rocm-build#5997; ROCm/legacy-rocm-build#5952",
        "",
    ),
)

#: The ordered table (see the module docstring for how order and ``kind`` are used).
SIGNATURES: tuple[Signature, ...] = tuple(
    Signature(name=name, pattern=re.compile(pattern), source=source, kind=kind, workaround=fix)
    for name, kind, pattern, source, fix in _ROWS
)

#: Rows by name.
SIGNATURE_BY_NAME: dict[str, Signature] = {sig.name: sig for sig in SIGNATURES}

# Names the precedence rules refer to.
_CUDA_ASYNC = frozenset({"cuda_illegal_instruction", "cuda_illegal_memory_access"})
_POISONERS = frozenset(
    {"cudnn_execution_failed", "cudnn_internal_error", "cudnn_no_engine", "nan_detected"}
)

# Structure of Python tracebacks, faulthandler dumps and launcher logs.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]: ?")
_TRACEBACK_HEADER = re.compile(r"^(?:Original )?Traceback \(most recent call last\):\s*$")
_TRACEBACK_HEADER_ANYWHERE = re.compile(
    r"^(?:\[(?:rank|default)\d+\]: ?)?(?:Original )?Traceback \(most recent call last\):[ \t]*$",
    re.MULTILINE,
)
_STACK_HEADER = re.compile(
    r"\(most recent call (?:last|first)\):\s*$"  # Traceback / Current thread 0x... / Stack
    r"|^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\s*$"  # faulthandler.dump_traceback_later
    r"|^Extension modules: "
    r"|^<no Python frame>\s*$"
    r"|^During handling of the above exception, another exception occurred:"
    r"|^The above exception was the direct cause of the following exception:"
)
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_CARETS = re.compile(r"^\s*[~^]+\s*$")
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::(?:\s.*)?)?$")
_ASSERTION_ERROR = re.compile(r"^(?:[A-Za-z_]\w*\.)*AssertionError\b")
_DB_DICE_ASSERT = re.compile(r"assert loss <= 1\b")
_DB_DICE_LITERAL = "assert loss <= 1"

_REGEX_META = frozenset(".^$*+?{}[]()|\\")
_QUANTIFIERS = frozenset("?*+{")
_MIN_NEEDLE = 3


def _split_alternatives(pattern: str) -> list[str]:
    """The top-level ``|`` alternatives of a pattern (groups and classes left whole)."""
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


def _literal_prefix(alternative: str) -> str:
    """The text every match of ``alternative`` starts with (``""`` when there is none)."""
    out: list[str] = []
    i = 0
    while i < len(alternative):
        c = alternative[i]
        if c == "\\":
            if i + 1 >= len(alternative) or alternative[i + 1].isalnum():
                break  # \d, \w, \b, ... are classes or assertions, not literals
            char, width = alternative[i + 1], 2
        elif c in _REGEX_META:
            break
        else:
            char, width = c, 1
        if alternative[i + width : i + width + 1] in _QUANTIFIERS:
            break  # "x?" / "x*" / "x{2}": that character may be absent or repeated
        out.append(char)
        i += width
    return "".join(out)


def _needles(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literals of which every match contains at least one, or ``None`` if some branch has none.

    ``needle in text`` runs at memory speed, so :func:`classify` skips a row's regular expression
    on a multi-MB log that contains none of its needles (most rows, for most logs).
    """
    if pattern.flags & re.IGNORECASE:
        return None
    needles = tuple(_literal_prefix(alt) for alt in _split_alternatives(pattern.pattern))
    if any(len(needle) < _MIN_NEEDLE for needle in needles):
        return None
    return needles


_NEEDLES: tuple[tuple[str, ...] | None, ...] = tuple(_needles(sig.pattern) for sig in SIGNATURES)

_TIER_BY_KIND = {ENVIRONMENT: 0, ROOT: 2, SECONDARY: 3, WRAPPER: 4, WARNING: 5, EVIDENCE: 5}
_TIER_DEMOTED_ENVIRONMENT = 1
_TIER_WEAK = 5


def classify(text: str) -> Classification:
    """Name the cause of a failure from its output (see the module docstring for the rules).

    ``text`` may be several MB. There is no per-line loop in Python: a row's pattern scans the
    whole text once, and only if the text contains one of the literals every match of that row
    must contain (most rows are skipped at memory speed); then only matching lines are examined.
    """
    text = _normalize(text)
    matches = _find_matches(text)
    winner = _pick(matches, text)
    if winner is None:
        return Classification(
            name=UNKNOWN,
            message=first_meaningful_line(text),
            line_no=None,
            source="",
            workaround="",
            matches=matches,
        )
    sig = winner.signature
    return Classification(
        name=sig.name,
        message=_clip(winner.line),
        line_no=winner.line_no,
        source=sig.source,
        workaround=sig.workaround,
        matches=matches,
    )


def first_meaningful_line(text: str) -> str:
    """The line that best names an unmatched failure, stripped, at most 500 characters.

    Prefers the exception line that ends the first Python traceback (``ValueError: text``,
    ``pkg.mod.SomeError: text``, a bare ``AssertionError``); otherwise the first non-blank line
    that is not a traceback frame, a source line under one, a ``^^^`` marker, or a
    traceback/faulthandler header. ``""`` for blank text.
    """
    text = _normalize(text)
    header = _TRACEBACK_HEADER_ANYWHERE.search(text)
    if header is not None:
        exception = _traceback_exception(_lines_after(text, header.end()))
        if exception is not None:
            return _clip(exception)
    under_frame = False
    for raw in text.split("\n"):
        line = _body(raw)
        if not line.strip():
            continue
        if _FRAME.match(line):
            under_frame = True
            continue
        if under_frame and line[:1].isspace():
            continue  # the source line (or carets) printed under a frame
        under_frame = False
        if _CARETS.match(line) or _STACK_HEADER.search(line):
            continue
        return _clip(line.strip())
    return ""


def signal_name(signum: int) -> str:
    """``11 -> "SIGSEGV"`` (from the :mod:`signal` module); unknown numbers give ``"signal N"``.

    A negative number (a ``Popen.returncode``) is read as the signal it stands for.
    """
    try:
        return signal.Signals(abs(signum)).name
    except ValueError:
        return f"signal {abs(signum)}"


_SIGNAL_SIGNATURES: dict[int, str] = {
    int(signal.SIGSEGV): "segfault",
    int(signal.SIGABRT): "sigabrt",
    int(signal.SIGBUS): "sigbus",
    int(signal.SIGILL): "host_sigill",  # a CPU instruction fault, not a CUDA illegal instruction
    int(signal.SIGKILL): "sigkill",
    int(signal.SIGTERM): "sigterm",
}


def signal_signature(signum: int) -> str:
    """Signature name of a case killed by a signal (see "Exit status conventions").

    ``11 -> "segfault"``, ``6 -> "sigabrt"``, ``7 -> "sigbus"``, ``4 -> "host_sigill"``,
    ``9 -> "sigkill"``, ``15 -> "sigterm"``, others ``"signal_<name>"`` (``"signal_sigusr1"``,
    ``"signal_99"`` for a number the :mod:`signal` module does not know). A negative number (a
    ``Popen.returncode``) is read as the signal it stands for.
    """
    n = abs(signum)
    known = _SIGNAL_SIGNATURES.get(n)
    if known is not None:
        return known
    name = signal_name(n)
    if name.startswith("SIG"):
        return f"signal_{name.lower()}"
    return f"signal_{n}"


# -- Internals ----------------------------------------------------------------------------------


def _normalize(text: str) -> str:
    """One line per ``\\n``: ``\\r\\n`` and bare ``\\r`` (progress bars) break lines; colours go."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _body(line: str) -> str:
    """A line without the ``[rank0]: `` prefix torchrun puts on each rank's output."""
    if line.startswith("["):
        return _RANK_PREFIX.sub("", line, count=1)
    return line


def _clip(line: str) -> str:
    line = line.strip()
    if len(line) > MAX_MESSAGE_CHARS:
        return line[: MAX_MESSAGE_CHARS - 3] + "..."
    return line


def _line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def _lines_after(text: str, end: int) -> Iterator[str]:
    """The lines following the line that ends at offset ``end``."""
    pos = end + 1
    while pos <= len(text):
        nxt = text.find("\n", pos)
        if nxt < 0:
            yield text[pos:]
            return
        yield text[pos:nxt]
        pos = nxt + 1


def _traceback_exception(lines: Iterable[str]) -> str | None:
    """The exception line that ends a traceback whose frames start at ``lines``.

    Frames, source lines and ``^^^`` markers are indented; the first unindented line shaped like
    ``pkg.Error: message`` ends the traceback. Stray unindented lines (another process writing
    to the same stream) are skipped; a new traceback header means this one was cut off.
    """
    for raw in lines:
        line = _body(raw)
        if not line.strip() or line[:1].isspace():
            continue
        if _TRACEBACK_HEADER.match(line):
            return None
        stripped = line.strip()
        if _EXCEPTION_LINE.match(stripped):
            return stripped
    return None


def _find_matches(text: str) -> tuple[Match, ...]:
    """Every line some row matches, attributed to the first such row, in line order."""
    # line start offset -> (row index, line end offset)
    hits: dict[int, tuple[int, int]] = {}
    for index, sig in enumerate(SIGNATURES):
        needles = _NEEDLES[index]
        if needles is not None and not any(needle in text for needle in needles):
            continue
        for found in sig.pattern.finditer(text):
            start, end = _line_bounds(text, found.start())
            held = hits.get(start)
            if held is None or index < held[0]:
                hits[start] = (index, end)
    nan_index = next(i for i, sig in enumerate(SIGNATURES) if sig.name == "nan_detected")
    for start, end in _dice_matches(text):
        held = hits.get(start)
        if held is None or nan_index < held[0]:
            hits[start] = (nan_index, end)

    matches = []
    line_no, counted_to = 1, 0
    for start in sorted(hits):
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        index, end = hits[start]
        matches.append(Match(SIGNATURES[index], line_no, text[start:end].strip()))
    return tuple(matches)


def _dice_matches(text: str) -> Iterator[tuple[int, int]]:
    """Lines ``assert loss <= 1`` whose traceback ends in ``AssertionError`` (F4-4, O1).

    ``nan <= 1`` is False, so a NaN prediction reaches the DB Dice loss's assertion as a bare
    ``AssertionError`` and never prints "nan". The same source line in any other context (a
    listing, a traceback ending in another error) is not evidence of NaN.
    """
    if _DB_DICE_LITERAL not in text:
        return
    for found in _DB_DICE_ASSERT.finditer(text):
        start, end = _line_bounds(text, found.start())
        exception = _traceback_exception(_lines_after(text, end))
        if exception is not None and _ASSERTION_ERROR.match(exception):
            yield start, end


def _tier(match: Match, matches: tuple[Match, ...]) -> int:
    """Precedence tier of one match (lower wins; ties go to the earliest line)."""
    sig = match.signature
    if sig.name == "no_kernel_image_hint" and any(
        m.signature.name == "no_kernel_image" for m in matches
    ):
        # The "sm_120 is not compatible" warning only announces the error; let the error name the
        # cell so hint-then-error and error-alone runs group together (cross-cutting, #150733).
        return _TIER_DEMOTED_ENVIRONMENT
    if sig.name in _CUDA_ASYNC and any(
        m.signature.name in _POISONERS and m.line_no < match.line_no for m in matches
    ):
        # CUDA errors are asynchronous and poison the context: O1 printed
        # CUDNN_STATUS_EXECUTION_FAILED first and the illegal instruction only at teardown, and
        # "NaN/Inf gradient detected" at step 122 before an illegal memory access at step 162.
        return _TIER_BY_KIND[SECONDARY]
    return _TIER_BY_KIND[sig.kind]


def _pick(matches: tuple[Match, ...], text: str) -> Match | None:
    """The deciding match, or ``None`` when the failure is unknown."""
    if not matches:
        return None
    # Rule 1, environment first (field reports, precedence rule 3): driver_too_old, no kernel
    # image, ... explain every error after them; F3-2 shows an arch-unsupported wheel surfacing
    # as CUDNN_STATUS_EXECUTION_FAILED after the "not compatible" warning.
    # Rule 2, earliest root wins (precedence rule 1): CUDA errors cascade, so the first one is
    # the cause. Secondary rows lose to any root: nccl_timeout fires on ranks that survived
    # another rank's crash (F5-8), and "terminate called ..." follows a Python exception or
    # prints its cause on the next "what():" line (F1-3).
    # Rule 3, wrappers last among errors (precedence rule 2): "Caught X in DataLoader worker
    # process N" (F1-1) and ChildFailedError (F5-5, F5-6) contain the real error; their own line
    # only decides when nothing inside them matched.
    best = min(matches, key=lambda m: (_tier(m, matches), m.line_no))
    if _tier(best, matches) >= _TIER_WEAK and _has_unmatched_exception(text, matches):
        # Rule 4 (precedence rule 1, F1-8, F5-7): the fork and CUDA-IPC warnings and kernel-log
        # evidence print in runs that pass; when an unmatched exception is what failed the run,
        # report it as unknown with its own line rather than under a bystander warning.
        return None
    return best


def _has_unmatched_exception(text: str, matches: tuple[Match, ...]) -> bool:
    """True if a Python traceback in ``text`` ends in an exception line no row matched."""
    matched = {_body(m.line).strip() for m in matches}
    for header in _TRACEBACK_HEADER_ANYWHERE.finditer(text):
        exception = _traceback_exception(_lines_after(text, header.end()))
        if exception is not None and exception not in matched:
            return True
    return False
