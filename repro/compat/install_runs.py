"""Whether the build an install line gets runs on a host: the driver, kernel-image and gfx
reasons of :func:`repro.compat.predictions.predict` when the host's GPUs are known, else what
the build needs (:func:`needs`: "an NVIDIA driver >= 525.60.13 and a GPU of compute capability
5.0-9.0").
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.version import Version

from repro import properties as property_names
from repro.compat import check as build_check
from repro.compat import install_xpu
from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.predictions import gpus_of, key_for_release, predict, windows_arch
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Reason
from repro.compat.sources import Host


def needs(runtime: str, torch: str, facts: Facts, platform: str) -> Reason | None:
    """What a GPU build needs to run its kernels, from the facts: "an NVIDIA driver >= X
    (linux) and a GPU of compute capability A-B" or the ROCm gfx list; None for CPU builds."""
    minor = build_check._minor(torch) or ""
    entry = _variant_entry(facts, minor, runtime)
    if runtime.startswith("cu"):
        cuda = facts.get(*entry, "cuda") if entry else None
        if not cuda:
            digits = runtime[2:]
            cuda = f"{int(digits[:-1])}.{digits[-1]}"
        cuda = str(cuda)
        side = "windows" if platform == "windows" else "linux"
        path = ("cuda_min_driver", cuda, "family_min", side)
        minimum = facts.get(*path)
        if minimum is None:
            path = ("cuda_family_min_driver", cuda.split(".")[0], side)
            minimum = facts.get(*path)
        arch_path = (*entry, *key_for_release(facts, entry, "arch", torch)) if entry else None
        arch = facts.get("arch_lists", facts.get(*arch_path)) if arch_path else None
        driver = f"an NVIDIA driver >= {minimum} ({side})" if minimum else "an NVIDIA driver"
        what = f"needs {driver}"
        fact = Facts.name(*path)
        unverified = facts.unverified(*path)
        if isinstance(arch, list) and arch and arch_path:
            what += f" and a GPU of compute capability {_capability_range(arch)}"
            fact += f"; {Facts.name(*arch_path)}"
            unverified = unverified or facts.unverified(*arch_path)
        text = f"the {runtime} build {what} for its CUDA {cuda} kernels; without one it runs on CPU"
        return Reason("needs", NOTE, text, fact, unverified)
    if runtime.startswith("rocm"):
        gfx = facts.get("gfx_lists", facts.get(*entry, "gfx")) if entry else None
        listed = f" of gfx target {', '.join(gfx)}" if isinstance(gfx, list) else ""
        text = f"the {runtime} build needs Linux with the amdgpu driver and an AMD GPU{listed}"
        return Reason("needs", NOTE, text, Facts.name(*entry, "gfx") if entry else "torch_variants")
    return None


def _capability_range(arch: list) -> str:
    """``"5.0-9.0"`` for cubins sm_50..sm_90 (the last one also serves its major's newer
    minors, torch's DEVICE_REQUIREMENT), ``"7.5 or newer (...)"`` with a PTX entry."""
    cubins = sorted(
        (int(a[3:]) for a in map(str, arch) if a.startswith("sm_") and a[3:].isdigit()),
    )
    ptx = [int(a[8:]) for a in map(str, arch) if a.startswith("compute_") and a[8:].isdigit()]
    if not cubins and not ptx:
        return "unknown"
    low = min(cubins + ptx)
    text = f"{low // 10}.{low % 10}"
    if ptx:
        return text + " or newer (PTX JIT above the cubins)"
    high = cubins[-1]
    return f"{text}-{high // 10}.{high % 10}"


def _variant_entry(facts: Facts, minor: str, runtime: str) -> tuple | None:
    for index, entry in enumerate(facts.get("torch_variants", minor, "variants") or []):
        if isinstance(entry, Mapping) and entry.get("runtime") == runtime:
            return ("torch_variants", minor, "variants", index)
    return None


# --------------------------------------------------------------------------------------------
# Runs here?


#: ``host.os`` for each platform a line is judged for (what :func:`host_of` reads back).
_OS_NAMES = {"linux": "Linux", "windows": "Windows", "macos": "Darwin"}


def run_reasons(
    host_props: Mapping[str, str],
    torch: str,
    runtime: str | None,
    facts: Facts,
    host: Host,
    arch_list: list[str] | None = None,
    fact_label: str | None = None,
) -> list[Reason]:
    """Whether ``torch`` built for ``runtime`` runs on the host of ``host_props``: CPU builds
    always; GPU builds by :func:`~repro.compat.predictions.predict` (driver, kernel image, gfx)
    when the host has such a GPU, else a ``needs`` note. ``arch_list`` overrides the build's
    sm_XY list (a conda package's own), named ``fact_label`` in the reasons."""
    if runtime is None:
        return [
            Reason("runs", UNKNOWN, "the build's runtime is not in the facts", "torch_variants")
        ]
    if runtime == "cpu":
        return [
            Reason(
                "runs",
                PASS,
                "CPU build: no driver or GPU requirement",
                property_names.VARIANT_RUNTIME,
            )
        ]
    vendor = "nvidia" if runtime.startswith("cu") else "amd"
    gpus = [g for g in gpus_of(host_props) or [] if g.vendor == vendor]
    if not gpus:
        need = needs(runtime, torch, facts, host.platform)
        where = "no GPU facts for this host" if gpus_of(host_props) is None else "no such GPU here"
        reasons = [need] if need else []
        reasons.append(
            Reason(
                "runs",
                PASS,
                f"{where}: the build installs and runs on the CPU",
                property_names.HOST_GPU,
            )
        )
        return reasons
    variant = {property_names.VARIANT_RUNTIME: runtime, property_names.VARIANT_TORCH: torch}
    if arch_list and host.platform == "windows":
        # A conda package's own list is its Linux build's (conda_arch_lists): the Windows
        # package of the release has no kernel below sm_37 from 1.4.0 (windows_arch_floor).
        kept = windows_arch(facts, torch, arch_list)
        if len(kept) != len(arch_list):
            arch_list, fact_label = kept, f"{fact_label or 'arch_list'}, windows_arch_floor"
    if arch_list:
        variant[property_names.RUNTIME_ARCH_LIST] = ",".join(arch_list)
    # The platform the line is judged for (--platform, a conda line's Windows channels), not the
    # fingerprint's OS: its driver floor is that platform's (a Windows driver's is the windows
    # column of cuda_min_driver; pytorch/pytorch#27745 was judged on the linux one).
    judged = {**host_props, property_names.HOST_OS: _OS_NAMES[host.platform]}
    reasons = list(predict(judged, variant, None, facts).reasons)
    # A GPU without a known driver or capability: say what the build needs instead of unknown.
    missing = [
        r
        for r in reasons
        if r.verdict == UNKNOWN
        and (r.fact == property_names.DRIVER_NVIDIA or r.fact.endswith(".compute_capability"))
    ]
    if missing:
        need = needs(runtime, torch, facts, host.platform)
        reasons = [r for r in reasons if r not in missing] + ([need] if need else [])
    if fact_label:
        reasons = [
            Reason(
                r.check,
                r.verdict,
                r.text,
                r.fact.replace("observed runtime.arch_list", fact_label),
                r.unverified,
            )
            for r in reasons
        ]
    return reasons


def glibc_import_reasons(
    torch: str, host: Host, extra: Facts, *, conda: bool = False
) -> list[Reason]:
    """A ``runs`` FAIL when the host's glibc is below the floor PyTorch's own Linux binaries of
    release ``torch`` need at import (compat-extra ``linux_glibc_floor``: 2.17 from 0.4.1 for every
    wheel and conda package, from 0.3.1 for the pytorch channel's conda packages when
    ``conda``): pip installs them (PyPI's manylinux1 and download.pytorch.org's linux_x86_64
    tags promise no newer glibc) and conda too (the packages declare no ``__glibc``), then
    ``import torch`` fails (pytorch/pytorch#6607, #14274, #26467). Empty off Linux, when the
    host's glibc or the release is unknown, or for a release before the floor's first."""
    table = extra.get("linux_glibc_floor")
    if host.platform != "linux" or not host.glibc or not isinstance(table, Mapping):
        return []
    floor, have = src.parse_version(str(table.get("floor") or "")), src.parse_version(host.glibc)
    release = src.parse_version(torch)
    first = src.parse_version(str(table.get("conda_from" if conda else "from") or ""))
    if None in (floor, have, release, first):
        return []
    if have >= floor or Version(release.public) < first:
        return []
    what = "the pytorch channel's conda package" if conda else "the wheel"
    text = (
        f"import torch fails: PyTorch's Linux binaries of {release.public} are built against glibc "
        f"{floor} (CentOS 7) and this host's glibc is {host.glibc}; {what} installs (nothing "
        f'checks glibc), then the import stops at "version `GLIBC_2.1x\' not found" '
        f"(pytorch/pytorch#6607, #14274): a host with glibc >= {floor}, or a build from source"
    )
    return [Reason("runs", FAIL, text, "compat-extra:linux_glibc_floor")]


def windows_libomp_reasons(torch: str, host: Host, extra: Facts) -> list[Reason]:
    """A ``runs`` FAIL for a native Windows wheel of a release whose ``fbgemm.dll`` needs
    ``libomp140.x86_64.dll`` that the wheel does not ship (compat-extra ``windows_libomp``: 2.4.0,
    fixed in 2.4.1; pytorch/pytorch#131662, #133076, kohya-ss/sd-scripts#1597): ``import torch``
    fails with WinError 126 unless Visual Studio's C++ tools put the DLL on the host. Empty off
    Windows, for WSL2 (a Linux wheel) and for other releases (nightlies included)."""
    table = extra.get("windows_libomp")
    if host.platform != "windows" or not isinstance(table, Mapping):
        return []
    if torch not in [str(r) for r in table.get("releases") or ()]:
        return []
    fixed = table.get("fixed_in")
    text = (
        f"import torch fails: torch {torch}'s Windows wheels load torch\\lib\\fbgemm.dll, which "
        "needs libomp140.x86_64.dll (LLVM's OpenMP runtime) that the wheel does not ship; without "
        "Visual Studio's C++ tools on the host the import stops at \"OSError: [WinError 126] ... "
        f'fbgemm.dll or one of its dependencies" (pytorch/pytorch#131662): torch {fixed} ships the fix'
    )
    return [Reason("runs", FAIL, text, "compat-extra:windows_libomp")]


def run_reasons_on(
    host_props: Mapping[str, str],
    torch: str,
    runtime: str | None,
    facts: Facts,
    extra: Facts,
    host: Host,
) -> list[Reason]:
    """:func:`run_reasons` with the kernel list of the host's CPU architecture: on Linux aarch64
    download.pytorch.org's CUDA builds are sbsa builds with their own sm_XY list (compat-extra
    ``aarch64.arch``: 8.0 and 9.0 for cu126; a Jetson's 8.7 is in none of them); a ROCm build
    under WSL2 sees no GPU (compat-extra ``rocm_wsl``); on a glibc below the binaries' floor
    the import fails (:func:`glibc_import_reasons`)."""
    glibc = glibc_import_reasons(torch, host, extra)
    if glibc:
        return glibc
    libomp = windows_libomp_reasons(torch, host, extra)
    if libomp:
        kept = run_reasons(host_props, torch, runtime, facts, host)
        return [*(r for r in kept if not (r.check == "runs" and r.verdict == PASS)), *libomp]
    if runtime == "xpu":
        return install_xpu.run_reasons(Version(Version(torch).public), host_props, host, extra)
    wsl2 = (host_props.get(property_names.WSL2) or "").strip().lower() == "true"
    if wsl2 and runtime and runtime.startswith("rocm") and extra.get("rocm_wsl", "wheels"):
        # ROCm/hip#3710: PyTorch's ROCm wheels bundle a ROCm runtime without WSL support.
        text = (
            f"a PyTorch {runtime} wheel under WSL2: its bundled ROCm runtime (libhsa-runtime64) "
            "has no WSL support, so it sees no GPU (hipErrorNoDevice; torch.cuda.is_available() "
            f"is False); under WSL2 AMD's wheels from {extra.get('rocm_wsl', 'wheels')} with the "
            "WSL runtime library run"
        )
        return [Reason("accelerator", FAIL, text, "compat-extra:rocm_wsl")]
    if host.wheel_platform == "linux-aarch64" and runtime and runtime.startswith("cu"):
        arch = src.aarch64_arch(extra, runtime)
        if arch:
            label = f"compat-extra:aarch64.arch.{runtime}"
            return run_reasons(host_props, torch, runtime, facts, host, arch, label)
    return run_reasons(host_props, torch, runtime, facts, host)
