"""Which builder makes the images: BuildKit through the Docker CLI, or the SDK's classic builder.

BuildKit keeps a package cache between builds (``RUN --mount=type=cache`` in
``docker/Dockerfile``, one cache for every variant: :data:`PIP_CACHE_ID`), so the second variant
of a torch pin reuses the wheels the first one downloaded; the classic builder downloads and
unpacks torch and its CUDA wheels again for every variant. Facts this module encodes:

- The classic builder is deprecated since Engine 23.0, where BuildKit became the default on
  Linux and ``docker build`` an alias of ``docker buildx build`` (moby/moby v23.0.0 release
  notes; docker/cli docs/deprecated.md "Legacy builder fallback").
- A Docker CLI >= 23 with ``DOCKER_BUILDKIT=1`` but no buildx plugin fails with "ERROR: BuildKit
  is enabled but the buildx component is missing or broken" (renovatebot/docker-renovate-full#1623,
  labgrid-project/labgrid#1635); a CLI 18.09-22.x builds with the BuildKit client it carries
  (``DOCKER_BUILDKIT=1 docker build``), against an Engine >= 18.09.
- ``RUN --mount`` is stable in the Dockerfile frontend built into BuildKit since Docker 20.10
  (Dockerfile 1.2), so no ``# syntax=`` line (which would pull ``docker/dockerfile`` from a
  registry) is needed; the classic builder refuses it ("the --mount option requires BuildKit",
  Tencent/WeKnora#2285): :func:`classic_dockerfile` removes the mounts for it.
- ``docker buildx build --builder default`` uses the Engine's own BuildKit (the ``docker``
  driver), which sees the Engine's local images: a base image loaded offline is found there; a
  ``docker-container`` builder would try to pull it.

:func:`choose` picks one (``auto``: BuildKit when the CLI can use it, else classic, saying why);
:func:`build_with_cli` runs a BuildKit build and returns the image id. Never imports torch or
the Docker SDK.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from repro.errors import ConfigError, FatalError

AUTO, BUILDKIT, CLASSIC = "auto", "buildkit", "classic"
#: The values of ``--builder`` (and ``$REPRO_BUILDER``).
BUILDERS = (AUTO, BUILDKIT, CLASSIC)
ENV_VAR = "REPRO_BUILDER"
#: The build arg that turns pip's cache on in docker/Dockerfile (set only for BuildKit builds:
#: under the classic builder the cache would stay in the deps stage's layers).
PIP_CACHE_ARG = "PIP_CACHE"
#: The ``id`` of the cache mount in docker/Dockerfile: one pip cache for every variant.
PIP_CACHE_ID = "repro-matrix-pip"
#: First CLI release where ``docker build`` is buildx (and DOCKER_BUILDKIT=1 needs the plugin).
CLI_BUILDX_ONLY = (23, 0)
#: First Engine/CLI release with BuildKit.
BUILDKIT_SINCE = (18, 9)
_PROBE_TIMEOUT_S = 30.0
_MOUNT = re.compile(r"^(\s*RUN\s+)((?:--mount=\S+\s+(?:\\\n\s*)?)+)", re.MULTILINE)
#: A line a step's command printed, as BuildKit's plain progress shows it: "#18 1.574 text".
_STEP_OUTPUT = re.compile(r"^#\d+ \d+\.\d+ ")

#: ``subprocess.run``-compatible runner for the CLI probes (tests pass the real one).
Runner = Callable[..., subprocess.CompletedProcess]


@dataclass(frozen=True)
class Builder:
    """``kind``: ``buildkit`` | ``classic``; ``argv``: the build command before its options
    (empty for classic: the SDK builds); ``env``: extra environment for that command;
    ``reason``: one line saying why this builder (shown before a build)."""

    kind: str
    reason: str
    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def classic_dockerfile(text: str) -> str:
    """docker/Dockerfile for the classic builder: every ``RUN --mount=...`` option removed (the
    classic builder rejects them; pip's cache then stays off, :data:`PIP_CACHE_ARG`)."""
    return _MOUNT.sub(lambda m: m.group(1), text)


def _version(text: str) -> tuple[int, ...] | None:
    """``(major, minor)`` of a Docker version string ("28.2.2", "20.10.24+dfsg1", "v0.23.0")."""
    match = re.match(r"v?(\d+)\.(\d+)", text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def _probe(argv: Sequence[str], run: Runner) -> subprocess.CompletedProcess | None:
    try:
        return run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def choose(wanted: str = AUTO, docker: str = "docker", run: Runner = subprocess.run) -> Builder:
    """The builder for ``wanted`` (:data:`BUILDERS`) on this machine.

    ``auto``: ``docker buildx build --builder default --load`` when the buildx plugin answers,
    else ``DOCKER_BUILDKIT=1 docker build`` when both the CLI (18.09-22.x) and the Engine
    (>= 18.09) have BuildKit, else the SDK's classic builder with the reason. ``buildkit`` raises
    ConfigError (exit 2) naming what is missing; ``classic`` never probes. ``docker``: the CLI
    to run (it must reach the daemon the SDK talks to: both read ``DOCKER_HOST``)."""
    if wanted not in BUILDERS:
        raise ConfigError(
            f"--builder (or ${ENV_VAR}): expected one of {', '.join(BUILDERS)}, got {wanted!r}"
        )
    if wanted == CLASSIC:
        return Builder(CLASSIC, "--builder classic")
    buildx = _probe([docker, "buildx", "version"], run)
    if buildx is not None and buildx.returncode == 0:
        return Builder(
            BUILDKIT,
            f"BuildKit: docker buildx ({' '.join(buildx.stdout.split()[:2])})",
            (docker, "buildx", "build", "--builder", "default", "--load"),
        )
    versions = _probe(
        [docker, "version", "--format", "{{.Client.Version}} {{.Server.Version}}"], run
    )
    if versions is None:
        why = f"no Docker CLI ({docker}) to run BuildKit builds"
    else:
        parts = versions.stdout.split()
        cli = _version(parts[0]) if parts else None
        engine = _version(parts[1]) if len(parts) > 1 else None
        if cli is None:
            why = f"`{docker} version` gave no client version: {versions.stderr.strip()[:200]}"
        elif cli >= CLI_BUILDX_ONLY:
            why = (
                f"the Docker CLI {parts[0]} builds with BuildKit only through the buildx plugin, "
                "which is not installed (https://docs.docker.com/go/buildx/)"
            )
        elif cli < BUILDKIT_SINCE:
            why = f"the Docker CLI {parts[0]} predates BuildKit (18.09)"
        elif engine is None:
            said = (versions.stderr.strip().splitlines() or ["no server version"])[-1]
            why = f"`{docker} version` reached no Docker Engine: {said[:200]}"
        elif engine < BUILDKIT_SINCE:
            why = f"the Docker Engine {parts[1]} predates BuildKit (18.09)"
        else:
            return Builder(
                BUILDKIT,
                f"BuildKit: DOCKER_BUILDKIT=1 docker build (CLI {parts[0]}, Engine {parts[1]})",
                (docker, "build"),
                {"DOCKER_BUILDKIT": "1"},
            )
    if wanted == BUILDKIT:
        raise ConfigError(
            f"--builder buildkit: {why}",
            hint="install the buildx plugin (Debian/Ubuntu: docker-buildx-plugin or docker-buildx), "
            "or use --builder classic",
        )
    return Builder(CLASSIC, f"classic builder: {why}")


def build_with_cli(
    builder: Builder,
    context_tar: IO[bytes],
    build_args: Mapping[str, str],
    out: IO[str],
    *,
    network: str | None = None,
    no_cache: bool = False,
    timeout_s: float = 6 * 3600,
) -> str:
    """Build the context tar (Dockerfile at its root, read from stdin) with ``builder``'s
    command; echo the plain progress to ``out``; return the image id (``--iidfile``).

    ``network``: ``none`` (wheelhouse builds) or ``host``; ``timeout_s``: seconds before the
    build's process group is killed. Raises FatalError with the failing line."""
    with tempfile.TemporaryDirectory(prefix="repro-build-") as tmp:
        iidfile = Path(tmp) / "iid"
        argv = [*builder.argv, "--progress", "plain", "--iidfile", str(iidfile)]
        for key, value in build_args.items():
            argv += ["--build-arg", f"{key}={value}"]
        if network:
            argv += ["--network", network]
        if no_cache:
            argv.append("--no-cache")
        argv.append("-")
        try:
            proc = subprocess.Popen(
                argv,
                stdin=context_tar,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={**os.environ, **builder.env},
                start_new_session=True,
            )
        except OSError as exc:
            raise FatalError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
        killer = threading.Timer(timeout_s, lambda: _kill_group(proc.pid))
        killer.start()
        last: list[str] = []
        try:
            for raw in proc.stdout:
                line = raw.decode("utf-8", errors="replace")
                out.write(line)
                if line.strip():
                    last = (last + [line.strip()])[-40:]
            out.flush()
            code = proc.wait()
        finally:
            killer.cancel()
            proc.stdout.close()
        if code != 0:
            why = failing_line(last) or f"exit status {code}"
            raise FatalError(f"image build failed ({' '.join(builder.argv[:3])}): {why}"[:600])
        image_id = iidfile.read_text().strip() if iidfile.is_file() else ""
    if not image_id:
        raise FatalError(f"image build failed: {' '.join(builder.argv[:3])} wrote no image id")
    return image_id


def failing_line(lines: Sequence[str]) -> str | None:
    """The root cause in the tail of a BuildKit ``--progress plain`` log: the last line a step's
    own command printed (``#18 1.574 ERROR: No matching distribution found for torch==...``,
    pytorch/serve#1673) that starts with ``repro:``, ``ERROR`` or ``error``, without its step
    prefix; else BuildKit's own last ``ERROR:`` line ("failed to solve: process ... did not
    complete successfully", google/gemma_pytorch#53); else the last line; None for no lines."""
    steps = [_STEP_OUTPUT.sub("", ln) for ln in lines if _STEP_OUTPUT.match(ln)]
    for candidates in (steps, lines):
        for line in reversed(candidates):
            if line.startswith(("repro:", "ERROR", "error")):
                return line
    return lines[-1] if lines else None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
