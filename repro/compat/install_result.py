"""The answer of ``repro check LINE`` for one install line on one host (:class:`LineResult`) and
the host it is judged for (:func:`host_of`); the checks are in :mod:`repro.compat.install_check`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repro import properties as property_names
from repro.compat.install_line import InstallLine
from repro.compat.predictions import version
from repro.compat.results import FAIL, PASS, UNKNOWN, Prediction
from repro.compat.sources import THIRTY_TWO_BIT_MACHINES, Host, machine_of


@dataclass(frozen=True)
class LineResult:
    """The answer for one install line on one host: the build it gets (``torch`` "2.7.1+cu118",
    None when nothing installs), the reasons, the ``fix`` (a line that works, when one is known),
    ``nearest`` (releases/builds that would install) and ``instead`` (builds this host runs)."""

    line: InstallLine
    host: Host
    torch: str | None
    runtime: str | None
    prediction: Prediction
    fix: str | None = None
    nearest: tuple[str, ...] = ()
    instead: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def outcome(self) -> str:
        return self.prediction.outcome

    @property
    def installs(self) -> bool | None:
        """False when the line will not install, True when it does, None when unknown."""
        install = [r for r in self.prediction.reasons if r.check in INSTALL_CHECKS]
        if any(r.verdict == FAIL for r in install):
            return False
        return None if any(r.verdict == UNKNOWN for r in install) else True

    @property
    def summary(self) -> str:
        """``installs and runs``, ``will not install``, ``installs but will not run`` or
        ``unknown``."""
        if self.outcome == PASS:
            return "installs and runs"
        if self.installs is False:
            if any(r.check == "accelerator" and r.verdict == FAIL for r in self.prediction.reasons):
                return "installs a CPU-only build: the GPU stays unused"
            return "will not install"
        if self.outcome == FAIL:
            return "installs but will not run"
        return "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line.text,
            "tool": self.line.tool,
            "python": self.host.python,
            "platform": self.host.platform,
            "machine": self.host.machine,
            "python_bits": self.host.bits,
            "torch": self.torch,
            "runtime": self.runtime,
            "summary": self.summary,
            **self.prediction.to_json(),
            "fix": self.fix,
            "nearest": list(self.nearest),
            "instead": list(self.instead),
        }


INSTALL_CHECKS = ("install", "python", "platform", "companion", "published", "accelerator")


def host_of(
    host_props: Mapping[str, str],
    python: str | None = None,
    platform: str | None = None,
    machine: str | None = None,
    bits: int | None = None,
    libc: str | None = None,
    implementation: str | None = None,
    macos: str | None = None,
) -> Host:
    """The interpreter to install into: ``python``/``platform``/``machine``/``bits`` when given
    (``--python-version 3.10``, ``--platform windows``, ``--machine aarch64``,
    ``--python-bits 32``), else the fingerprint's ``host.python``, ``host.os`` (``Windows`` ->
    windows, ``macOS``/``Darwin`` -> macos, anything else linux) and ``host.arch`` (``uname -m``;
    x86_64 when absent); a 64-bit interpreter unless told otherwise or the machine runs only
    32-bit ones (``armv7l``, ``i686``: ``sources.THIRTY_TWO_BIT_MACHINES``); the fingerprint's
    ``host.glibc`` for a Linux interpreter (manylinux tags); ``libc`` when given, else ``musl``
    where ``host.os`` names Alpine Linux (its os-release PRETTY_NAME: "Alpine Linux v3.18");
    ``implementation`` ("pypy") and, on macOS, ``macos`` (the version the interpreter reports,
    "10.16") when given (the fingerprint records neither)."""
    os_name = (host_props.get(property_names.HOST_OS) or "").lower()
    if python is None:
        parts = version(host_props.get(property_names.HOST_PYTHON))
        python = f"{parts[0]}.{parts[1]}" if parts and len(parts) >= 2 else None
    if platform is None:
        platform = (
            "windows"
            if "windows" in os_name
            else "macos"
            if "mac" in os_name or "darwin" in os_name
            else "linux"
        )
    cpu = machine_of(machine or host_props.get(property_names.HOST_ARCH), platform)
    return Host(
        python,
        platform,
        cpu,
        bits or (32 if cpu in THIRTY_TWO_BIT_MACHINES else 64),
        (host_props.get(property_names.HOST_GLIBC) or None) if platform == "linux" else None,
        (libc or ("musl" if "alpine" in os_name else None)) if platform == "linux" else None,
        implementation,
        macos if platform == "macos" else None,
    )
