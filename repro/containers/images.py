"""Build one image per variant from ``docker/Dockerfile`` (BuildKit through the Docker CLI, or the
docker SDK's classic builder: ``repro.containers.builder``), tag, inspect, reuse.

``repro-matrix:<variant-id>`` is built from a context this module assembles (Dockerfile, the
project's requirements, the checkout's ``repro`` package, an optional wheelhouse), so the
harness inside the image is the same version as the host's. An image whose
``io.repro-matrix.context-digest`` label matches the context is reused without a build; a
changed ``repro/`` rebuilds only the last layers (torch stays cached below it).

After a build the image is probed (``python -m repro.host.torch_probe`` in a throwaway container
with no network): the versions really installed (torch, CUDA/HIP, cuDNN, NCCL, Python) are
checked against the pin (an index silently handing out another build is a known failure, e.g. a
CUDA wheel from PyPI instead of ``+cpu``) and recorded as ``io.repro-matrix.installed.*`` labels.

The effective settings (overrides applied) are ``repro.containers.build_settings``; offline
wheelhouses are ``repro.containers.wheelhouse``. Never imports torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from repro.config import Variant
from repro.containers import builder as builder_mod
from repro.containers.build_settings import BuildSettings, project_requirements, source_version
from repro.containers.wheelhouse import check_wheelhouse
from repro.errors import FatalError
from repro.host import docker_sdk
from repro.model import Runtime

LABEL = "io.repro-matrix"
LABEL_DIGEST = f"{LABEL}.context-digest"
INSTALLED = f"{LABEL}.installed"
USER_UID = 10001
_BUILD_TIMEOUT_S = 6 * 3600
_SOURCE_SUFFIXES = {".py", ".j2", ".yaml", ".yml", ".json", ".txt", ".toml"}
_MTIME = 946684800  # fixed tar mtimes: the context digest depends on content only


# ---------------------------------------------------------------------------------------------
# the build context


@dataclass(frozen=True)
class Entry:
    """One file of the build context: its name in the context and its bytes or host path."""

    name: str
    data: bytes | None = None
    path: Path | None = None
    by_stat: bool = False  # wheels: digest by name/size/mtime, not content (large, immutable)


def dockerfile_path(source_root: Path) -> Path:
    path = source_root / "docker" / "Dockerfile"
    if not path.is_file():
        raise FatalError(
            f"{path}: not found; images are built from a repro-matrix checkout (docker/Dockerfile)"
        )
    return path


def context_entries(settings: BuildSettings) -> list[Entry]:
    """Every file of the build context, in a stable order."""
    root = settings.source_root
    requirements = "\n".join(project_requirements(root)) + "\n"
    entries = [
        Entry("Dockerfile", path=dockerfile_path(root)),
        Entry("requirements.txt", data=requirements.encode()),
        Entry("src/pyproject.toml", path=root / "pyproject.toml"),
        Entry("wheelhouse/.keep", data=b""),
    ]
    package = root / "repro"
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in _SOURCE_SUFFIXES:
            entries.append(Entry(f"src/{path.relative_to(root).as_posix()}", path=path))
    if settings.wheelhouse:
        for path in sorted(settings.wheelhouse.iterdir()):
            if path.is_file() and path.suffix in (".whl", ".gz", ".zip"):
                entries.append(Entry(f"wheelhouse/{path.name}", path=path, by_stat=True))
    return entries


def for_classic_builder(entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` with the Dockerfile's ``RUN --mount`` options removed
    (:func:`repro.containers.builder.classic_dockerfile`); the digest stays that of the
    original context (the image is the same whichever builder makes it)."""
    out = []
    for entry in entries:
        if entry.name == "Dockerfile":
            text = entry.data.decode() if entry.data is not None else entry.path.read_text()
            entry = Entry("Dockerfile", data=builder_mod.classic_dockerfile(text).encode())
        out.append(entry)
    return out


def build_args(settings: BuildSettings, digest: str = "") -> dict[str, str]:
    v = settings.variant
    return {
        "BASE_IMAGE": v.base_image,
        "PYTHON_VERSION": v.python,
        "TORCH_SPEC": settings.torch_spec,
        "TORCH_INDEX_URL": v.index_url,
        "TORCH_SOURCE": "wheelhouse" if settings.wheelhouse else v.index_url,
        "EXTRA_PACKAGES": " ".join(v.extra_packages),
        "REPRO_VERSION": source_version(settings.source_root),
        "VARIANT_ID": v.id,
        "RUNTIME": v.runtime,
        "ACCELERATOR": v.accelerator,
        "TORCH_PIN": v.torch,
        "USER_UID": str(USER_UID),
        "CONTEXT_DIGEST": digest,
    }


def context_digest(entries: Sequence[Entry], args: Mapping[str, str]) -> str:
    """sha256 over the context (file contents; wheels by name, size and mtime) and build args."""
    digest = hashlib.sha256()
    for entry in entries:
        digest.update(entry.name.encode() + b"\0")
        if entry.data is not None:
            digest.update(hashlib.sha256(entry.data).digest())
        elif entry.by_stat:
            stat = entry.path.stat()
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
        else:
            digest.update(hashlib.sha256(entry.path.read_bytes()).digest())
    for key in sorted(args):
        if key != "CONTEXT_DIGEST":
            digest.update(f"{key}={args[key]}\0".encode())
    return "sha256:" + digest.hexdigest()


def write_context_tar(entries: Sequence[Entry], fileobj: IO[bytes]) -> None:
    """The context as an uncompressed tar (mode 0644, uid/gid 0, fixed mtimes)."""
    with tarfile.open(fileobj=fileobj, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.mode, info.mtime, info.uid, info.gid = 0o644, _MTIME, 0, 0
            if entry.data is not None:
                info.size = len(entry.data)
                tar.addfile(info, io.BytesIO(entry.data))
            else:
                info.size = entry.path.stat().st_size
                with open(entry.path, "rb") as handle:
                    tar.addfile(info, handle)
    fileobj.seek(0)


def write_context_dir(settings: BuildSettings, dest: Path) -> dict[str, str]:
    """Write the build context to ``dest`` (for a manual ``docker build``); returns the build args."""
    entries = context_entries(settings)
    args = build_args(settings)
    args["CONTEXT_DIGEST"] = context_digest(entries, args)
    for entry in entries:
        target = dest / entry.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(entry.data if entry.data is not None else entry.path.read_bytes())
    (dest / "build-args.json").write_text(json.dumps(args, indent=2) + "\n")
    return args


# ---------------------------------------------------------------------------------------------
# installed versions


def installed_from_probe(probe: Mapping[str, Any]) -> dict[str, str]:
    """The versions really installed in an image, from ``_torch_probe``'s JSON."""
    values = {
        "torch": probe.get("torch"),
        "cuda": probe.get("cuda"),
        "hip": probe.get("hip"),
        "cudnn": probe.get("cudnn"),
        "nccl": probe.get("nccl"),
        "python": probe.get("python"),
        "runtime": Runtime.from_json(probe).tag if probe.get("torch") else None,
    }
    return {k: str(v) for k, v in values.items() if v is not None}


def check_installed(
    variant: Variant, installed: Mapping[str, str], torch_error: str | None = None
) -> list[str]:
    """Problems where the image's torch is not the pinned build: another version, another
    runtime (a CUDA wheel where ``+cpu`` was pinned, a cu126 build for cu128), no torch at all,
    or another Python than the variant's."""
    problems = []
    got = installed.get("torch")
    if not got:
        return [f"torch is not importable in the image ({torch_error or 'no torch'})"]
    pin = variant.torch
    same = got == pin if "+" in pin else got.split("+")[0] == pin
    if not same:
        problems.append(f"torch {got} is installed but the variant pins {pin}")
    runtime = installed.get("runtime")
    if runtime and runtime != variant.runtime:
        problems.append(
            f"the installed torch is a {runtime} build (cuda {installed.get('cuda') or '-'}, hip {installed.get('hip') or '-'}) but the variant is {variant.runtime}: the index handed out another build"
        )
    python = installed.get("python", "")
    if python and ".".join(python.split(".")[:2]) != variant.python.rstrip("t"):
        problems.append(f"the image's Python is {python}, the variant says {variant.python}")
    return problems


def installed_labels(installed: Mapping[str, str]) -> dict[str, str]:
    return {f"{INSTALLED}.{k}": v for k, v in sorted(installed.items())}


# ---------------------------------------------------------------------------------------------
# talking to docker


@dataclass
class ImageRecord:
    """A built (or reused) image: tag, id, labels, installed versions, whether it was built now."""

    tag: str
    id: str
    labels: dict[str, str]
    installed: dict[str, str]
    built: bool
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def client(timeout_s: int = _BUILD_TIMEOUT_S):
    """A docker SDK client, or FatalError with one line when the daemon is unreachable."""
    try:
        docker = docker_sdk.import_sdk()
    except docker_sdk.SdkMissing as exc:
        raise FatalError(str(exc), hint=docker_sdk.INSTALL_HINT) from None
    try:
        result = docker.from_env(timeout=timeout_s)
        result.ping()
    except Exception as exc:
        raise FatalError(
            f"docker daemon unreachable: {' '.join(str(exc).split())[:300]}",
            hint="start dockerd or Docker Desktop; `docker info` must work for this user",
        ) from None
    return result


def _installed_from_labels(labels: Mapping[str, str]) -> dict[str, str]:
    prefix = INSTALLED + "."
    return {k[len(prefix) :]: v for k, v in labels.items() if k.startswith(prefix)}


def find_image(docker_client, tag: str):
    """The image with this tag, or None."""
    import docker

    try:
        return docker_client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def up_to_date(image, digest: str) -> bool:
    labels = (image.labels or {}) if image is not None else {}
    return labels.get(LABEL_DIGEST) == digest and f"{INSTALLED}.torch" in labels


def _ensure_base(docker_client, base_image: str, out: IO[str]) -> None:
    import docker

    try:
        docker_client.images.get(base_image)
        return
    except docker.errors.ImageNotFound:
        pass
    print(f"repro: base image {base_image} is not here; pulling it", file=out, flush=True)
    try:
        docker_client.images.pull(base_image)
    except Exception as exc:
        raise FatalError(
            f"base image {base_image} is not available locally and cannot be pulled ({' '.join(str(exc).split())[:200]})",
            hint="pull or load it where a registry is reachable, or point REPRO_BASE_IMAGE/--base-image at a local image (see `docker images`)",
        ) from None


def _stream_build(docker_client, out: IO[str], **kwargs) -> str:
    """Run a build, echo its output, return the image id; FatalError with the failing line."""
    image_id = None
    last_lines: list[str] = []
    for chunk in docker_client.api.build(decode=True, **kwargs):
        if "stream" in chunk:
            text = chunk["stream"]
            out.write(text)
            out.flush()
            last_lines = (last_lines + [ln for ln in text.splitlines() if ln.strip()])[-20:]
            match = re.search(r"Successfully built ([0-9a-f]+)", text)
            if match:
                image_id = match.group(1)
        elif "status" in chunk:
            out.write(
                chunk["status"]
                + (" " + chunk.get("progress", "") if chunk.get("progress") else "")
                + "\n"
            )
        elif "aux" in chunk and isinstance(chunk["aux"], dict) and chunk["aux"].get("ID"):
            image_id = chunk["aux"]["ID"]
        elif "error" in chunk:
            message = " ".join(str(chunk["error"]).split())
            why = next(
                (
                    ln.strip()
                    for ln in reversed(last_lines)
                    if ln.strip().startswith(("repro:", "ERROR", "error"))
                ),
                None,
            )
            raise FatalError(f"image build failed: {why + ' | ' if why else ''}{message}"[:600])
    if image_id is None:
        raise FatalError("image build failed: the daemon reported no image id")
    return image_id


def probe_image(docker_client, image: str) -> dict[str, Any]:
    """Run ``python -m repro.host.torch_probe`` in a throwaway container (no network, read-only)."""
    from repro.host.torch_probe import last_json_object

    try:
        output = docker_client.containers.run(
            image,
            ["python", "-m", "repro.host.torch_probe"],
            remove=True,
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": "rw,exec,nosuid,nodev"},
            environment={"HOME": "/tmp"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=True,
            stdout=True,
            stderr=False,
        )
    except Exception as exc:
        raise FatalError(
            f"cannot probe image {image}: {' '.join(str(exc).split())[:300]}"
        ) from None
    result = last_json_object(output.decode("utf-8", errors="replace"))
    if result is None:
        raise FatalError(f"image {image}: python -m repro.host.torch_probe printed no JSON")
    return result


def _remove_quietly(docker_client, image_id: str) -> None:
    """Remove the image a rebuild replaced (and its own untagged parents) once no tag names it
    any more; keep it when another tag or a container still uses it."""
    with contextlib.suppress(Exception):
        if not docker_client.images.get(image_id).tags:
            docker_client.images.remove(image_id, noprune=False)


def _stamp(docker_client, image_id: str, labels: Mapping[str, str], tag: str, out: IO[str]) -> str:
    """A label-only layer on top of ``image_id`` (installed versions), tagged ``tag``."""
    lines = [f"FROM {image_id}"]
    lines += [f"LABEL {json.dumps(k)}={json.dumps(v)}" for k, v in labels.items()]
    dockerfile = ("\n".join(lines) + "\n").encode()
    buffer = io.BytesIO()
    write_context_tar([Entry("Dockerfile", data=dockerfile)], buffer)
    return _stream_build(
        docker_client,
        io.StringIO(),
        fileobj=buffer,
        custom_context=True,
        tag=tag,
        rm=True,
        forcerm=True,
        pull=False,
    )


def ensure_image(
    docker_client,
    settings: BuildSettings,
    out: IO[str] | None = None,
    force: bool = False,
    no_cache: bool = False,
    builder: builder_mod.Builder | str = builder_mod.AUTO,
    network: str | None = None,
) -> ImageRecord:
    """Build ``settings.tag`` unless an image with the same context digest exists; probe and
    check it; tag it. ``builder``: a :class:`repro.containers.builder.Builder` or a
    ``--builder`` value, chosen only when a build is needed (BuildKit builds share one pip
    cache); ``network``: the build's network (``host`` for an index on this machine; a
    wheelhouse build always has none). Raises FatalError (build failure, pin mismatch) or
    ConfigError."""
    out = out or sys.stderr
    started = time.monotonic()
    entries = context_entries(settings)
    args = build_args(settings)
    digest = context_digest(entries, args)
    args["CONTEXT_DIGEST"] = digest
    existing = find_image(docker_client, settings.tag)
    if not force and not no_cache and up_to_date(existing, digest):
        print(
            f"repro: image {settings.tag} is up to date ({existing.id[:19]}), not rebuilt",
            file=out,
            flush=True,
        )
        labels = dict(existing.labels or {})
        return ImageRecord(
            settings.tag,
            existing.id,
            labels,
            _installed_from_labels(labels),
            False,
            time.monotonic() - started,
        )

    check_wheelhouse(settings)
    if not isinstance(builder, builder_mod.Builder):
        builder = builder_mod.choose(builder)
    _ensure_base(docker_client, settings.variant.base_image, out)
    print(
        f"repro: building {settings.tag} from {settings.variant.base_image} ({builder.reason})",
        file=out,
        flush=True,
    )
    network = "none" if settings.wheelhouse else network
    with tempfile.TemporaryFile() as context:
        if builder.kind == builder_mod.BUILDKIT:
            write_context_tar(entries, context)
            built_id = builder_mod.build_with_cli(
                builder,
                context,
                {**args, builder_mod.PIP_CACHE_ARG: "on"},
                out,
                network=network,
                no_cache=no_cache,
                timeout_s=_BUILD_TIMEOUT_S,
            )
        else:
            write_context_tar(for_classic_builder(entries), context)
            built_id = _stream_build(
                docker_client,
                out,
                fileobj=context,
                custom_context=True,
                buildargs=args,
                rm=True,
                forcerm=True,
                pull=False,
                nocache=no_cache,
                network_mode=network,
            )
    probe = probe_image(docker_client, built_id)
    installed = installed_from_probe(probe)
    problems = check_installed(settings.variant, installed, probe.get("torch_error"))
    if problems:
        raise FatalError(
            f"image {built_id[:19]} for {settings.variant.id}: " + "; ".join(problems),
            hint="check the index URL / wheelhouse: the pin must resolve to the runtime's own build",
        )
    final_id = _stamp(docker_client, built_id, installed_labels(installed), settings.tag, out)
    image = docker_client.images.get(final_id)
    if existing is not None and existing.id != image.id:
        _remove_quietly(docker_client, existing.id)
    seconds = time.monotonic() - started
    print(
        f"repro: built {settings.tag} ({image.id[:19]}) in {seconds:.1f} s: "
        + ", ".join(f"{k} {v}" for k, v in installed.items()),
        file=out,
        flush=True,
    )
    return ImageRecord(settings.tag, image.id, dict(image.labels or {}), installed, True, seconds)
