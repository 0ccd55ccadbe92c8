"""Host facts a signature row may depend on, and host evidence read from a log (issues 10, 21).

The same first line names different causes on different hosts (field reports, family 7):
"Unexpected error from cudaGetDeviceCount()" and "all CUDA-capable devices are busy or
unavailable" are WSL2 GPU-paravirtualisation failures on a WSL2 host (microsoft/WSL#9938), but
Fabric Manager not running (Error 802), a driver/library mismatch (Error 803), forward
compatibility on unsupported hardware (Error 804) or an exclusive-process compute mode on a
native Linux host (F7-1..F7-4). A row's (or one of its lines') ``when`` says on which hosts it
applies (the rows are in repro/data/signatures.yaml):

- ``None``: every host (most rows);
- ``"native"``: only when the host is known not to be WSL2 (:attr:`HostFacts.native`);
- ``"wsl2"``: only when the host is known to be WSL2;
- ``"not_wsl2"``: unless the host is known to be WSL2 (the text itself is the evidence: "Error
  802: system not yet initialized" is Fabric Manager, not WSL2);
- ``"unknown_host"``: only when nothing says which (no fingerprint, no evidence in the log): the
  row then names the alternatives instead of assuming one.

When no facts are given, :func:`evidence` reads them from the log itself (``uname -a`` kernel
strings, ``/usr/lib/wsl`` paths, container markers, the nvidia-smi header). This module never
imports torch or the table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: ``when`` of a row that applies only on a host known not to be WSL2.
NATIVE = "native"
#: ``when`` of a row that applies only on a host known to be WSL2.
WSL2 = "wsl2"
#: ``when`` of a row that applies unless the host is known to be WSL2.
NOT_WSL2 = "not_wsl2"
#: ``when`` of a row that applies only when nothing says whether the host is WSL2.
UNKNOWN_HOST = "unknown_host"
#: Every ``when`` a row may carry (None: any host).
CONDITIONS = (NATIVE, WSL2, NOT_WSL2, UNKNOWN_HOST)


@dataclass(frozen=True)
class HostFacts:
    """What the classifier may know about the host a log came from; ``None`` = unknown.

    Attributes:
        wsl2: the host is WSL2 (fingerprint ``host.wsl2``).
        container: the log came from inside a container (fingerprint ``host.container``, the
            runtime's name there, e.g. ``"docker"``).
        compute_mode: NVML compute mode of the GPUs as ``nvidia-smi -q -d COMPUTE`` words:
            ``"Default"``, ``"Exclusive_Process"``, ``"Prohibited"``; the first non-default mode
            when GPUs differ.
        mig: MIG mode is enabled on some GPU.
    """

    wsl2: bool | None = None
    container: bool | None = None
    compute_mode: str | None = None
    mig: bool | None = None

    @property
    def native(self) -> bool:
        """Known to be a native (non-WSL2) host."""
        return self.wsl2 is False

    def applies(self, when: str | None) -> bool:
        """Whether a row with condition ``when`` applies on this host (see the module doc).
        Raises ValueError for a condition not in :data:`CONDITIONS`."""
        if when is None:
            return True
        if when == NATIVE:
            return self.native
        if when == WSL2:
            return self.wsl2 is True
        if when == NOT_WSL2:
            return self.wsl2 is not True
        if when == UNKNOWN_HOST:
            return self.wsl2 is None
        raise ValueError(f"unknown host condition {when!r} (expected one of {CONDITIONS})")

    @classmethod
    def from_fingerprint(cls, fp: Any) -> HostFacts:
        """Facts from a fingerprint: a ``repro.model.Fingerprint`` (what
        ``repro.host.fingerprint.collect()`` returns) or its JSON dict (``fingerprint.json``).

        Reads ``host.wsl2`` (bool), ``host.container`` (a runtime name or None: a fingerprint
        that has a ``host`` section and no container means "not in a container"), and per GPU
        ``gpus[*].compute_mode`` / ``gpus[*].mig_mode`` when the fingerprint carries them
        (``"Enabled"``/``"Disabled"`` or a bool). Missing keys stay ``None``; never raises on
        a malformed dict (a non-dict section counts as missing).
        """
        if hasattr(fp, "to_json"):  # typed Fingerprint; signatures stay free of repro.host imports
            fp = fp.to_json()
        fp = fp if isinstance(fp, Mapping) else {}
        host = fp.get("host")
        host = host if isinstance(host, Mapping) else {}
        wsl2 = host.get("wsl2")
        container = host.get("container") if host else None
        gpus = [g for g in fp.get("gpus") or () if isinstance(g, Mapping)]
        modes = [str(g["compute_mode"]) for g in gpus if g.get("compute_mode")]
        odd = [m for m in modes if m.replace(" ", "_").lower() != "default"]
        migs = [_flag(g.get("mig_mode", g.get("mig"))) for g in gpus]
        known_migs = [m for m in migs if m is not None]
        return cls(
            wsl2=wsl2 if isinstance(wsl2, bool) else None,
            container=(bool(container) if "container" in host else None),
            compute_mode=(odd or modes or [None])[0],
            mig=any(known_migs) if known_migs else None,
        )


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        return value.strip().lower() in ("enabled", "enable", "true", "1", "on")
    return None


# -- Host evidence in a log (issue 21, item 5) ----------------------------------------------------

#: WSL2 (or WSL) evidence: the kernel's release string (``uname -r``/``-a``, torch's collect_env
#: ``Platform:``), the driver library directory WSL mounts, the paravirtual GPU device.
_WSL_EVIDENCE = re.compile(  # case-sensitive: uname prints these spellings, and it is 5x faster
    r"microsoft-standard|-[Mm]icrosoft\b|/usr/lib/wsl/|\bWSL_DISTRO_NAME\b|/dev/dxg\b"
    # The person's own words around a pasted log (issue 30, round four): "WSL", "WSL2", "Windows
    # Subsystem for Linux", "Ubuntu Subsystem on Windows" (ProjectNUWA/DragNUWA#10,
    # facebookresearch/seamless_communication#167), also lower-case as people type it and as the
    # wsl command is spelled (issue 30, round thirteen: hiyouga/LlamaFactory#7521 "wsl2:
    # UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount()").
    r"|\b(?:WSL|[Ww]sl)2?\b(?!_)|Subsystem for Linux|\b(?:Linux|Ubuntu) [Ss]ubsystem\b"
)
#: Native Linux evidence: a ``uname -a`` line or a collect_env ``Platform:`` with a kernel release
#: that is not Microsoft's; the nvidia-smi header of a Linux driver (three-part version: WSL2's
#: nvidia-smi shows the Windows driver, e.g. ``546.33``); the Linux kernel module's NVRM banner.
_NATIVE_EVIDENCE = re.compile(
    r"^Linux \S+ (?![-.\w+]*[Mm]icrosoft)\d+\.\d+\.\d+[-.\w+]* #"
    r"|Platform: Linux-(?![-.\w+]*[Mm]icrosoft)\d+\.\d+\.\d+[-.\w+]*-(?:x86_64|aarch64)"
    r"|Driver Version: \d{3}\.\d+\.\d+\b"
    r"|NVRM version: NVIDIA UNIX",
    re.MULTILINE,
)
#: Inside-a-container evidence: Docker's marker file, NGC images' banner, cgroup paths.
_CONTAINER_EVIDENCE = re.compile(
    r"/\.dockerenv|NVIDIA Release \d+\.\d+ \(build|/docker/[0-9a-f]{12}|/kubepods|"
    r"This container image and its contents are governed by"
)


class Evidence:
    """Host facts read from a log as it streams past: feed blocks of text, then :meth:`facts`.

    WSL2 markers beat native ones (a WSL2 log may carry a Linux-looking driver line from a
    container image); a log with neither leaves ``wsl2`` unknown. Sources: the WSL2 kernel
    string ``6.6.87.2-microsoft-standard-WSL2`` (O1), ``/usr/lib/wsl/lib/libcuda.so.1``
    (NVIDIA/nvidia-docker#1225), NGC's banner (``NVIDIA Release 23.10 (build ...)``).
    """

    def __init__(self) -> None:
        self.wsl2 = False
        self.native = False
        self.container = False
        self.lines: list[str] = []  # the lines that gave the evidence, first of each kind

    def feed(self, block: str) -> None:
        """Look for evidence in ``block`` (whole lines)."""
        for flag, pattern, needles in (
            (
                "wsl2",
                _WSL_EVIDENCE,
                ("icrosoft", "WSL", "wsl", "Wsl", "/dev/dxg", "ubsystem"),
            ),
            ("native", _NATIVE_EVIDENCE, ("Linux", "Driver Version: ", "NVRM version")),
            (
                "container",
                _CONTAINER_EVIDENCE,
                ("/.dockerenv", "NVIDIA Release", "/docker/", "/kubepods", "This container image"),
            ),
        ):
            if getattr(self, flag) or not any(needle in block for needle in needles):
                continue  # the needles: literals every match contains, found at memory speed
            found = pattern.search(block)
            if found:
                setattr(self, flag, True)
                start = block.rfind("\n", 0, found.start()) + 1
                end = block.find("\n", found.end())
                self.lines.append(block[start : None if end < 0 else end].strip()[:200])

    def facts(self) -> HostFacts:
        """What the evidence says (``wsl2`` None when nothing said which)."""
        wsl2 = True if self.wsl2 else (False if self.native else None)
        return HostFacts(wsl2=wsl2, container=True if self.container else None)


def evidence(text: str) -> HostFacts:
    """Host facts from a whole log (see :class:`Evidence`)."""
    found = Evidence()
    found.feed(text)
    return found.facts()
