"""The signature table: every failure name repro can emit, with its public source and workaround.

- **Pattern rows** (:data:`SIGNATURES`, in precedence order): a regular expression applied to one
  line of output, matched by :mod:`repro.signatures.engine`; one row per failure category of
  ../shared/field-reports.md. Patterns match messages, never exception class names alone (torch
  <= 2.7 prints ``RuntimeError: CUDA error: ...``, >= 2.8 ``torch.AcceleratorError: ...``).
- **Named rows** (:data:`NAMED`): names code gives a case without reading its output: the watchdog
  (``hang_timeout``, ``hang.*``, ``timeout_slow_progress``), the exit status (``sig*``, the
  ``signal_*`` family), scenarios, the doctor (``infra.<check>``, a row per check), the runner.

``source`` names the public issues, origin reports (O1-O3) or field-report sections (F1-1 ...) a
row comes from. No row depends on host facts yet (the WSL2-only reading of "all CUDA-capable
devices are busy or unavailable", family 7, is still one row). Look names up with :func:`row` /
:func:`known`; tests/test_signature_table.py fails when code can emit a name without a row.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

#: Signature the runner gives a case its watchdog killed when no stack fingerprint matches.
HANG = "hang_timeout"
#: Signature of a failure no row matched.
UNKNOWN = "unknown"
#: Signature of a case whose events file broke the protocol (repro.runner's events reader).
EVENTS_PROTOCOL = "events_protocol"
#: Prefix of the doctor's failed checks: ``infra.nvidia_smi``.
INFRA_PREFIX = "infra."
#: Prefix of the hang sub-types the watchdog reads from stack dumps: ``hang.nccl``.
HANG_PREFIX = "hang."
#: Prefix of signals without a row of their own: ``signal_sigusr1``, ``signal_99``.
SIGNAL_PREFIX = "signal_"

# Kinds of pattern rows, in the order the engine considers them (see repro.signatures.engine).
ENVIRONMENT = "environment"
ROOT = "root"
SECONDARY = "secondary"
WRAPPER = "wrapper"
WARNING = "warning"
EVIDENCE = "evidence"
KINDS = (ENVIRONMENT, ROOT, SECONDARY, WRAPPER, WARNING, EVIDENCE)
# Kinds of named rows: who gives the name.
WATCHDOG = "watchdog"
EXIT_STATUS = "exit_status"
SCENARIO = "scenario"
DOCTOR = "doctor"
RUNNER = "runner"
NAMED_KINDS = (WATCHDOG, EXIT_STATUS, SCENARIO, DOCTOR, RUNNER)


@dataclass(frozen=True)
class Signature:
    """One row of the table.

    Attributes:
        name: category name, e.g. ``"cudnn_execution_failed"``; ``"signal_*"`` for the family row.
        pattern: compiled regular expression applied to one line at a time; ``None`` for a named
            row (the name is given by code, not read from output).
        source: the public issues / origin reports it came from, e.g. ``"O1; pytorch/pytorch#32881"``.
        kind: one of :data:`KINDS` (pattern rows) or :data:`NAMED_KINDS` (named rows).
        workaround: the known workaround in one sentence, ``""`` if the reports give none.
    """

    name: str
    pattern: re.Pattern[str] | None
    source: str
    kind: str
    workaround: str


# The table. One row per category: (name, kind, pattern, source, workaround). Order matters only
# for a line that two rows match: the first row takes it (sub-types above their parents).
_PATTERN_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
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


_STACKS = "Read the stacks the watchdog dumped into the case log (every thread of every process)."
_NCCL_FIX = (
    "Find the earliest failing rank first; for P2P hangs try NCCL_P2P_DISABLE=1 or a newer driver "
    "(dmlc/xgboost#11242: 560 hangs, 570 works)."
)

# Named rows by kind: (name, source, workaround).
_NAMED_ROWS: dict[str, tuple[tuple[str, str, str], ...]] = {
    WATCHDOG: (
        (HANG, "field reports: Watchdog, hang_timeout row; O2, F1-3, F2-2, F5-8", _STACKS),
        (
            "hang.wandb_fork_finalizer",
            "wandb/wandb#12079 (F2-2)",
            "Upgrade wandb past PR #12114, use forkserver/spawn, or create no wandb.Api() before forking.",
        ),
        (
            "hang.fork_finalizer",
            "F2-2 wandb/wandb#12079 (the mechanism, in any library)",
            "Use multiprocessing_context='forkserver' or 'spawn' for DataLoader workers.",
        ),
        ("hang.nccl", "F5-8", _NCCL_FIX),
        (
            "hang.hsa_wait",
            "ROCm/legacy-rocm-build#6530; charlie12345/ROCmFPX PR #39",
            "Set HSA_ENABLE_INTERRUPT=0 (ROCm/legacy-rocm-build#6530).",
        ),
        (
            "hang.dataloader_wait",
            "pytorch#39570, RolnickLab/ami-data-companion#140",
            "Pass DataLoader(timeout=N) so a stuck worker raises; check the workers' own stacks.",
        ),
        (
            "hang.fork_blocked",
            "ROCm/legacy-rocm-build#6630",
            "Use num_workers=0 or persistent_workers=True to avoid re-forking a large address space (F1-4).",
        ),
        (
            "timeout_slow_progress",
            "field reports: Watchdog, hang vs slow (point 2)",
            "The case was still beating: raise its timeout_s (or --timeout-scale).",
        ),
    ),
    EXIT_STATUS: (
        (
            "sigabrt",
            "field reports: Exit status conventions (-6/134); F1-3, F5-8",
            "Look above the abort for the C++ exception or NCCL watchdog line that caused it.",
        ),
        (
            "sigbus",
            "field reports: Exit status conventions (-7/135); pytorch/pytorch#5040",
            "Give the container a larger /dev/shm (--shm-size=1g) or --ipc=host.",
        ),
        (
            "sigkill",
            "field reports: Exit status conventions (-9/137); F1-6, F5-5",
            "Check the kernel log / docker inspect OOMKilled: SIGKILL not sent by the watchdog is often the OOM killer.",
        ),
        ("sigterm", "field reports: Exit status conventions (-15/143); F5-5", ""),
        (SIGNAL_PREFIX + "*", "field reports: Exit status conventions; signal(7)", ""),
    ),
    SCENARIO: (
        (
            "exit_code_masked",
            "F5-5; O3; pytorch/pytorch#20728; huggingface/accelerate#996",
            "Parse the launcher's failure summary; never trust a wrapper's exit status.",
        ),
        (
            "accelerator_unavailable",
            "F3-8 (warning-only driver check: silent CPU fallback)",
            "Install a wheel whose CUDA runtime the host driver supports (repro doctor: driver_vs_runtime).",
        ),
    ),
    DOCTOR: (
        (
            INFRA_PREFIX + "nvidia_smi",
            "nvidia-smi(1) RETURN VALUE; exit 14 accepted: pytorch/pytorch PR #87464, NVIDIA/gpu-operator#285",
            "Fix the NVIDIA driver install (nvidia-smi must list the GPUs) before reading any torch result.",
        ),
        (
            INFRA_PREFIX + "nvml",
            "NVML through pynvml (repro.host fingerprint); F7-1..F7-4",
            "Fix the driver / Fabric Manager until NVML answers (F7-1: start nvidia-fabricmanager).",
        ),
        (
            INFRA_PREFIX + "rocm_smi",
            "rocm-smi/amd-smi and the KFD topology; field reports Watchdog §3",
            "Fix the amdgpu/KFD install until rocm-smi or amd-smi lists the GPUs.",
        ),
        (
            INFRA_PREFIX + "dev_shm",
            "pytorch/pytorch#5040; NVIDIA/nccl#290 (DESIGN.md measurement)",
            "Give the container a larger /dev/shm (--shm-size=1g) or --ipc=host.",
        ),
        (
            INFRA_PREFIX + "driver_vs_runtime",
            "F3-8 pytorch/pytorch PR #162531",
            "Use a wheel built for a CUDA runtime the host driver supports, or a newer driver.",
        ),
    ),
    RUNNER: (
        (
            EVENTS_PROTOCOL,
            "issue 9 (hostile input): repro.runner's events protocol",
            "The case wrote a bad record to its events file: fix the scenario (use repro.runner.case_api).",
        ),
        (
            UNKNOWN,
            "no row matched; the message is the first meaningful line of the output",
            "Add a row to repro/signatures/table.py when the failure is understood.",
        ),
    ),
}

#: The ordered pattern table (order decides which row takes a line two rows match).
SIGNATURES: tuple[Signature, ...] = tuple(
    Signature(name=name, pattern=re.compile(pattern), source=source, kind=kind, workaround=fix)
    for name, kind, pattern, source, fix in _PATTERN_ROWS
)
#: Rows of names given by code rather than read from output.
NAMED: tuple[Signature, ...] = tuple(
    Signature(name=name, pattern=None, source=source, kind=kind, workaround=fix)
    for kind, rows in _NAMED_ROWS.items()
    for name, source, fix in rows
)
#: Every row, pattern rows first.
ROWS: tuple[Signature, ...] = SIGNATURES + NAMED
#: Rows by name (the ``signal_*`` family under that literal name; use :func:`row` for lookups).
SIGNATURE_BY_NAME: dict[str, Signature] = {sig.name: sig for sig in ROWS}

#: Signature of a case killed by a signal (field reports, "Exit status conventions"); other
#: signals are ``signal_<name>`` (the ``signal_*`` row).
SIGNAL_SIGNATURES: dict[int, str] = {
    int(signal.SIGSEGV): "segfault",
    int(signal.SIGABRT): "sigabrt",
    int(signal.SIGBUS): "sigbus",
    int(signal.SIGILL): "host_sigill",  # a CPU instruction fault, not a CUDA illegal instruction
    int(signal.SIGKILL): "sigkill",
    int(signal.SIGTERM): "sigterm",
}
_SIGNAL_FAMILY = re.compile(re.escape(SIGNAL_PREFIX) + r"(?:sig[a-z0-9]+|\d+)")


def row(name: str) -> Signature:
    """The row for a signature name a case can carry.

    Exact names first; ``signal_sigusr1`` / ``signal_99`` (what ``engine.signal_signature`` gives
    a signal without a row of its own) resolve to the ``signal_*`` family row. ``infra.<check>``
    and ``hang.<sub-type>`` are not families: each check and sub-type has its own row, so a new
    doctor check or hang fingerprint needs a row here. Raises KeyError for any other name.
    """
    found = SIGNATURE_BY_NAME.get(name)
    if found is not None and found.name != SIGNAL_PREFIX + "*":
        return found
    if _SIGNAL_FAMILY.fullmatch(name):
        return SIGNATURE_BY_NAME[SIGNAL_PREFIX + "*"]
    raise KeyError(f"{name!r} is not a signature of repro/signatures/table.py")


def known(name: str) -> bool:
    """Whether :func:`row` has a row for ``name`` (see there for the families)."""
    try:
        row(name)
    except KeyError:
        return False
    return True
