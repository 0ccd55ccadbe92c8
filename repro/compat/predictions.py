"""Predict each (host, variant) cell of the matrix from published compatibility facts.

The facts come from :mod:`repro.compat.facts` (unverified values say so in every reason that
rests on them); the rules are those of compat-facts.md section 0:

1. **driver vs CUDA runtime**: the NVIDIA driver must be at least the minor-version-compatibility
   minimum of the build's CUDA major (``cuda_min_driver.X.Y.family_min``). On WSL2 the driver
   number is the Windows driver, so the ``windows`` columns apply (``host.wsl2`` = ``true``),
   as on a native Windows host (``host.os`` Windows).
   Below it, an image that carries the CUDA forward-compatibility package still runs the build
   on data-centre GPUs (:mod:`repro.compat.forward_compat`): "pass via forward compatibility".
2. **kernel image**: some ``sm_XY`` cubin of the build's arch list runs on the device per torch's
   own ``DEVICE_REQUIREMENT`` table (torch/cuda/__init__.py, copied in compat-facts.yaml as
   ``device_code_compat``), or a PTX entry ``compute_XY`` with ``XY <= capability`` can be
   JIT-compiled, which needs a driver at least the toolkit's own (``toolkit_driver``); otherwise
   "no kernel image is available for execution on the device" (:mod:`repro.compat.arch`).
3. **driver branch vs GPU**: drivers 590+ no longer drive Maxwell, Pascal and Volta.
4. **ROCm**: the device's gfx target is in the wheel's ``PYTORCH_ROCM_ARCH`` (``gfx_lists``);
   targets outside the ROCm release's official list are noted.

Inputs are the matrix's properties: ``host.driver.nvidia``, ``host.wsl2``,
``host.gpu.N.{vendor,name,brand,compute_capability,gfx_target}``,
``variant.{runtime,torch,accelerator}`` and, for forward compatibility, the image facts
``variant.base_image`` / ``variant.cuda_compat``.
What the run itself observed (``runtime.cuda``, ``runtime.hip``, ``runtime.arch_list``) beats the
table. A prediction is ``fail`` when any check fails, ``unknown`` when a check lacked data, else
``pass``.

Pure functions of their inputs; this module never imports torch and never touches the network
(case child processes import it: keep it cheap).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from repro import gpu_properties
from repro import properties as property_names
from repro.compat.arch import match_arch, normalise_gfx
from repro.compat.facts import Facts, Path_, default_facts, extra_facts
from repro.compat.forward_compat import forward_compat
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Prediction, Reason, combine
from repro.model import accelerator_of
from repro.variant_id import VariantId

_VERSION_RE = re.compile(r"\d+(?:\.\d+)*")
_CUDA_TAG_RE = re.compile(r"^cu(\d+)(\d)$")
_ROCM_TAG_RE = re.compile(r"^rocm(\d+(?:\.\d+)*)$")


# --------------------------------------------------------------------------------------------
# Reading the inputs


def version(text: Any) -> tuple[int, ...] | None:
    """``"580.65.06"`` -> (580, 65, 6); ``"2.8.0+cu128"`` -> (2, 8, 0); None if no number."""
    if text is None:
        return None
    match = _VERSION_RE.match(str(text).strip())
    return tuple(int(p) for p in match.group(0).split(".")) if match else None


def _major_minor(text: Any) -> str | None:
    parts = version(text)
    if not parts:
        return None
    return f"{parts[0]}.{parts[1] if len(parts) > 1 else 0}"


def runtime_tag(variant_props: Mapping[str, str], variant_id: str | None = None) -> str | None:
    """``variant.runtime``, else the part of a canonical id before ``-torch``."""
    tag = (variant_props.get(property_names.VARIANT_RUNTIME) or "").strip()
    parsed = VariantId.parse(variant_id)
    if not tag and parsed:
        tag = parsed.runtime
    return tag or None


def _torch_key(variant_props: Mapping[str, str], variant_id: str | None) -> str | None:
    for name in (property_names.VARIANT_TORCH, property_names.RUNTIME_TORCH):
        key = _major_minor(variant_props.get(name))
        if key:
            return key
    parsed = VariantId.parse(variant_id)
    return parsed.torch if parsed else None


def accelerator(variant_props: Mapping[str, str], variant_id: str | None = None) -> str | None:
    """``cuda``, ``rocm`` or ``cpu`` for a variant (``variant.accelerator``, else its runtime)."""
    return _accelerator(variant_props, runtime_tag(variant_props, variant_id))


def _accelerator(variant_props: Mapping[str, str], tag: str | None) -> str | None:
    value = (variant_props.get(property_names.VARIANT_ACCELERATOR) or "").strip()
    if value in ("cuda", "rocm", "cpu"):
        return value
    if tag and (tag == "cpu" or accelerator_of(tag) != "cpu"):  # a runtime tag it knows
        return accelerator_of(tag)
    return None


@dataclass(frozen=True)
class Gpu:
    """One GPU from ``host.gpu.N.*``; ``brand`` is NVML's brand (``geforce``, ``nvidia``,
    ``tesla``...) where the fingerprint records it."""

    index: int
    vendor: str | None
    name: str | None
    capability: str | None
    gfx_target: str | None
    brand: str | None = None


def gpus_of(host_props: Mapping[str, str]) -> list[Gpu] | None:
    """The host's GPUs from ``host.gpu.N.*``; [] when ``host.gpu_count`` is 0; None: unknown."""
    fields = gpu_properties.decode(host_props)
    if not fields:
        return [] if (host_props.get(gpu_properties.COUNT) or "").strip() == "0" else None
    gpus = []
    for index in sorted(fields):
        f = fields[index]
        vendor = (f.get("vendor") or "").lower() or None
        capability = f.get("compute_capability") or None
        gfx = normalise_gfx(f.get("gfx_target") or "") or None
        name = f.get("name")
        if vendor is None:
            if capability or (name or "").upper().startswith("NVIDIA"):
                vendor = "nvidia"
            elif gfx or (name or "").upper().startswith("AMD"):
                vendor = "amd"
        gpus.append(Gpu(index, vendor, name, capability, gfx, f.get("brand") or None))
    return gpus


def _code(capability: str) -> int | None:
    """``"12.0"`` -> 120, ``"8.9"`` -> 89."""
    parts = version(capability)
    if not parts or len(parts) < 2:
        return None
    return parts[0] * 10 + parts[1]


def _split_code(code: int) -> tuple[int, int]:
    return code // 10, code % 10


# --------------------------------------------------------------------------------------------
# The checks


def _variant_entry(facts: Facts, torch_key: str | None, tag: str | None) -> Path_ | None:
    """Path of ``torch_variants.<torch>.variants[i]`` for this runtime, or None."""
    if not torch_key or not tag:
        return None
    variants = facts.get("torch_variants", torch_key, "variants") or []
    for index, entry in enumerate(variants):
        if isinstance(entry, Mapping) and entry.get("runtime") == tag:
            return ("torch_variants", torch_key, "variants", index)
    return None


def _family_min(facts: Facts, cuda: str, platform: str) -> tuple[str | None, Path_]:
    path: Path_ = ("cuda_min_driver", cuda, "family_min", platform)
    value = facts.get(*path)
    if value is None:
        path = ("cuda_family_min_driver", cuda.split(".")[0], platform)
        value = facts.get(*path)
    return (str(value) if value is not None else None), path


def _toolkit_driver(facts: Facts, cuda: str, platform: str) -> tuple[str | None, Path_ | None]:
    """The lowest driver bundled with any release of CUDA X.Y: enough to JIT its PTX."""
    releases = facts.get("cuda_min_driver", cuda, "toolkit_driver") or {}
    best: tuple[tuple[int, ...], str, Path_] | None = None
    for release, drivers in releases.items():
        value = (drivers or {}).get(platform) if isinstance(drivers, Mapping) else None
        parsed = version(value)
        if parsed is not None and (best is None or parsed < best[0]):
            best = (
                parsed,
                str(value),
                ("cuda_min_driver", cuda, "toolkit_driver", release, platform),
            )
    return (best[1], best[2]) if best else (None, None)


@dataclass(frozen=True)
class _ArchList:
    entries: tuple[str, ...]
    fact: str
    unverified: frozenset[str]  # entries whose fact is unverified
    all_unverified: bool = False  # the list (or the variant's choice of it) is unverified


def windows_arch(facts: Facts, release: str | None, entries: list[str]) -> list[str]:
    """``entries`` (a build's ``sm_XY``/``compute_XY`` list) as the native Windows build of
    ``release`` has them: from ``windows_arch_floor.from_release`` (1.4.0) on, without entries
    below ``windows_arch_floor.lowest`` (37: pytorch/builder b3543d0d, "Kick out cuda arch 3.5
    for Windows", 2019-11-27). Unchanged for earlier or unknown releases."""
    return arch_floor(facts, "windows_arch_floor", release, entries)


def arch_floor(facts: Facts, table: str, release: str | None, entries: list[str]) -> list[str]:
    """``entries`` (a build's ``sm_XY``/``compute_XY`` list) without the entries below
    ``<table>.lowest`` when ``release`` is at least ``<table>.from_release`` (the floors
    ``windows_arch_floor`` and ``conda_arch_floor`` of compat-facts-history.yaml). Unchanged for
    earlier or unknown releases, or when the facts hold no such table."""
    lowest, first = facts.get(table, "lowest"), facts.get(table, "from_release")
    parsed = _release_of(release)
    if lowest is None or first is None or parsed is None or parsed < Version(str(first)):
        return entries
    floor = int(str(lowest))
    kept = []
    for item in entries:
        digits = item.split("_", 1)[-1].rstrip("af")
        if not digits.isdigit() or int(digits) >= floor:
            kept.append(item)
    return kept


def _windows_arch_list(
    facts: Facts, variant_props: Mapping[str, str], entry: Path_ | None, linux: _ArchList
) -> _ArchList:
    """The arch list of the native Windows build of a variant whose Linux list is ``linux``: the
    variant entry's own ``arch_windows`` list where the facts hold one (2.4 and 2.5: the Windows
    wheels' lists), else ``linux`` cut at ``windows_arch_floor`` (:func:`windows_arch`)."""
    own = _arch_list(facts, variant_props, entry, "arch_windows", "arch_lists", ("sm_", "compute_"))
    if own is not None:
        return own
    kept = windows_arch(facts, variant_props.get(property_names.VARIANT_TORCH), list(linux.entries))
    if len(kept) == len(linux.entries):
        return linux
    return _ArchList(
        tuple(kept), f"{linux.fact}, windows_arch_floor", linux.unverified, linux.all_unverified
    )


def _release_of(release: str | None) -> Version | None:
    try:
        return Version(Version(release).public) if release else None
    except InvalidVersion:
        return None


def key_for_release(facts: Facts, entry: Path_, key: str, release: str | None) -> Path_:
    """Path (below the variant entry) of its ``key``, or of ``<key>_by_release.<release>`` where
    the entry names a patch release whose build differs (torch 1.8.0+cu111 vs 1.8.1+cu111:
    pytorch/builder pruned the 11.1 arches for 1.8.0 and put them back for 1.8.1)."""
    release = (release or "").split("+")[0].strip()
    by_release = facts.get(*entry, f"{key}_by_release") or {}
    if isinstance(by_release, Mapping) and release in by_release:
        return (f"{key}_by_release", release)
    return (key,)


def _arch_list(
    facts: Facts,
    variant_props: Mapping[str, str],
    entry: Path_ | None,
    key: str,
    table: str,
    prefix: tuple[str, ...],
) -> _ArchList | None:
    """The build's arch list (``sm_*``/``compute_*`` or ``gfx*``): observed, else the table."""
    observed = [
        item.strip()
        for item in (variant_props.get(property_names.RUNTIME_ARCH_LIST) or "").split(",")
        if item.strip()
    ]
    observed = [item for item in observed if item.startswith(prefix)]
    if observed:
        return _ArchList(tuple(observed), "observed runtime.arch_list", frozenset())
    if entry is None:
        return None
    release = variant_props.get(property_names.VARIANT_TORCH) or variant_props.get(
        property_names.RUNTIME_TORCH
    )
    path = (*entry, *key_for_release(facts, entry, key, release))
    list_name = facts.get(*path)
    if not isinstance(list_name, str):
        return None
    entries = facts.get(table, list_name)
    if not isinstance(entries, list):
        return None
    unverified = frozenset(
        str(item) for i, item in enumerate(entries) if facts.unverified(table, list_name, i)
    )
    return _ArchList(
        tuple(str(item) for item in entries),
        f"{Facts.name(*path)} = {Facts.name(table, list_name)}",
        unverified,
        facts.unverified(*path) or facts.unverified(table, list_name),
    )


def _driver_check(
    facts: Facts,
    driver: str | None,
    cuda: str | None,
    cuda_fact: str,
    wsl2: bool,
    gpus: Sequence[Gpu] = (),
    variant_props: Mapping[str, str] | None = None,
    windows: bool = False,
) -> Reason:
    platform = "windows" if wsl2 or windows else "linux"
    if cuda is None:
        return Reason("driver", UNKNOWN, "the CUDA version of the build is unknown", cuda_fact)
    if version(driver) is None:
        return Reason(
            "driver",
            UNKNOWN,
            "the host's NVIDIA driver version is unknown",
            property_names.DRIVER_NVIDIA,
        )
    minimum, path = _family_min(facts, cuda, platform)
    fact = Facts.name(*path)
    unverified = facts.unverified(*path)
    if minimum is None:
        return Reason(
            "driver", UNKNOWN, f"no minimum driver for CUDA {cuda} ({platform}) in the facts", fact
        )
    where = f"{platform}{', WSL2 reports the Windows driver' if wsl2 else ''}"
    major = cuda.split(".")[0]
    if version(driver) < version(minimum):
        text = (
            f"driver {driver} is older than {minimum}, the minimum for CUDA {major}.x ({where}): "
            f"the CUDA {cuda} runtime fails with cudaErrorInsufficientDriver"
        )
        fc = forward_compat(
            facts,
            extra_facts(),
            driver=str(driver),
            cuda=cuda,
            wsl2=wsl2,
            gpus=[(g.index, g.name, g.brand) for g in gpus],
            variant_props=variant_props or {},
        )
        if fc is None:
            return Reason("driver", FAIL, text, fact, unverified)
        both = f"{fact}; {fc.fact}"
        if fc.verdict == PASS:
            text = (
                f"pass via forward compatibility: driver {driver} is older than {minimum}, the "
                f"minimum for CUDA {major}.x, but {fc.text}"
            )
            return Reason("driver", PASS, text, both, unverified or fc.unverified)
        if fc.verdict == UNKNOWN:
            text = f"{text}, unless forward compatibility applies: {fc.text}"
            return Reason("driver", UNKNOWN, text, both, unverified or fc.unverified)
        text = f"{text}; no forward compatibility: {fc.text}"
        return Reason("driver", FAIL, text, both, unverified)
    text = f"driver {driver} >= {minimum}, the minimum for CUDA {major}.x ({where})"
    return Reason("driver", PASS, text, fact, unverified)


def _gpu_support_check(facts: Facts, driver: str | None, gpu: Gpu, code: int) -> Reason | None:
    parsed = version(driver)
    if parsed is None:
        return None
    major, minor = _split_code(code)
    if parsed >= (590,) and (major in (5, 6) or code in (70, 72)):
        path = ("driver_branch_gpu_support", 0, "rule")
        text = (
            f"GPU {gpu.index} (capability {gpu.capability}) is not driven by driver {driver}: "
            "590+ dropped Maxwell, Pascal and Volta (R580 legacy branch needed)"
        )
        return Reason("gpu_support", FAIL, text, Facts.name(*path), facts.unverified(*path))
    if major == 12 and parsed < (570,):
        path = ("driver_branch_gpu_support", 1, "rule")
        text = f"GPU {gpu.index} (capability {gpu.capability}, Blackwell) needs driver R570+, host has {driver}"
        return Reason("gpu_support", FAIL, text, Facts.name(*path), facts.unverified(*path))
    return None


def _kernel_image_check(
    facts: Facts,
    gpu: Gpu,
    arch: _ArchList | None,
    driver: str | None,
    cuda: str | None,
    wsl2: bool,
    windows: bool = False,
) -> Reason:
    label = f"GPU {gpu.index}" + (f" ({gpu.name})" if gpu.name else "")
    code = _code(gpu.capability or "")
    if code is None:
        return Reason(
            "kernel_image",
            UNKNOWN,
            f"{label}: compute capability unknown",
            gpu_properties.prop_name(gpu.index, "compute_capability"),
        )
    if arch is None:
        return Reason(
            "kernel_image",
            UNKNOWN,
            "the build's arch list is unknown (not in the facts, no runtime.arch_list observed)",
            "torch_variants",
        )
    verdict = match_arch(_split_code(code), arch.entries, facts)
    if verdict.via == "cubin":
        rule_text = f"; {verdict.fact}" if verdict.fact else ""
        unverified = arch.all_unverified or verdict.entry in arch.unverified
        text = f"{label}, capability {gpu.capability}, runs the {verdict.entry} cubin"
        return Reason("kernel_image", PASS, text, arch.fact + rule_text, unverified)
    if not verdict.ok:
        listed = ", ".join(arch.entries) or "empty"
        text = (
            f"no kernel image for {label}, capability {gpu.capability}: no cubin in [{listed}] "
            f"runs on it and there is no PTX compute_XY with XY <= {code}"
        )
        return Reason("kernel_image", FAIL, text, arch.fact, arch.all_unverified)
    item = verdict.entry
    unverified = arch.all_unverified or item in arch.unverified
    platform = "windows" if wsl2 or windows else "linux"
    needed, path = _toolkit_driver(facts, cuda, platform) if cuda else (None, None)
    if needed is None or version(driver) is None:
        text = (
            f"{label}, capability {gpu.capability}: no cubin, PTX {item} must be JIT-compiled; "
            f"whether driver {driver or '?'} can JIT the PTX of CUDA {cuda or '?'} is unknown"
        )
        return Reason("ptx_jit", UNKNOWN, text, arch.fact, unverified)
    fact = f"{arch.fact}; {Facts.name(*path)}"
    unverified = unverified or facts.unverified(*path)
    if version(driver) < version(needed):
        text = (
            f"{label}, capability {gpu.capability}: no cubin, and PTX {item} from CUDA {cuda} "
            f"needs driver >= {needed} to JIT (host has {driver}): cudaErrorUnsupportedPtxVersion"
        )
        return Reason("ptx_jit", FAIL, text, fact, unverified)
    text = (
        f"{label}, capability {gpu.capability}: no cubin, PTX {item} JIT-compiles "
        f"(driver {driver} >= {needed}); the first start is slow"
    )
    return Reason("ptx_jit", PASS, text, fact, unverified)


def _cuda_checks(
    facts: Facts,
    host_props: Mapping[str, str],
    variant_props: Mapping[str, str],
    gpus: list[Gpu],
    entry: Path_ | None,
    tag: str,
) -> list[Reason]:
    wsl2 = (host_props.get(property_names.WSL2) or "").strip().lower() == "true"
    # A native Windows host's driver is a Windows driver too: the windows columns apply.
    windows = "windows" in (host_props.get(property_names.HOST_OS) or "").lower()
    driver = (host_props.get(property_names.DRIVER_NVIDIA) or "").strip() or None
    cuda = _major_minor(variant_props.get(property_names.RUNTIME_CUDA))
    cuda_fact = "observed runtime.cuda"
    if cuda is None and entry is not None and facts.get(*entry, "cuda"):
        cuda = _major_minor(facts.get(*entry, "cuda"))
        cuda_fact = Facts.name(*entry, "cuda")
    if cuda is None:
        match = _CUDA_TAG_RE.match(tag)
        if match:
            cuda, cuda_fact = (
                f"{int(match.group(1))}.{match.group(2)}",
                property_names.VARIANT_RUNTIME,
            )
    reasons = [_driver_check(facts, driver, cuda, cuda_fact, wsl2, gpus, variant_props, windows)]
    arch = _arch_list(facts, variant_props, entry, "arch", "arch_lists", ("sm_", "compute_"))
    if windows and not wsl2 and arch is not None and arch.fact != "observed runtime.arch_list":
        arch = _windows_arch_list(facts, variant_props, entry, arch)
    for gpu in gpus:
        code = _code(gpu.capability or "")
        if code is not None:
            support = _gpu_support_check(facts, driver, gpu, code)
            if support is not None:
                reasons.append(support)
        reasons.append(_kernel_image_check(facts, gpu, arch, driver, cuda, wsl2, windows))
    return reasons


def _rocm_official(facts: Facts, rocm: str) -> tuple[list[str] | None, Path_ | None]:
    """The official gfx list of a ROCm release: exact key, else every X.Y.* key merged."""
    table = facts.get("rocm_gfx") or {}
    if isinstance(table.get(rocm), list):
        return list(table[rocm]), ("rocm_gfx", rocm)
    keys = [k for k in table if _major_minor(k) == rocm and isinstance(table[k], list)]
    if not keys:
        return None, None
    merged = sorted({g for k in keys for g in table[k]})
    return merged, ("rocm_gfx", min(keys, key=lambda k: version(k) or ()))


def _rocm_checks(
    facts: Facts,
    variant_props: Mapping[str, str],
    gpus: list[Gpu],
    entry: Path_ | None,
    tag: str,
) -> list[Reason]:
    rocm = _major_minor(variant_props.get(property_names.RUNTIME_HIP))
    if rocm is None and entry is not None:
        rocm = _major_minor(facts.get(*entry, "rocm"))
    if rocm is None:
        match = _ROCM_TAG_RE.match(tag)
        rocm = _major_minor(match.group(1)) if match else None
    gfx = _arch_list(facts, variant_props, entry, "gfx", "gfx_lists", ("gfx",))
    official, official_path = _rocm_official(facts, rocm) if rocm else (None, None)
    reasons = []
    for gpu in gpus:
        label = f"GPU {gpu.index}" + (f" ({gpu.name})" if gpu.name else "")
        target = gpu.gfx_target
        if target is None:
            reasons.append(
                Reason(
                    "gfx",
                    UNKNOWN,
                    f"{label}: gfx target unknown",
                    gpu_properties.prop_name(gpu.index, "gfx_target"),
                )
            )
            continue
        if gfx is None:
            text = (
                "the wheel's gfx list is unknown (not in the facts, no runtime.arch_list observed)"
            )
            reasons.append(Reason("gfx", UNKNOWN, text, "torch_variants"))
            continue
        verdict = match_arch(target, gfx.entries, facts)
        unverified = gfx.all_unverified or verdict.entry in gfx.unverified
        if not verdict.ok:
            text = (
                f"no kernel image for {label}: {target} is not in the wheel's gfx list "
                f"[{', '.join(gfx.entries)}] (HSA_OVERRIDE_GFX_VERSION aliasing is unsupported)"
            )
            reasons.append(Reason("gfx", FAIL, text, gfx.fact, unverified))
            continue
        if target == "gfx906" and rocm and version(rocm) >= (6, 4):
            text = f"{label}: ROCm {rocm} math libraries dropped gfx906 kernels although the wheel lists it"
            reasons.append(
                Reason("gfx", FAIL, text, "gfx_lists_note", facts.unverified("gfx_lists_note"))
            )
            continue
        reasons.append(
            Reason(
                "gfx", PASS, f"{label}: {target} is in the wheel's gfx list", gfx.fact, unverified
            )
        )
        if official is not None and target not in official and official_path is not None:
            text = f"{target} is not on ROCm {rocm}'s official support list (may work, unsupported)"
            reasons.append(
                Reason(
                    "rocm_support",
                    NOTE,
                    text,
                    Facts.name(*official_path),
                    facts.unverified(*official_path),
                )
            )
    return reasons


def predict(
    host_props: Mapping[str, str],
    variant_props: Mapping[str, str],
    variant_id: str | None = None,
    facts: Facts | None = None,
) -> Prediction:
    """Predict the cell of a host (its ``host.*`` properties) and a variant (``variant.*`` and
    observed ``runtime.*``); ``variant_id`` fills in a missing runtime tag or torch pin."""
    facts = facts or default_facts()
    tag = runtime_tag(variant_props, variant_id)
    accelerator = _accelerator(variant_props, tag)
    if accelerator == "cpu":
        return Prediction(
            PASS,
            (
                Reason(
                    "accelerator",
                    PASS,
                    "CPU build: no driver, GPU or kernel-image requirement",
                    property_names.VARIANT_RUNTIME,
                ),
            ),
        )
    if accelerator is None or tag is None:
        return Prediction(
            UNKNOWN,
            (
                Reason(
                    "inputs",
                    UNKNOWN,
                    "the variant's runtime (cu*/rocm*/cpu) is unknown",
                    property_names.VARIANT_RUNTIME,
                ),
            ),
        )
    gpus = gpus_of(host_props)
    if gpus is None:
        text = "the host has no GPU properties (host.gpu.N.*): nothing to check"
        return Prediction(UNKNOWN, (Reason("inputs", UNKNOWN, text, property_names.HOST_GPU),))
    vendor = "nvidia" if accelerator == "cuda" else "amd"
    mine = [gpu for gpu in gpus if gpu.vendor == vendor]
    if not mine:
        what = "no GPU" if not gpus else f"no {'NVIDIA' if vendor == 'nvidia' else 'AMD'} GPU"
        text = f"{what} on this host for a {tag} build: its GPU cases skip, nothing to check"
        return Prediction(UNKNOWN, (Reason("inputs", UNKNOWN, text, gpu_properties.COUNT),))
    entry = _variant_entry(facts, _torch_key(variant_props, variant_id), tag)
    if accelerator == "cuda":
        reasons = _cuda_checks(facts, host_props, variant_props, mine, entry, tag)
    else:
        reasons = _rocm_checks(facts, variant_props, mine, entry, tag)
    return combine(reasons)
