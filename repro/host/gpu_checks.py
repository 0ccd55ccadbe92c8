"""The doctor's GPU checks past the driver: does CUDA initialise, and are the GPUs the expected ones?

- ``cuda_init``: the probe's ``runtime.cuda_init_error`` (:mod:`repro.host.cuda_init`). NVML
  answering while CUDA fails (Error 802 Fabric Manager, 803 driver/library mismatch, 804 forward
  compatibility, 46 exclusive-process GPU held elsewhere) fails with the error number and the
  fix; on WSL2 the same "Unexpected error from cudaGetDeviceCount()" is the WSL2 GPU bridge
  (``wsl_gpu_unavailable``). CUDA initialising on a GPU in compute mode EXCLUSIVE_PROCESS or
  PROHIBITED, or with the Fabric Manager not (yet) done, is a warning: single-process cases pass,
  a second process on the GPU (DataLoader workers touching CUDA, two DDP ranks) is refused.
- ``gpu_count``: the GPUs the job uses (:attr:`repro.model.Fingerprint.used_gpus`, after
  ``CUDA_VISIBLE_DEVICES`` / MIG / ``ROCR_``/``HIP_VISIBLE_DEVICES``) against the count the
  runner entry of matrix.yaml names (``runners: {kind: {labels: [...], gpus: N}}``); fewer fail,
  more warn, none named is ``n/a``.

Reads the fingerprint only; never imports torch.
"""

from __future__ import annotations

from repro.host import cuda_init
from repro.host.checks import CUDA_INIT, FAIL, GPU_COUNT, NA, OK, WARN, Finding
from repro.model import Fingerprint
from repro.signatures import table

_INIT_SOURCE = "torch probe: torch.cuda.is_available() warning / torch.zeros(1, device='cuda')"
_COUNT_SOURCE = "matrix.yaml runners.<kind>.gpus; fingerprint selection (repro.host.selection)"
_ODD_MODES = ("Exclusive_Process", "Exclusive_Thread", "Prohibited")
_FABRIC_NOT_READY = ("Not Started", "In Progress", "service inactive", "service failed")


def _gpu_facts(fp: Fingerprint) -> str:
    """Compute modes and fabric state of the GPUs the job uses, GPUs with the same facts
    grouped ("GPU 0-7: compute mode Default, fabric Not Started"); "" when none is known."""
    groups: dict[str, list[str]] = {}
    for gpu in fp.used_gpus:
        modes = [f"compute mode {gpu.compute_mode}"] if gpu.compute_mode else []
        modes += [f"fabric {gpu.fabric_state}"] if gpu.fabric_state else []
        if modes:
            groups.setdefault(", ".join(modes), []).append(str(gpu.index))
    return "; ".join(f"GPU {','.join(ids)}: {facts}" for facts, ids in groups.items())


def _gpu_list(gpus) -> str:
    """Names counted, with UUIDs when there are few: "NVIDIA H100 80GB HBM3 ×2 (GPU-a, GPU-b)"."""
    counts: dict[str, int] = {}
    for gpu in gpus:
        counts[gpu.name or "?"] = counts.get(gpu.name or "?", 0) + 1
    names = " + ".join(n if c == 1 else f"{n} ×{c}" for n, c in counts.items()) or "none"
    uuids = [g.uuid for g in gpus if g.uuid]
    return names + (f" ({', '.join(uuids)})" if uuids and len(uuids) <= 4 else "")


def cuda_init_check(fp: Fingerprint) -> Finding:
    """``cuda_init``: fail with the CUDA error number and its fix when the accelerator does not
    initialise although devices are counted; warn on exclusive compute modes or an unfinished
    fabric; ok when it initialises; n/a without an accelerator build or device."""
    runtime = fp.runtime
    if not runtime.accelerator:
        build = f"torch {runtime.torch}" if runtime.torch else "no torch"
        return Finding(CUDA_INIT, NA, f"no CUDA/ROCm build ({build})", _INIT_SOURCE)
    found = cuda_init.init_error(fp)
    evidence = _gpu_facts(fp)
    if found is not None:
        # the table's row for this text on this host: the cases of this run say the same
        predicts = found.signature if found.signature != table.UNKNOWN else ""
        summary, source = found.summary, found.source
        counted = (
            f"although {runtime.accelerator_count} device(s) are counted"
            if runtime.accelerator_count
            else "and torch counts no device (NVML fails too)"
        )
        detail = (
            f"{runtime.accelerator} does not initialise {counted}: {summary}; CUDA said: {found.line}"
            + (f" ({evidence})" if evidence else "")
        )
        return Finding(CUDA_INIT, FAIL, detail, f"{source}; {_INIT_SOURCE}", predicts)
    if not runtime.accelerator_available or runtime.accelerator_count < 1:
        detail = f"{runtime.accelerator} build, no device counted: nothing to initialise"
        return Finding(CUDA_INIT, NA, detail, _INIT_SOURCE)
    odd = [g for g in fp.used_gpus if g.compute_mode in _ODD_MODES]
    unready = [g for g in fp.used_gpus if g.fabric_state in _FABRIC_NOT_READY]
    done = f"{runtime.accelerator} initialises on {runtime.accelerator_count} device(s)"
    if odd:
        cause = cuda_init.cause("cuda_device_busy", 46)
        detail = (
            f"{done}, but {', '.join(f'GPU {g.index} is {g.compute_mode}' for g in odd)}: a second "
            f"process on it fails with 'all CUDA-capable devices are busy or unavailable'; fix: {cause.fix}"
        )
        return Finding(CUDA_INIT, WARN, detail, cause.source, "cuda_device_busy")
    if unready:
        detail = (
            f"{done}, but the fabric is not ready ({evidence}): NVLink/NVSwitch traffic may fail; "
            f"fix: {cuda_init.cause('cuda_init_failed', 802).fix}"
        )
        return Finding(CUDA_INIT, WARN, detail, cuda_init.cause("cuda_init_failed", 802).source)
    return Finding(CUDA_INIT, OK, done + (f" ({evidence})" if evidence else ""), _INIT_SOURCE)


def gpu_count_check(fp: Fingerprint, expected: int | None) -> Finding:
    """``gpu_count``: the GPUs the job uses against ``expected`` (None: not named, n/a)."""
    used = fp.used_gpus or fp.visible_gpus
    names = _gpu_list(used)
    chosen = ""
    if fp.selection is not None:
        variables = ", ".join(f"{k}={v}" for k, v in fp.selection.variables) or "MIG"
        chosen = f" ({variables}; {len(fp.gpus)} on the host)"
    found = f"the job uses {len(used)} GPU(s){chosen}: {names}"
    if expected is None:
        return Finding(GPU_COUNT, NA, f"no expected count in matrix.yaml; {found}", _COUNT_SOURCE)
    notes = "; ".join(fp.selection.notes) if fp.selection is not None else ""
    tail = f"; {notes}" if notes else ""
    if len(used) < expected:
        detail = f"expected {expected} GPU(s), {found}{tail}"
        return Finding(GPU_COUNT, FAIL, detail, _COUNT_SOURCE)
    if len(used) > expected:
        detail = (
            f"expected {expected} GPU(s), {found}: set CUDA_VISIBLE_DEVICES (or ROCR_VISIBLE_DEVICES) "
            f"for this runner so it does not take GPUs meant for another{tail}"
        )
        return Finding(GPU_COUNT, WARN, detail, _COUNT_SOURCE)
    return Finding(GPU_COUNT, OK, f"expected {expected}: {found}{tail}", _COUNT_SOURCE)
