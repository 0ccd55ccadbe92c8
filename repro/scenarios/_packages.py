"""Pinned extra packages for a scenario (``wandb==0.27.2``), installed once into a cache.

A scenario that needs a library at a version the interpreter does not have (issue 14: real wandb
at an affected release and at the current one, side by side) asks :func:`ensure` for a directory
holding it, then runs that part of the case in a fresh child interpreter with the directory
first on ``PYTHONPATH`` (:func:`child_env`). Two versions of one package can never live in one
interpreter, and pip cannot resolve two pins of one package in one command, so every requirement
set gets its own directory, keyed by the requirements, the interpreter (``cp311``, machine) and
the package source.

Source: ``$REPRO_WHEELHOUSE`` when set (``pip install --no-index --find-links``: offline),
otherwise the package index pip is configured with. Cache: ``$REPRO_CACHE`` when set, otherwise
``~/.cache/repro-matrix/packages``. A directory is published by an atomic rename only after pip
succeeded, so a killed install leaves no half-filled cache entry behind.

Never imports torch.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro import proctree

CACHE_VAR = "REPRO_CACHE"
WHEELHOUSE_VAR = "REPRO_WHEELHOUSE"
#: Seconds one ``pip install`` may take before it counts as failed.
INSTALL_TIMEOUT_S = 300.0
#: Per-request network timeout (seconds) and retries handed to pip, so an unreachable index fails
#: within seconds and the case is skipped instead of hitting its own timeout.
PIP_NETWORK_TIMEOUT_S = 10
_COMPLETE = "repro-packages.json"


class PackageInstallError(RuntimeError):
    """pip could not install the requirements; ``str(error)`` is pip's first error line."""


@dataclass(frozen=True)
class Installed:
    """A cache directory holding ``requirements``.

    ``path`` goes first on ``PYTHONPATH``; ``install_s`` is the seconds spent in pip during
    this call (0.0 on a cache hit); ``cached`` tells a hit from a fresh install.
    """

    path: Path
    requirements: tuple[str, ...]
    install_s: float
    cached: bool


def cache_root() -> Path:
    """``$REPRO_CACHE`` or ``~/.cache/repro-matrix/packages``."""
    configured = os.environ.get(CACHE_VAR)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "repro-matrix" / "packages"


def wheelhouse() -> str | None:
    """``$REPRO_WHEELHOUSE`` when set and non-empty, else None (use the package index)."""
    return os.environ.get(WHEELHOUSE_VAR) or None


def cache_key(requirements: Sequence[str], source: str | None = None) -> str:
    """Directory name for ``requirements``: readable prefix plus a hash of everything that
    changes what pip would install (requirements, interpreter tag, machine, source).

    >>> cache_key(["wandb==0.27.2"], None).startswith("wandb-0.27.2-cp")
    True
    """
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    identity = json.dumps(
        {
            "requirements": sorted(requirements),
            "python": tag,
            "machine": platform.machine(),
            "source": source or "index",
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9.]+", "-", "_".join(sorted(requirements))).strip("-")[:60]
    return f"{readable}-{tag}-{digest}"


def pip_command(target: Path, requirements: Sequence[str], source: str | None) -> list[str]:
    """The ``pip install --target`` command line (dependencies included)."""
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-input",
        "--disable-pip-version-check", "--no-warn-script-location",
        "--retries", "0", "--timeout", str(PIP_NETWORK_TIMEOUT_S),
        "--target", str(target),
    ]  # fmt: skip
    if source:
        command += ["--no-index", "--find-links", source]
    return command + list(requirements)


def first_error_line(output: str) -> str:
    """pip's first ``ERROR:`` line, else its last non-empty line (pip prints many warnings)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("ERROR:"):
            return line
    return lines[-1] if lines else "pip failed without output"


def ensure(requirements: Sequence[str], timeout_s: float = INSTALL_TIMEOUT_S) -> Installed:
    """Return a cache directory holding ``requirements``, installing them on a cache miss.

    Concurrent callers for the same key wait on a lock file, so pip runs once. Raises
    :class:`PackageInstallError` (pip's first error line) when pip fails or runs past
    ``timeout_s`` seconds; OSError when the cache directory cannot be written.
    """
    requirements = tuple(requirements)
    source = wheelhouse()
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / cache_key(requirements, source)
    with open(root / f"{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / _COMPLETE).is_file():
            return Installed(final, requirements, 0.0, cached=True)
        staging = root / f"{final.name}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        started = time.monotonic()
        try:
            done = proctree.run_bounded(
                pip_command(staging, requirements, source), timeout_s=timeout_s
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise PackageInstallError(
                f"pip install {' '.join(requirements)} ran past {timeout_s:g} s"
            ) from None
        elapsed = time.monotonic() - started
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise PackageInstallError(first_error_line(done.stderr + "\n" + done.stdout))
        (staging / _COMPLETE).write_text(
            json.dumps({"requirements": list(requirements), "source": source or "index"})
        )
        shutil.rmtree(final, ignore_errors=True)  # a leftover without its completion marker
        os.replace(staging, final)
        return Installed(final, requirements, elapsed, cached=False)


def child_env(installed: Installed, env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: ``os.environ``) with ``installed.path`` first on PYTHONPATH."""
    out = dict(os.environ if env is None else env)
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(installed.path), rest) if p)
    return out


def size_bytes(path: Path) -> int:
    """Total bytes of the regular files under ``path`` (what a cache entry costs on disk)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
