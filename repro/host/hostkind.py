"""Detect what kind of GPU host this is and whether it can run a variant in a container.

Host kinds (``KINDS``): ``nvidia`` (Linux, ``/dev/nvidia*``), ``nvidia-wsl2`` (``/dev/dxg`` plus
the CUDA user-space libraries Windows puts in ``/usr/lib/wsl/lib``), ``rocm`` (``/dev/kfd`` and
``/dev/dri``), ``rocm-wsl2`` (``/dev/dxg`` with ROCm user space, no ``/dev/kfd``) and ``cpu``.
Everything is decided from what is really there: device nodes, ``/proc/version``, the WSL
library directory, CDI specs, the driver query (``repro.host.nvidia``: NVML, else nvidia-smi;
``repro.host.amd``: the KFD topology) and the Docker daemon's ``info`` (runtimes, CDI spec
dirs, Docker Desktop).

Every file read goes through ``root`` and the daemon's ``info`` and the driver query can be
injected, so tests run on captured fixture trees (``tests/fixtures/hosts/``).

:func:`preflight` says, in one line per problem, why this host cannot run a variant (no NVIDIA
container runtime, no ``/dev/kfd``, daemon unreachable, driver query failing) before anything
is built or written. This module never imports torch and never starts a container.
"""

from __future__ import annotations

import glob
import json
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from repro.host import amd, docker_sdk, nvidia
from repro.host.smi import DriverQuery

NVIDIA = "nvidia"
NVIDIA_WSL2 = "nvidia-wsl2"
ROCM = "rocm"
ROCM_WSL2 = "rocm-wsl2"
CPU = "cpu"
KINDS = (NVIDIA, NVIDIA_WSL2, ROCM, ROCM_WSL2, CPU)

WSL_LIB = "/usr/lib/wsl/lib"
WSL_DIR = "/usr/lib/wsl"
_CDI_DIRS = ("etc/cdi", "var/run/cdi")
#: AMD's WSL2 bridge library (ROCm/librocdxg: ROCr reaches the GPU through /dev/dxg with it). It
#: is installed with the distribution's ROCm (``/opt/rocm/lib``, registered with ldconfig), not
#: by the Windows driver in /usr/lib/wsl, so a container sees it only if it is mounted in
#: (librocdxg's release notes document bind-mounting it into containers).
ROCDXG_PATTERN = "opt/rocm*/lib/librocdxg.so*"
_NVIDIA_HOOKS = (
    "usr/bin/nvidia-container-runtime-hook",
    "usr/bin/nvidia-container-toolkit",
    "usr/local/bin/nvidia-container-runtime-hook",
)


# ---------------------------------------------------------------------------------------------
# the daemon


@dataclass(frozen=True)
class DaemonInfo:
    """What ``docker info`` says that matters here; ``error`` set when the daemon is unreachable."""

    reachable: bool
    error: str | None = None
    server_version: str | None = None
    operating_system: str | None = None
    runtimes: tuple[str, ...] = ()
    default_runtime: str | None = None
    cdi_spec_dirs: tuple[str, ...] = ()
    rootless: bool = False

    @property
    def docker_desktop(self) -> bool:
        return "docker desktop" in (self.operating_system or "").lower()

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> DaemonInfo:
        """From the daemon's ``/info`` reply (``client.info()`` or ``docker info --format '{{json .}}'``)."""
        security = [str(s) for s in info.get("SecurityOptions") or []]
        return cls(
            reachable=True,
            server_version=info.get("ServerVersion"),
            operating_system=info.get("OperatingSystem"),
            runtimes=tuple(sorted((info.get("Runtimes") or {}).keys())),
            default_runtime=info.get("DefaultRuntime"),
            cdi_spec_dirs=tuple(info.get("CDISpecDirs") or ()),
            rootless=any("rootless" in s for s in security),
        )

    @classmethod
    def unreachable(cls, error: str) -> DaemonInfo:
        return cls(reachable=False, error=error)

    def as_dict(self) -> dict[str, Any]:
        return {
            "reachable": self.reachable,
            "error": self.error,
            "server_version": self.server_version,
            "operating_system": self.operating_system,
            "runtimes": list(self.runtimes),
            "default_runtime": self.default_runtime,
            "cdi_spec_dirs": list(self.cdi_spec_dirs),
            "docker_desktop": self.docker_desktop,
            "rootless": self.rootless,
        }


def query_daemon(timeout_s: float = 10.0) -> DaemonInfo:
    """Ask the Docker daemon (``DOCKER_HOST`` or the default socket) for its info; never raises."""
    try:
        docker = docker_sdk.import_sdk()
    except docker_sdk.SdkMissing as exc:
        return DaemonInfo.unreachable(f"{exc} ({docker_sdk.INSTALL_HINT})")
    try:
        client = docker.from_env(timeout=int(timeout_s))
        try:
            return DaemonInfo.from_info(client.info())
        finally:
            client.close()
    except Exception as exc:  # DockerException, requests errors: all mean "cannot talk to it"
        return DaemonInfo.unreachable(_one_line(exc))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------
# the host


@dataclass(frozen=True)
class Host:
    """Everything detected about this host's GPUs and container engine.

    Device paths are as the host sees them (``/dev/nvidia0``); ``device_gids`` are the numeric
    groups that own the GPU device nodes (video/render), to be added to the container user.
    """

    kind: str
    wsl2: bool
    evidence: tuple[str, ...]
    daemon: DaemonInfo
    nvidia_devices: tuple[str, ...] = ()
    dxg: bool = False
    wsl_lib: bool = False
    nvidia_wsl_libs: bool = False
    rocm_wsl: bool = False
    kfd: bool = False
    dri_devices: tuple[str, ...] = ()
    device_gids: tuple[int, ...] = ()
    nvidia_hooks: tuple[str, ...] = ()
    cdi_devices: tuple[str, ...] = ()
    rocdxg_libs: tuple[str, ...] = ()
    nvidia_query: DriverQuery | None = None
    amd_query: DriverQuery | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def has_nvidia(self) -> bool:
        return self.kind in (NVIDIA, NVIDIA_WSL2) or bool(self.nvidia_devices)

    @property
    def has_rocm(self) -> bool:
        return self.kfd or self.rocm_wsl

    @property
    def nvidia_container_runtime(self) -> tuple[str, ...]:
        """Evidence that ``--gpus``/CDI can work: the daemon's ``nvidia`` runtime, the toolkit's
        hook binary, or a CDI spec naming ``nvidia.com/gpu`` devices (empty: none found)."""
        found = [f"docker runtime {r!r}" for r in self.daemon.runtimes if "nvidia" in r]
        found += [f"hook {h}" for h in self.nvidia_hooks]
        if self.cdi_devices:
            found.append(f"CDI {self.cdi_devices[0]}")
        if self.daemon.docker_desktop:
            found.append("Docker Desktop (built-in GPU support)")
        return tuple(found)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "wsl2": self.wsl2,
            "evidence": list(self.evidence),
            "notes": list(self.notes),
            "nvidia_devices": list(self.nvidia_devices),
            "dxg": self.dxg,
            "wsl_lib": self.wsl_lib,
            "nvidia_wsl_libs": self.nvidia_wsl_libs,
            "rocm_wsl": self.rocm_wsl,
            "kfd": self.kfd,
            "dri_devices": list(self.dri_devices),
            "device_gids": list(self.device_gids),
            "nvidia_container_runtime": list(self.nvidia_container_runtime),
            "cdi_devices": list(self.cdi_devices),
            "rocdxg_libs": list(self.rocdxg_libs),
            "nvidia_query": self.nvidia_query.as_dict() if self.nvidia_query else None,
            "amd_query": self.amd_query.as_dict() if self.amd_query else None,
            "daemon": self.daemon.as_dict(),
        }


def _read(root: Path, rel: str) -> str:
    try:
        return (root / rel).read_text(errors="replace")
    except OSError:
        return ""


def _listing(root: Path, pattern: str) -> list[str]:
    """Host paths (``/dev/nvidia0``) of what matches ``pattern`` under ``root``, sorted."""
    return sorted(
        "/" + os.path.relpath(p, root) for p in glob.glob(str(root / pattern), recursive=True)
    )


def _group_gids(root: Path, names: Sequence[str]) -> list[int]:
    """Numeric ids of the named groups in the host's ``/etc/group``."""
    gids = []
    for line in _read(root, "etc/group").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[0] in names and parts[2].isdigit():
            gids.append(int(parts[2]))
    return gids


def _device_gids(root: Path, devices: Sequence[str]) -> tuple[int, ...]:
    """Groups owning the device nodes (what really grants access), then video/render by name.
    Group 0 is never added: that would hand the container user root's group."""
    gids: list[int] = []
    for device in devices:
        try:
            info = os.stat(root / device.lstrip("/"))
        except OSError:
            continue
        if stat.S_ISCHR(info.st_mode):  # a real device node (fixture trees hold plain files)
            gids.append(info.st_gid)
    gids += _group_gids(root, ("video", "render"))
    return tuple(sorted({g for g in gids if g != 0}))


def _cdi_devices(root: Path) -> tuple[str, ...]:
    """Fully qualified CDI device names (``nvidia.com/gpu=all``) from the host's CDI specs."""
    names: list[str] = []
    for directory in _CDI_DIRS:
        for path in sorted((root / directory).glob("*")):
            if path.suffix not in (".yaml", ".yml", ".json"):
                continue
            try:
                spec = yaml.safe_load(path.read_text())
            except (OSError, yaml.YAMLError):
                continue
            if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
                continue
            for device in spec.get("devices") or []:
                if isinstance(device, dict) and device.get("name") is not None:
                    names.append(f"{spec['kind']}={device['name']}")
    return tuple(dict.fromkeys(names))


def detect(
    root: str | os.PathLike = "/",
    daemon: DaemonInfo | None = None,
    nvidia_query: DriverQuery | Callable[[Path], DriverQuery] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Host:
    """Detect the host kind from the files under ``root`` and the daemon's ``info``.

    ``daemon`` None asks the real daemon; ``nvidia_query`` None runs nvidia-smi/NVML when there
    is NVIDIA evidence (pass a :class:`DriverQuery` to inject a captured answer).
    """
    root = Path(root)
    environ = os.environ if environ is None else environ
    daemon = daemon if daemon is not None else query_daemon()
    evidence: list[str] = []
    notes: list[str] = []

    version = _read(root, "proc/version")
    wsl_reasons = []
    if "microsoft" in version.lower() or "wsl" in version.lower():
        wsl_reasons.append("/proc/version names a Microsoft (WSL2) kernel")
    dxg = (root / "dev/dxg").exists()
    if dxg:
        wsl_reasons.append("/dev/dxg exists")
    wsl_lib = (root / WSL_LIB.lstrip("/")).is_dir()
    if wsl_lib:
        wsl_reasons.append(f"{WSL_LIB} exists")
    wsl_reasons += [
        f"${name} is set" for name in ("WSL_DISTRO_NAME", "WSL_INTEROP") if environ.get(name)
    ]
    wsl2 = bool(wsl_reasons)
    evidence += wsl_reasons

    nvidia_devices = tuple(
        p for p in _listing(root, "dev/nvidia*") if os.path.basename(p) != "nvidia-caps"
    )
    if nvidia_devices:
        evidence.append("NVIDIA device nodes: " + ", ".join(nvidia_devices))
    if (root / "proc/driver/nvidia/version").exists():
        evidence.append("/proc/driver/nvidia/version exists (NVIDIA kernel module loaded)")
    nvidia_wsl_libs = bool(
        _listing(root, WSL_LIB.lstrip("/") + "/libcuda.so*")
        or (root / WSL_LIB.lstrip("/") / "nvidia-smi").exists()
    )
    if nvidia_wsl_libs:
        evidence.append(f"CUDA user-space libraries in {WSL_LIB}")

    kfd = (root / "dev/kfd").exists()
    if kfd:
        evidence.append("/dev/kfd exists (amdgpu KFD)")
    dri_devices = tuple(_listing(root, "dev/dri/renderD*") + _listing(root, "dev/dri/card*"))
    if dri_devices:
        evidence.append("DRI nodes: " + ", ".join(dri_devices))
    rocdxg_libs = tuple(_listing(root, ROCDXG_PATTERN))
    rocm_user_space = (root / "opt/rocm").is_dir() or bool(
        _listing(root, "usr/lib/wsl/**/*rocdxg*") or rocdxg_libs
    )
    rocm_wsl = wsl2 and dxg and not kfd and not nvidia_wsl_libs and rocm_user_space
    if rocm_wsl:
        evidence.append("ROCm user space with /dev/dxg and no /dev/kfd (ROCm on WSL2)")

    if kfd:
        kind = ROCM
    elif wsl2 and dxg and nvidia_wsl_libs:
        kind = NVIDIA_WSL2
    elif nvidia_devices or (root / "proc/driver/nvidia/version").exists():
        kind = NVIDIA
    elif rocm_wsl:
        kind = ROCM_WSL2
    else:
        kind = CPU
        if wsl2 and dxg:
            notes.append(
                f"WSL2 with /dev/dxg but neither CUDA libraries in {WSL_LIB} nor ROCm user space: GPU drivers not installed on Windows?"
            )
    if kfd and (nvidia_devices or nvidia_wsl_libs):
        notes.append(
            "both AMD and NVIDIA GPUs present: the variant's accelerator decides which are passed through"
        )

    query: DriverQuery | None = None
    if kind in (NVIDIA, NVIDIA_WSL2) or nvidia_devices:
        if isinstance(nvidia_query, DriverQuery):
            query = nvidia_query
        else:
            query = (nvidia_query or nvidia.query)(root)
    amd_query = amd.query_kfd(root) if kfd else None

    hooks = tuple("/" + h for h in _NVIDIA_HOOKS if (root / h).exists())
    gid_devices = ["/dev/kfd"] * kfd + list(dri_devices) + list(nvidia_devices)
    return Host(
        kind=kind,
        wsl2=wsl2,
        evidence=tuple(evidence),
        daemon=daemon,
        nvidia_devices=nvidia_devices,
        dxg=dxg,
        wsl_lib=wsl_lib,
        nvidia_wsl_libs=nvidia_wsl_libs,
        rocm_wsl=rocm_wsl,
        kfd=kfd,
        dri_devices=dri_devices,
        device_gids=_device_gids(root, gid_devices),
        nvidia_hooks=hooks,
        cdi_devices=_cdi_devices(root),
        rocdxg_libs=rocdxg_libs,
        nvidia_query=query,
        amd_query=amd_query,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------
# what a variant gets, and whether it can run here


def passthrough_kind(host: Host, accelerator: str) -> str:
    """Which passthrough a variant of ``accelerator`` (cuda|rocm|cpu) gets on this host.

    A CPU variant never gets a GPU, whatever the host has."""
    if accelerator == "cuda":
        return NVIDIA_WSL2 if host.wsl2 and host.dxg and not host.nvidia_devices else NVIDIA
    if accelerator == "rocm":
        return ROCM if host.kfd else ROCM_WSL2 if host.wsl2 else ROCM
    return CPU


@dataclass(frozen=True)
class Preflight:
    """Verdict of :func:`preflight`: ``problems`` (empty = can run) and ``warnings``."""

    variant_id: str
    passthrough: str
    problems: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    host_kind: str = CPU

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        """One line for the user: why this host cannot run the variant."""
        return (
            f"cannot run {self.variant_id} on this host (host kind {self.host_kind}): "
            + "; ".join(self.problems)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant_id,
            "host_kind": self.host_kind,
            "passthrough": self.passthrough,
            "ok": self.ok,
            "problems": list(self.problems),
            "warnings": list(self.warnings),
        }


HINTS = {
    "daemon": "start the Docker daemon (dockerd, Docker Desktop) and check `docker info` works for this user",
    NVIDIA: "install the NVIDIA driver and the NVIDIA Container Toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`",
    NVIDIA_WSL2: "install the NVIDIA Windows driver (it provides /usr/lib/wsl/lib inside WSL2) and Docker Desktop with the WSL2 backend or docker-ce in the distro",
    ROCM: "install the amdgpu driver (amdgpu-dkms) so /dev/kfd and /dev/dri exist, and add the user to the video and render groups",
    ROCM_WSL2: "install the AMD Adrenalin driver and `amdgpu-install --usecase=wsl,rocm --no-dkms` inside WSL2",
}


#: Docker Engine releases and CDI (``docker run --device nvidia.com/gpu=all``): 25.0 added CDI as
#: an opt-in feature (``"features": {"cdi": true}`` in daemon.json; cncf-tags/container-device-
#: interface#84), 28.2.0 turned it on by default (Engine 28.2.0 release notes). A daemon with CDI
#: on lists its spec directories in ``docker info`` (``CDISpecDirs``; dockerd reference, "CDI");
#: with CDI off the list is empty and ``docker run`` fails with a bare
#: 'could not select device driver "cdi" with capabilities: []'.
CDI_FIRST_ENGINE = (25, 0)
CDI_DEFAULT_ENGINE = (28, 2)
#: The line that turns CDI on (merge it into an existing daemon.json).
CDI_FIX = (
    'add "features": {"cdi": true} to /etc/docker/daemon.json, then sudo systemctl restart docker'
)


def engine_version(text: str | None) -> tuple[int, int] | None:
    """Docker Engine ``ServerVersion`` "28.1.1" -> (28, 1); "20.10.24+dfsg1" -> (20, 10)."""
    parts = (text or "").split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    except (IndexError, ValueError):
        return None


def cdi_problem(daemon: DaemonInfo) -> str | None:
    """Why this daemon cannot start a container with CDI devices, with the fix; None when it can
    (CDI spec directories listed) or when the daemon did not answer."""
    if not daemon.reachable or daemon.cdi_spec_dirs:
        return None
    version = engine_version(daemon.server_version)
    engine = f"Docker Engine {daemon.server_version or '?'}"
    if version is not None and version < CDI_FIRST_ENGINE:
        return (
            f"{engine} has no CDI support (added in 25.0): upgrade Docker Engine, or register the "
            "NVIDIA runtime (sudo nvidia-ctk runtime configure --runtime=docker) and use "
            "--gpu-mode toolkit"
        )
    if version is not None and version >= CDI_DEFAULT_ENGINE:
        why = 'CDI is switched off ("features": {"cdi": false} or empty "cdi-spec-dirs")'
        fix = 'remove "cdi": false from "features" in /etc/docker/daemon.json and restart docker'
        return f"{engine}: {why} (docker info lists no CDI spec directories); fix: {fix}"
    return (
        f"{engine}: CDI is off (docker info lists no CDI spec directories; Engine 25 to 28.1 "
        f"need it enabled, 28.2 has it on by default); fix: {CDI_FIX}"
    )


def preflight(host: Host, variant_id: str, accelerator: str, gpu_mode: str = "auto") -> Preflight:
    """Can this host run ``variant_id`` (accelerator cuda|rocm|cpu) in a container?

    Checks, in order: the daemon answers; for cuda: NVIDIA GPUs are there, the driver query
    works, and (native Linux) a way to hand them to a container exists (nvidia runtime, the
    toolkit's hook or a CDI spec); on WSL2 ``/dev/dxg`` and ``/usr/lib/wsl/lib``; for rocm:
    ``/dev/kfd`` and ``/dev/dri`` (native) or ``/dev/dxg`` (WSL2) and GPUs in the KFD topology.
    Nothing is started or written.
    """
    kind = passthrough_kind(host, accelerator)
    problems: list[str] = []
    warnings: list[str] = list(host.notes)
    if not host.daemon.reachable:
        problems.append(f"docker daemon unreachable ({host.daemon.error})")

    if accelerator == "cuda":
        if not host.has_nvidia:
            problems.append(
                "needs an NVIDIA GPU, but there are no /dev/nvidia* devices and no WSL2 /dev/dxg with CUDA libraries in /usr/lib/wsl/lib"
            )
        elif host.nvidia_query is not None and not host.nvidia_query.ok:
            problems.append(
                f"the NVIDIA driver query failed ({host.nvidia_query.tool}: {host.nvidia_query.error})"
            )
        if (
            kind == NVIDIA
            and host.has_nvidia
            and host.daemon.reachable
            and (gpu_mode in ("auto", "toolkit", "cdi"))
            and not host.nvidia_container_runtime
        ):
            runtimes = ", ".join(host.daemon.runtimes) or "none"
            problems.append(
                f"no NVIDIA container runtime: `docker info` lists runtimes {runtimes}, no nvidia-container-runtime-hook and no CDI spec for nvidia.com/gpu"
            )
        if kind == NVIDIA and gpu_mode == "cdi" and host.has_nvidia and not host.cdi_devices:
            problems.append(
                "--gpu-mode cdi but no CDI spec in /etc/cdi or /var/run/cdi (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml)"
            )
        if kind == NVIDIA and host.has_nvidia and uses_cdi(host, gpu_mode):
            problem = cdi_problem(host.daemon)
            if problem:
                problems.append(problem)
        if kind == NVIDIA_WSL2 and host.has_nvidia and not host.wsl_lib:
            problems.append(
                f"WSL2 without {WSL_LIB}: the Windows NVIDIA driver's libraries are missing"
            )
    elif accelerator == "rocm":
        if kind == ROCM:
            if not host.kfd:
                problems.append(
                    "needs an AMD GPU, but /dev/kfd does not exist (amdgpu kernel driver not loaded)"
                )
            elif not host.dri_devices:
                problems.append("/dev/kfd exists but /dev/dri has no render nodes")
            elif host.amd_query is not None and not host.amd_query.ok:
                problems.append(
                    f"the AMD driver query failed ({host.amd_query.tool}: {host.amd_query.error})"
                )
        else:  # ROCm on WSL2
            if not host.dxg:
                problems.append("ROCm on WSL2 needs /dev/dxg")
            elif not host.rocm_wsl:
                problems.append(
                    "WSL2 /dev/dxg but no ROCm user space (/opt/rocm, librocdxg) on this host"
                )
            if host.rocdxg_libs:
                warnings.append(
                    "ROCm on WSL2 goes through librocdxg (HSA_ENABLE_DXG_DETECTION=1): the host's "
                    f"{', '.join(host.rocdxg_libs)} is mounted read-only; the image's ROCm must be "
                    "a release that loads it"
                )
            else:
                warnings.append(
                    "ROCm on WSL2 goes through librocdxg (HSA_ENABLE_DXG_DETECTION=1), but this "
                    "host has none in /opt/rocm*/lib to mount: the image must carry it"
                )
    if host.daemon.rootless and accelerator != "cpu":
        warnings.append("rootless Docker: device groups may not map into the container")
    return Preflight(variant_id, kind, tuple(problems), tuple(warnings), host.kind)


def uses_cdi(host: Host, gpu_mode: str) -> bool:
    """Whether GPUs reach the container through CDI: ``--gpu-mode cdi``, or ``auto`` on a native
    host whose only way in is a CDI spec (no nvidia runtime, hook or Docker Desktop), as
    :func:`repro.containers.spec.docker_run_spec` decides."""
    if gpu_mode == "cdi":
        return True
    if gpu_mode != "auto" or not host.cdi_devices:
        return False
    runtime = any("nvidia" in r for r in host.daemon.runtimes) or host.nvidia_hooks
    return not (runtime or host.daemon.docker_desktop)


def hint_for(result: Preflight, host: Host) -> str:
    """The one hint that fits the first problem."""
    if not host.daemon.reachable:
        return HINTS["daemon"]
    return HINTS.get(result.passthrough, "")


def load_fixture(directory: str | os.PathLike) -> Host:
    """A :class:`Host` from a captured fixture directory: ``root/`` (files), ``docker-info.json``
    (the daemon's info, or ``{"error": "..."}``), optional ``nvidia-smi.txt`` (+ ``nvidia-smi.rc``)
    and ``environ.json``. Used by the tests and by ``repro host --fixture DIR``."""
    directory = Path(directory)
    info = json.loads((directory / "docker-info.json").read_text())
    daemon = (
        DaemonInfo.unreachable(info["error"]) if "error" in info else DaemonInfo.from_info(info)
    )
    smi = directory / "nvidia-smi.txt"
    query = None
    if smi.exists():
        rc_file = directory / "nvidia-smi.rc"
        rc = int(rc_file.read_text().strip()) if rc_file.exists() else 0
        query = nvidia.parse_smi(smi.read_text(), rc)
    environ_file = directory / "environ.json"
    environ = json.loads(environ_file.read_text()) if environ_file.exists() else {}
    missing = DriverQuery("nvidia-smi", False, error="nvidia-smi: command not found")
    return detect(directory / "root", daemon=daemon, nvidia_query=query or missing, environ=environ)
