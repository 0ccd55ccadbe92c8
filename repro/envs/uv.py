"""uv for the venv lane: where the binary is, the command lines (pure), and what a failed
install means.

uv (https://docs.astral.sh/uv/) makes an environment with the torch CPU wheel in 5.2 s from a
cold cache and 1.0 s from a warm one, against 21.8 s for ``python -m venv`` + pip (issue 24,
measured on this project's 2-core host). It comes from the ``uv`` package on PyPI (the
``venv`` extra of repro-matrix), whose ``find_uv_bin()`` names the binary it ships.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from repro.envs.spec import Source
from repro.errors import FatalError

#: Why an install failed, in the words a bisect step reports (``infra.*`` are never a verdict).
NO_VERSION = "infra.no_such_version"
NO_WHEEL_FOR_PYTHON = "infra.no_wheel_for_python"
NO_PYTHON = "infra.python_unavailable"
INDEX_UNREACHABLE = "infra.index_unreachable"
INSTALL_FAILED = "infra.install_failed"

#: (uv's message pattern -> reason), first match wins. The messages are uv 0.5-0.13's resolver
#: hints ("has no wheels with a matching Python ABI tag", "we can conclude that ... cannot be
#: used", "No interpreter found for Python 3.14"); anything else is :data:`INSTALL_FAILED`.
_FAILURES = (
    (
        re.compile(
            r"No interpreter found|No download found for request|python-build-standalone|"
            r"Failed to download .*cpython-"
        ),
        NO_PYTHON,
    ),
    (
        re.compile(
            r"no wheels with a matching (?:Python (?:ABI|implementation) )?tag|"
            r"only has wheels with the following Python|"
            r"has no wheels with a matching platform tag|"
            r"requires Python [<>=!~]|Python>=|the current Python version"
        ),
        NO_WHEEL_FOR_PYTHON,
    ),
    (
        re.compile(
            r"Failed to fetch|error sending request|dns error|Connection refused|"
            r"network (?:is )?(?:unreachable|disabled)|Could not connect"
        ),
        INDEX_UNREACHABLE,
    ),
    (
        re.compile(
            r"there is no version of|was not found in the (?:package registry|provided package locations|cache)|"
            r"Because only .* is available|no versions of"
        ),
        NO_VERSION,
    ),
)


class InstallFailed(FatalError):
    """An environment could not be made. ``reason`` is one of the ``infra.*`` names above;
    ``detail`` the last lines uv printed. Exit 3 at the command line; a bisect step that hits
    it is skipped with the reason, never judged."""

    def __init__(self, message: str, reason: str, detail: str = ""):
        super().__init__(message)
        self.reason = reason
        self.detail = detail


def classify_failure(output: str) -> str:
    """The ``infra.*`` reason for uv's error output (see :data:`_FAILURES`)."""
    for pattern, reason in _FAILURES:
        if pattern.search(output):
            return reason
    return INSTALL_FAILED


def find_uv() -> str:
    """Path of the uv binary: ``$REPRO_UV``, the ``uv`` package's, else ``uv`` on PATH.
    Raises FatalError (with the install hint) when there is none."""
    explicit = os.environ.get("REPRO_UV")
    if explicit:
        return explicit
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    found = shutil.which("uv")
    if found:
        return found
    raise FatalError(
        "the venv lane needs uv, and none was found",
        hint="pip install 'repro-matrix[venv]' (or pip install uv)",
    )


@dataclass(frozen=True)
class Commands:
    """The uv command lines that make one environment, in order."""

    venv: list[str]
    pinned: list[str]
    project: list[str] | None


def source_args(source: Source, *, pinned: bool) -> list[str]:
    """uv pip arguments for ``source``. The project's requirements (``pinned=False``) come
    from uv's default index plus the find-links, or only the wheelhouse when offline."""
    args: list[str] = []
    if source.no_index:
        args.append("--no-index")
    elif pinned:
        if source.index_url:
            args += ["--index-url", source.index_url]
        for url in source.extra_index_urls:
            args += ["--extra-index-url", url]
    for link in source.find_links:
        args += ["--find-links", link]
    return args


def commands(
    uv: str, python: str, dest: str, pinned: list[str], source: Source, project: list[str]
) -> Commands:
    """``uv venv`` (uv finds ``python`` or, where the host lacks it, downloads a managed
    build unless offline), ``uv pip install`` of the pinned requirements from their source, then
    of the project's requirements (None when there are none)."""
    offline = ["--offline"] if source.no_index else []
    venv = [uv, "venv", "--quiet", "--python", python, *offline, dest]
    interpreter = python_in(dest)
    install = [uv, "pip", "install", "--quiet", "--python", interpreter, *offline]
    pinned_cmd = [*install, *source_args(source, pinned=True), *pinned]
    project_cmd = [*install, *source_args(source, pinned=False), *project] if project else None
    return Commands(venv, pinned_cmd, project_cmd)


def python_in(env_dir: str) -> str:
    """The interpreter of the environment at ``env_dir`` (POSIX layout; Windows: Scripts)."""
    if os.name == "nt":
        return os.path.join(env_dir, "Scripts", "python.exe")
    return os.path.join(env_dir, "bin", "python")
