"""Child-process probe: import torch, read its build and devices, print one JSON object.

Run as ``python -m repro.host.torch_probe`` by ``repro.host.fingerprint.collect`` (and inside
images by ``repro.containers``); :func:`last_json_object` reads its reply back. Only that reader
may be imported into the runner's process: :func:`probe` imports torch. Running as a child, it is
the one place outside scenario children allowed to import torch and initialise CUDA/ROCm,
because it is a throwaway process.

Output (one line on stdout, always, exit status 0 unless the interpreter itself breaks)::

    {"python": "3.11.7", "python_executable": "/usr/bin/python3",
     "start_methods": ["fork", "spawn", "forkserver"], "default_start_method": "fork",
     "torch": "2.8.0+cu128" | null, "torch_error": "No module named 'torch'" | null,
     "cuda": "12.8" | null, "hip": null, "cudnn": "91002" | null, "nccl": "2.27.3" | null,
     "arch_list": ["sm_80", ...], "accelerator": "cuda" | "rocm" | null,
     "accelerator_available": false, "accelerator_count": 0,
     "devices": [{"index": 0, "name": ..., "capability": "9.0", "total_memory_bytes": 85..., "gcn_arch": null}],
     "cuda_init_error": "UserWarning text or exception line when CUDA does not initialise" | null,
     "errors": [{"what": "torch.cuda", "why": "..."}]}

Kept compatible with old interpreters (no 3.10+ syntax at runtime): images may ship any Python.
"""

from __future__ import annotations

import json
import multiprocessing
import platform
import sys
import warnings


def _error(errors: list, what: str, exc: BaseException) -> None:
    errors.append({"what": what, "why": f"{type(exc).__name__}: {exc}".strip()})


def _interpreter() -> dict:
    try:
        default = multiprocessing.get_start_method()
    except Exception:  # report what we can
        default = None
    return {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "start_methods": list(multiprocessing.get_all_start_methods()),
        "default_start_method": default,
    }


def _nccl_version(torch, errors: list) -> str | None:
    try:
        version = torch.cuda.nccl.version()
    except Exception as exc:  # a build without NCCL/RCCL is data, not a crash
        _error(errors, "nccl", exc)
        return None
    if isinstance(version, tuple):
        return ".".join(str(part) for part in version)
    return str(version)


def _cudnn_version(torch, errors: list) -> str | None:
    try:
        version = torch.backends.cudnn.version()
    except Exception as exc:
        _error(errors, "cudnn", exc)
        return None
    return None if version is None else str(version)


def _available(torch, errors: list, said: list) -> bool:
    """``torch.cuda.is_available()``; its warnings (driver too old, CUDA initialization:
    ... Error 802, ...) are kept as errors and appended to ``said`` (CUDA's own words)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            available = bool(torch.cuda.is_available())
        except Exception as exc:
            _error(errors, "torch.cuda", exc)
            said.append(f"{type(exc).__name__}: {exc}".strip())
            available = False
    for warning in caught:
        text = str(warning.message).strip()
        errors.append({"what": "torch.cuda", "why": text})
        said.append(text)
    return available


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


#: How torch words a failing ``cudaGetDeviceCount()`` inside ``torch.cuda.is_available()``: a
#: warning "CUDA initialization: <error>" (c10/cuda/CUDAFunctions.cpp, ``device_count()``). No
#: driver and no device are silent there (count 0, no warning), so the warning means a driver is
#: installed and CUDA fails on it.
CUDA_INIT_WARNING = "CUDA initialization:"
#: The one such warning that is not an initialisation failure of the host but an old driver for
#: this build ("The NVIDIA driver on your system is too old"): signature ``driver_too_old``.
_DRIVER_TOO_OLD = "driver on your system is too old"


def _uncounted_error(said: list) -> str | None:
    """CUDA's error when torch counts no device because NVML fails as well: after a driver
    upgrade without a reboot NVML says "Failed to initialize NVML: Driver/library version
    mismatch" (pytorch/pytorch#45109; nvidia-smi exits 18), ``torch.cuda.device_count()`` falls
    back to ``cudaGetDeviceCount()``, which fails with Error 803, and torch only warns
    ("CUDA initialization: Unexpected error from cudaGetDeviceCount() ... Error 803: system has
    unsupported display driver / cuda driver combination", easydiffusion/easydiffusion#379)."""
    for text in said:
        line = _first_line(text)
        if line.startswith(CUDA_INIT_WARNING) and _DRIVER_TOO_OLD not in line:
            return line
    return None


def _init_error(torch, count: int, available: bool, said: list, errors: list) -> str | None:
    """CUDA's (HIP's) own words when the accelerator does not initialise; None when it works
    (or when there is no driver or device at all).

    NVML (which ``torch.cuda.device_count()`` asks first) counting ``count`` devices while
    ``cudaGetDeviceCount()`` fails is the signature of Fabric Manager not running (Error 802), a
    driver/library mismatch (803), forward compatibility on unsupported hardware (804), or every
    GPU held in exclusive-process mode (field reports F7-1..F7-4): a one-element tensor on the
    device makes CUDA create a context and say which. With no device counted, the error is
    ``is_available()``'s warning (:func:`_uncounted_error`)."""
    if count < 1:
        return None if available else _uncounted_error(said)
    try:
        torch.zeros(1, device="cuda")
    except Exception as exc:  # the error itself is the fact this probe exists to record
        _error(errors, "torch.cuda.init", exc)
        line = _first_line(str(exc))
        return f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    if available:
        return None
    return _first_line(said[0]) if said else "torch.cuda.is_available() is False"


def _devices(torch, count: int, is_rocm: bool, errors: list) -> list:
    devices = []
    for index in range(count):
        try:
            props = torch.cuda.get_device_properties(index)
        except Exception as exc:
            _error(errors, f"torch.cuda.device.{index}", exc)
            continue
        gcn_arch = getattr(props, "gcnArchName", None) if is_rocm else None
        devices.append(
            {
                "index": index,
                "name": props.name,
                "capability": f"{props.major}.{props.minor}",
                "total_memory_bytes": int(props.total_memory),
                "gcn_arch": gcn_arch or None,
            }
        )
    return devices


def _torch_facts(errors: list) -> dict:
    facts = {
        "torch": None,
        "torch_error": None,
        "cuda": None,
        "hip": None,
        "cudnn": None,
        "nccl": None,
        "arch_list": [],
        "accelerator": None,
        "accelerator_available": False,
        "accelerator_count": 0,
        "devices": [],
        "cuda_init_error": None,
    }
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install (OSError, ...)
        facts["torch_error"] = (
            str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
        )
        return facts

    facts["torch"] = str(torch.__version__)
    facts["cuda"] = getattr(torch.version, "cuda", None)
    facts["hip"] = getattr(torch.version, "hip", None)
    is_rocm = facts["hip"] is not None
    if facts["cuda"] is None and not is_rocm:
        return facts  # CPU build: nothing accelerator-related to read

    facts["accelerator"] = "rocm" if is_rocm else "cuda"
    facts["cudnn"] = _cudnn_version(torch, errors)
    facts["nccl"] = _nccl_version(torch, errors)
    said: list = []
    facts["accelerator_available"] = _available(torch, errors, said)
    try:
        facts["accelerator_count"] = int(torch.cuda.device_count())
        facts["arch_list"] = list(torch.cuda.get_arch_list())
    except Exception as exc:
        _error(errors, "torch.cuda", exc)
    facts["cuda_init_error"] = _init_error(
        torch, facts["accelerator_count"], facts["accelerator_available"], said, errors
    )
    if facts["accelerator_available"]:
        facts["devices"] = _devices(torch, facts["accelerator_count"], is_rocm, errors)
    return facts


def probe() -> dict:
    """Everything this interpreter and its torch report, as a JSON-serialisable dict."""
    errors: list = []
    result = _interpreter()
    result.update(_torch_facts(errors))
    result["errors"] = errors
    return result


def last_json_object(stdout: str) -> dict | None:
    """The last line of ``stdout`` that parses as a JSON object: the probe's reply, found past
    whatever libraries print before it (CUDA banners, warnings). None when there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def main() -> int:
    result = probe()
    sys.stdout.write("\n" + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
