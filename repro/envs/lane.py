"""The venv lane for one matrix.yaml variant: its environment (cached per pin), then ``repro
run`` with that environment's interpreter, recorded as the variant with ``variant.lane=venv``.

The runner, isolation, JUnit and signatures are the host lane's own: the environment holds the
variant's torch pin and this checkout's ``repro`` (through a ``.pth``), and ``python -m repro
run`` runs there exactly as ``nox -s repro-host`` runs in its session's venv. Nothing is
installed into the interpreter that called it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro import properties as property_names
from repro.config import Overrides, Variant
from repro.envs.cache import Env, Say, ensure_env
from repro.envs.spec import EnvSpec, Source, project_spec_fields
from repro.errors import ConfigError
from repro.model import VENV

#: The value of the ``variant.lane`` testsuite property this lane writes.
LANE = VENV


@dataclass(frozen=True)
class SourceOptions:
    """Venv-lane wheel sources beside the override cascade (``--index-url``, ``--wheelhouse``
    and ``--python`` are :class:`repro.config.Overrides`): more indexes and find-links."""

    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()


def source_for(
    index_url: str | None, wheelhouse: str | None, options: SourceOptions, what: str
) -> Source:
    """A :class:`Source` from an index URL or a wheelhouse (offline: no index). Raises
    ConfigError when the wheelhouse is not a directory (``what`` names the option)."""
    links = tuple(str(_local(link)) for link in options.find_links)
    if wheelhouse:
        house = Path(wheelhouse).expanduser().resolve()
        if not house.is_dir():
            raise ConfigError(
                f"{what} {wheelhouse}: not a directory",
                hint="make one with `repro wheelhouse VARIANT DIR`",
            )
        return Source(find_links=(str(house), *links), no_index=True)
    return Source(index_url or None, tuple(options.extra_index_urls), links)


def _local(link: str) -> str | Path:
    """A find-links directory as an absolute path (the key must not depend on the cwd); URLs
    stay as they are."""
    if "://" in link:
        return link
    path = Path(link).expanduser().resolve()
    if not path.exists():
        raise ConfigError(f"--find-links {link}: no such directory")
    return path


def spec_for_variant(
    variant: Variant,
    overrides: Overrides,
    options: SourceOptions = SourceOptions(),
    source_root: Path | None = None,
) -> EnvSpec:
    """The environment of ``variant`` with the overrides applied: ``torch==<pin>`` from the
    variant's index (or the overriding index / wheelhouse), the variant's Python, and the
    variant's ``extra_packages`` beside the project's requirements."""
    from repro.containers.build_settings import SOURCE_ROOT

    effective = overrides.apply(variant)
    source = source_for(
        effective.index_url, overrides.values.get("wheelhouse"), options, "wheelhouse"
    )
    project = project_spec_fields(Path(source_root or SOURCE_ROOT).resolve())
    project["project_requirements"] = (
        *project["project_requirements"],  # type: ignore[misc]
        *effective.extra_packages,
    )
    return EnvSpec(
        python=effective.python,
        pinned=(f"torch=={effective.torch}",),
        source=source,
        **project,  # type: ignore[arg-type]
    )


#: PCI vendor id of NVIDIA and the PCI display classes (0x0300 VGA, 0x0302 3D controller).
_NVIDIA_PCI_VENDOR = "0x10de"
_DISPLAY_CLASSES = ("0x0300", "0x0302")


def _nvidia_pci_devices(root: Path) -> list[str]:
    """NVIDIA display devices on the PCI bus (``/sys/bus/pci/devices/*/vendor`` and
    ``class``): there even when the kernel module failed to load and no device node exists."""
    found = []
    for device in sorted((root / "sys/bus/pci/devices").glob("*")):
        try:
            vendor = (device / "vendor").read_text().strip().lower()
            klass = (device / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor == _NVIDIA_PCI_VENDOR and klass[:6] in _DISPLAY_CLASSES:
            found.append(device.name)
    return found


def missing_accelerator(accelerator: str, root: str | os.PathLike = "/") -> str | None:
    """Why this host has no GPU of a variant's ``accelerator`` (cuda, rocm), else None (also
    for cpu). Decided from device nodes by :func:`repro.host.hostkind.detect` (no driver
    query, no Docker daemon): cuda needs ``/dev/nvidia*`` or ``/proc/driver/nvidia/version``,
    or WSL2's ``/dev/dxg`` with CUDA libraries, or an NVIDIA display device on the PCI bus (a
    driver that did not load leaves no device node: that host must stay red); rocm needs
    ``/dev/kfd``, or ROCm on WSL2 (an AMD display device alone may be an APU's, which ROCm
    does not support). A host that has the GPU keeps its cuda/rocm cases red when torch sees
    none (a driver too old for the wheel: field report F3-8); only a host without one skips
    those cases."""
    from repro.host import hostkind
    from repro.host.smi import DriverQuery

    if accelerator not in ("cuda", "rocm"):
        return None
    host = hostkind.detect(
        root,
        daemon=hostkind.DaemonInfo.unreachable("not asked: the venv lane runs no container"),
        nvidia_query=DriverQuery("none", False, error="not asked: device nodes decide"),
    )
    if accelerator == "cuda" and (
        host.kind in (hostkind.NVIDIA, hostkind.NVIDIA_WSL2)
        or host.nvidia_devices
        or _nvidia_pci_devices(Path(root))
    ):
        return None
    if accelerator == "rocm" and host.kind in (hostkind.ROCM, hostkind.ROCM_WSL2):
        return None
    vendor = "NVIDIA" if accelerator == "cuda" else "AMD"
    return f"this host has no {vendor} GPU (host kind {host.kind})"


def run_command(
    env: Env, variant_id: str, config: str, run_args: Sequence[str], properties: Sequence[str] = ()
) -> list[str]:
    """``<env python> -m repro run --config C --as-variant ID --property variant.lane=venv ...``
    followed by ``run_args`` (``-k``, ``--results``...; the runner's own options)."""
    command = [env.python, "-m", "repro", "run", "--config", config, "--as-variant", variant_id]
    lane_props = (
        property_names.assignment(property_names.LANE, LANE),
        property_names.assignment(property_names.ENV_KEY, env.key),
    )
    for prop in (*lane_props, *properties):
        command += ["--property", prop]
    return [*command, *run_args]


def run_in_env(command: Sequence[str]) -> int:
    """Run ``command`` (from :func:`run_command`) with the caller's terminal; its exit status."""
    return subprocess.run(list(command), stdin=subprocess.DEVNULL).returncode


def prepare(spec: EnvSpec, say: Say, root: Path | None = None) -> Env:
    """:func:`repro.envs.cache.ensure_env` with a line saying whether it was reused."""
    env = ensure_env(spec, root=root, say=say)
    how = "reused" if env.reused else "made"
    pins = ", ".join(f"{k} {v}" for k, v in env.versions.items()) or " ".join(spec.pinned)
    say(f"environment {env.key} {how} in {env.seconds:.1f} s: {pins} ({env.path})")
    return env
