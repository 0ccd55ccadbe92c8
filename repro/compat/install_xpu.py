"""``repro check`` for download.pytorch.org's Intel GPU builds (``/whl/xpu``, ``+xpu``; compat-extra
``xpu``): which releases and platforms have them, what they need to run, and the index faults
reported against them.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro import properties as property_names
from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.predictions import gpus_of
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Reason
from repro.compat.sources import Host

FACT = "compat-extra:xpu"


def run_reasons(
    release: Version, host_props: Mapping[str, str], host: Host, extra: Facts
) -> list[Reason]:
    """Whether torch ``release`` built for XPU runs on the host: before ``deps_from_release``
    the wheel loaded Intel's oneAPI runtime from the system (unknown here); from it on, its
    runtime comes with it and the build runs on the CPU without an Intel GPU."""
    first = src.parse_version(str(extra.get("xpu", "deps_from_release") or ""))
    if first is not None and release < first:
        text = (
            f"torch {release}+xpu loads Intel's oneAPI runtime libraries from the system: "
            "`import torch` fails without them (pytorch/pytorch#135867; the wheels bring them "
            f"as dependencies from {first}, pytorch/pytorch#141135); whether this host has "
            "them is not in the facts"
        )
        return [Reason("runs", UNKNOWN, text, f"{FACT}.deps_from_release")]
    need = (
        "the xpu build needs an Intel GPU and its driver for torch.xpu; without one it runs "
        "on the CPU"
    )
    gpus = gpus_of(host_props)
    where = "no GPU facts for this host" if gpus is None else "no Intel GPU facts here"
    return [
        Reason("needs", NOTE, need, f"{FACT}.from_release"),
        Reason(
            "runs",
            PASS,
            f"{where}: the build installs and runs on the CPU",
            property_names.HOST_GPU,
        ),
    ]


def index_faults(release: Version, extra: Facts) -> list[Reason]:
    """Faults of the xpu index reported for ``release``'s line (compat-extra ``xpu.faults``):
    on the days a report saw it broken the install fails; after the last of them, until a fix
    day the facts hold, unknown; before, nothing. A check without a day (today's indexes)
    takes a fault with no ``fixed`` day as mended when its reports are closed."""
    day = src.as_of(extra)
    minor = f"{release.major}.{release.minor}"
    out = []
    for at, fault in enumerate(extra.get("xpu", "faults") or ()):
        if not isinstance(fault, Mapping) or minor not in [str(r) for r in fault["releases"]]:
            continue
        seen = sorted(str(d) for d in fault.get("seen") or ())
        fixed = str(fault.get("fixed") or "")
        if not seen or day is None or day < seen[0] or (fixed and day >= fixed):
            continue
        fact = "compat-extra:" + Facts.name("xpu", "faults", at)
        if day <= seen[-1]:
            text = f"{fault['text']} ({fault['source']})"
            out.append(Reason("install", FAIL, text, fact))
        else:
            text = (
                f"{fault['text']} on {', '.join(seen)} ({fault['source']}); whether it was "
                f"mended by {day} is not in the facts"
            )
            out.append(Reason("install", UNKNOWN, text, fact))
    return out


def intel_page_platform(
    urls: tuple[str, ...], spec: SpecifierSet, host: Host, extra: Facts
) -> Reason | None:
    """A fail where a line takes torch from Intel's own XPU wheel pages (compat-extra
    ``xpu.intel_pages``) on Windows and pins a torch older than Intel's first native Windows
    wheels (``xpu.intel_windows_from_torch``); None otherwise (those pages stay unknown)."""
    pages = [str(p) for p in extra.get("xpu", "intel_pages") or ()]
    first = src.parse_version(str(extra.get("xpu", "intel_windows_from_torch") or ""))
    intel = [u for u in urls if any(p in u for p in pages)]
    if not intel or host.platform != "windows" or first is None:
        return None
    pinned = next((src.parse_version(s.version) for s in spec if s.operator in ("==", "===")), None)
    if pinned is None or Version(pinned.base_version) >= first:
        return None
    text = (
        f"{', '.join(intel)} had no native Windows wheels for torch {pinned}: Intel Extension "
        f"for PyTorch's XPU releases before its torch {first} one were Linux builds (Windows "
        "through WSL2)"
    )
    return Reason("platform", FAIL, text, "compat-extra:xpu.intel_pages")
