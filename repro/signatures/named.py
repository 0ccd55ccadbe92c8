"""Named rows of the signature table: names code gives a case without reading its output.

The watchdog (``hang_timeout``, ``hang.*``, ``timeout_slow_progress``), the exit status (``sig*``,
the ``signal_*`` family), scenarios, the doctor (``infra.<check>``, a row per check) and the
runner. :mod:`repro.signatures.table` turns :data:`NAMED_ROWS` into rows and re-exports the
constants below; look names up there (``table.row``). A module of its own only to keep the
table under the size limit.
"""

from __future__ import annotations

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

# Kinds of named rows: who gives the name.
WATCHDOG = "watchdog"
EXIT_STATUS = "exit_status"
SCENARIO = "scenario"
DOCTOR = "doctor"
RUNNER = "runner"
NAMED_KINDS = (WATCHDOG, EXIT_STATUS, SCENARIO, DOCTOR, RUNNER)


_STACKS = "Read the stacks the watchdog dumped into the case log (every thread of every process)."
_NCCL_FIX = (
    "Find the earliest failing rank first; for P2P hangs try NCCL_P2P_DISABLE=1 or a newer driver "
    "(dmlc/xgboost#11242: 560 hangs, 570 works)."
)

#: Named rows by kind: (name, source, workaround).
NAMED_ROWS: dict[str, tuple[tuple[str, str, str], ...]] = {
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
            # cuda_fault: the "fall back to CPU" after a device-side assert fails in the process.
            "cuda_context_poisoned",
            "pytorch/pytorch#2300; pytorch/pytorch#49019; pytorch/pytorch#74079; "
            "stanford-oval/genienlp#181; ndif-team/ndif#36",
            "A device-side assert or illegal access poisons the process's CUDA context for good: "
            "fix the out-of-range index (CUDA_LAUNCH_BLOCKING=1 finds it) and restart the process; "
            "an in-process CPU fallback cannot work.",
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
        (
            # repro.host.gpu_checks / repro.host.cuda_init: NVML counts GPUs, CUDA does not start.
            INFRA_PREFIX + "cuda_init",
            "F7-1 pytorch/pytorch#35710, microsoft/lisa#2823 (802); F7-2 vllm-project/vllm#15335 "
            "(803); F7-3 PKU-YuanGroup/Video-LLaVA#22 (804); F7-4 NVIDIA/DIGITS#2005 (busy)",
            "802: start nvidia-fabricmanager matching the driver; 803: reboot after the driver "
            "upgrade; 804: remove the cuda-compat libraries; busy: sudo nvidia-smi -c DEFAULT.",
        ),
        (
            INFRA_PREFIX + "gpu_count",
            "matrix.yaml runners.<kind>.gpus; CUDA C Programming Guide (CUDA_VISIBLE_DEVICES)",
            "Give the runner the GPUs its entry names (CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES "
            "per runner service) or fix the count in matrix.yaml.",
        ),
    ),
    RUNNER: (
        (
            # repro.containers.start_failure: a CPU variant's container that docker cannot start.
            "container_start_failed",
            "field reports: Exit status conventions (docker run returns 125 before the process starts)",
            "Read the daemon's error in the case body; `docker run` the image by hand to reproduce it.",
        ),
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
