"""Fingerprint the machine a run happens on: host, GPUs, drivers, torch build and devices.

The fingerprint is the row identity of the matrix (``host_key``) and the ``host.*``/``runtime.*``
testsuite properties of every JUnit file (``to_properties``); ``repro env`` prints it
(``format_text``). It covers torch's ``collect_env.py`` and adds what that lacks: the CUDA driver
API version, WSL2, the container runtime, compute capability / gfx target next to the arch list.

This module never imports torch and never initialises CUDA or ROCm in the calling process: torch
facts come from ``python -m repro.host.torch_probe`` run as a child process. NVIDIA GPUs and
driver come from :mod:`repro.host.nvidia` (NVML, nvidia-smi, /proc), AMD ones from
:mod:`repro.host.amd` (KFD topology, rocm-smi/amd-smi). Every file read goes through ``root`` so
tests can point it at a captured tree. Anything that exists but cannot be read is listed in
``unreadable`` with the reason; nothing missing makes ``collect`` raise. The result is a typed
:class:`repro.model.Fingerprint`; its ``to_json()`` is ``fingerprint.json``.
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
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from repro import proctree, properties
from repro.errors import ConfigError
from repro.host import amd, files, nvidia, nvidia_modes, selection, smi
from repro.host.files import Unreadable
from repro.host.torch_probe import last_json_object
from repro.model import (
    GPU_MODES,
    Driver,
    Fingerprint,
    Gpu,
    Machine,
    Runtime,
    UnreadableItem,
    host_key,
)

PROBE_MODULE = "repro.host.torch_probe"

#: Directory that contains the ``repro`` package; the probe child imports it from here.
# The folder holding the `repro` package (the checkout or site-packages): the probe child imports
# repro from there even when its interpreter has no repro installed.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])

_WSL_ENV = ("WSL_DISTRO_NAME", "WSL_INTEROP")


# ---------------------------------------------------------------------------------------------
# host


def _os_name(root: Path, unreadable: Unreadable) -> str | None:
    """PRETTY_NAME from etc/os-release (or usr/lib/os-release), quotes removed."""
    for rel in ("etc/os-release", "usr/lib/os-release"):
        text = files.read_text(root, rel, unreadable)
        if text is not None:
            value = files.key_values(text, "=").get("PRETTY_NAME")
            return value.strip("\"'") if value else None
    return None


def _cpu_model(root: Path, unreadable: Unreadable) -> str | None:
    """The first ``model name`` in proc/cpuinfo (x86); None where the kernel gives none (Arm)."""
    text = files.read_text(root, "proc/cpuinfo", unreadable)
    if text is None:
        return None
    return files.key_values(text, ":").get("model name") or None


def _memory_bytes(root: Path, unreadable: Unreadable) -> int | None:
    """MemTotal from proc/meminfo, in bytes."""
    text = files.read_text(root, "proc/meminfo", unreadable)
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
    cgroup = files.read_text(root, "proc/1/cgroup", unreadable) or ""
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
    version = files.read_text(root, "proc/version", unreadable) or ""
    if "microsoft" in version.lower() or "WSL" in version:
        evidence.append("/proc/version: " + version.strip().split(" (")[0])
    for rel in ("dev/dxg", "usr/lib/wsl/lib"):
        if (root / rel).exists():
            evidence.append(f"/{rel} exists")
    evidence.extend(f"${name}={environ[name]}" for name in _WSL_ENV if environ.get(name))
    return evidence


def _host(root: Path, environ: Mapping[str, str], unreadable: Unreadable) -> dict[str, Any]:
    """The ``host`` section's fields read here (the interpreter's come from the probe)."""
    uname = platform.uname()
    evidence = _wsl_evidence(root, environ, unreadable)
    return {
        "hostname": socket.gethostname(),
        "os": _os_name(root, unreadable),
        "kernel": uname.release,
        "arch": uname.machine,
        "glibc": _glibc(),
        "cpu": _cpu_model(root, unreadable),
        "cpu_count": os.cpu_count() or 0,
        "memory_bytes": _memory_bytes(root, unreadable),
        "container": _container(root, environ, unreadable),
        "wsl2": bool(evidence),
        "wsl_evidence": tuple(evidence),
    }


# ---------------------------------------------------------------------------------------------
# torch (child process)


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


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
        return None, f"cannot run {python}: {exc.strerror or files.why(exc)}"
    except subprocess.TimeoutExpired:
        return None, f"probe {python} -m {PROBE_MODULE} timed out after {timeout_s:g} s"
    stdout, stderr = done.stdout, done.stderr
    result = last_json_object(stdout)
    if result is None:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return (
            None,
            f"probe {python} -m {PROBE_MODULE} failed ({_exit_reason(done.returncode)}): {last}",
        )
    return result, None


# ---------------------------------------------------------------------------------------------
# collecting


def collect(
    python: str = sys.executable,
    timeout_s: float = 120.0,
    root: str | os.PathLike = "/",
    *,
    environ: Mapping[str, str] | None = None,
    nvml: ModuleType | None = None,
    run: smi.Runner = smi.run_command,
) -> Fingerprint:
    """Fingerprint this machine and the torch build of ``python``.

    Sections (see :class:`repro.model.Fingerprint`): ``host`` (OS, kernel, CPU,
    ``memory_bytes`` in bytes, container, WSL2 and its evidence), ``gpus`` (``memory_bytes`` in
    bytes, ``source`` nvml/nvidia-smi/sysfs/rocm-smi/amd-smi/torch), ``driver`` (NVIDIA driver,
    CUDA driver API "12.8", ROCm, amdgpu), ``runtime`` (torch build, arch list, devices,
    multiprocessing start methods) and ``unreadable`` (everything that exists but could not be
    read: NVML, nvidia-smi, the probe, a file). ``.to_json()`` is the ``fingerprint.json`` object.

    torch is never imported here: ``python -m repro.host.torch_probe`` runs as a child for at most
    ``timeout_s`` seconds. Files are read under ``root`` ("/" normally; a captured tree in tests);
    ``environ`` (default ``os.environ``) helps recognise WSL2 and containers and selects the
    GPUs the job uses (``selection``: ``CUDA_VISIBLE_DEVICES``, MIG, ``ROCR_``/``HIP_VISIBLE_DEVICES``,
    see :mod:`repro.host.selection`; ``environment``: those and the NCCL variables); ``nvml`` replaces
    the pynvml module and ``run`` the SMI tool runner (tests). Never raises for a missing or
    broken piece (no torch, no NVML, a nonexistent ``python``); only programming errors propagate.
    """
    root_path = Path(root)
    environ = os.environ if environ is None else environ
    unreadable: Unreadable = []
    host = _host(root_path, environ, unreadable)

    probe, probe_error = _run_probe(python, timeout_s)
    if probe_error:
        unreadable.append({"what": "torch", "why": probe_error})
    probe = probe or {}
    if probe.get("torch_error"):
        unreadable.append({"what": "torch", "why": str(probe["torch_error"])})
    errors = probe.get("errors")
    for entry in errors if isinstance(errors, list) else []:
        entry = entry if isinstance(entry, dict) else {}
        unreadable.append({"what": str(entry.get("what")), "why": str(entry.get("why"))})
    same_interpreter = os.path.realpath(python) == os.path.realpath(sys.executable)
    runtime = Runtime.from_json(probe)

    nvidia_reading = nvidia.read(root_path, unreadable, nvml=nvml, run=run)
    driver = Driver(
        nvidia=nvidia_reading.driver,
        cuda_driver_api=nvidia_reading.cuda_driver_api,
        rocm=amd.rocm_version(root_path, unreadable),
        amdgpu=amd.amdgpu_version(root_path, unreadable),
    )
    gpus = _with_fabric_service(nvidia_reading.gpus, root_path, run) + amd.read(
        root_path, unreadable, run=run
    )
    return Fingerprint(
        collected_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host=Machine(
            **host,
            python=probe.get("python") or (platform.python_version() if same_interpreter else None),
            python_executable=probe.get("python_executable") or python,
        ),
        gpus=gpus or runtime.gpus(),
        driver=driver,
        runtime=runtime,
        unreadable=tuple(UnreadableItem(u["what"], u["why"]) for u in unreadable),
        selection=selection.select(gpus, environ),
        environment=selection.environment(environ),
    )


def _with_fabric_service(gpus: tuple[Gpu, ...], root: Path, run: smi.Runner) -> tuple[Gpu, ...]:
    """NVIDIA GPUs with ``fabric_state`` from the nvidia-fabricmanager service where NVML gave
    none (older driver or binding) and the unit is installed (an HGX/NVSwitch host)."""
    if not gpus or all(g.fabric_state for g in gpus):
        return gpus
    state = nvidia_modes.fabric_service_state(root, run)
    if state is None:
        return gpus
    return tuple(g if g.fabric_state else replace(g, fabric_state=state) for g in gpus)


# ---------------------------------------------------------------------------------------------
# keys, properties, text


def runtime_tag(fp: Fingerprint) -> str:
    """The wheel flavour of the torch build: "cu128", "cu130", "rocm6.4", "cpu"; "none" without
    torch (:attr:`repro.model.Runtime.tag`, the one rule)."""
    return fp.runtime.tag


def to_properties(fp: Fingerprint) -> dict[str, str]:
    """The host facts as JUnit testsuite properties: :func:`repro.properties.of_fingerprint`
    (the codec that alone spells their names)."""
    return properties.of_fingerprint(fp)


def _gib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**30:.1f} GiB"


def _or_dash(value: Any) -> str:
    return "-" if value is None or value == "" or value == [] else str(value)


def format_text(fp: Fingerprint) -> str:
    """A human-readable, multi-line report of ``fp`` for ``repro env`` (ends without a newline)."""
    host, driver, runtime = fp.host, fp.driver, fp.runtime
    wsl = "yes (" + "; ".join(host.wsl_evidence) + ")" if host.wsl2 else "no"
    lines = [
        f"host key      {host_key(fp)}",
        f"hostname      {_or_dash(host.hostname)}",
        f"os            {_or_dash(host.os)}",
        f"kernel        {_or_dash(host.kernel)} ({_or_dash(host.arch)})",
        f"glibc         {_or_dash(host.glibc)}",
        f"python        {_or_dash(host.python)} ({_or_dash(host.python_executable)})",
        f"cpu           {_or_dash(host.cpu)} × {_or_dash(host.cpu_count)}",
        f"memory        {_gib(host.memory_bytes)}",
        f"container     {host.container or 'none'}",
        f"wsl2          {wsl}",
        "gpus",
    ]
    for gpu in fp.gpus:
        arch = f"sm {gpu.compute_capability}" if gpu.compute_capability else gpu.gfx_target
        modes = ", ".join(
            f"{m.replace('_', ' ')} {getattr(gpu, m)}" for m in GPU_MODES if getattr(gpu, m)
        )
        lines.append(
            f"  [{gpu.index}] {_or_dash(gpu.name)}  {_or_dash(arch)}  "
            f"{_gib(gpu.memory_bytes)}  ({gpu.source})" + (f"  {modes}" if modes else "")
        )
        lines += [f"      MIG {m.uuid}  {_or_dash(m.name)}" for m in gpu.mig_devices]
    if not fp.gpus:
        lines.append("  none found")
    if fp.selection is not None:
        chosen = ", ".join(f"{k}={v}" for k, v in fp.selection.variables) or "MIG"
        used = ", ".join(f"{_or_dash(g.name)} [{g.uuid or g.index}]" for g in fp.selection.devices)
        lines.append(f"selected      {chosen}: {used or 'no GPU'}")
        lines += [f"  note: {note}" for note in fp.selection.notes]
    lines += [
        f"driver        nvidia {_or_dash(driver.nvidia)}, CUDA driver API "
        f"{_or_dash(driver.cuda_driver_api)}, ROCm {_or_dash(driver.rocm)}, "
        f"amdgpu {_or_dash(driver.amdgpu)}",
        f"torch         {_or_dash(runtime.torch)} [{runtime_tag(fp)}]  cuda "
        f"{_or_dash(runtime.cuda)}  hip {_or_dash(runtime.hip)}  cudnn "
        f"{_or_dash(runtime.cudnn)}  nccl {_or_dash(runtime.nccl)}",
        f"arch list     {_or_dash(', '.join(runtime.arch_list))}",
        f"accelerator   {_or_dash(runtime.accelerator)}, available "
        f"{'yes' if runtime.accelerator_available else 'no'}, "
        f"{runtime.accelerator_count} device(s)",
    ]
    for device in runtime.devices:
        lines.append(
            f"  [{device.index}] {_or_dash(device.name)}  capability "
            f"{_or_dash(device.capability)}  {_gib(device.total_memory_bytes)}"
            + (f"  {device.gcn_arch}" if device.gcn_arch else "")
        )
    if runtime.cuda_init_error:
        lines.append(f"cuda init      FAILED: {runtime.cuda_init_error}")
    lines.append(
        f"start methods {_or_dash(', '.join(runtime.start_methods))} "
        f"(default {_or_dash(runtime.default_start_method)})"
    )
    if fp.environment:
        lines.append("environment   " + " ".join(f"{k}={v}" for k, v in fp.environment))
    if fp.unreadable:
        lines.append("unreadable")
        lines += [f"  {item.what}: {item.why}" for item in fp.unreadable]
    return "\n".join(lines)


#: A fingerprint.json is a few KiB; anything past this is not one.
MAX_FINGERPRINT_BYTES = 16 << 20


def read_file(path: str | os.PathLike[str], option: str) -> Fingerprint:
    """Read a ``fingerprint.json`` given on the command line as ``option`` (untrusted input):
    the one place such a file becomes a :class:`Fingerprint`.

    Only a regular file of at most 16 MiB is read (a FIFO or /dev/zero never blocks); the JSON
    object must have a ``host`` section. Raises ConfigError naming ``option`` and the
    path otherwise (unreadable, not JSON, too deep, wrong shape)."""
    from repro.junit.files import InputRefused, read_capped

    try:
        data = json.loads(read_capped(path, MAX_FINGERPRINT_BYTES))
    except InputRefused as exc:
        raise ConfigError(f"{option} {path}: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{option} {path}: expected a fingerprint JSON object: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("host"), dict):
        raise ConfigError(
            f"{option} {path}: expected a fingerprint JSON object with a 'host' section"
        )
    return Fingerprint.from_json(data)
