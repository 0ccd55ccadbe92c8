"""``repro doctor --deep``: the acceptance test of a GPU host, before its matrix or on a new box.

The plain doctor (:mod:`repro.host.doctor`) judges what the fingerprint and the SMI tools say.
The deep one also exercises what the cases will rely on, each check in its own throwaway process
where it touches the accelerator. After the plain checks, in this order:

- ``nvml_queries``: every NVML query the fingerprint makes (:func:`repro.host.nvidia.read_nvml`,
  modes and fabric included), run again with each call recorded: answered, not supported by the
  GPU (fine), or failed. A failed device, count or driver query fails; other gaps warn.
- ``fork_cuda``: a CUDA/ROCm op in a child forked from an interpreter that imported torch and
  ``torch._dynamo`` (the zygote's premise, :mod:`repro.host.fork_check`).
- ``accelerator_smoke``: a matmul, a cuDNN/MIOpen conv2d forward and backward, a one-rank
  NCCL/RCCL all_reduce (``python -m repro.host.accel_probe smoke``), with the versions.
- ``shm_write``: a 256 MiB POSIX shared-memory segment written page by page, as a DataLoader
  worker's batch is: on Docker's 64 MB ``/dev/shm`` the writer dies of SIGBUS (measured here:
  ``dataloader_shm_exhausted``). A warning, like ``dev_shm``'s size rule.
- ``fabric_manager``: on an NVSwitch system (``/proc/driver/nvidia-nvswitch/devices``) or where
  NVML reports a GPU fabric: the fabric state of the GPUs the job uses and the
  ``nvidia-fabricmanager`` service; not ready is Error 802 waiting to happen (F7-1).

On a host without an accelerator every accelerator check is ``n/a`` with its reason. The
findings are ordinary :class:`repro.host.checks.Finding` objects: ``repro doctor`` prints them
and exits 1 only when one fails. Never imports torch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from repro import compat, proctree
from repro.host import (
    checks,
    cuda_init,
    doctor,
    files,
    fork_check,
    hostkind,
    nvidia,
    nvidia_modes,
    smi,
)
from repro.host.checks import FAIL, NA, OK, WARN, Finding
from repro.model import Fingerprint

NVML_QUERIES = "nvml_queries"
FORK_CUDA = "fork_cuda"
ACCELERATOR_SMOKE = "accelerator_smoke"
SHM_WRITE = "shm_write"
FABRIC_MANAGER = "fabric_manager"
DEEP_CHECKS = (NVML_QUERIES, FORK_CUDA, ACCELERATOR_SMOKE, SHM_WRITE, FABRIC_MANAGER)

#: Bytes written into /dev/shm: more than Docker's 64 MB default, well under the 1 GiB the
#: plain ``dev_shm`` check asks for.
SHM_WRITE_BYTES = 256 * 2**20
#: Where the NVSwitch kernel driver lists its switches (HGX boards).
NVSWITCH_DEVICES = "proc/driver/nvidia-nvswitch/devices"
#: Seconds for the smoke child (interpreter start, torch import, context creation, NCCL init).
SMOKE_TIMEOUT_S = 300.0
SHM_TIMEOUT_S = 60.0
_FATAL_QUERIES = ("nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex")
_NVML_SOURCE = "every NVML query of repro.host.nvidia / nvidia_modes (nvidia-ml-py)"
_FORK_SOURCE = (
    "DESIGN.md Isolation: the zygote forks a torch-imported interpreter; repro.host.fork_check"
)
_SMOKE_SOURCE = (
    "python -m repro.host.accel_probe smoke (torch matmul, cudnn conv2d, nccl all_reduce)"
)
_FABRIC_SOURCE = cuda_init.cause("cuda_init_failed", 802).source


# ---------------------------------------------------------------------------------------------
# NVML, every query recorded


class RecordingNVML:
    """pynvml with every ``nvml*`` call recorded as ``(function, "ok" | "not supported" | why)``;
    everything else (structs, constants) passes through."""

    def __init__(self, nvml: ModuleType):
        self._nvml = nvml
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._nvml, name)
        if not (name.startswith("nvml") and callable(value)):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = value(*args, **kwargs)
            except Exception as exc:
                gap = nvidia_modes.not_supported(exc)
                self.calls.append((name, "not supported" if gap else files.why(exc)))
                raise
            self.calls.append((name, "ok"))
            return result

        return call


def nvml_queries(nvml: ModuleType | None, evidence: str | None) -> Finding:
    """``nvml_queries``: the fingerprint's NVML read, every call recorded (``nvml`` None:
    ``import pynvml``)."""
    unreadable: files.Unreadable = []
    module = nvml or nvidia.load_nvml(unreadable)
    if module is None:
        why = unreadable[0]["why"]
        status = WARN if evidence else NA
        where = f"this host has {evidence}" if evidence else "no NVIDIA GPU on this host"
        return Finding(NVML_QUERIES, status, f"{why}; {where}", _NVML_SOURCE)
    recorder = RecordingNVML(module)
    reading = nvidia.read_nvml(recorder, unreadable)  # type: ignore[arg-type]
    init = next((u for u in unreadable if u["what"] == "nvml"), None)
    if init is not None:
        if not evidence:
            detail = f"no NVIDIA GPU on this host (NVML: {init['why']})"
            return Finding(NVML_QUERIES, NA, detail, _NVML_SOURCE)
        detail = f"NVML does not initialise on a host with {evidence}: {init['why']}"
        return Finding(NVML_QUERIES, FAIL, detail, _NVML_SOURCE)
    outcomes: dict[str, set[str]] = {}
    for name, outcome in recorder.calls:
        outcomes.setdefault(name, set()).add(outcome)
    failed = {n: o - {"ok", "not supported"} for n, o in outcomes.items()}
    failed = {n: o for n, o in failed.items() if o}
    unsupported = sorted(n for n, o in outcomes.items() if "not supported" in o)
    summary = (
        f"{len(outcomes)} NVML functions, {len(recorder.calls)} calls on "
        f"{len(reading.gpus)} GPU(s), driver {reading.driver or '?'}, "
        f"CUDA driver API {reading.cuda_driver_api or '?'}"
    )
    if unsupported:
        summary += f"; not supported by the GPU: {', '.join(unsupported)}"
    if failed:
        what = "; ".join(f"{n}: {', '.join(sorted(o))}" for n, o in sorted(failed.items()))
        status = FAIL if set(failed) & set(_FATAL_QUERIES) else WARN
        return Finding(NVML_QUERIES, status, f"{summary}; failed: {what}", _NVML_SOURCE)
    if not reading.gpus and evidence:
        detail = f"{summary}: NVML lists no GPU although this host has {evidence}"
        return Finding(NVML_QUERIES, FAIL, detail, _NVML_SOURCE)
    if not reading.gpus:
        return Finding(NVML_QUERIES, NA, f"{summary}: no NVIDIA GPU", _NVML_SOURCE)
    return Finding(NVML_QUERIES, OK, summary, _NVML_SOURCE)


# ---------------------------------------------------------------------------------------------
# the children


def _status(status: str) -> str:
    return {fork_check.OK: OK, fork_check.FAILED: FAIL, fork_check.NA: NA}.get(status, FAIL)


def fork_cuda(python: str, runner: fork_check.Runner, timeout_s: float) -> Finding:
    """``fork_cuda``: :func:`repro.host.fork_check.run` as a finding."""
    found = fork_check.run(python, timeout_s=timeout_s, runner=runner)
    detail = found.reason
    if found.status == fork_check.FAILED:
        detail += "; the zygote must start accelerator cases fresh on this host"
    return Finding(FORK_CUDA, _status(found.status), detail, _FORK_SOURCE, "", found.duration_s)


def accelerator_smoke(python: str, runner: fork_check.Runner, timeout_s: float) -> Finding:
    """``accelerator_smoke``: CUDA, cuDNN and NCCL (ROCm: HIP, MIOpen, RCCL) on device 0."""
    reply, why = fork_check.ask(python, "smoke", timeout_s=timeout_s, run=runner)
    if reply is None:
        return Finding(
            ACCELERATOR_SMOKE, FAIL, f"the smoke test did not answer: {why}", _SMOKE_SOURCE
        )
    return Finding(
        ACCELERATOR_SMOKE,
        _status(str(reply.get("status"))),
        str(reply.get("reason")),
        _SMOKE_SOURCE,
    )


def shm_write(python: str, runner: fork_check.Runner, timeout_s: float) -> Finding:
    """``shm_write``: write :data:`SHM_WRITE_BYTES` into a shared-memory segment in a child."""
    source = "dataloader_shm_exhausted (DESIGN.md: 64 MB /dev/shm, 2 workers x 50 MB fail)"
    size = f"{SHM_WRITE_BYTES // 2**20} MiB"
    reply, why = fork_check.ask(
        python, "shm", str(SHM_WRITE_BYTES), timeout_s=timeout_s, run=runner
    )
    if reply is None:
        detail = (
            f"writing {size} into /dev/shm: {why}: DataLoader workers returning large batches "
            "die the same way; run the container with --shm-size=1g or --ipc=host"
        )
        return Finding(SHM_WRITE, WARN, detail, source, "dataloader_shm_exhausted")
    if reply.get("status") == fork_check.OK:
        return Finding(SHM_WRITE, OK, str(reply.get("reason")), source)
    return Finding(SHM_WRITE, WARN, str(reply.get("reason")), source, "dataloader_shm_exhausted")


# ---------------------------------------------------------------------------------------------
# Fabric Manager


def fabric_manager(fp: Fingerprint, root: Path, run: smi.Runner, timeout_s: float) -> Finding:
    """``fabric_manager``: on NVSwitch systems, the fabric of the GPUs the job uses is
    "Completed" and the ``nvidia-fabricmanager`` service is not inactive or failed."""
    switch_dir = root / NVSWITCH_DEVICES
    switches = sorted(p.name for p in switch_dir.iterdir()) if switch_dir.is_dir() else []
    gpus = fp.used_gpus or fp.gpus
    states = {
        g.index: g.fabric_state
        for g in gpus
        if g.fabric_state and g.fabric_state != "Not Supported" and g.vendor == "nvidia"
    }
    nvml_states = {i: s for i, s in states.items() if not s.startswith("service ")}
    if not switches and not nvml_states:
        detail = f"no NVSwitch (no /{NVSWITCH_DEVICES}) and no GPU reports an NVLink fabric"
        return Finding(FABRIC_MANAGER, NA, detail, _FABRIC_SOURCE)
    service = nvidia_modes.fabric_service_state(root, run, timeout_s)
    where = f"{len(switches)} NVSwitch device(s)" if switches else "an NVLink fabric"
    groups: dict[str, list[str]] = {}
    for index, state in sorted(nvml_states.items()):
        groups.setdefault(state, []).append(str(index))
    fabric = "; ".join(f"GPU {','.join(ids)}: fabric {state}" for state, ids in groups.items())
    manager = f"nvidia-fabricmanager {service}" if service else "no nvidia-fabricmanager unit"
    cause = cuda_init.cause("cuda_init_failed", 802)
    not_ready = [s for s in nvml_states.values() if s != "Completed"]
    if not_ready or (not nvml_states and service != "service active"):
        detail = (
            f"{where}, {fabric or 'fabric state unknown to NVML'}, {manager}: CUDA fails with "
            f"Error 802 'system not yet initialized' until the fabric is up; fix: {cause.fix}"
        )
        return Finding(FABRIC_MANAGER, FAIL, detail, _FABRIC_SOURCE, "cuda_init_failed")
    detail = f"{where}, {fabric or 'fabric state unknown to NVML'}, {manager}"
    return Finding(FABRIC_MANAGER, OK, detail, _FABRIC_SOURCE)


# ---------------------------------------------------------------------------------------------
# all of it


def run_deep_checks(
    fp: Fingerprint,
    *,
    python: str,
    root: str | os.PathLike = "/",
    run: smi.Runner = smi.run_command,
    runner: fork_check.Runner = proctree.run_bounded,
    nvml: ModuleType | None = None,
    statvfs: Callable[[str], Any] = os.statvfs,
    environ: Mapping[str, str] | None = None,
    facts: compat.Facts | None = None,
    timeout_s: float = doctor.DEFAULT_TIMEOUT_S,
    expected_gpus: int | None = None,
) -> list[Finding]:
    """The plain checks (:func:`repro.host.doctor.run_checks`), then :data:`DEEP_CHECKS`.

    ``python`` is the interpreter whose torch the children use; ``runner`` runs them
    (:func:`repro.proctree.run_bounded`-compatible); ``nvml`` is pynvml (None: imported).
    Other arguments as for ``run_checks``. Never raises for what it finds."""
    root_path = Path(root)
    findings = doctor.run_checks(
        fp,
        root=root_path,
        run=run,
        statvfs=statvfs,
        environ=environ,
        facts=facts,
        timeout_s=timeout_s,
        expected_gpus=expected_gpus,
    )
    found = hostkind.detect(
        root_path,
        daemon=hostkind.DaemonInfo.unreachable("not asked by repro doctor"),
        nvidia_query=smi.DriverQuery("nvidia-smi", False, error="not asked"),
        environ=environ,
    )
    steps: list[Callable[[], Finding]] = [
        lambda: nvml_queries(nvml, checks.nvidia_evidence(found, fp)),
        lambda: fork_cuda(python, runner, fork_check.DEFAULT_TIMEOUT_S),
        lambda: accelerator_smoke(python, runner, SMOKE_TIMEOUT_S),
        lambda: shm_write(python, runner, SHM_TIMEOUT_S),
        lambda: fabric_manager(fp, root_path, run, timeout_s),
    ]
    for step in steps:
        started = time.monotonic()
        finding = step()
        findings.append(replace(finding, duration_s=round(time.monotonic() - started, 4)))
    return findings
