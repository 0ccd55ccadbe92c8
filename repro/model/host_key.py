"""The matrix row key of a host (:func:`host_key`): "GPU model(s) · driver · OS".

Ground floor: stdlib and :mod:`repro.model.fingerprint` only.
"""

from __future__ import annotations

from repro.model.fingerprint import Fingerprint, Gpu

#: The GPU part of the host key when an NVIDIA driver is known (/proc/driver/nvidia/version) but
#: NVML or nvidia-smi failed (an unreadable ``nvml`` / ``nvidia-smi`` entry) and none lists a GPU:
#: a broken GPU host ("Driver/library version mismatch"
#: after a driver upgrade without a reboot), never a "CPU only" row.
UNLISTED_NVIDIA = "NVIDIA GPU (not listed)"


def _gpu_label(gpu: Gpu) -> str:
    """A GPU's name; AMD as "AMD gfx90a" whatever the source."""
    if gpu.vendor == "amd" and gpu.gfx_target:
        return f"AMD {gpu.gfx_target}"
    return gpu.name or f"{gpu.vendor or 'unknown'} GPU"


def _count_labels(labels: list[str]) -> str:
    """["A", "A", "B"] -> "A ×2 + B" (first-seen order)."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return " + ".join(label if n == 1 else f"{label} ×{n}" for label, n in counts.items())


def host_key(fp: Fingerprint) -> str:
    """The matrix row key: "GPU model(s) · driver · OS", plus " · WSL2" on WSL2.

    e.g. "NVIDIA H100 80GB HBM3 ×2 · driver 570.86.15 · Ubuntu 22.04.4 LTS",
    "AMD gfx90a · ROCm 6.4.1 · Ubuntu 24.04 LTS", "CPU only · Debian GNU/Linux 12 (bookworm)",
    "NVIDIA GPU (not listed) · driver 570.86.15 · ..." (:data:`UNLISTED_NVIDIA`). A driver is
    named only for a vendor whose GPU is present. Deterministic; never raises (missing pieces
    are left out).
    """
    gpus = fp.visible_gpus
    vendors = {gpu.vendor for gpu in gpus}
    label = _count_labels([_gpu_label(gpu) for gpu in gpus])
    failed = {u.what for u in fp.unreadable} & {"nvml", "nvidia-smi"}
    if not label and fp.driver.nvidia and failed:  # a driver is loaded, NVML/nvidia-smi fail
        label, vendors = UNLISTED_NVIDIA, {"nvidia"}
    parts = [label or "CPU only"]
    if "nvidia" in vendors and fp.driver.nvidia:
        parts.append(f"driver {fp.driver.nvidia}")
    if "amd" in vendors and fp.driver.rocm:
        parts.append(f"ROCm {fp.driver.rocm}")
    elif "amd" in vendors and fp.driver.amdgpu:
        parts.append(f"amdgpu {fp.driver.amdgpu}")
    parts.append(fp.host.os or "unknown OS")
    if fp.host.wsl2:
        parts.append("WSL2")
    return " · ".join(parts)
