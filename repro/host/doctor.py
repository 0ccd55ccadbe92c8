"""Health pre-flight (``repro doctor``): is this host fit to run reproductions at all?

A broken driver, a missing device or a 64 MB ``/dev/shm`` makes cases fail for reasons that have
nothing to do with the torch build under test. The doctor checks those first and reports them as
**infra** findings, so they are never mistaken for reproduced torch failures. Five checks:

- ``nvidia_smi``: ``nvidia-smi --query-gpu=index,name,driver_version,memory.total
  --format=csv,noheader`` (``PATH``, else WSL2's ``/usr/lib/wsl/lib/nvidia-smi``). Exit 0 is ok;
  exit 14 ("infoROM is corrupted") is a warning: the GPU still works, and CI that must not stop on
  it accepts 14 (pytorch/pytorch PR #87464, NVIDIA/gpu-operator#285), but that very PR's next run
  failed with "No CUDA GPUs are available", so it is not "ok". Any other status, no GPU listed or
  no answer within the timeout is a failure with nvidia-smi's own line and the meaning of its
  status (nvidia-smi(1), RETURN VALUE). Absent binary and no NVIDIA device: ``n/a``.
- ``nvml``: what ``repro.host.fingerprint`` recorded as unreadable under ``nvml*``. NVML is what
  nvidia-smi, the container toolkit and our fingerprint read; if it cannot initialise on a host
  with NVIDIA devices, the fingerprint has no GPUs and no CUDA driver API version.
- ``rocm_smi``: ``rocm-smi --showproductname`` (else ``amd-smi list``) when ``/dev/kfd`` exists,
  next to the KFD topology ``repro.containers.hostkind`` reads.
- ``dev_shm``: size, free space and writability of ``/dev/shm``. Below 1 GiB (Docker's default is
  64 MB) DataLoader workers returning large batches die (``dataloader_shm_exhausted``: measured
  here, 2 workers × 50 MB samples fail at 64 MB and pass at ``--shm-size=1g``) and NCCL cannot
  create its shared memory segments (``nccl_shm``, field reports F5-3).
- ``driver_vs_runtime``: the CUDA runtime of torch (``runtime.cuda``) against the driver, by the
  rule of field reports F3-8 (pytorch/pytorch PR #162531): a newer driver runs an older runtime,
  a runtime newer than the driver fails (``driver_too_old``) or, worse, torch only warns and falls
  back to the CPU. The minimum driver per CUDA family is ``repro.compat.predictions``'s (rule 1 of
  compat-facts, Windows numbers on WSL2); the driver's own CUDA version is NVML's
  (``driver.cuda_driver_api``). A runtime newer only in its minor version runs by minor-version
  compatibility but cannot JIT newer PTX: a warning. CPU and ROCm builds: ``n/a``.

:func:`to_results` turns findings into ``CaseResult`` objects of scenario ``doctor`` (one
testcase per check, ``doctor[check=NAME]``) within the existing outcome set: ok -> passed,
warn -> passed with ``doctor.status=warn``, n/a -> skipped with the reason, fail -> error with
signature ``infra.<check>``. Never ``failed``: that outcome means "the bug reproduced".

This module never imports torch and never initialises CUDA: torch facts come from the
fingerprint (a child process), devices from files under ``root``, the rest from the two SMI
tools, run through an injectable ``run`` with a hard timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from repro import compat, proctree
from repro.config import runtime_tag_of
from repro.containers import hostkind as host
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError, ReproError
from repro.host import fingerprint
from repro.outcomes import CaseResult, Outcome
from repro.signatures import engine as signatures

SCENARIO = "doctor"

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
CHECKS = (NVIDIA_SMI, NVML, ROCM_SMI, DEV_SHM, DRIVER_VS_RUNTIME)

#: Testcase properties written by :func:`to_results`.
PROP_STATUS = "doctor.status"
PROP_DETAIL = "doctor.detail"
PROP_SOURCE = "doctor.source"
PROP_PREDICTS = "doctor.predicts"
#: Signature prefix of a failed check: ``infra.nvidia_smi``.
INFRA_PREFIX = "infra."

#: Seconds an SMI tool may take before it counts as hung.
DEFAULT_TIMEOUT_S = 30.0
#: Below this, ``/dev/shm`` is too small for DataLoader workers and NCCL (DESIGN.md measurement).
SHM_MIN_BYTES = 1 << 30

NVIDIA_SMI_QUERY = ("--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader")
#: nvidia-smi exit statuses that still mean "the GPUs answered".
NVIDIA_SMI_ACCEPTED = (0, 14)
#: nvidia-smi(1), RETURN VALUE.
NVIDIA_SMI_EXIT = {
    2: "a supplied argument or flag is invalid",
    3: "the requested operation is not available on the target device",
    4: "no permission to access this device or perform this operation",
    6: "a query to find an object was unsuccessful",
    8: "a device's external power cables are not properly attached",
    9: "NVIDIA driver is not loaded",
    10: "NVIDIA kernel detected an interrupt issue with a GPU",
    12: "NVML shared library couldn't be found or loaded",
    13: "local version of NVML doesn't implement this function",
    14: "infoROM is corrupted",
    15: "the GPU has fallen off the bus or has otherwise become inaccessible",
    255: "other error or internal driver error",
}
_SMI_SOURCE = "nvidia-smi(1) RETURN VALUE; exit 14 accepted: pytorch/pytorch PR #87464, NVIDIA/gpu-operator#285"
_NVML_SOURCE = "repro.host.fingerprint NVML read (unreadable nvml*)"
_ROCM_SOURCE = (
    "rocm-smi/amd-smi and the KFD topology (repro.containers.hostkind); field reports Watchdog §3"
)
_DRIVER_SOURCE = "F3-8 pytorch/pytorch PR #162531"
_PYNVML_MISSING = "pynvml not installed"
_FAILING_LINE = re.compile(
    r"fail|error|couldn't|mismatch|not found|no devices|unable", re.IGNORECASE
)

Runner = Callable[..., subprocess.CompletedProcess]


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


# ---------------------------------------------------------------------------------------------
# running the SMI tools


def run_command(
    argv: Sequence[str],
    *,
    timeout: float | None = None,
    capture_output: bool = True,
    text: bool = True,
    stdin: Any = subprocess.DEVNULL,
) -> subprocess.CompletedProcess:
    """``subprocess.run``'s signature (so tests can inject ``subprocess.run`` or a fake) over
    :func:`repro.proctree.run_bounded`: a tool that hangs in the kernel is killed with its
    process group and ``subprocess.TimeoutExpired`` raised; ``FileNotFoundError`` when the tool
    does not exist. Output is always captured as text."""
    del capture_output, text, stdin  # always captured as text, stdin closed
    return proctree.run_bounded(argv, timeout_s=timeout)


@dataclass(frozen=True)
class _Answer:
    """What one SMI tool said: ``proc`` None with ``error`` set when it could not be run."""

    argv: tuple[str, ...]
    proc: subprocess.CompletedProcess | None = None
    error: str | None = None
    timed_out: bool = False

    @property
    def tool(self) -> str:
        return os.path.basename(self.argv[0])


def _ask(candidates: Sequence[Sequence[str]], run: Runner, timeout_s: float) -> _Answer | None:
    """Run the first candidate command that exists; None when none of them does."""
    for argv in candidates:
        try:
            proc = run(
                list(argv),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            continue
        except subprocess.TimeoutExpired:
            return _Answer(tuple(argv), error=f"no answer within {timeout_s:g} s", timed_out=True)
        except OSError as exc:
            return _Answer(tuple(argv), error=f"cannot run {argv[0]}: {exc.strerror or exc}")
        return _Answer(tuple(argv), proc)
    return None


def _lines(proc: subprocess.CompletedProcess) -> list[str]:
    text = f"{proc.stdout or ''}\n{proc.stderr or ''}"
    return [line.strip() for line in text.splitlines() if line.strip()]


def _failure_line(proc: subprocess.CompletedProcess) -> str:
    """The line of a failed tool's output that says why (first error-looking line, else last)."""
    lines = _lines(proc)
    failing = [line for line in lines if _FAILING_LINE.search(line)]
    return (failing or lines[-1:] or [f"exit status {proc.returncode}, no output"])[0]


def _with_signature(source: str, line: str) -> tuple[str, str]:
    """``(source, predicts)`` extended by the signature-table row the line matches, if any."""
    found = signatures.classify(line)
    if found.name == signatures.UNKNOWN:
        return source, ""
    return f"{source}; {found.name}: {found.source}", found.name


def _tool_path(root: Path, rel: str) -> str | None:
    """``/rel`` when it exists under ``root`` (the path to run, as the host sees it)."""
    return str(root / rel) if (root / rel).exists() else None


# ---------------------------------------------------------------------------------------------
# the checks


@dataclass(frozen=True)
class _Smi:
    """nvidia-smi's answer, parsed."""

    finding: Finding
    query: host.DriverQuery | None  # for repro.containers.hostkind.detect; None: not run


def _nvidia_smi(root: Path, run: Runner, timeout_s: float) -> _Smi:
    """Run nvidia-smi and judge its answer (devices present or not is decided by the caller)."""
    candidates = [("nvidia-smi", *NVIDIA_SMI_QUERY)]
    wsl_smi = _tool_path(root, host.WSL_LIB.lstrip("/") + "/nvidia-smi")
    if wsl_smi:
        candidates.append((wsl_smi, *NVIDIA_SMI_QUERY))
    answer = _ask(candidates, run, timeout_s)
    if answer is None:
        finding = Finding(
            NVIDIA_SMI, NA, f"nvidia-smi not found (PATH, {host.WSL_LIB})", _SMI_SOURCE
        )
        return _Smi(finding, None)
    if answer.proc is None:
        why = answer.error or "failed"
        if answer.timed_out:
            why += ", killed: the driver query hangs (check the kernel log for Xid errors)"
        finding = Finding(NVIDIA_SMI, FAIL, f"nvidia-smi: {why}", _SMI_SOURCE)
        return _Smi(finding, host.DriverQuery("nvidia-smi", False, error=why))

    proc = answer.proc
    rc = proc.returncode
    parsed = host.parse_nvidia_smi(
        proc.stdout or "", 0 if rc in NVIDIA_SMI_ACCEPTED else rc, proc.stderr or ""
    )
    meaning = f" ({NVIDIA_SMI_EXIT[rc]})" if rc in NVIDIA_SMI_EXIT else ""
    if not parsed.ok:
        line = parsed.error or _failure_line(proc)
        source, predicts = _with_signature(_SMI_SOURCE, line)
        detail = f"nvidia-smi exit {rc}{meaning}: {line}"
        return _Smi(Finding(NVIDIA_SMI, FAIL, detail, source, predicts), parsed)

    listed = f"{len(parsed.gpus)} GPU(s): {_gpu_summary(proc.stdout or '')}, driver {parsed.driver}"
    if rc == 0:
        return _Smi(Finding(NVIDIA_SMI, OK, listed, _SMI_SOURCE), parsed)
    warning = next(
        (line for line in _lines(proc) if not line[:1].isdigit()), NVIDIA_SMI_EXIT.get(rc, "")
    )
    detail = (
        f"nvidia-smi exit {rc}{meaning}, accepted: {warning}; {listed}; the GPU answers, "
        "but have it inspected (CUDA may still report no GPU)"
    )
    return _Smi(Finding(NVIDIA_SMI, WARN, detail, _SMI_SOURCE), parsed)


def _gpu_summary(stdout: str) -> str:
    """``NVIDIA H100 80GB HBM3 (81559 MiB) ×2`` from the CSV rows."""
    counts: dict[str, int] = {}
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            label = parts[1] + (f" ({parts[3]})" if len(parts) >= 4 and parts[3] else "")
            counts[label] = counts.get(label, 0) + 1
    return ", ".join(label if n == 1 else f"{label} ×{n}" for label, n in counts.items())


def _nvidia_evidence(found: host.Host, fp: Mapping[str, Any]) -> str | None:
    """What says this host has NVIDIA GPUs (device nodes, WSL2 libraries, NVML), or None."""
    if found.nvidia_devices:
        return "/dev/" + ", /dev/".join(os.path.basename(p) for p in found.nvidia_devices)
    if found.kind == host.NVIDIA_WSL2:
        return f"WSL2 /dev/dxg with CUDA libraries in {host.WSL_LIB}"
    if found.kind == host.NVIDIA:
        return "the NVIDIA kernel module loaded (/proc/driver/nvidia/version)"
    if any(gpu.get("vendor") == "nvidia" for gpu in fp.get("gpus") or []):
        return "NVIDIA GPUs in the fingerprint"
    return None


def _judge_smi_presence(smi: Finding, evidence: str | None) -> Finding:
    """nvidia-smi's verdict once it is known whether NVIDIA GPUs should be there."""
    if smi.status == NA and evidence:
        detail = (
            f"nvidia-smi not found although this host has {evidence}; in a container the 'utility' "
            "driver capability (NVIDIA_DRIVER_CAPABILITIES) mounts it"
        )
        return Finding(NVIDIA_SMI, WARN, detail, smi.source)
    if smi.status == NA:
        return Finding(NVIDIA_SMI, NA, smi.detail + " and no NVIDIA GPU on this host", smi.source)
    if smi.status == FAIL and not evidence:
        detail = f"no NVIDIA GPU on this host; nvidia-smi is installed and says: {smi.detail}"
        return Finding(NVIDIA_SMI, NA, detail, smi.source)
    return smi


def _nvml(fp: Mapping[str, Any], evidence: str | None) -> Finding:
    """NVML from the fingerprint's unreadable entries (``nvml``, ``nvml.*``)."""
    entries = [
        u
        for u in fp.get("unreadable") or []
        if str(u.get("what")) == "nvml" or str(u.get("what")).startswith("nvml.")
    ]
    if not evidence:
        return Finding(NVML, NA, "no NVIDIA GPU on this host", _NVML_SOURCE)
    init = next((u for u in entries if u.get("what") == "nvml"), None)
    if init is not None and _PYNVML_MISSING in str(init.get("why")):
        detail = (
            f"pynvml is not installed, NVML was not read although this host has {evidence}: the "
            "fingerprint has no GPU list and no CUDA driver API version; pip install nvidia-ml-py"
        )
        return Finding(NVML, WARN, detail, _NVML_SOURCE)
    if init is not None:
        why = str(init.get("why"))
        source, predicts = _with_signature(_NVML_SOURCE, why)
        return Finding(
            NVML,
            FAIL,
            f"NVML does not initialise on a host with {evidence}: {why}",
            source,
            predicts,
        )
    fatal = [
        u
        for u in entries
        if re.fullmatch(r"nvml\.(?:device_count|driver_version|device\.\d+)", str(u.get("what")))
    ]
    if fatal:
        what = "; ".join(f"{u.get('what')}: {u.get('why')}" for u in fatal)
        source, predicts = _with_signature(_NVML_SOURCE, str(fatal[0].get("why")))
        return Finding(NVML, FAIL, f"NVML: {what}", source, predicts)
    driver = fp.get("driver") or {}
    gpus = [
        g for g in fp.get("gpus") or [] if g.get("vendor") == "nvidia" and g.get("source") == "nvml"
    ]
    if not gpus:
        detail = f"NVML lists no GPU although this host has {evidence}"
        return Finding(NVML, FAIL, detail, _NVML_SOURCE)
    summary = (
        f"{len(gpus)} GPU(s), driver {driver.get('nvidia') or '?'}, "
        f"CUDA driver API {driver.get('cuda_driver_api') or '?'}"
    )
    if entries:  # per-field gaps: partial NVML is normal on WSL2
        what = ", ".join(f"{u.get('what')} ({u.get('why')})" for u in entries)
        return Finding(NVML, WARN, f"{summary}; partial NVML: {what}", _NVML_SOURCE)
    return Finding(NVML, OK, summary, _NVML_SOURCE)


def _rocm_gpus(stdout: str) -> list[str]:
    """GPU labels from ``rocm-smi --showproductname`` (``GPU[0] : Card Series: ...``) or
    ``amd-smi list`` (``GPU: 0``)."""
    names: dict[str, str] = {}
    for line in stdout.splitlines():
        match = re.match(r"\s*GPU\[(\d+)\]\s*:\s*(.*)$", line)
        if match:
            index, rest = match.groups()
            label = re.match(r"(?:Card [Ss]eries|Marketing Name)\s*:\s*(.+)$", rest.strip())
            if label or index not in names:
                names[index] = label.group(1).strip() if label else f"GPU {index}"
            continue
        match = re.match(r"\s*GPU:\s*(\d+)\s*$", line)
        if match:
            names.setdefault(match.group(1), f"GPU {match.group(1)}")
    return [names[k] for k in sorted(names, key=int)]


def _rocm_smi(found: host.Host, root: Path, run: Runner, timeout_s: float) -> Finding:
    if not found.kfd:
        return Finding(ROCM_SMI, NA, "no /dev/kfd: no AMD GPU for ROCm on this host", _ROCM_SOURCE)
    kfd = found.amd_query
    kfd_text = (
        f"KFD: {', '.join(kfd.gpus)}" if kfd and kfd.ok else f"KFD: {kfd.error if kfd else '?'}"
    )
    candidates: list[tuple[str, ...]] = []
    for tool, argument in (("rocm-smi", "--showproductname"), ("amd-smi", "list")):
        candidates.append((tool, argument))  # PATH first, then ROCm's own bin directory
        path = _tool_path(root, f"opt/rocm/bin/{tool}")
        if path:
            candidates.append((path, argument))
    answer = _ask(candidates, run, timeout_s)
    if answer is None:
        status = WARN if kfd and kfd.ok else FAIL
        detail = f"/dev/kfd exists but neither rocm-smi nor amd-smi is installed; {kfd_text}"
        return Finding(ROCM_SMI, status, detail, _ROCM_SOURCE)
    if answer.proc is None:
        return Finding(ROCM_SMI, FAIL, f"{answer.tool}: {answer.error}; {kfd_text}", _ROCM_SOURCE)
    proc = answer.proc
    if proc.returncode != 0:
        line = _failure_line(proc)
        source, predicts = _with_signature(_ROCM_SOURCE, line)
        detail = f"{answer.tool} exit {proc.returncode}: {line}; {kfd_text}"
        return Finding(ROCM_SMI, FAIL, detail, source, predicts)
    gpus = _rocm_gpus(proc.stdout or "")
    if not gpus:
        return Finding(ROCM_SMI, WARN, f"{answer.tool} lists no GPU; {kfd_text}", _ROCM_SOURCE)
    detail = f"{answer.tool}: {len(gpus)} GPU(s): {', '.join(gpus)}; {kfd_text}"
    status = OK if kfd and kfd.ok else WARN
    return Finding(ROCM_SMI, status, detail, _ROCM_SOURCE)


def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _dev_shm(root: Path, statvfs: Callable[[str], Any]) -> Finding:
    shm_sig = signatures.SIGNATURE_BY_NAME["dataloader_shm_exhausted"]
    nccl_sig = signatures.SIGNATURE_BY_NAME["nccl_shm"]
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


def _driver_vs_runtime(
    fp: Mapping[str, Any], smi_driver: str | None, evidence: str | None, facts: compat.Facts | None
) -> Finding:
    runtime = fp.get("runtime") or {}
    torch_version = runtime.get("torch")
    tag = runtime_tag_of(runtime)
    if not torch_version:
        return Finding(
            DRIVER_VS_RUNTIME, NA, "no torch in the interpreter under test", _DRIVER_SOURCE
        )
    if runtime.get("hip"):
        detail = f"ROCm build (torch {torch_version}): the CUDA driver/runtime rule does not apply"
        return Finding(DRIVER_VS_RUNTIME, NA, detail, _DRIVER_SOURCE)
    cuda = runtime.get("cuda")
    if not cuda:
        detail = f"CPU build (torch {torch_version}): no CUDA runtime"
        return Finding(DRIVER_VS_RUNTIME, NA, detail, _DRIVER_SOURCE)
    build = f"torch {torch_version} (CUDA {cuda})"
    driver_section = fp.get("driver") or {}
    driver = driver_section.get("nvidia") or smi_driver
    if not driver:
        if not evidence:
            detail = f"{build}, but no NVIDIA GPU or driver on this host: its CUDA cases skip"
            return Finding(DRIVER_VS_RUNTIME, NA, detail, _DRIVER_SOURCE)
        detail = f"{build}: the driver version is unknown (NVML and nvidia-smi gave none)"
        return Finding(DRIVER_VS_RUNTIME, WARN, detail, _DRIVER_SOURCE)

    wsl2 = bool((fp.get("host") or {}).get("wsl2"))
    # Rule 1 of repro.compat.predictions (family minimum, Windows numbers on WSL2), asked through predict().
    prediction = compat.predict(
        {
            "host.driver.nvidia": str(driver),
            "host.wsl2": "true" if wsl2 else "false",
            "host.gpu_count": "1",
            "host.gpu.0.vendor": "nvidia",
        },
        {"variant.runtime": tag, "variant.accelerator": "cuda", "runtime.cuda": str(cuda)},
        facts=facts,
    )
    rule = next((r for r in prediction.reasons if r.check == "driver"), None)
    fact = f"compat-facts {rule.fact}{', unverified' if rule.unverified else ''}" if rule else ""
    source = "; ".join(s for s in (_DRIVER_SOURCE, fact) if s)

    api = driver_section.get("cuda_driver_api")
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
        sig = signatures.SIGNATURE_BY_NAME["driver_too_old"]
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


# ---------------------------------------------------------------------------------------------
# public API


def run_checks(
    fp: Mapping[str, Any],
    *,
    root: str | os.PathLike = "/",
    run: Runner = run_command,
    statvfs: Callable[[str], Any] = os.statvfs,
    environ: Mapping[str, str] | None = None,
    facts: compat.Facts | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[Finding]:
    """Run every check of :data:`CHECKS` (in that order) against fingerprint ``fp``.

    ``fp`` is ``repro.host.fingerprint.collect()`` output (its NVML, driver and torch facts are used,
    never read again). Device nodes and ``/dev/shm`` are looked up under ``root``; SMI tools run
    through ``run`` (``subprocess.run``-compatible: ``run(argv, capture_output=True, text=True,
    timeout=..., stdin=...)``, ``FileNotFoundError`` for a missing tool) for at most
    ``timeout_s`` each; ``statvfs`` sizes ``/dev/shm``; ``environ`` (default ``os.environ``) only
    helps to recognise WSL2. Never raises for what it finds: every problem is a finding.
    """
    root_path = Path(root)
    findings: dict[str, Finding] = {}

    started = time.monotonic()
    smi = _nvidia_smi(root_path, run, timeout_s)
    smi_s = time.monotonic() - started
    no_query = host.DriverQuery("nvidia-smi", False, error="nvidia-smi not found")
    found = host.detect(
        root_path,
        daemon=host.DaemonInfo.unreachable("not asked by repro doctor"),
        nvidia_query=smi.query or no_query,
        environ=environ,
    )
    evidence = _nvidia_evidence(found, fp)
    findings[NVIDIA_SMI] = _timed(_judge_smi_presence(smi.finding, evidence), smi_s)

    started = time.monotonic()
    findings[NVML] = _timed(_nvml(fp, evidence), time.monotonic() - started)
    started = time.monotonic()
    findings[ROCM_SMI] = _timed(
        _rocm_smi(found, root_path, run, timeout_s), time.monotonic() - started
    )
    started = time.monotonic()
    findings[DEV_SHM] = _timed(_dev_shm(root_path, statvfs), time.monotonic() - started)
    started = time.monotonic()
    smi_driver = smi.query.driver if smi.query is not None and smi.query.ok else None
    findings[DRIVER_VS_RUNTIME] = _timed(
        _driver_vs_runtime(fp, smi_driver, evidence, facts), time.monotonic() - started
    )
    return [findings[name] for name in CHECKS]


def _timed(finding: Finding, duration_s: float) -> Finding:
    return replace(finding, duration_s=round(duration_s, 4))


def case_id(check: str) -> str:
    """``doctor[check=nvidia_smi]``."""
    return f"{SCENARIO}[check={check}]"


def to_results(findings: Sequence[Finding], log_path: str = "") -> list[CaseResult]:
    """One ``CaseResult`` per finding, in scenario ``doctor``: infra outcomes, never ``failed``.

    ok -> passed; warn -> passed with ``doctor.status=warn``; n/a -> skipped (message: the
    detail); fail -> error with signature ``infra.<check>`` and the detail as message. Every
    testcase carries ``doctor.status``, ``doctor.detail``, ``doctor.source`` and, where a finding
    makes a case signature likely, ``doctor.predicts``. ``log_path`` (relative to the run
    directory, see :func:`write_log`) becomes every testcase's ``repro.log``.
    """
    results = []
    for finding in findings:
        if finding.status not in STATUSES:
            raise ValueError(f"finding {finding.check}: unknown status {finding.status!r}")
        properties = {
            PROP_STATUS: finding.status,
            PROP_DETAIL: finding.detail,
            PROP_SOURCE: finding.source,
        }
        if finding.predicts:
            properties[PROP_PREDICTS] = finding.predicts
        outcome, message, signature, detail = Outcome.PASSED, "", "", ""
        if finding.status == NA:
            outcome, message = Outcome.SKIPPED, finding.detail
        elif finding.status == FAIL:
            outcome, message = Outcome.ERROR, finding.detail
            signature = INFRA_PREFIX + finding.check
            detail = f"{finding.detail}\nsource: {finding.source}\n"
        results.append(
            CaseResult(
                scenario=SCENARIO,
                case_id=case_id(finding.check),
                outcome=outcome,
                duration_s=finding.duration_s,
                message=message,
                signature=signature,
                detail=detail,
                properties=properties,
                log_path=log_path,
            )
        )
    return results


LOG_NAME = "logs/doctor.log"


def write_log(run_dir: str | os.PathLike, findings: Sequence[Finding]) -> str:
    """Write the findings table to ``<run_dir>/logs/doctor.log``; return that path relative to
    ``run_dir`` (for :func:`to_results`). Raises OSError if it cannot be written."""
    path = Path(run_dir) / LOG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# repro doctor\n{format_table(findings)}\n", encoding="utf-8")
    return LOG_NAME


def doctor_results(
    fp: Mapping[str, Any], run_dir: str | os.PathLike | None = None, **kwargs: Any
) -> list[CaseResult]:
    """The ``doctor`` testsuite of a run: ``run_checks(fp, **kwargs)`` as ``CaseResult`` objects,
    with the table written to ``run_dir/logs/doctor.log`` (and linked) when ``run_dir`` is given."""
    findings = run_checks(fp, **kwargs)
    log_path = write_log(run_dir, findings) if run_dir is not None else ""
    return to_results(findings, log_path)


def failed(findings: Sequence[Finding]) -> bool:
    return any(f.status == FAIL for f in findings)


def format_table(findings: Sequence[Finding]) -> str:
    """Columns check, status, detail; the source under each warn/fail row (no final newline)."""
    width = max([len("check"), *(len(f.check) for f in findings)])
    lines = [f"{'check':<{width}}  {'status':<6}  detail"]
    for f in findings:
        lines.append(f"{f.check:<{width}}  {f.status:<6}  {f.detail}")
        if f.status in (WARN, FAIL):
            lines.append(f"{'':<{width}}  {'':<6}  source: {f.source}")
    return "\n".join(lines)


def _interpreter(python: str) -> str:
    """``--python`` checked: an existing executable file or a command on PATH."""
    if os.sep in python or (os.altsep and os.altsep in python):
        if not os.path.isfile(python):
            raise ConfigError(f"--python {python}: no such file")
        if not os.access(python, os.X_OK):
            raise ConfigError(f"--python {python}: not executable")
        return python
    resolved = shutil.which(python)
    if resolved is None:
        raise ConfigError(f"--python {python}: not found on PATH")
    return resolved


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument(
        "--python",
        default=sys.executable,
        metavar="PATH",
        help="interpreter whose torch build is checked against the driver (default: this one)",
    )


def run(args: argparse.Namespace) -> int:
    """``repro doctor``: exit 0 when no check fails, 1 when any does; ConfigError on bad input."""
    python = _interpreter(args.python)
    fp = fingerprint.collect(python=python)
    findings = run_checks(fp)
    if args.json:
        out = {
            "host_key": fingerprint.host_key(fp),
            "python": python,
            "runtime": runtime_tag_of(fp.get("runtime")),
            "failed": failed(findings),
            "findings": [f.to_json() for f in findings],
        }
        print(json.dumps(out, indent=2))
    else:
        print(f"host   {fingerprint.host_key(fp)}")
        print(
            f"python {python} (torch {(fp.get('runtime') or {}).get('torch') or '-'} "
            f"[{runtime_tag_of(fp.get('runtime'))}])"
        )
        print(format_table(findings))
    return EXIT_CASES_FAILED if failed(findings) else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m repro.host.doctor [--json] [--python PATH]`` (also wired as ``repro doctor``)."""
    parser = argparse.ArgumentParser(
        prog="repro doctor",
        description="Health pre-flight: nvidia-smi, NVML, ROCm SMI, /dev/shm, driver vs runtime.",
    )
    add_arguments(parser)
    args = parser.parse_args(None if argv is None else list(argv))
    try:
        return run(args)
    except ReproError as exc:
        hint = f"; {exc.hint}" if exc.hint else ""
        print(f"repro doctor: error: {exc}{hint}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
