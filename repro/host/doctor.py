"""Health pre-flight (``repro doctor``): is this host fit to run reproductions at all?

A broken driver, a missing device or a 64 MB ``/dev/shm`` makes cases fail for reasons that have
nothing to do with the torch build under test. The doctor checks those first and reports them as
**infra** findings, so they are never mistaken for reproduced torch failures. Seven checks
(``cuda_init`` and ``gpu_count`` are described in :mod:`repro.host.gpu_checks`):

- ``nvidia_smi``: ``nvidia-smi --query-gpu=index,name,driver_version,memory.total
  --format=csv,noheader`` (``PATH``, else WSL2's ``/usr/lib/wsl/lib/nvidia-smi``). Exit 0 is ok;
  exit 14 ("infoROM is corrupted") is a warning: the GPU still works, and CI that must not stop on
  it accepts 14 (pytorch/pytorch PR #87464, NVIDIA/gpu-operator#285), but that very PR's next run
  failed with "No CUDA GPUs are available", so it is not "ok". Any other status, no GPU listed or
  no answer within the timeout is a failure with nvidia-smi's own line and the meaning of its
  status (nvidia-smi(1), RETURN VALUE). Absent binary and no NVIDIA device: ``n/a``.
- ``nvml``: what ``repro.host.nvidia`` recorded as unreadable under ``nvml*``. NVML is what
  nvidia-smi, the container toolkit and our fingerprint read; if it cannot initialise on a host
  with NVIDIA devices, the fingerprint has no GPUs and no CUDA driver API version.
- ``rocm_smi``: ``rocm-smi --showproductname`` (else ``amd-smi list``) when ``/dev/kfd`` exists,
  next to the KFD topology ``repro.host.amd`` reads.
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

The checks themselves live in :mod:`repro.host.checks`; this module runs them in order and turns
their findings into results and a log. ``repro doctor`` is :mod:`repro.cli.host`. Never imports
torch and never initialises CUDA: torch facts come from the fingerprint (a child process),
devices from files under ``root``, the rest from the two SMI tools, run through an injectable
``run`` with a hard timeout.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from repro import compat
from repro.host import checks, gpu_checks, hostkind, smi
from repro.host.checks import (
    CHECKS,
    CUDA_INIT,
    DEV_SHM,
    DRIVER_VS_RUNTIME,
    FAIL,
    GPU_COUNT,
    NA,
    NVIDIA_SMI,
    NVML,
    OK,
    ROCM_SMI,
    STATUSES,
    WARN,
    Finding,
)
from repro.model import Fingerprint
from repro.outcomes import CaseResult, Outcome

__all__ = [
    "CHECKS",
    "CUDA_INIT",
    "DEV_SHM",
    "DRIVER_VS_RUNTIME",
    "FAIL",
    "GPU_COUNT",
    "NA",
    "NVIDIA_SMI",
    "NVML",
    "OK",
    "ROCM_SMI",
    "STATUSES",
    "WARN",
    "Finding",
    "case_id",
    "doctor_results",
    "failed",
    "format_table",
    "run_checks",
    "to_results",
    "write_log",
]

SCENARIO = "doctor"

#: Testcase properties written by :func:`to_results`.
PROP_STATUS = "doctor.status"
PROP_DETAIL = "doctor.detail"
PROP_SOURCE = "doctor.source"
PROP_PREDICTS = "doctor.predicts"
#: Signature prefix of a failed check: ``infra.nvidia_smi``.
INFRA_PREFIX = "infra."
#: Seconds an SMI tool may take before it counts as hung.
DEFAULT_TIMEOUT_S = smi.DEFAULT_TIMEOUT_S


def run_checks(
    fp: Fingerprint,
    *,
    root: str | os.PathLike = "/",
    run: smi.Runner = smi.run_command,
    statvfs: Callable[[str], Any] = os.statvfs,
    environ: Mapping[str, str] | None = None,
    facts: compat.Facts | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    expected_gpus: int | None = None,
) -> list[Finding]:
    """Run every check of :data:`CHECKS` (in that order) against fingerprint ``fp``.

    ``fp`` is ``repro.host.fingerprint.collect()`` output or a ``--fingerprint`` file's
    (its NVML, driver and torch facts are used, never read again). Device nodes and ``/dev/shm`` are looked up under ``root``; SMI tools run
    through ``run`` (``subprocess.run``-compatible: ``run(argv, capture_output=True, text=True,
    timeout=..., stdin=...)``, ``FileNotFoundError`` for a missing tool) for at most
    ``timeout_s`` each; ``statvfs`` sizes ``/dev/shm``; ``environ`` (default ``os.environ``) only
    helps to recognise WSL2; ``expected_gpus`` is the GPU count matrix.yaml's runner entry names
    (``repro.config.runner_gpus``; None: not checked). Never raises for what it finds: every
    problem is a finding.
    """
    root_path = Path(root)
    findings: dict[str, Finding] = {}

    started = time.monotonic()
    verdict = checks.nvidia_smi(root_path, run, timeout_s)
    smi_s = time.monotonic() - started
    no_query = smi.DriverQuery("nvidia-smi", False, error="nvidia-smi not found")
    found = hostkind.detect(
        root_path,
        daemon=hostkind.DaemonInfo.unreachable("not asked by repro doctor"),
        nvidia_query=verdict.query or no_query,
        environ=environ,
    )
    evidence = checks.nvidia_evidence(found, fp)
    findings[NVIDIA_SMI] = _timed(checks.judge_smi_presence(verdict.finding, evidence), smi_s)

    started = time.monotonic()
    findings[NVML] = _timed(checks.nvml(fp, evidence), time.monotonic() - started)
    started = time.monotonic()
    findings[ROCM_SMI] = _timed(
        checks.rocm_smi(found, root_path, run, timeout_s), time.monotonic() - started
    )
    started = time.monotonic()
    findings[DEV_SHM] = _timed(checks.dev_shm(root_path, statvfs), time.monotonic() - started)
    started = time.monotonic()
    query = verdict.query
    smi_driver = query.driver if query is not None and query.ok else None
    findings[DRIVER_VS_RUNTIME] = _timed(
        checks.driver_vs_runtime(fp, smi_driver, evidence, facts), time.monotonic() - started
    )
    findings[CUDA_INIT] = gpu_checks.cuda_init_check(fp)
    findings[GPU_COUNT] = gpu_checks.gpu_count_check(fp, expected_gpus)
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
    fp: Fingerprint, run_dir: str | os.PathLike | None = None, **kwargs: Any
) -> list[CaseResult]:
    """The ``doctor`` testsuite of a run: ``run_checks(fp, **kwargs)`` as ``CaseResult`` objects,
    with the table written to ``run_dir/logs/doctor.log`` (and linked) when ``run_dir`` is given."""
    findings = run_checks(fp, **kwargs)
    log_path = write_log(run_dir, findings) if run_dir is not None else ""
    return to_results(findings, log_path)


def failed(findings: Sequence[Finding]) -> bool:
    """True when any finding is ``fail`` (``repro doctor`` then exits 1)."""
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
