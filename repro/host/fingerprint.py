"""Fingerprint the machine a run happens on: host, GPUs, drivers, torch build and devices.

The fingerprint is the row identity of the matrix (``host_key``) and the ``host.*``/``runtime.*``
testsuite properties of every JUnit file (``to_properties``); ``repro env`` prints it
(``format_text``). It covers torch's ``collect_env.py`` and adds what that lacks: the CUDA driver
API version, WSL2, the container runtime, compute capability / gfx target next to the arch list.

This module never imports torch and never initialises CUDA or ROCm in the calling process: torch
facts come from ``python -m repro.host.torch_probe`` run as a child process. NVIDIA GPUs are read
through NVML (which creates no CUDA context), AMD GPUs from the KFD topology in sysfs. Every file
read goes through ``root`` so tests can point it at a captured tree. Anything that exists but
cannot be read is listed in ``unreadable`` with the reason; nothing missing makes ``collect``
raise.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from repro import proctree
from repro.config import runtime_tag_of

SCHEMA = 1
PROBE_MODULE = "repro.host.torch_probe"

#: Directory that contains the ``repro`` package; the probe child imports it from here.
_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent)

_WSL_ENV = ("WSL_DISTRO_NAME", "WSL_INTEROP")
_KFD_NODES = "sys/class/kfd/kfd/topology/nodes"

Unreadable = list[dict[str, str]]


# ---------------------------------------------------------------------------------------------
# small readers


def _why(exc: BaseException) -> str:
    """One line saying why something failed: the exception's message, else its type name."""
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def _read(root: Path, rel: str, unreadable: Unreadable) -> str | None:
    """Text of ``root/rel``; None if absent. Present but unreadable is recorded, then None."""
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        unreadable.append({"what": "/" + rel, "why": _why(exc)})
        return None


def _key_values(text: str, sep: str | None = None) -> dict[str, str]:
    """Parse ``key<sep>value`` lines (``sep=None``: first whitespace) into a dict, first wins."""
    result: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(sep) if sep else line.strip().partition(" ")
        key = key.strip()
        if key and key not in result:
            result[key] = value.strip()
    return result


# ---------------------------------------------------------------------------------------------
# host


def _os_name(root: Path, unreadable: Unreadable) -> str | None:
    """PRETTY_NAME from etc/os-release (or usr/lib/os-release), quotes removed."""
    for rel in ("etc/os-release", "usr/lib/os-release"):
        text = _read(root, rel, unreadable)
        if text is not None:
            value = _key_values(text, "=").get("PRETTY_NAME")
            return value.strip("\"'") if value else None
    return None


def _cpu_model(root: Path, unreadable: Unreadable) -> str | None:
    """The first ``model name`` in proc/cpuinfo (x86); None where the kernel gives none (Arm)."""
    text = _read(root, "proc/cpuinfo", unreadable)
    if text is None:
        return None
    return _key_values(text, ":").get("model name") or None


def _memory_bytes(root: Path, unreadable: Unreadable) -> int | None:
    """MemTotal from proc/meminfo, in bytes."""
    text = _read(root, "proc/meminfo", unreadable)
    if text is None:
        return None
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _glibc() -> str | None:
    """glibc version of this process ("2.36"), None on musl or non-Linux."""
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        return None
    if not value or not value.startswith("glibc "):
        return None
    return value.split()[1]


def _container(root: Path, environ: Mapping[str, str], unreadable: Unreadable) -> str | None:
    """The container runtime/orchestrator this process runs under, or None on a plain host."""
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if (root / ".dockerenv").exists():
        return "docker"
    if (root / "run/.containerenv").exists():
        return "podman"
    if environ.get("container"):
        return environ["container"]
    cgroup = _read(root, "proc/1/cgroup", unreadable) or ""
    for marker, name in (
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("containerd", "containerd"),
    ):
        if marker in cgroup:
            return name
    return None


def _wsl_evidence(root: Path, environ: Mapping[str, str], unreadable: Unreadable) -> list[str]:
    """Why this looks like WSL2 (empty list: it does not)."""
    evidence = []
    version = _read(root, "proc/version", unreadable) or ""
    if "microsoft" in version.lower() or "WSL" in version:
        evidence.append("/proc/version: " + version.strip().split(" (")[0])
    for rel in ("dev/dxg", "usr/lib/wsl/lib"):
        if (root / rel).exists():
            evidence.append(f"/{rel} exists")
    evidence.extend(f"${name}={environ[name]}" for name in _WSL_ENV if environ.get(name))
    return evidence


def _host(root: Path, environ: Mapping[str, str], unreadable: Unreadable) -> dict[str, Any]:
    """The ``host`` section without the interpreter fields (those come from the probe)."""
    uname = platform.uname()
    evidence = _wsl_evidence(root, environ, unreadable)
    return {
        "hostname": socket.gethostname(),
        "os": _os_name(root, unreadable),
        "kernel": uname.release,
        "arch": uname.machine,
        "glibc": _glibc(),
        "python": None,
        "python_executable": None,
        "cpu": _cpu_model(root, unreadable),
        "cpu_count": os.cpu_count() or 0,
        "memory_bytes": _memory_bytes(root, unreadable),
        "container": _container(root, environ, unreadable),
        "wsl2": bool(evidence),
        "wsl_evidence": evidence,
    }


# ---------------------------------------------------------------------------------------------
# NVIDIA (NVML, in process: no CUDA context)


def _text(value: str | bytes) -> str:
    """pynvml returns bytes in old releases and str in new ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _cuda_api(version: int) -> str:
    """NVML/CUDA driver API integer to "major.minor": 12080 -> "12.8", 13000 -> "13.0"."""
    return f"{version // 1000}.{version % 1000 // 10}"


def _nvml_call(unreadable: Unreadable, what: str, call, *args):
    """``call(*args)``, or None with ``what`` recorded as unreadable."""
    try:
        return call(*args)
    except Exception as exc:  # NVMLError and friends: partial NVML (WSL2) is data
        unreadable.append({"what": what, "why": _why(exc)})
        return None


def _nvml_device(nvml: ModuleType, index: int, unreadable: Unreadable) -> dict[str, Any] | None:
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
    return {
        "index": index,
        "vendor": "nvidia",
        "name": _text(name) if name is not None else None,
        "uuid": _text(uuid) if uuid is not None else None,
        "memory_bytes": int(memory.total) if memory is not None else None,
        "compute_capability": f"{capability[0]}.{capability[1]}" if capability else None,
        "gfx_target": None,
        "source": "nvml",
    }


def _load_nvml(unreadable: Unreadable) -> ModuleType | None:
    try:
        import pynvml
    except ImportError as exc:
        unreadable.append(
            {"what": "nvml", "why": f"pynvml not installed ({_why(exc)}); pip install nvidia-ml-py"}
        )
        return None
    return pynvml


def _nvidia(
    nvml: ModuleType | None, unreadable: Unreadable
) -> tuple[list[dict], dict[str, str | None]]:
    """NVIDIA GPUs and driver versions through NVML; ``nvml`` None means import pynvml."""
    driver: dict[str, str | None] = {"nvidia": None, "cuda_driver_api": None}
    nvml = nvml or _load_nvml(unreadable)
    if nvml is None:
        return [], driver
    try:
        nvml.nvmlInit()
    except Exception as exc:  # library missing, driver not loaded, no permission
        unreadable.append({"what": "nvml", "why": _why(exc)})
        return [], driver
    try:
        version = _nvml_call(unreadable, "nvml.driver_version", nvml.nvmlSystemGetDriverVersion)
        driver["nvidia"] = _text(version) if version is not None else None
        api = _nvml_call(
            unreadable, "nvml.cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion
        )
        driver["cuda_driver_api"] = _cuda_api(int(api)) if api else None
        count = _nvml_call(unreadable, "nvml.device_count", nvml.nvmlDeviceGetCount) or 0
        gpus = [gpu for i in range(count) if (gpu := _nvml_device(nvml, i, unreadable))]
    finally:
        _nvml_call(unreadable, "nvml.shutdown", nvml.nvmlShutdown)
    return gpus, driver


def _nvidia_proc_driver(root: Path, unreadable: Unreadable) -> str | None:
    """Kernel module version from proc/driver/nvidia/version (Linux only; absent on WSL2)."""
    text = _read(root, "proc/driver/nvidia/version", unreadable) or ""
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


# ---------------------------------------------------------------------------------------------
# AMD (KFD topology in sysfs)


def _gfx_name(version: int) -> str:
    """KFD ``gfx_target_version`` to the LLVM target: 90010 -> gfx90a, 110000 -> gfx1100, 90402 -> gfx942."""
    major, minor, step = version // 10000, version // 100 % 100, version % 100
    return f"gfx{major}{minor:x}{step:x}"


def _kfd_memory(root: Path, node_rel: str, unreadable: Unreadable) -> int | None:
    """Sum of ``size_in_bytes`` over a KFD node's memory banks (VRAM; system RAM on an APU)."""
    total = 0
    for bank in sorted((root / node_rel / "mem_banks").glob("*/properties")):
        text = _read(root, str(bank.relative_to(root)), unreadable)
        size = _key_values(text or "").get("size_in_bytes", "")
        total += int(size) if size.isdigit() else 0
    return total or None


def _amd_gpus(root: Path, unreadable: Unreadable) -> list[dict[str, Any]]:
    """AMD GPUs from KFD topology nodes, skipping CPU nodes (gfx_target_version 0)."""
    nodes_dir = root / _KFD_NODES
    if not nodes_dir.is_dir():
        return []
    nodes = sorted((p for p in nodes_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    gpus = []
    for node in nodes:
        node_rel = f"{_KFD_NODES}/{node.name}"
        text = _read(root, node_rel + "/properties", unreadable)
        version = _key_values(text or "").get("gfx_target_version", "0")
        if not version.isdigit() or int(version) == 0:
            continue
        target = _gfx_name(int(version))
        gpus.append(
            {
                "index": len(gpus),
                "vendor": "amd",
                "name": f"AMD {target}",
                "uuid": None,
                "memory_bytes": _kfd_memory(root, node_rel, unreadable),
                "compute_capability": None,
                "gfx_target": target,
                "source": "sysfs",
            }
        )
    return gpus


def _first_line(root: Path, rel: str, unreadable: Unreadable) -> str | None:
    text = _read(root, rel, unreadable)
    return text.strip().splitlines()[0].strip() if text and text.strip() else None


def _rocm_version(root: Path, unreadable: Unreadable) -> str | None:
    """opt/rocm/.info/version ("6.4.1-83") without the build suffix: "6.4.1"."""
    line = _first_line(root, "opt/rocm/.info/version", unreadable)
    return line.split("-")[0] if line else None


# ---------------------------------------------------------------------------------------------
# torch (child process)


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _last_json_object(stdout: str) -> dict | None:
    """The last stdout line that parses as a JSON object (libraries may print before it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _run_probe(python: str, timeout_s: float) -> tuple[dict | None, str | None]:
    """Run the probe under ``python``: (its JSON, None) or (None, why it gave none)."""
    if os.sep in python:  # a relative path must not be resolved against the child's cwd
        python = os.path.abspath(python)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    try:
        done = proctree.run_bounded(
            [python, "-m", PROBE_MODULE], timeout_s=timeout_s, env=env, cwd=_PACKAGE_PARENT
        )
    except OSError as exc:
        return None, f"cannot run {python}: {exc.strerror or _why(exc)}"
    except subprocess.TimeoutExpired:
        return None, f"probe {python} -m {PROBE_MODULE} timed out after {timeout_s:g} s"
    stdout, stderr = done.stdout, done.stderr
    result = _last_json_object(stdout)
    if result is None:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return (
            None,
            f"probe {python} -m {PROBE_MODULE} failed ({_exit_reason(done.returncode)}): {last}",
        )
    return result, None


def _runtime(probe: Mapping[str, Any]) -> dict[str, Any]:
    """The ``runtime`` section from the probe's JSON (an empty mapping gives the empty section)."""
    return {
        "torch": probe.get("torch"),
        "cuda": probe.get("cuda"),
        "hip": probe.get("hip"),
        "cudnn": probe.get("cudnn"),
        "nccl": probe.get("nccl"),
        "arch_list": list(probe.get("arch_list") or []),
        "accelerator": probe.get("accelerator"),
        "accelerator_available": bool(probe.get("accelerator_available")),
        "accelerator_count": int(probe.get("accelerator_count") or 0),
        "devices": list(probe.get("devices") or []),
        "start_methods": list(probe.get("start_methods") or []),
        "default_start_method": probe.get("default_start_method"),
    }


def _gpus_from_runtime(runtime: Mapping[str, Any]) -> list[dict[str, Any]]:
    """GPUs as torch saw them: the fallback where neither NVML nor sysfs listed any."""
    vendor = {"cuda": "nvidia", "rocm": "amd"}.get(runtime.get("accelerator") or "")
    if vendor is None:
        return []
    gpus = []
    for device in runtime.get("devices") or []:
        gcn = device.get("gcn_arch")
        gpus.append(
            {
                "index": device.get("index"),
                "vendor": vendor,
                "name": device.get("name"),
                "uuid": None,
                "memory_bytes": device.get("total_memory_bytes"),
                "compute_capability": device.get("capability") if vendor == "nvidia" else None,
                "gfx_target": gcn.split(":")[0] if gcn else None,
                "source": "torch",
            }
        )
    return gpus


# ---------------------------------------------------------------------------------------------
# public API


def _collect(
    python: str,
    timeout_s: float,
    root: str | os.PathLike,
    environ: Mapping[str, str],
    nvml: ModuleType | None,
) -> dict[str, Any]:
    """``collect`` with its outside world injectable (environment, NVML module) for tests."""
    root_path = Path(root)
    unreadable: Unreadable = []
    host = _host(root_path, environ, unreadable)

    probe, probe_error = _run_probe(python, timeout_s)
    if probe_error:
        unreadable.append({"what": "torch", "why": probe_error})
    probe = probe or {}
    if probe.get("torch_error"):
        unreadable.append({"what": "torch", "why": probe["torch_error"]})
    unreadable.extend(
        {"what": str(e.get("what")), "why": str(e.get("why"))} for e in probe.get("errors") or []
    )
    same_interpreter = os.path.realpath(python) == os.path.realpath(sys.executable)
    host["python"] = probe.get("python") or (
        platform.python_version() if same_interpreter else None
    )
    host["python_executable"] = probe.get("python_executable") or python
    runtime = _runtime(probe)

    nvidia_gpus, driver = _nvidia(nvml, unreadable)
    driver["nvidia"] = driver["nvidia"] or _nvidia_proc_driver(root_path, unreadable)
    driver["rocm"] = _rocm_version(root_path, unreadable)
    driver["amdgpu"] = _first_line(root_path, "sys/module/amdgpu/version", unreadable)
    gpus = nvidia_gpus + _amd_gpus(root_path, unreadable)
    if not gpus:
        gpus = _gpus_from_runtime(runtime)

    return {
        "schema": SCHEMA,
        "collected_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": host,
        "gpus": gpus,
        "driver": driver,
        "runtime": runtime,
        "unreadable": unreadable,
    }


def collect(python: str = sys.executable, timeout_s: float = 120.0, root: str = "/") -> dict:
    """Fingerprint this machine and the torch build of ``python``; JSON-serialisable.

    Keys: ``schema`` (1), ``collected_at`` (ISO-8601 UTC), ``host`` (OS, kernel, CPU,
    ``memory_bytes`` in bytes, container, WSL2 and its evidence), ``gpus`` (one dict per GPU,
    ``memory_bytes`` in bytes, ``source`` nvml/sysfs/torch), ``driver`` (NVIDIA driver, CUDA driver
    API "12.8", ROCm, amdgpu), ``runtime`` (torch build, arch list, devices with
    ``total_memory_bytes``, multiprocessing start methods) and ``unreadable`` (``{"what", "why"}``
    for everything that exists but could not be read: NVML, the probe, a file).

    torch is never imported here: ``python -m repro.host.torch_probe`` runs as a child for at most
    ``timeout_s`` seconds. Files are read under ``root`` ("/" normally; a captured tree in tests).
    Never raises for a missing or broken piece (no torch, no NVML, a nonexistent ``python``);
    only programming errors propagate.
    """
    return _collect(python, timeout_s, root, os.environ, None)


def _gpu_labels(fp: dict) -> list[str]:
    """One label per GPU in index order: its name; AMD as "AMD gfx90a" whatever the source."""
    gpus = fp.get("gpus") or _gpus_from_runtime(fp.get("runtime") or {})
    labels = []
    for gpu in gpus:
        if gpu.get("vendor") == "amd" and gpu.get("gfx_target"):
            labels.append(f"AMD {gpu['gfx_target']}")
        else:
            labels.append(gpu.get("name") or f"{gpu.get('vendor') or 'unknown'} GPU")
    return labels


def _count_labels(labels: list[str]) -> str:
    """["A", "A", "B"] -> "A ×2 + B" (first-seen order)."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return " + ".join(label if n == 1 else f"{label} ×{n}" for label, n in counts.items())


def host_key(fp: dict) -> str:
    """The matrix row key: "GPU model(s) · driver · OS", plus " · WSL2" on WSL2.

    e.g. "NVIDIA H100 80GB HBM3 ×2 · driver 570.86.15 · Ubuntu 22.04.4 LTS",
    "AMD gfx90a · ROCm 6.4.1 · Ubuntu 24.04 LTS", "CPU only · Debian GNU/Linux 12 (bookworm)".
    A driver is named only for a vendor whose GPU is present. Deterministic; never raises on a
    fingerprint from ``collect`` (missing pieces are left out).
    """
    host = fp.get("host") or {}
    driver = fp.get("driver") or {}
    gpus = fp.get("gpus") or _gpus_from_runtime(fp.get("runtime") or {})
    vendors = {gpu.get("vendor") for gpu in gpus}
    parts = [_count_labels(_gpu_labels(fp)) or "CPU only"]
    if "nvidia" in vendors and driver.get("nvidia"):
        parts.append(f"driver {driver['nvidia']}")
    if "amd" in vendors and driver.get("rocm"):
        parts.append(f"ROCm {driver['rocm']}")
    elif "amd" in vendors and driver.get("amdgpu"):
        parts.append(f"amdgpu {driver['amdgpu']}")
    parts.append(host.get("os") or "unknown OS")
    if host.get("wsl2"):
        parts.append("WSL2")
    return " · ".join(parts)


def _prop(value: Any) -> str | None:
    """Property text: bools as "true"/"false", lists comma-joined, None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def to_properties(fp: dict) -> dict[str, str]:
    """Flat ``{name: text}`` for JUnit testsuite properties; keys whose value is None are left out.

    ``host.{hostname,os,kernel,arch,glibc,python,cpu,cpu_count,memory_bytes,container,wsl2,key,
    gpu_count}``, ``host.gpu.<index>.{name,vendor,compute_capability,gfx_target,memory_bytes}``
    (bytes), ``host.driver.{nvidia,cuda_driver_api,rocm,amdgpu}``, ``runtime.{torch,cuda,hip,cudnn,
    nccl,arch_list,accelerator,accelerator_available,accelerator_count,default_start_method}``
    (``arch_list`` comma-joined, booleans "true"/"false").
    """
    host = fp.get("host") or {}
    driver = fp.get("driver") or {}
    runtime = fp.get("runtime") or {}
    gpus = fp.get("gpus") or []
    props: dict[str, Any] = {
        f"host.{name}": host.get(name)
        for name in (
            "hostname",
            "os",
            "kernel",
            "arch",
            "glibc",
            "python",
            "cpu",
            "cpu_count",
            "memory_bytes",
            "container",
            "wsl2",
        )
    }
    props["host.key"] = host_key(fp)
    props["host.gpu_count"] = len(gpus)
    for gpu in gpus:
        for name in ("name", "vendor", "compute_capability", "gfx_target", "memory_bytes"):
            props[f"host.gpu.{gpu.get('index')}.{name}"] = gpu.get(name)
    for name in ("nvidia", "cuda_driver_api", "rocm", "amdgpu"):
        props[f"host.driver.{name}"] = driver.get(name)
    for name in (
        "torch",
        "cuda",
        "hip",
        "cudnn",
        "nccl",
        "arch_list",
        "accelerator",
        "accelerator_available",
        "accelerator_count",
        "default_start_method",
    ):
        props[f"runtime.{name}"] = runtime.get(name)
    texts = {name: _prop(value) for name, value in props.items()}
    return {name: text for name, text in texts.items() if text is not None}


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def _or_dash(value: Any) -> str:
    return "-" if value is None or value == "" or value == [] else str(value)


def format_text(fp: dict) -> str:
    """A human-readable, multi-line report of ``fp`` for ``repro env`` (ends without a newline)."""
    host = fp.get("host") or {}
    driver = fp.get("driver") or {}
    runtime = fp.get("runtime") or {}
    wsl = "yes (" + "; ".join(host.get("wsl_evidence") or []) + ")" if host.get("wsl2") else "no"
    lines = [
        f"host key      {host_key(fp)}",
        f"hostname      {_or_dash(host.get('hostname'))}",
        f"os            {_or_dash(host.get('os'))}",
        f"kernel        {_or_dash(host.get('kernel'))} ({_or_dash(host.get('arch'))})",
        f"glibc         {_or_dash(host.get('glibc'))}",
        f"python        {_or_dash(host.get('python'))} ({_or_dash(host.get('python_executable'))})",
        f"cpu           {_or_dash(host.get('cpu'))} × {_or_dash(host.get('cpu_count'))}",
        f"memory        {_gib(host.get('memory_bytes'))}",
        f"container     {host.get('container') or 'none'}",
        f"wsl2          {wsl}",
        "gpus",
    ]
    for gpu in fp.get("gpus") or []:
        arch = (
            f"sm {gpu['compute_capability']}"
            if gpu.get("compute_capability")
            else gpu.get("gfx_target")
        )
        lines.append(
            f"  [{gpu.get('index')}] {_or_dash(gpu.get('name'))}  {_or_dash(arch)}  "
            f"{_gib(gpu.get('memory_bytes'))}  ({gpu.get('source')})"
        )
    if not fp.get("gpus"):
        lines.append("  none found")
    lines += [
        f"driver        nvidia {_or_dash(driver.get('nvidia'))}, CUDA driver API "
        f"{_or_dash(driver.get('cuda_driver_api'))}, ROCm {_or_dash(driver.get('rocm'))}, "
        f"amdgpu {_or_dash(driver.get('amdgpu'))}",
        f"torch         {_or_dash(runtime.get('torch'))} [{runtime_tag_of(fp.get('runtime'))}]  cuda "
        f"{_or_dash(runtime.get('cuda'))}  hip {_or_dash(runtime.get('hip'))}  cudnn "
        f"{_or_dash(runtime.get('cudnn'))}  nccl {_or_dash(runtime.get('nccl'))}",
        f"arch list     {_or_dash(', '.join(runtime.get('arch_list') or []))}",
        f"accelerator   {_or_dash(runtime.get('accelerator'))}, available "
        f"{'yes' if runtime.get('accelerator_available') else 'no'}, "
        f"{runtime.get('accelerator_count') or 0} device(s)",
    ]
    for device in runtime.get("devices") or []:
        lines.append(
            f"  [{device.get('index')}] {_or_dash(device.get('name'))}  capability "
            f"{_or_dash(device.get('capability'))}  {_gib(device.get('total_memory_bytes'))}"
            + (f"  {device['gcn_arch']}" if device.get("gcn_arch") else "")
        )
    lines.append(
        f"start methods {_or_dash(', '.join(runtime.get('start_methods') or []))} "
        f"(default {_or_dash(runtime.get('default_start_method'))})"
    )
    if fp.get("unreadable"):
        lines.append("unreadable")
        lines += [f"  {item.get('what')}: {item.get('why')}" for item in fp["unreadable"]]
    return "\n".join(lines)
