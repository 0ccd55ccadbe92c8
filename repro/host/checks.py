"""The individual checks of ``repro doctor`` (see :mod:`repro.host.doctor` for what each means).

Each check returns one :class:`Finding` (``ok``, ``warn``, ``fail`` or ``n/a``) with the line
saying what was found, the fact or public issue it rests on, and the case signature it makes
likely. Checks read the fingerprint (never read NVML or torch again), files under ``root``, and
the SMI tools through :mod:`repro.host.nvidia` / :mod:`repro.host.amd` with an injectable
runner. Never imports torch and never raises for what it finds.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from repro import compat, gpu_properties
from repro import properties as property_names
from repro.host import amd, hostkind, nvidia, smi
from repro.host.fingerprint import runtime_tag
from repro.model import Fingerprint
from repro.signatures import engine as signatures
from repro.signatures import table

OK = "ok"
WARN = "warn"
FAIL = "fail"
NA = "n/a"
STATUSES = (OK, WARN, FAIL, NA)

NVIDIA_SMI = "nvidia_smi"
NVML = "nvml"
ROCM_SMI = "rocm_smi"
DEV_SHM = "dev_shm"
DRIVER_VS_RUNTIME = "driver_vs_runtime"
#: Implemented in repro.host.gpu_checks (CUDA initialises; the expected GPUs are the job's).
CUDA_INIT = "cuda_init"
GPU_COUNT = "gpu_count"
CHECKS = (NVIDIA_SMI, NVML, ROCM_SMI, DEV_SHM, DRIVER_VS_RUNTIME, CUDA_INIT, GPU_COUNT)

#: Below this, ``/dev/shm`` is too small for DataLoader workers and NCCL (DESIGN.md measurement).
SHM_MIN_BYTES = 1 << 30

_SMI_SOURCE = "nvidia-smi(1) RETURN VALUE; exit 14 accepted: pytorch/pytorch PR #87464, NVIDIA/gpu-operator#285"
_NVML_SOURCE = "repro.host.nvidia NVML read (unreadable nvml*)"
_ROCM_SOURCE = "rocm-smi/amd-smi and the KFD topology (repro.host.amd); field reports Watchdog §3"
_DRIVER_SOURCE = "F3-8 pytorch/pytorch PR #162531"
_NVML_FATAL = re.compile(r"nvml\.(?:device_count|driver_version|device\.\d+)")


@dataclass(frozen=True)
class Finding:
    """The verdict of one check.

    Attributes:
        check: one of :data:`CHECKS`.
        status: ``ok``, ``warn``, ``fail`` or ``n/a`` (:data:`STATUSES`).
        detail: one line saying what was found and, for warn/fail, what it breaks.
        source: the fact or public issue the verdict rests on.
        predicts: the case signature this finding makes likely (``driver_too_old``,
            ``dataloader_shm_exhausted``), ``""`` for none.
        duration_s: wall time of the check in seconds.
    """

    check: str
    status: str
    detail: str
    source: str
    predicts: str = ""
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _with_signature(source: str, line: str) -> tuple[str, str]:
    """``(source, predicts)`` extended by the signature-table row the line matches, if any."""
    found = signatures.classify(line)
    if found.name == signatures.UNKNOWN:
        return source, ""
    return f"{source}; {found.name}: {found.source}", found.name


# ---------------------------------------------------------------------------------------------
# NVIDIA


@dataclass(frozen=True)
class SmiVerdict:
    """nvidia-smi's finding and its parsed answer (for ``hostkind.detect``; None: not run)."""

    finding: Finding
    query: smi.DriverQuery | None


def nvidia_smi(root: Path, run: smi.Runner, timeout_s: float) -> SmiVerdict:
    """Run nvidia-smi and judge its answer (whether GPUs should be there is decided later by
    :func:`judge_smi_presence`). Exit 0 ok, 14 warn, anything else fail with its own line."""
    answer, query = nvidia.ask_smi(root, run, timeout_s)
    if answer is None or query is None:
        finding = Finding(
            NVIDIA_SMI, NA, f"nvidia-smi not found (PATH, {nvidia.WSL_LIB})", _SMI_SOURCE
        )
        return SmiVerdict(finding, None)
    if answer.proc is None:
        why = answer.error or "failed"
        if answer.timed_out:
            why += ", killed: the driver query hangs (check the kernel log for Xid errors)"
        finding = Finding(NVIDIA_SMI, FAIL, f"nvidia-smi: {why}", _SMI_SOURCE)
        return SmiVerdict(finding, smi.DriverQuery("nvidia-smi", False, error=why))

    proc = answer.proc
    rc = proc.returncode
    meaning = f" ({nvidia.SMI_EXIT[rc]})" if rc in nvidia.SMI_EXIT else ""
    if not query.ok:
        line = query.error or smi.failure_line(proc.stdout, proc.stderr, rc)
        source, predicts = _with_signature(_SMI_SOURCE, line)
        detail = f"nvidia-smi exit {rc}{meaning}: {line}"
        return SmiVerdict(Finding(NVIDIA_SMI, FAIL, detail, source, predicts), query)

    listed = f"{len(query.gpus)} GPU(s): {_gpu_summary(proc.stdout or '')}, driver {query.driver}"
    if rc == 0:
        return SmiVerdict(Finding(NVIDIA_SMI, OK, listed, _SMI_SOURCE), query)
    warning = next(
        (line for line in smi.output_lines(proc.stdout, proc.stderr) if not line[:1].isdigit()),
        nvidia.SMI_EXIT.get(rc, ""),
    )
    detail = (
        f"nvidia-smi exit {rc}{meaning}, accepted: {warning}; {listed}; the GPU answers, "
        "but have it inspected (CUDA may still report no GPU)"
    )
    return SmiVerdict(Finding(NVIDIA_SMI, WARN, detail, _SMI_SOURCE), query)


def _gpu_summary(stdout: str) -> str:
    """``NVIDIA H100 80GB HBM3 (81559 MiB) ×2`` from the CSV rows."""
    counts: dict[str, int] = {}
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            label = parts[1] + (f" ({parts[3]})" if len(parts) >= 4 and parts[3] else "")
            counts[label] = counts.get(label, 0) + 1
    return ", ".join(label if n == 1 else f"{label} ×{n}" for label, n in counts.items())


def nvidia_evidence(found: hostkind.Host, fp: Fingerprint) -> str | None:
    """What says this host has NVIDIA GPUs (device nodes, WSL2 libraries, NVML), or None."""
    if found.nvidia_devices:
        return "/dev/" + ", /dev/".join(os.path.basename(p) for p in found.nvidia_devices)
    if found.kind == hostkind.NVIDIA_WSL2:
        return f"WSL2 /dev/dxg with CUDA libraries in {nvidia.WSL_LIB}"
    if found.kind == hostkind.NVIDIA:
        return "the NVIDIA kernel module loaded (/proc/driver/nvidia/version)"
    if any(gpu.vendor == "nvidia" for gpu in fp.gpus):
        return "NVIDIA GPUs in the fingerprint"
    return None


def judge_smi_presence(found: Finding, evidence: str | None) -> Finding:
    """nvidia-smi's verdict once it is known whether NVIDIA GPUs should be there."""
    if found.status == NA and evidence:
        detail = (
            f"nvidia-smi not found although this host has {evidence}; in a container the 'utility' "
            "driver capability (NVIDIA_DRIVER_CAPABILITIES) mounts it"
        )
        return Finding(NVIDIA_SMI, WARN, detail, found.source)
    if found.status == NA:
        detail = found.detail + " and no NVIDIA GPU on this host"
        return Finding(NVIDIA_SMI, NA, detail, found.source)
    if found.status == FAIL and not evidence:
        detail = f"no NVIDIA GPU on this host; nvidia-smi is installed and says: {found.detail}"
        return Finding(NVIDIA_SMI, NA, detail, found.source)
    return found


def nvml(fp: Fingerprint, evidence: str | None) -> Finding:
    """NVML from the fingerprint's unreadable entries (``nvml``, ``nvml.*``)."""
    entries = [u for u in fp.unreadable if u.what == "nvml" or u.what.startswith("nvml.")]
    if not evidence:
        return Finding(NVML, NA, "no NVIDIA GPU on this host", _NVML_SOURCE)
    init = next((u for u in entries if u.what == "nvml"), None)
    if init is not None and nvidia.PYNVML_MISSING in init.why:
        detail = (
            f"pynvml is not installed, NVML was not read although this host has {evidence}: the "
            "fingerprint has no GPU list and no CUDA driver API version; pip install nvidia-ml-py"
        )
        return Finding(NVML, WARN, detail, _NVML_SOURCE)
    if init is not None:
        source, predicts = _with_signature(_NVML_SOURCE, init.why)
        detail = f"NVML does not initialise on a host with {evidence}: {init.why}"
        return Finding(NVML, FAIL, detail, source, predicts)
    fatal = [u for u in entries if _NVML_FATAL.fullmatch(u.what)]
    if fatal:
        what = "; ".join(f"{u.what}: {u.why}" for u in fatal)
        source, predicts = _with_signature(_NVML_SOURCE, fatal[0].why)
        return Finding(NVML, FAIL, f"NVML: {what}", source, predicts)
    gpus = [g for g in fp.gpus if g.vendor == "nvidia" and g.source == "nvml"]
    if not gpus:
        detail = f"NVML lists no GPU although this host has {evidence}"
        return Finding(NVML, FAIL, detail, _NVML_SOURCE)
    summary = (
        f"{len(gpus)} GPU(s), driver {fp.driver.nvidia or '?'}, "
        f"CUDA driver API {fp.driver.cuda_driver_api or '?'}"
    )
    if entries:  # per-field gaps: partial NVML is normal on WSL2
        what = ", ".join(f"{u.what} ({u.why})" for u in entries)
        return Finding(NVML, WARN, f"{summary}; partial NVML: {what}", _NVML_SOURCE)
    return Finding(NVML, OK, summary, _NVML_SOURCE)


# ---------------------------------------------------------------------------------------------
# AMD


def rocm_smi(found: hostkind.Host, root: Path, run: smi.Runner, timeout_s: float) -> Finding:
    """rocm-smi (else amd-smi) next to the KFD topology, when ``/dev/kfd`` exists."""
    if not found.kfd:
        return Finding(ROCM_SMI, NA, "no /dev/kfd: no AMD GPU for ROCm on this host", _ROCM_SOURCE)
    kfd = found.amd_query
    kfd_text = (
        f"KFD: {', '.join(kfd.gpus)}" if kfd and kfd.ok else f"KFD: {kfd.error if kfd else '?'}"
    )
    answer = amd.ask_smi(root, run, timeout_s)
    if answer is None:
        status = WARN if kfd and kfd.ok else FAIL
        detail = f"/dev/kfd exists but neither rocm-smi nor amd-smi is installed; {kfd_text}"
        return Finding(ROCM_SMI, status, detail, _ROCM_SOURCE)
    if answer.proc is None:
        return Finding(ROCM_SMI, FAIL, f"{answer.tool}: {answer.error}; {kfd_text}", _ROCM_SOURCE)
    proc = answer.proc
    if proc.returncode != 0:
        line = smi.failure_line(proc.stdout, proc.stderr, proc.returncode)
        source, predicts = _with_signature(_ROCM_SOURCE, line)
        detail = f"{answer.tool} exit {proc.returncode}: {line}; {kfd_text}"
        return Finding(ROCM_SMI, FAIL, detail, source, predicts)
    gpus = amd.smi_gpu_names(proc.stdout or "")
    if not gpus:
        return Finding(ROCM_SMI, WARN, f"{answer.tool} lists no GPU; {kfd_text}", _ROCM_SOURCE)
    detail = f"{answer.tool}: {len(gpus)} GPU(s): {', '.join(gpus)}; {kfd_text}"
    status = OK if kfd and kfd.ok else WARN
    return Finding(ROCM_SMI, status, detail, _ROCM_SOURCE)


# ---------------------------------------------------------------------------------------------
# /dev/shm
def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def dev_shm(root: Path, statvfs: Callable[[str], Any]) -> Finding:
    """Size, free space and writability of ``root/dev/shm`` (``statvfs`` sizes it)."""
    shm_sig = table.row("dataloader_shm_exhausted")
    nccl_sig = table.row("nccl_shm")
    source = f"dataloader_shm_exhausted: {shm_sig.source}; nccl_shm (F5-3): {nccl_sig.source}"
    path = root / "dev/shm"
    try:
        stats = statvfs(str(path))
    except FileNotFoundError:
        if sys.platform != "linux":
            return Finding(DEV_SHM, NA, f"no /dev/shm on {sys.platform}", source)
        detail = "no /dev/shm: DataLoader workers and NCCL cannot share memory"
        return Finding(DEV_SHM, FAIL, detail, source, "dataloader_shm_exhausted")
    except OSError as exc:
        return Finding(DEV_SHM, FAIL, f"/dev/shm unreadable: {exc.strerror or exc}", source)
    size = stats.f_frsize * stats.f_blocks
    free = stats.f_frsize * stats.f_bavail
    measured = f"/dev/shm {_size(size)}, {_size(free)} free"
    if size < SHM_MIN_BYTES:
        detail = (
            f"{measured} (< 1 GiB; Docker's default is 64 MB): DataLoader workers returning large "
            "batches die with 'unable to allocate shared memory(shm)' / Bus error and NCCL cannot "
            "create its segments; run the container with --shm-size=1g or --ipc=host"
        )
        return Finding(DEV_SHM, WARN, detail, source, "dataloader_shm_exhausted")
    if free < SHM_MIN_BYTES:
        detail = (
            f"{measured} (< 1 GiB free): leftover segments of earlier runs? "
            "DataLoader workers and NCCL need the space"
        )
        return Finding(DEV_SHM, WARN, detail, source, "dataloader_shm_exhausted")
    if not os.access(path, os.W_OK | os.X_OK):
        detail = f"{measured}, but not writable by this user: NCCL's shm_open fails (chmod 1777 /dev/shm)"
        return Finding(DEV_SHM, WARN, detail, source, "nccl_shm")
    return Finding(DEV_SHM, OK, measured, source)


# ---------------------------------------------------------------------------------------------
# driver vs runtime


def driver_vs_runtime(
    fp: Fingerprint, smi_driver: str | None, evidence: str | None, facts: compat.Facts | None
) -> Finding:
    """torch's CUDA runtime against the driver (fingerprint's, else nvidia-smi's
    ``smi_driver``), by rule 1 of ``repro.compat.predictions`` and the CUDA driver API."""
    runtime = fp.runtime
    torch_version = runtime.torch
    tag = runtime_tag(fp)
    if not torch_version:
        return Finding(
            DRIVER_VS_RUNTIME, NA, "no torch in the interpreter under test", _DRIVER_SOURCE
        )
    if runtime.hip:
        detail = f"ROCm build (torch {torch_version}): the CUDA driver/runtime rule does not apply"
        return Finding(DRIVER_VS_RUNTIME, NA, detail, _DRIVER_SOURCE)
    cuda = runtime.cuda
    if not cuda:
        detail = f"CPU build (torch {torch_version}): no CUDA runtime"
        return Finding(DRIVER_VS_RUNTIME, NA, detail, _DRIVER_SOURCE)
    build = f"torch {torch_version} (CUDA {cuda})"
    driver = fp.driver.nvidia or smi_driver
    if not driver:
        if not evidence:
            detail = f"{build}, but no NVIDIA GPU or driver on this host: its CUDA cases skip"
            return Finding(DRIVER_VS_RUNTIME, NA, detail, _DRIVER_SOURCE)
        detail = f"{build}: the driver version is unknown (NVML and nvidia-smi gave none)"
        return Finding(DRIVER_VS_RUNTIME, WARN, detail, _DRIVER_SOURCE)

    wsl2 = fp.host.wsl2
    # Rule 1 of repro.compat.predictions (family minimum, Windows numbers on WSL2), asked through predict().
    prediction = compat.predict(
        {
            property_names.DRIVER_NVIDIA: str(driver),
            property_names.WSL2: "true" if wsl2 else "false",
            gpu_properties.COUNT: "1",
            gpu_properties.prop_name(0, "vendor"): "nvidia",
        },
        {
            property_names.VARIANT_RUNTIME: tag,
            property_names.VARIANT_ACCELERATOR: "cuda",
            property_names.RUNTIME_CUDA: str(cuda),
        },
        facts=facts,
    )
    rule = next((r for r in prediction.reasons if r.check == "driver"), None)
    fact = f"compat-facts {rule.fact}{', unverified' if rule.unverified else ''}" if rule else ""
    source = "; ".join(s for s in (_DRIVER_SOURCE, fact) if s)

    api = fp.driver.cuda_driver_api
    runtime_v, api_v = compat.version(cuda), compat.version(api)
    newer_major = bool(runtime_v and api_v and runtime_v[0] > api_v[0])
    newer_minor = bool(runtime_v and api_v and not newer_major and runtime_v[:2] > api_v[:2])
    driver_text = f"driver {driver}" + (f" (CUDA {api})" if api else "")

    if (rule and rule.verdict == compat.FAIL) or newer_major:
        if rule and rule.verdict == compat.FAIL:
            why = rule.text
        else:
            why = f"its CUDA {api} is older than the runtime's major version"
        detail = (
            f"driver_too_old: {build} is newer than {driver_text}: {why}; torch raises "
            "'The NVIDIA driver on your system is too old' or silently falls back to the CPU"
        )
        sig = table.row("driver_too_old")
        return Finding(DRIVER_VS_RUNTIME, FAIL, detail, f"{source}; {sig.source}", "driver_too_old")
    if newer_minor:
        detail = (
            f"{build} on {driver_text}: runs by minor-version compatibility"
            + (f" ({rule.text})" if rule and rule.verdict == compat.PASS else "")
            + ", but PTX newer than the driver cannot be JIT-compiled and newer features are missing"
        )
        return Finding(
            DRIVER_VS_RUNTIME,
            WARN,
            detail,
            f"{source}; compat-facts cuda_min_driver.{cuda}.toolkit_driver",
        )
    if rule and rule.verdict == compat.PASS:
        detail = f"{build} on {driver_text}: {rule.text}"
        return Finding(DRIVER_VS_RUNTIME, OK, detail, source)
    if api_v and runtime_v:
        detail = f"{build} on {driver_text}: the driver supports the runtime's CUDA version"
        return Finding(DRIVER_VS_RUNTIME, OK, detail, source)
    why = rule.text if rule else "no driver rule applied"
    detail = (
        f"{build} on {driver_text}: cannot decide ({why}; the driver's CUDA version is unknown)"
    )
    return Finding(DRIVER_VS_RUNTIME, WARN, detail, source)
