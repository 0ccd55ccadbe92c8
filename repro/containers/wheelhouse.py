"""Wheelhouses for offline image builds: fill one with ``pip download`` (``repro
wheelhouse``), and check before a build that it holds the pinned torch for the image's Python.
Never imports torch or the Docker SDK.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO

from repro.containers.build_settings import BuildSettings, project_requirements
from repro.errors import ConfigError, FatalError


def check_wheelhouse(settings: BuildSettings) -> None:
    """The wheelhouse must hold a torch wheel for the pin and the image's Python (checked before
    building, so the error names what is there instead of pip's "No matching distribution")."""
    if not settings.wheelhouse:
        return
    v = settings.variant
    wheels = sorted(p.name for p in settings.wheelhouse.glob("torch-*.whl"))
    if not wheels:
        raise ConfigError(
            f"wheelhouse {settings.wheelhouse}: no torch wheel",
            hint=f"repro wheelhouse {v.id} {settings.wheelhouse}",
        )
    pin_public = v.torch.split("+")[0]
    tag = "cp" + v.python.replace(".", "").rstrip("t")
    matching = [
        w
        for w in wheels
        if w.split("-")[1].split("+")[0] == pin_public
        and (v.torch == pin_public or w.split("-")[1] == v.torch)
    ]
    if not matching:
        raise ConfigError(
            f"wheelhouse {settings.wheelhouse}: no torch {v.torch} wheel (found {', '.join(wheels)})",
            hint=f"repro wheelhouse {v.id} {settings.wheelhouse}",
        )
    if not any(f"-{tag}-" in w for w in matching):
        raise ConfigError(
            f"wheelhouse {settings.wheelhouse}: torch {v.torch} only for another Python ({', '.join(matching)}), the image's Python is {v.python} ({tag})"
        )


def wheelhouse_commands(
    settings: BuildSettings, dest: Path, python: str = sys.executable, index_url: str | None = None
) -> list[list[str]]:
    """``pip download`` command lines that fill ``dest`` for an offline build of this variant.

    torch comes from the variant's index (or ``index_url``) as ``torch==<pin>+<runtime>`` so an
    index cannot substitute another build; the project's dependencies and extra packages come
    from pip's configured index. Wheels are for the image's Python (``--python-version``)."""
    v = settings.variant
    spec = (
        f"torch=={v.torch}"
        if "+" in v.torch or v.runtime == "none"
        else f"torch=={v.torch}+{v.runtime}"
    )
    common = [
        python,
        "-m",
        "pip",
        "download",
        "--dest",
        str(dest),
        "--only-binary=:all:",
        "--python-version",
        v.python.rstrip("t"),
    ]
    index = index_url or v.index_url
    torch_cmd = [*common, "--index-url", index, spec]
    deps_cmd = [*common, *project_requirements(settings.source_root), *v.extra_packages]
    return [torch_cmd, deps_cmd]


def download_wheelhouse(
    settings: BuildSettings, dest: Path, index_url: str | None = None, out: IO[str] | None = None
) -> list[str]:
    """Run :func:`wheelhouse_commands`; returns the wheel names in ``dest``. FatalError on failure.

    pip's progress goes to standard error (file descriptor 2), so standard output carries only
    what the command prints itself (``repro wheelhouse --json``)."""
    out = out or sys.stderr
    dest.mkdir(parents=True, exist_ok=True)
    for command in wheelhouse_commands(settings, dest, index_url=index_url):
        print("repro: " + " ".join(command), file=out, flush=True)
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=2)
        if done.returncode != 0:
            raise FatalError(
                f"pip download failed (exit status {done.returncode}) for {settings.variant.id}"
            )
    return sorted(p.name for p in dest.iterdir() if p.suffix == ".whl")
