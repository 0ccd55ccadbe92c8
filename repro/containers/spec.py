"""Run a variant's image with the host's GPU passthrough, results bind-mounted (docker SDK).

:func:`docker_run_spec` is a pure function: host kind + variant + options -> the keyword
arguments for ``client.containers.run`` and the equivalent ``docker run ...`` command line, so
the passthrough for every host kind is unit-tested from fixture hosts:

- ``nvidia``: a ``DeviceRequest`` for all or selected GPUs (the NVIDIA Container Toolkit), or
  CDI device names (``nvidia.com/gpu=all``);
- ``nvidia-wsl2``: ``/dev/dxg`` and ``/usr/lib/wsl`` read-only (``LD_LIBRARY_PATH`` to its
  ``lib``), the toolkit is not needed; on Docker Desktop the built-in ``--gpus`` instead;
- ``rocm``: ``/dev/kfd``, ``/dev/dri``, the device nodes' groups (video/render), seccomp
  unconfined as AMD documents; ``rocm-wsl2``: ``/dev/dxg`` + ``/usr/lib/wsl`` read-only,
  ``HSA_ENABLE_DXG_DETECTION=1`` and the host's WSL bridge library ``librocdxg`` (it lives in the
  distribution's ``/opt/rocm/lib``, not in ``/usr/lib/wsl``) mounted read-only at its path;
- ``cpu``: no device.

Always: never ``--privileged``; all capabilities dropped and no-new-privileges; read-only root
filesystem with a private ``/tmp``; no network unless asked (loopback is enough for DDP);
``--init`` (so the runner is not PID 1); a pids limit and a memory limit (swap included); the
run's own directory ``results/<run-id>`` the only writable mount (never the results root: a
case cannot rewrite earlier runs); the host fingerprint and the matrix file mounted read-only;
run as the user the caller chose (``repro.containers.job.container_user``: never 0:0);
``shm_size``/``ipc`` from the variant or the command line.

:func:`run_container` runs it with a hard timeout for the whole container and removes it
afterwards unless asked to keep it. Results reach the host as each case ends (the runner
rewrites ``junit.xml`` atomically after every case), so a container killed by its timeout leaves
every finished case behind. Never imports torch.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from repro.config import scripts as script_entries
from repro.config.limits import ContainerLimits
from repro.containers.options import ResolvedDockerRun
from repro.errors import ConfigError
from repro.host import hostkind as host_mod
from repro.model import Fingerprint

CONTAINER_RESULTS = "/results"
CONTAINER_HOST_DIR = "/repro/host"
CONTAINER_HOST_FP = f"{CONTAINER_HOST_DIR}/fingerprint.json"
#: matrix.yaml's folder, read-only: its `script:` entries resolve against it as on the host.
CONTAINER_CONFIG_DIR = "/repro/config"
LABEL_RUN = "io.repro-matrix.run"
LABEL_VARIANT = "io.repro-matrix.variant.id"
TMPFS_OPTIONS = "rw,exec,nosuid,nodev"
GPU_MODES = ("auto", "toolkit", "cdi", "wsl")


#: Characters a bind mount's host path cannot hold: ``docker run -v SRC:DST:MODE`` (and the
#: SDK's ``volumes``, which it turns into the same string) splits at ``:``, so ``/data/a:b``
#: would mount ``/data/a`` at ``b``; ``,`` splits ``--mount``; a control character cannot be
#: passed through at all (issue 32).
MOUNT_UNSAFE = frozenset(":,") | frozenset(chr(c) for c in range(32)) | {"\x7f"}


def check_mount_source(path: str | Path, what: str) -> None:
    """Raise ConfigError (exit 2) naming ``what`` (``--results-dir``, ``the matrix file's
    folder``) when the host path ``path`` holds a character a bind mount cannot carry
    (:data:`MOUNT_UNSAFE`); checked before anything is created or started."""
    bad = sorted({c for c in str(path) if c in MOUNT_UNSAFE})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise ConfigError(
            f"{what} {str(path)!r}: holds {shown}, which docker's -v/--mount cannot carry in a "
            "host path; choose a path without it"
        )


@dataclass(frozen=True)
class ContainerRun:
    """One container of one variant: the command's resolved options (``resolved``: patterns,
    ``gpu_mode``, network, timeout scale, ``keep_container``; :mod:`repro.containers.options`)
    and what is particular to this container. Paths are host paths (absolute).

    ``gpus``: this container's GPUs: ``all``, indices ``0,1``, UUIDs (``GPU-...``, ``MIG-...``)
    or CDI names ``nvidia.com/gpu=0`` (comma-separated), ``none`` for no GPU
    (``repro.containers.job`` passes ``--gpus``, else the runner's selection,
    ``repro.host.selection.container_gpus``). ``resolved.gpu_mode`` (NVIDIA): ``auto`` (WSL2
    devices on WSL2 unless Docker Desktop, else the toolkit's DeviceRequest, else CDI when only
    a CDI spec exists), ``toolkit``, ``cdi``, ``wsl``. ``limits``: /dev/shm, IPC, memory, pids
    and user, resolved once for the variant (:func:`repro.config.limits.resolve`).
    ``run_dir``: the host's fresh ``results/<run-id>`` (mounted read-write at
    ``/results/<run-id>``, the only writable mount).
    ``command``: run this instead of ``repro run`` (``--shell``, the parity probe).
    """

    image: str
    variant_id: str
    run_dir: str
    config_file: str
    host_fingerprint_dir: str
    resolved: ResolvedDockerRun
    properties: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    gpus: str = "all"
    limits: ContainerLimits = ContainerLimits()
    name: str | None = None
    interactive: bool = False
    command: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RunSpec:
    """What :func:`docker_run_spec` returns: SDK kwargs, the CLI argv and its shell-quoted text."""

    kwargs: dict[str, Any]
    argv: list[str]
    passthrough: str
    notes: tuple[str, ...] = field(default=())

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)


def _gpu_items(gpus: str) -> list[str]:
    return [g.strip() for g in gpus.split(",") if g.strip()]


def _nvidia_mode(host: host_mod.Host, gpus: str, gpu_mode: str) -> str:
    """Resolve ``auto`` to toolkit, cdi or wsl for this host."""
    if gpu_mode != "auto":
        return gpu_mode
    if any("=" in g for g in _gpu_items(gpus)):
        return "cdi"
    if host.wsl2 and host.dxg and not host.nvidia_devices:
        return "toolkit" if host.daemon.docker_desktop else "wsl"
    has_runtime = (
        any("nvidia" in r for r in host.daemon.runtimes)
        or host.nvidia_hooks
        or host.daemon.docker_desktop
    )
    if not has_runtime and host.cdi_devices:
        return "cdi"
    return "toolkit"


def _device_request(mode: str, gpus: str) -> tuple[dict[str, Any], list[str]]:
    """(DeviceRequest as the dict docker-py accepts, the equivalent CLI flags)."""
    items = _gpu_items(gpus) or ["all"]
    if mode == "cdi":
        names = [g if "=" in g else f"nvidia.com/gpu={g}" for g in items]
        flags = [arg for name in names for arg in ("--device", name)]
        return {"Driver": "cdi", "DeviceIDs": names}, flags
    if items == ["all"]:
        return {"Count": -1, "Capabilities": [["gpu"]]}, ["--gpus", "all"]
    return {"DeviceIDs": items, "Capabilities": [["gpu"]]}, [
        "--gpus",
        f'"device={",".join(items)}"',
    ]


def docker_run_spec(host: host_mod.Host, accelerator: str, options: ContainerRun) -> RunSpec:
    """Pure: the ``containers.run`` kwargs and ``docker run`` argv for this host and variant."""
    kind = host_mod.passthrough_kind(host, accelerator)
    notes: list[str] = []
    env: dict[str, str] = {
        "HOME": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "REPRO_HOST_KIND": host.kind,
        "REPRO_PASSTHROUGH": kind,
    }
    env.update(dict(options.env))
    # An absolute script: path inside matrix.yaml's folder is read below the mount (issue 29).
    env[script_entries.CONFIG_ORIGIN_ENV] = script_entries.config_origin(options.config_file)
    container_run_dir = f"{CONTAINER_RESULTS}/{Path(options.run_dir).name}"
    volumes: dict[str, dict[str, str]] = {
        options.run_dir: {"bind": container_run_dir, "mode": "rw"},
        options.host_fingerprint_dir: {"bind": CONTAINER_HOST_DIR, "mode": "ro"},
        str(Path(options.config_file).parent): {"bind": CONTAINER_CONFIG_DIR, "mode": "ro"},
    }
    for source in volumes:
        check_mount_source(source, "bind mount source")
    devices: list[str] = []
    device_requests: list[dict[str, Any]] = []
    gpu_flags: list[str] = []
    group_add: list[str] = []
    security_opt = ["no-new-privileges"]

    if options.gpus == "none" and kind != host_mod.CPU:
        # An empty CUDA_VISIBLE_DEVICES on the runner: the job has no GPU, so neither has the container.
        notes.append("no GPU passed: the runner's GPU selection is empty")
    elif kind == host_mod.NVIDIA or (
        kind == host_mod.NVIDIA_WSL2
        and _nvidia_mode(host, options.gpus, options.resolved.gpu_mode) != "wsl"
    ):
        mode = _nvidia_mode(host, options.gpus, options.resolved.gpu_mode)
        request, gpu_flags = _device_request(mode, options.gpus)
        device_requests.append(request)
        notes.append(
            f"NVIDIA GPUs via {'CDI' if mode == 'cdi' else 'the NVIDIA Container Toolkit'} ({options.gpus})"
        )
    elif kind == host_mod.NVIDIA_WSL2:
        devices.append("/dev/dxg:/dev/dxg:rwm")
        volumes[host_mod.WSL_DIR] = {"bind": host_mod.WSL_DIR, "mode": "ro"}
        env["LD_LIBRARY_PATH"] = host_mod.WSL_LIB
        if options.gpus != "all":
            env["CUDA_VISIBLE_DEVICES"] = options.gpus
        notes.append("WSL2: /dev/dxg and /usr/lib/wsl (read-only); no container toolkit needed")
    elif kind == host_mod.ROCM:
        devices.append("/dev/kfd:/dev/kfd:rwm")
        devices += [f"{d}:{d}:rwm" for d in host.dri_devices] or ["/dev/dri:/dev/dri:rwm"]
        group_add = [str(g) for g in host.device_gids]
        security_opt.append(
            "seccomp=unconfined"
        )  # AMD's documented docker flags (compat-facts rocm_container)
        if options.gpus != "all":
            env["ROCR_VISIBLE_DEVICES"] = options.gpus
        notes.append(
            "ROCm: /dev/kfd, /dev/dri and their groups "
            + (", ".join(group_add) or "(none found: run as a user in video/render)")
        )
    elif kind == host_mod.ROCM_WSL2:
        devices.append("/dev/dxg:/dev/dxg:rwm")
        volumes[host_mod.WSL_DIR] = {"bind": host_mod.WSL_DIR, "mode": "ro"}
        env["HSA_ENABLE_DXG_DETECTION"] = "1"
        # The bridge library lives in the distribution's ROCm, not in /usr/lib/wsl: mount the
        # host's copy at the same path and put its directory on the library path.
        lib_dirs = [host_mod.WSL_LIB]
        for lib in host.rocdxg_libs:
            volumes[lib] = {"bind": lib, "mode": "ro"}
            if str(Path(lib).parent) not in lib_dirs:
                lib_dirs.append(str(Path(lib).parent))
        env["LD_LIBRARY_PATH"] = ":".join(lib_dirs)
        if options.gpus != "all":
            env["HIP_VISIBLE_DEVICES"] = options.gpus
        notes.append(
            "ROCm on WSL2: /dev/dxg and /usr/lib/wsl (read-only), HSA_ENABLE_DXG_DETECTION=1"
            + (f", the host's {', '.join(host.rocdxg_libs)}" if host.rocdxg_libs else "")
        )

    if options.command is not None:
        command = list(options.command)
    else:
        command = [
            "python",
            "-m",
            "repro",
            "run",
            "--config",
            f"{CONTAINER_CONFIG_DIR}/{Path(options.config_file).name}",
            "--as-variant",
            options.variant_id,
            "--run-dir",
            container_run_dir,
            "--fingerprint",
            CONTAINER_HOST_FP,
        ]
        for pattern in options.resolved.patterns:
            command += ["-k", pattern]
        resolved = options.resolved
        if resolved.timeout_scale:
            command += ["--timeout-scale", f"{resolved.timeout_scale:g}"]
        if resolved.rerun_failures:
            command += ["--rerun-failures", str(resolved.rerun_failures)]
        if resolved.rounds != 1:
            command += ["--rounds", str(resolved.rounds)]
        if resolved.jobs is not None:
            command += ["--jobs", str(resolved.jobs)]
        for name, value in options.properties:
            command += ["--property", f"{name}={value}"]

    name = options.name or f"repro-{options.variant_id}-{uuid.uuid4().hex[:8]}"
    labels = {LABEL_RUN: "1", LABEL_VARIANT: options.variant_id}
    kwargs: dict[str, Any] = {
        "image": options.image,
        "command": command,
        "name": name,
        "labels": labels,
        "detach": True,
        "init": True,
        "environment": env,
        "volumes": volumes,
        "network_mode": options.resolved.network,
        "read_only": True,
        "tmpfs": {"/tmp": TMPFS_OPTIONS},
        "cap_drop": ["ALL"],
        "security_opt": security_opt,
        "working_dir": "/tmp",
        "mem_limit": options.limits.mem_limit,
        "memswap_limit": options.limits.mem_limit,  # no swap beyond the limit: swapping is not a limit
        "pids_limit": options.limits.pids_limit,
    }
    if options.limits.user:
        kwargs["user"] = options.limits.user
    if devices:
        kwargs["devices"] = devices
    if device_requests:
        kwargs["device_requests"] = device_requests
    if group_add:
        kwargs["group_add"] = group_add
    if options.limits.ipc:
        kwargs["ipc_mode"] = options.limits.ipc
    if options.limits.shm_size and options.limits.ipc != "host":
        kwargs["shm_size"] = options.limits.shm_size
    if options.interactive:
        kwargs.update(stdin_open=True, tty=True)

    argv = ["docker", "run"]
    if not options.resolved.keep_container:
        argv.append("--rm")
    if options.interactive:
        argv.append("-it")
    argv += ["--init", "--name", name]
    argv += [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]
    if options.limits.user:
        argv += ["--user", options.limits.user]
    argv += [
        "--network",
        options.resolved.network,
        "--read-only",
        "--tmpfs",
        f"/tmp:{TMPFS_OPTIONS}",
        "--cap-drop",
        "ALL",
        "--memory",
        options.limits.mem_limit,
        "--memory-swap",
        options.limits.mem_limit,
        "--pids-limit",
        str(options.limits.pids_limit),
    ]
    argv += [arg for opt in security_opt for arg in ("--security-opt", opt)]
    if "ipc_mode" in kwargs:
        argv += ["--ipc", options.limits.ipc or ""]
    if "shm_size" in kwargs:
        argv += ["--shm-size", str(options.limits.shm_size)]
    argv += gpu_flags
    argv += [arg for device in devices for arg in ("--device", device)]
    argv += [arg for gid in group_add for arg in ("--group-add", gid)]
    argv += [
        arg
        for src, mount in volumes.items()
        for arg in ("-v", f"{src}:{mount['bind']}:{mount['mode']}")
    ]
    argv += [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    argv += ["-w", "/tmp", options.image, *command]
    return RunSpec(kwargs, argv, kind, tuple(notes))


# ---------------------------------------------------------------------------------------------
# host-container parity


def gpu_parity(host_fp: Fingerprint, probe: Mapping[str, Any] | None) -> tuple[bool, str]:
    """Do the GPUs the container sees (``_torch_probe`` output) match the host's fingerprint?

    Compares counts, then names (in order). Returns ``(ok, text)`` for the
    ``container.gpu_parity`` property.
    """
    # The GPUs the runner was given (the fingerprint's selection), not every GPU of the box.
    host_gpus = [g.name or g.gfx_target or "?" for g in host_fp.used_gpus]
    if probe is None:
        return (
            False,
            f"unknown: the container probe gave no answer (host has {len(host_gpus)} GPU(s))",
        )
    seen = [d.get("name") or "?" for d in probe.get("devices") or []]
    count = int(probe.get("accelerator_count") or 0)
    if count != len(host_gpus):
        return (
            False,
            f"mismatch: host has {len(host_gpus)} GPU(s) ({', '.join(host_gpus) or 'none'}), the container sees {count} ({', '.join(seen) or 'none'})",
        )
    mismatched = [
        (h, s)
        for h, s in zip(host_gpus, seen, strict=False)
        if h and s and h != s and not (h.startswith("AMD gfx") and s)
    ]
    if mismatched:
        pairs = ", ".join(f"{h} vs {s}" for h, s in mismatched)
        return False, f"mismatch: names differ ({pairs})"
    return True, f"ok: {count} GPU(s)" + (f" ({', '.join(seen)})" if seen else "")


# ---------------------------------------------------------------------------------------------
# running


@dataclass
class ContainerResult:
    """How a container ended: ``exit_code`` (None when killed by the timeout), ``timed_out``."""

    name: str
    exit_code: int | None
    timed_out: bool
    removed: bool
    duration_s: float
    container_id: str | None = None


def _pump_logs(container, out: IO[str]) -> None:
    try:
        for chunk in container.logs(stream=True, follow=True):
            out.write(chunk.decode("utf-8", errors="replace"))
            out.flush()
    except Exception:  # the container went away while streaming: the wait() decides the outcome
        return


def run_container(
    client, spec: RunSpec, timeout_s: float, keep: bool = False, out: IO[str] | None = None
) -> ContainerResult:
    """Start the container, stream its output, wait at most ``timeout_s`` seconds for the whole
    container, kill it on timeout (or Ctrl-C), and remove it unless ``keep``.

    Raises ``docker.errors.APIError``/``ImageNotFound`` when it cannot be created or started
    (exit status 125 on the CLI: GPU hook errors, a missing device) after cleaning up.
    """
    import requests

    out = out or sys.stdout
    started = time.monotonic()
    container = client.containers.create(**{k: v for k, v in spec.kwargs.items() if k != "detach"})
    name = spec.kwargs["name"]
    exit_code: int | None = None
    timed_out = False
    removed = False
    pump = None
    try:
        container.start()
        pump = threading.Thread(
            target=_pump_logs, args=(container, out), name="docker-logs", daemon=True
        )
        pump.start()
        remaining = max(1.0, timeout_s - (time.monotonic() - started))
        try:
            status = container.wait(timeout=remaining)
            exit_code = int(status.get("StatusCode", -1))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            timed_out = True
            _kill(container)
    except BaseException:
        _kill(container)
        raise
    finally:
        if pump is not None:
            pump.join(timeout=10)
        if not keep:
            removed = _remove(container)
    return ContainerResult(
        name, exit_code, timed_out, removed, time.monotonic() - started, container.id
    )


def _kill(container) -> None:
    with contextlib.suppress(Exception):  # already gone or stopped
        container.kill()
    with contextlib.suppress(Exception):
        container.wait(timeout=30)


def _remove(container) -> bool:
    for _attempt in range(3):
        try:
            container.remove(force=True)
            return True
        except Exception as exc:
            if "No such container" in str(exc) or getattr(exc, "status_code", None) == 404:
                return True
            time.sleep(1)
    return False
