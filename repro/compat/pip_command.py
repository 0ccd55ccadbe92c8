"""Read the torch build a ``pip install`` command asks for: version and runtime tag.

``pip install torch==2.7.0+cu121`` -> (2.7.0, cu121); ``pip install torch==2.8.0 --index-url
https://download.pytorch.org/whl/cu126`` -> (2.8.0, cu126); a plain ``torch==2.8.0`` -> (2.8.0,
None: PyPI's default build). Requirements are parsed with ``packaging`` (PEP 508), the local
version label (``+cu121``) with :class:`packaging.version.Version`. Pure; never runs pip.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from repro.errors import ConfigError

#: A runtime tag as the wheel index spells it: cu121, rocm6.4, rocm6.2.4, cpu.
RUNTIME_RE = re.compile(r"^(cu\d{3}|rocm\d+(?:\.\d+){1,2}|cpu)$")
_INDEX_RUNTIME_RE = re.compile(r"/whl/(?:(?:test|nightly)/)?(cu\d{3}|rocm\d+(?:\.\d+){1,2}|cpu)/?$")
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url")
#: pip options that take a value (skipped with it); anything else starting with "-" is a flag.
_VALUE_OPTIONS = (
    *_INDEX_OPTIONS,
    "-f",
    "--find-links",
    "-c",
    "--constraint",
    "-r",
    "--requirement",
    "-t",
    "--target",
    "--python-version",
    "--platform",
    "--only-binary",
    "--no-binary",
)


@dataclass(frozen=True)
class BuildRequest:
    """The torch build asked for: ``torch`` "2.7.0" (public version), ``runtime`` "cu121" or
    None (not named: PyPI's default build), and where the runtime came from
    (``"+cu121"``, ``"--index-url"`` or ``"--runtime"``)."""

    torch: str
    runtime: str | None
    runtime_from: str | None = None

    @property
    def label(self) -> str:
        """``torch 2.7.0+cu121`` (or ``torch 2.7.0`` without a runtime)."""
        return f"torch {self.torch}" + (f"+{self.runtime}" if self.runtime else "")


def runtime_from_index(url: str) -> str | None:
    """``https://download.pytorch.org/whl/cu121`` -> ``cu121``; other indexes -> None."""
    found = _INDEX_RUNTIME_RE.search(url.strip())
    return found.group(1) if found else None


def _shown(text: str, limit: int = 200) -> str:
    """``repr(text)``, cut to about ``limit`` characters (a 1 MB command line is not echoed)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text)} characters)"


def _version(text: str, where: str) -> Version:
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a number past int()'s 4,300-digit limit
        raise ConfigError(
            f"{where}: {_shown(text)} is not a version like 2.7.0 or 2.7.0+cu121"
        ) from None


def from_options(torch: str, runtime: str | None) -> BuildRequest:
    """The request of ``--torch 2.7.0 [--runtime cu121]``; ``--torch 2.7.0+cu121`` works too.

    Raises:
        ConfigError: a bad version or runtime tag, or two different runtimes.
    """
    version = _version(torch, "--torch")
    local = version.local
    if runtime is not None and not RUNTIME_RE.match(runtime):
        raise ConfigError(
            f"--runtime: {_shown(runtime)} is not a runtime tag like cu121, rocm6.4 or cpu"
        )
    if local and runtime and local != runtime:
        raise ConfigError(f"--torch {torch} names +{local} but --runtime says {runtime}")
    found = runtime or local
    source = "--runtime" if runtime else (f"+{local}" if local else None)
    return BuildRequest(version.public, found, source)


def parse(command: str) -> BuildRequest:
    """The torch build a pip command line installs.

    Accepts ``pip``/``pip3``/``python -m pip``/``uv pip`` before ``install`` (or just the
    arguments), ``--index-url``/``-i``/``--extra-index-url URL`` (also ``--opt=URL``) whose path
    ends in ``/whl/<runtime>``, and one ``torch==X.Y.Z[+runtime]`` requirement; other packages
    (torchvision, ...) are ignored.

    Raises:
        ConfigError: unparsable shell text or requirement, no torch requirement, a torch
            requirement that is not pinned with ``==``, or a runtime that disagrees between the
            local label and the index URL.
    """
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"check: cannot split the command {_shown(command)}: {exc}") from exc
    if "install" in words:
        words = words[words.index("install") + 1 :]
    index_runtime = None
    requirements: list[str] = []
    skip_next = False
    for position, word in enumerate(words):
        if skip_next:
            skip_next = False
            continue
        name, _, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in _VALUE_OPTIONS:
            value = inline or (words[position + 1] if position + 1 < len(words) else "")
            skip_next = not inline
            if name in _INDEX_OPTIONS and runtime_from_index(value):
                index_runtime = runtime_from_index(value)
            continue
        if not word.startswith("-"):
            requirements.append(word)
    torch_requirements = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            raise ConfigError(f"check: {_shown(text)} is not a requirement: {exc}") from exc
        if requirement.name.lower() == "torch":
            torch_requirements.append(requirement)
    if len(torch_requirements) != 1:
        raise ConfigError(
            f"check: expected one torch requirement (torch==X.Y.Z) in {_shown(command)}, found "
            f"{len(torch_requirements)}"
        )
    pins = [s for s in torch_requirements[0].specifier if s.operator in ("==", "===")]
    if len(pins) != 1 or "*" in pins[0].version:
        raise ConfigError(
            f"check: torch must be pinned to one version (torch==2.7.0), got "
            f"{_shown(str(torch_requirements[0]))}"
        )
    version = _version(pins[0].version, "check: torch")
    local = version.local
    if local and not RUNTIME_RE.match(local):
        raise ConfigError(f"check: +{local} is not a runtime tag like cu121, rocm6.4 or cpu")
    if local and index_runtime and local != index_runtime:
        raise ConfigError(
            f"check: torch=={version} names +{local} but the index is {index_runtime}"
        )
    if local:
        return BuildRequest(version.public, local, f"+{local}")
    if index_runtime:
        return BuildRequest(version.public, index_runtime, "--index-url")
    return BuildRequest(version.public, None, None)
