"""Per-GPU modes from NVML: compute, MIG, persistence, ECC, Fabric Manager, MIG instances.

These decide whether a healthy-looking GPU can run a job at all: a compute mode
EXCLUSIVE_PROCESS GPU refuses a second process ("all CUDA-capable devices are busy or
unavailable", F7-4), a MIG GPU shows CUDA one MIG instance per process (pytorch/pytorch#102715,
the MIG user guide), and an HGX/NVSwitch host whose Fabric Manager has not started fails CUDA
initialisation with Error 802 (F7-1). Values are ``nvidia-smi -q`` words so they read the same
as the tool people know: compute mode "Default" | "Exclusive_Thread" | "Prohibited" |
"Exclusive_Process" (``nvmlDeviceGetComputeMode``), "Enabled" | "Disabled" for MIG
(``nvmlDeviceGetMigMode``, the current mode), persistence (``nvmlDeviceGetPersistenceMode``) and
ECC (``nvmlDeviceGetEccMode``, current), and the fabric state "Not Supported" | "Not Started" |
"In Progress" | "Completed" (:func:`fabric_state`).

Where NVML has no fabric answer, :func:`fabric_service_state` asks systemd about the
``nvidia-fabricmanager`` unit, but only on a host that has the unit installed. A query the GPU
does not support (``NVML_ERROR_NOT_SUPPORTED``: ECC on a GeForce) or a binding too old to have
it is simply not known (None); any other failure is recorded as unreadable. Never imports torch.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from repro.host import files, smi
from repro.host.files import Unreadable
from repro.model import MigDevice

#: nvmlComputeMode_t -> nvidia-smi words (nvml.h: DEFAULT 0, EXCLUSIVE_THREAD 1, PROHIBITED 2,
#: EXCLUSIVE_PROCESS 3).
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
#: nvmlGpuFabricState_t (nvml.h, R535+): NOT_SUPPORTED 0, NOT_STARTED 1, IN_PROGRESS 2, COMPLETED 3.
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
#: NVML_ERROR_NOT_SUPPORTED (nvml.h): the query does not apply to this GPU.
NVML_ERROR_NOT_SUPPORTED = 3
#: NVML_ERROR_FUNCTION_NOT_FOUND (nvml.h): the driver's libnvidia-ml lacks the symbol.
NVML_ERROR_FUNCTION_NOT_FOUND = 13
#: The fabric queries, newest first, each with the binding's struct it fills: the versioned
#: ``nvmlDeviceGetGpuFabricInfoV`` (R550+ drivers; nvidia-ml-py 12.550+) and the deprecated
#: ``nvmlDeviceGetGpuFabricInfo`` (R535+, "will be removed in CUDA 14.0" in nvidia-ml-py 13.x).
#: Both take ``(device, gpuFabricInfo)`` and hand ``gpuFabricInfo`` to the C function as is, so
#: the caller passes ``ctypes.byref(struct)`` and reads the struct afterwards (pynvml.py).
FABRIC_QUERIES = (
    ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfoV_t"),
    ("nvmlDeviceGetGpuFabricInfo", "c_nvmlGpuFabricInfo_t"),
)
#: Where a distribution installs the Fabric Manager unit (relative to the root).
FABRIC_UNITS = (
    "lib/systemd/system/nvidia-fabricmanager.service",
    "usr/lib/systemd/system/nvidia-fabricmanager.service",
    "etc/systemd/system/nvidia-fabricmanager.service",
)
_SKIP = object()


def not_supported(exc: BaseException) -> bool:
    """Whether an NVML error means "this GPU does not support the query" (NVML_ERROR_NOT_SUPPORTED)."""
    return (
        getattr(exc, "value", None) == NVML_ERROR_NOT_SUPPORTED
        or "not supported" in str(exc).lower()
    )


def _ask(unreadable: Unreadable, what: str, nvml: ModuleType, name: str, *args: Any) -> Any:
    """``nvml.<name>(*args)``; ``_SKIP`` when the binding lacks it or the GPU does not support
    it; None (recorded as unreadable ``what``) for any other failure."""
    call: Callable | None = getattr(nvml, name, None)
    if call is None:
        return _SKIP
    try:
        return call(*args)
    except Exception as exc:  # NVMLError_*: data about the GPU, not a crash
        if not_supported(exc):
            return _SKIP
        unreadable.append({"what": what, "why": files.why(exc)})
        return None


def _current(value: Any) -> Any:
    """NVML's ``(current, pending)`` pairs: the current one."""
    return value[0] if isinstance(value, (list, tuple)) and value else value


def _enabled(value: Any) -> str | None:
    if value is _SKIP or value is None:
        return None
    return "Enabled" if int(_current(value)) else "Disabled"


def _decoded(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _mig_devices(nvml: ModuleType, handle: Any, what: str, unreadable: Unreadable) -> tuple:
    """The MIG instances of a GPU in MIG mode (empty slots are skipped)."""
    slots = _ask(unreadable, what + ".mig_count", nvml, "nvmlDeviceGetMaxMigDeviceCount", handle)
    if slots is _SKIP or not slots:
        return ()
    found = []
    for slot in range(int(slots)):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except Exception:  # NVML_ERROR_NOT_FOUND: no instance in this slot
            continue
        uuid = _ask(unreadable, f"{what}.mig.{slot}.uuid", nvml, "nvmlDeviceGetUUID", mig)
        name = _ask(unreadable, f"{what}.mig.{slot}.name", nvml, "nvmlDeviceGetName", mig)
        memory = _ask(unreadable, f"{what}.mig.{slot}.memory", nvml, "nvmlDeviceGetMemoryInfo", mig)
        found.append(
            MigDevice(
                index=len(found),
                uuid=_decoded(uuid) if uuid not in (None, _SKIP) else None,
                name=_decoded(name) if name not in (None, _SKIP) else None,
                memory_bytes=int(memory.total) if memory not in (None, _SKIP) else None,
            )
        )
    return tuple(found)


def read_modes(nvml: ModuleType, handle: Any, what: str, unreadable: Unreadable) -> dict[str, Any]:
    """The modes of one GPU as keyword arguments for :class:`repro.model.Gpu`:
    ``bus_id``, ``compute_mode``, ``mig_mode``, ``persistence_mode``, ``ecc_mode``,
    ``fabric_state``, ``mig_devices``. ``what`` prefixes unreadable entries
    (``nvml.device.0``)."""
    pci = _ask(unreadable, what + ".pci", nvml, "nvmlDeviceGetPciInfo", handle)
    compute = _ask(unreadable, what + ".compute_mode", nvml, "nvmlDeviceGetComputeMode", handle)
    mig = _ask(unreadable, what + ".mig_mode", nvml, "nvmlDeviceGetMigMode", handle)
    persistence = _ask(
        unreadable, what + ".persistence_mode", nvml, "nvmlDeviceGetPersistenceMode", handle
    )
    ecc = _ask(unreadable, what + ".ecc_mode", nvml, "nvmlDeviceGetEccMode", handle)
    state = fabric_state(nvml, handle, what + ".fabric", unreadable)
    mig_mode = _enabled(mig)
    bus_id = getattr(pci, "busId", None) if pci not in (None, _SKIP) else None
    return {
        "bus_id": _decoded(bus_id) if bus_id else None,
        "compute_mode": COMPUTE_MODES.get(int(compute), str(compute))
        if compute not in (None, _SKIP)
        else None,
        "mig_mode": mig_mode,
        "persistence_mode": _enabled(persistence),
        "ecc_mode": _enabled(ecc),
        "fabric_state": FABRIC_STATES.get(int(state), str(state)) if state is not None else None,
        "mig_devices": _mig_devices(nvml, handle, what, unreadable)
        if mig_mode == "Enabled"
        else (),
    }


def fabric_state(nvml: ModuleType, handle: Any, what: str, unreadable: Unreadable) -> int | None:
    """The ``nvmlGpuFabricState_t`` of one GPU (:data:`FABRIC_STATES`), or None when no query of
    :data:`FABRIC_QUERIES` answers: the binding lacks both, the GPU has no fabric (Not
    Supported), or the query failed (recorded as unreadable ``what``). A driver without the
    versioned symbol (Function Not Found) is asked the deprecated query instead."""
    for function, struct in FABRIC_QUERIES:
        call = getattr(nvml, function, None)
        make = getattr(nvml, struct, None)
        if call is None or make is None:
            continue
        info = make()
        try:
            call(handle, ctypes.byref(info))
        except Exception as exc:  # NVMLError_*: data about the GPU, not a crash
            if getattr(exc, "value", None) == NVML_ERROR_FUNCTION_NOT_FOUND:
                continue
            if not not_supported(exc):
                unreadable.append({"what": what, "why": files.why(exc)})
            return None
        return int(info.state)
    return None


def fabric_unit_installed(root: Path) -> bool:
    """Whether the ``nvidia-fabricmanager`` systemd unit is installed under ``root``."""
    return any((root / rel).exists() for rel in FABRIC_UNITS)


def fabric_service_state(
    root: Path, run: smi.Runner = smi.run_command, timeout_s: float = 10.0
) -> str | None:
    """``systemctl is-active nvidia-fabricmanager`` as "service active" / "service inactive" /
    "service failed" / ...; None when the unit is not installed or systemctl cannot answer."""
    if not fabric_unit_installed(root):
        return None
    answer = smi.ask([("systemctl", "is-active", "nvidia-fabricmanager")], run, timeout_s)
    if answer is None or answer.proc is None:
        return None
    word = (answer.proc.stdout or "").strip().splitlines()
    return f"service {word[0].strip()}" if word and word[0].strip() else None
