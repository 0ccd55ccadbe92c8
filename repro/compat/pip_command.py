"""The torch build of ``repro check --torch 2.7.0 [--runtime cu121]``: version and runtime tag.

Install lines (pip, uv, conda, wheels, requirements) are read by
:mod:`repro.compat.install_line`; this is the explicit form. The local version label
(``+cu121``) is read with :class:`packaging.version.Version`. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from repro.compat.install_line import RUNTIME_RE
from repro.errors import ConfigError


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
