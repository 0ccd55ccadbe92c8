"""Host facts a signature row may depend on, and the rows that do (issue 10, item 2).

The same first line names different causes on different hosts (field reports, family 7):
"Unexpected error from cudaGetDeviceCount()" and "all CUDA-capable devices are busy or
unavailable" are WSL2 GPU-paravirtualisation failures on a WSL2 host (microsoft/WSL#9938), but
Fabric Manager not running (Error 802), a driver/library mismatch (Error 803), forward
compatibility on unsupported hardware (Error 804) or an exclusive-process compute mode on a
native Linux host (F7-1..F7-4). A row's ``when`` says on which hosts it applies:

- ``None``: every host (most rows);
- ``"native"``: only when the host is known not to be WSL2 (:attr:`HostFacts.native`).

Rows that apply only on native hosts sit above the WSL2 row they pre-empt, so on a native host
they take the line first; on a WSL2 host, or with no host facts at all, they are inactive and
the classification is what it was before host facts existed. This module never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: ``when`` of a row that applies only on a host known not to be WSL2.
NATIVE = "native"
#: Every ``when`` a row may carry (None: any host).
CONDITIONS = (NATIVE,)


@dataclass(frozen=True)
class HostFacts:
    """What the classifier may know about the host a log came from; ``None`` = unknown.

    Attributes:
        wsl2: the host is WSL2 (fingerprint ``host.wsl2``).
        container: the log came from inside a container (fingerprint ``host.container``, the
            runtime's name there, e.g. ``"docker"``).
        compute_mode: NVML compute mode of the GPUs as ``nvidia-smi -q -d COMPUTE`` words:
            ``"Default"``, ``"Exclusive_Process"``, ``"Prohibited"``; the first non-default mode
            when GPUs differ.
        mig: MIG mode is enabled on some GPU.
    """

    wsl2: bool | None = None
    container: bool | None = None
    compute_mode: str | None = None
    mig: bool | None = None

    @property
    def native(self) -> bool:
        """Known to be a native (non-WSL2) host."""
        return self.wsl2 is False

    def applies(self, when: str | None) -> bool:
        """Whether a row with condition ``when`` applies on this host (see the module doc).
        Raises ValueError for a condition not in :data:`CONDITIONS`."""
        if when is None:
            return True
        if when == NATIVE:
            return self.native
        raise ValueError(f"unknown host condition {when!r} (expected one of {CONDITIONS})")

    @classmethod
    def from_fingerprint(cls, fp: Any) -> HostFacts:
        """Facts from a fingerprint: a ``repro.host.model.Fingerprint`` (what
        ``repro.host.fingerprint.collect()`` returns) or its JSON dict (``fingerprint.json``).

        Reads ``host.wsl2`` (bool), ``host.container`` (a runtime name or None: a fingerprint
        that has a ``host`` section and no container means "not in a container"), and per GPU
        ``gpus[*].compute_mode`` / ``gpus[*].mig_mode`` when the fingerprint carries them
        (``"Enabled"``/``"Disabled"`` or a bool). Missing keys stay ``None``; never raises on
        a malformed dict (a non-dict section counts as missing).
        """
        if hasattr(fp, "to_json"):  # typed Fingerprint; signatures stay free of repro.host imports
            fp = fp.to_json()
        fp = fp if isinstance(fp, Mapping) else {}
        host = fp.get("host")
        host = host if isinstance(host, Mapping) else {}
        wsl2 = host.get("wsl2")
        container = host.get("container") if host else None
        gpus = [g for g in fp.get("gpus") or () if isinstance(g, Mapping)]
        modes = [str(g["compute_mode"]) for g in gpus if g.get("compute_mode")]
        odd = [m for m in modes if m.replace(" ", "_").lower() != "default"]
        migs = [_flag(g.get("mig_mode", g.get("mig"))) for g in gpus]
        known_migs = [m for m in migs if m is not None]
        return cls(
            wsl2=wsl2 if isinstance(wsl2, bool) else None,
            container=(bool(container) if "container" in host else None),
            compute_mode=(odd or modes or [None])[0],
            mig=any(known_migs) if known_migs else None,
        )


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        return value.strip().lower() in ("enabled", "enable", "true", "1", "on")
    return None


_FABRIC_MANAGER = (
    "Error 802 (system not yet initialized): start nvidia-fabricmanager matching the driver "
    "version on HGX/NVSwitch hosts; Error 803 (unsupported display driver / cuda driver "
    "combination): reboot after a driver upgrade so the kernel module matches the user-space "
    "libraries (or drop a libcuda a container carries); Error 804 (forward compatibility on "
    "non supported HW): remove the CUDA forward-compat libraries on GPUs without forward-compat "
    "support."
)

#: Rows that depend on host facts: ``(name, kind, pattern, source, workaround, when)``, in the
#: table's format plus ``when``; repro.signatures.table places them above ``wsl_gpu_unavailable``.
HOST_ROWS: tuple[tuple[str, str, str, str, str, str | None], ...] = (
    (
        # Same line as the WSL2 row; on a native host the error number names the cause.
        "cuda_init_failed",
        "environment",
        r"Unexpected error from cudaGetDeviceCount\(\)|cudaErrorSystemNotReady"
        r"|Error 80[23]: system (?:not yet initialized|has unsupported display driver)",
        "F7-1 pytorch/pytorch#35710, aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop#33, "
        "microsoft/lisa#2823, nanoporetech/dorado#1214 (802); F7-2 vllm-project/vllm#15335 (803); "
        "F7-3 PKU-YuanGroup/Video-LLaVA#22, gpustack/gpustack#1254 (804)",
        _FABRIC_MANAGER,
        NATIVE,
    ),
    (
        "cuda_device_busy",
        "environment",
        r"all CUDA-capable devices are busy or unavailable|cudaErrorDevicesUnavailable",
        "F7-4; NVIDIA/DIGITS#2005 (GPU in E. Process mode); pytorch/pytorch#3871; "
        "tensorflow/tensorflow#526 (compute modes)",
        "Check `nvidia-smi -q -d COMPUTE`; set `sudo nvidia-smi -c DEFAULT` (or stop the process "
        "holding the GPU in exclusive-process mode).",
        NATIVE,
    ),
)
