"""The one NVIDIA reader: GPUs and driver version from NVML, then nvidia-smi, then /proc.

Order and why: NVML (``pynvml`` from nvidia-ml-py, in process, creates no CUDA context) gives
everything, including the CUDA driver API version; ``nvidia-smi`` (the same NVML underneath,
but present where the Python binding is not: containers with the ``utility`` capability, WSL2's
``/usr/lib/wsl/lib``) gives names, memory and the driver; ``/proc/driver/nvidia/version`` gives
the kernel module's version only (native Linux; absent on WSL2). A later source is asked only
for what the earlier ones could not say. Each source that exists but fails is recorded as an
``unreadable`` entry (``nvml``, ``nvml.device.0.name``, ``nvidia-smi``, ``/proc/...``); a source
that is simply absent (no nvidia-smi on PATH) is not. Nothing here raises for what it finds.

The driver version is recognised by one regex (:data:`DRIVER_VERSION`) in one function
(:func:`driver_version`), whatever the source. Never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from repro.host import files, nvidia_modes, smi
from repro.host.files import Unreadable
from repro.model import Gpu

#: Where Windows puts the CUDA user-space libraries and nvidia-smi inside WSL2.
WSL_LIB = "/usr/lib/wsl/lib"
PROC_VERSION = "proc/driver/nvidia/version"
#: How the ``nvml`` unreadable entry begins when the Python binding is missing (the doctor's
#: cue to say "pip install nvidia-ml-py" rather than "the driver is broken").
PYNVML_MISSING = "pynvml not installed"

SMI_QUERY = ("--query-gpu=index,name,driver_version,memory.total", "--format=csv,noheader")
#: nvidia-smi exit statuses that still mean "the GPUs answered": 14 is "infoROM is corrupted",
#: accepted by CI that must not stop on it (pytorch/pytorch PR #87464, NVIDIA/gpu-operator#285).
SMI_ACCEPTED = (0, 14)
#: nvidia-smi(1), RETURN VALUE.
SMI_EXIT = {
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
    # NVML_ERROR_LIB_RM_VERSION_MISMATCH (nvml.h), which nvidia-smi returns as its status after a
    # driver upgrade without a reboot: "Failed to initialize NVML: Driver/library version
    # mismatch" (anderskm/gputil#55, mozilla/translations#1167)
    18: "the NVML library and the kernel module differ (driver upgraded without a reboot)",
    255: "other error or internal driver error",
}

#: An NVIDIA driver version: "570.86.15", "581.57", "535.183.01" (NVML's string, nvidia-smi's
#: ``driver_version`` column, or the NVRM line of /proc/driver/nvidia/version, whose first
#: dotted number it is: "... Kernel Module for x86_64  570.86.15  Release Build ...").
DRIVER_VERSION = re.compile(r"(?<![\w.])\d+\.\d+(?:\.\d+)?(?![\w.])")


def driver_version(text: str | bytes | None) -> str | None:
    """The first NVIDIA driver version in ``text`` (see :data:`DRIVER_VERSION`), or None."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    match = DRIVER_VERSION.search(text or "")
    return match.group(0) if match else None


def cuda_api(version: int) -> str:
    """NVML/CUDA driver API integer to "major.minor": 12080 -> "12.8", 13000 -> "13.0"."""
    return f"{version // 1000}.{version % 1000 // 10}"


@dataclass(frozen=True)
class Reading:
    """What the NVIDIA sources said: GPUs (in index order), the driver version, the CUDA driver
    API version ("12.8", NVML only)."""

    gpus: tuple[Gpu, ...] = ()
    driver: str | None = None
    cuda_driver_api: str | None = None


# ---------------------------------------------------------------------------------------------
# NVML


def _decoded(value: str | bytes) -> str:
    """pynvml returns bytes in old releases and str in new ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_call(unreadable: Unreadable, what: str, call: Callable, *args: Any) -> Any:
    """``call(*args)``, or None with ``what`` recorded as unreadable."""
    try:
        return call(*args)
    except Exception as exc:  # NVMLError and friends: partial NVML (WSL2) is data
        unreadable.append({"what": what, "why": files.why(exc)})
        return None


def _nvml_device(nvml: ModuleType, index: int, unreadable: Unreadable) -> Gpu | None:
    what = f"nvml.device.{index}"
    handle = _nvml_call(unreadable, what, nvml.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        return None
    name = _nvml_call(unreadable, what + ".name", nvml.nvmlDeviceGetName, handle)
    uuid = _nvml_call(unreadable, what + ".uuid", nvml.nvmlDeviceGetUUID, handle)
    memory = _nvml_call(unreadable, what + ".memory", nvml.nvmlDeviceGetMemoryInfo, handle)
    capability = _nvml_call(
        unreadable, what + ".compute_capability", nvml.nvmlDeviceGetCudaComputeCapability, handle
    )
    return Gpu(
        index=index,
        vendor="nvidia",
        name=_decoded(name) if name is not None else None,
        uuid=_decoded(uuid) if uuid is not None else None,
        memory_bytes=int(memory.total) if memory is not None else None,
        compute_capability=f"{capability[0]}.{capability[1]}" if capability else None,
        source="nvml",
        **nvidia_modes.read_modes(nvml, handle, what, unreadable),
    )


def load_nvml(unreadable: Unreadable) -> ModuleType | None:
    """``import pynvml``; None (recorded as unreadable ``nvml``) when it is not installed."""
    try:
        import pynvml
    except ImportError as exc:
        unreadable.append(
            {
                "what": "nvml",
                "why": f"{PYNVML_MISSING} ({files.why(exc)}); pip install nvidia-ml-py",
            }
        )
        return None
    return pynvml


def read_nvml(nvml: ModuleType | None, unreadable: Unreadable) -> Reading:
    """GPUs and driver versions through NVML; ``nvml`` None imports pynvml. NVML is always shut
    down again; every call that fails is recorded (``nvml``, ``nvml.driver_version``, ...)."""
    nvml = nvml or load_nvml(unreadable)
    if nvml is None:
        return Reading()
    try:
        nvml.nvmlInit()
    except Exception as exc:  # library missing, driver not loaded, no permission
        unreadable.append({"what": "nvml", "why": files.why(exc)})
        return Reading()
    try:
        version = _nvml_call(unreadable, "nvml.driver_version", nvml.nvmlSystemGetDriverVersion)
        api = _nvml_call(
            unreadable, "nvml.cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion
        )
        count = _nvml_call(unreadable, "nvml.device_count", nvml.nvmlDeviceGetCount) or 0
        gpus = tuple(gpu for i in range(count) if (gpu := _nvml_device(nvml, i, unreadable)))
    finally:
        _nvml_call(unreadable, "nvml.shutdown", nvml.nvmlShutdown)
    return Reading(gpus, driver_version(version), cuda_api(int(api)) if api else None)


# ---------------------------------------------------------------------------------------------
# nvidia-smi


def smi_candidates(root: Path) -> list[tuple[str, ...]]:
    """The nvidia-smi commands to try: ``PATH`` first, then WSL2's copy under ``root``."""
    candidates = [("nvidia-smi", *SMI_QUERY)]
    wsl_smi = root / WSL_LIB.lstrip("/") / "nvidia-smi"
    if wsl_smi.exists():
        candidates.append((str(wsl_smi), *SMI_QUERY))
    return candidates


def _smi_memory(text: str) -> int | None:
    """``81559 MiB`` -> bytes; None for ``[N/A]``."""
    number, _, unit = text.strip().partition(" ")
    return int(number) * 2**20 if number.isdigit() and unit == "MiB" else None


def smi_gpus(stdout: str) -> tuple[Gpu, ...]:
    """GPUs from the CSV rows ``index, name, driver_version[, memory.total]`` of
    :data:`SMI_QUERY` (warning lines such as ``WARNING: infoROM is corrupted`` are skipped)."""
    gpus = []
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            gpus.append(
                Gpu(
                    index=int(parts[0]),
                    vendor="nvidia",
                    name=parts[1],
                    memory_bytes=_smi_memory(parts[3]) if len(parts) >= 4 else None,
                    source="nvidia-smi",
                )
            )
    return tuple(gpus)


def parse_smi(stdout: str, returncode: int = 0, stderr: str = "") -> smi.DriverQuery:
    """nvidia-smi's reply to :data:`SMI_QUERY` (``memory.total`` optional) as a DriverQuery.

    A status outside :data:`SMI_ACCEPTED` or no GPU row is a failed query whose ``error`` is
    nvidia-smi's own line (``NVIDIA-SMI has failed because it couldn't communicate with the
    NVIDIA driver...``, see :func:`repro.host.smi.failure_line`)."""
    gpus = smi_gpus(stdout)
    if returncode not in SMI_ACCEPTED or not gpus:
        if returncode in SMI_ACCEPTED and not smi.output_lines(stdout, stderr):
            why = f"exit status {returncode}, no GPU listed"
        else:
            why = smi.failure_line(stdout, stderr, returncode)
        return smi.DriverQuery("nvidia-smi", False, error=why)
    driver = next((v for line in stdout.splitlines() if (v := _row_driver(line))), None)
    return smi.DriverQuery("nvidia-smi", True, tuple(g.name or "?" for g in gpus), driver)


def _row_driver(line: str) -> str | None:
    parts = [p.strip() for p in line.split(",")]
    return driver_version(parts[2]) if len(parts) >= 3 and parts[0].isdigit() else None


def ask_smi(
    root: Path, run: smi.Runner = smi.run_command, timeout_s: float = smi.DEFAULT_TIMEOUT_S
) -> tuple[smi.Answer | None, smi.DriverQuery | None]:
    """Run nvidia-smi (:func:`smi_candidates`): ``(raw answer, parsed query)``; ``(None, None)``
    when no nvidia-smi exists. A tool that could not run or timed out has a failed query."""
    answer = smi.ask(smi_candidates(root), run, timeout_s)
    if answer is None:
        return None, None
    if answer.proc is None:
        return answer, smi.DriverQuery("nvidia-smi", False, error=answer.error)
    proc = answer.proc
    return answer, parse_smi(proc.stdout or "", proc.returncode, proc.stderr or "")


# ---------------------------------------------------------------------------------------------
# the chain


def read_proc_driver(root: Path, unreadable: Unreadable) -> str | None:
    """Kernel module version from /proc/driver/nvidia/version (Linux only; absent on WSL2)."""
    text = files.read_text(root, PROC_VERSION, unreadable) or ""
    return driver_version(text.splitlines()[0] if text else "")


def read(
    root: Path,
    unreadable: Unreadable,
    *,
    nvml: ModuleType | None = None,
    run: smi.Runner = smi.run_command,
    timeout_s: float = smi.DEFAULT_TIMEOUT_S,
) -> Reading:
    """NVML, then nvidia-smi (only if NVML listed no GPU or no driver), then /proc (only if
    the driver is still unknown). ``nvml`` None imports pynvml; ``run`` runs nvidia-smi for at
    most ``timeout_s`` seconds. Failures are appended to ``unreadable``; never raises."""
    reading = read_nvml(nvml, unreadable)
    gpus, driver = reading.gpus, reading.driver
    if not gpus or not driver:
        answer, query = ask_smi(root, run, timeout_s)
        if query is not None and not query.ok:
            unreadable.append({"what": "nvidia-smi", "why": str(query.error)})
        elif query is not None and answer is not None and answer.proc is not None:
            gpus = gpus or smi_gpus(answer.proc.stdout or "")
            driver = driver or query.driver
    driver = driver or read_proc_driver(root, unreadable)
    return Reading(gpus, driver, reading.cuda_driver_api)


def query(
    root: Path,
    *,
    nvml: ModuleType | None = None,
    run: smi.Runner = smi.run_command,
    timeout_s: float = smi.DEFAULT_TIMEOUT_S,
) -> smi.DriverQuery:
    """ "Which NVIDIA GPUs does the driver list?" through :func:`read`'s chain, as a DriverQuery:
    ok with the GPU names and driver, else the failure of nvidia-smi (the line users know) or
    of NVML. Never raises."""
    unreadable: Unreadable = []
    reading = read(root, unreadable, nvml=nvml, run=run, timeout_s=timeout_s)
    if reading.gpus:
        names = tuple(g.name or "?" for g in reading.gpus)
        return smi.DriverQuery(reading.gpus[0].source or "nvml", True, names, reading.driver)
    by_source = {u["what"].split(".")[0]: u["why"] for u in reversed(unreadable)}
    for tool in ("nvidia-smi", "nvml"):
        if tool in by_source:
            return smi.DriverQuery(tool, False, error=by_source[tool])
    return smi.DriverQuery(
        "nvml", False, error="neither NVML (pynvml) nor nvidia-smi lists an NVIDIA GPU"
    )
