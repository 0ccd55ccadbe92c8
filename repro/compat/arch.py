"""Device code rules: can a device (CUDA compute capability or ROCm gfx target) run a build's
arch list. :func:`match_arch` is the only copy of that rule: the ``arch`` scenario calls it on the
device and :mod:`repro.compat.predictions` on the matrix's host facts.

Sources: torch's own ``DEVICE_REQUIREMENT`` table (torch/cuda/__init__.py, copied in
compat-facts.yaml as ``device_code_compat``) for cubins; NVIDIA's PTX JIT rule (forward only)
for ``compute_XY`` entries; the wheel's ``PYTORCH_ROCM_ARCH`` for gfx targets.
Pure functions; never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from repro.compat.facts import Facts, default_facts

_ARCH_RE = re.compile(r"^(sm|compute)_(\d+)([a-z]?)$")  # suffix: a (arch), f (family)


# --------------------------------------------------------------------------------------------
# Device code: can this device run this arch list (shared with the ``arch`` scenario)


@dataclass(frozen=True)
class ArchVerdict:
    """Outcome of :func:`match_arch`.

    Attributes:
        ok: the build has code this device can run.
        via: ``"cubin"`` (an ``sm_XY`` entry), ``"ptx"`` (a ``compute_XY`` entry, JIT at first
            use), ``"gfx"`` (ROCm target), or ``None`` when not ok.
        entry: the arch list entry that matched, or ``None``.
        reason: one sentence for logs and reports.
        fact: for a cubin verdict, the dotted facts path of the rule it rests on
            (``device_code_compat.80``); ``None`` for PTX, gfx, a suffixed cubin or a cubin
            torch's table does not list.
    """

    ok: bool
    via: str | None
    entry: str | None
    reason: str
    fact: str | None = None


def normalise_gfx(target: str) -> str:
    """``"gfx90a:sramecc+:xnack-"`` -> ``"gfx90a"`` (feature flags do not pick the code object)."""
    return target.strip().split(":", 1)[0].lower()


def gfx_from_override(override: str) -> str:
    """``HSA_OVERRIDE_GFX_VERSION`` value to gfx target: ``"10.3.0"`` -> ``"gfx1030"``.

    Raises:
        ValueError: ``override`` is not three dot-separated integers.
    """
    parts = override.strip().split(".")
    if len(parts) != 3:
        raise ValueError(f"HSA_OVERRIDE_GFX_VERSION must be MAJOR.MINOR.STEP, got {override!r}")
    major, minor, step = (int(part) for part in parts)
    return f"gfx{major}{minor:x}{step:x}"


def _runs_cubin(facts: Facts, device: int, code: int, suffix: str) -> tuple[bool, str | None]:
    """Whether an ``sm_<code><suffix>`` cubin runs on a device of capability code ``device``
    (``(8, 6)`` -> 86), and the facts path of the rule that says so."""
    if suffix == "f":  # family-specific (sm_100f): same major, same or later minor
        return device // 10 == code // 10 and device >= code, None
    if suffix:  # arch-specific (sm_90a): that exact capability only
        return device == code, None
    rule = facts.get("device_code_compat", str(code))
    if not isinstance(rule, Mapping):
        # Not in torch's table: same major, minor at least the code's (torch's fallback).
        return device // 10 == code // 10 and device >= code, None
    fact = Facts.name("device_code_compat", str(code))
    if "set" in rule:
        return str(device) in {str(x) for x in rule["set"] or []}, fact
    start = int(str(rule.get("interval", code)))
    excluded = {str(x) for x in rule.get("exclude") or []}
    runs = device // 10 == start // 10 and device >= start and str(device) not in excluded
    return runs, fact


def _runs_ptx(device: int, code: int, suffix: str) -> bool:
    """Whether a ``compute_<code><suffix>`` PTX entry can be JIT-compiled for ``device``:
    forwards only (any later capability, across majors), never backwards."""
    if suffix == "f":
        return device // 10 == code // 10 and device >= code
    if suffix:
        return device == code
    return device >= code


def match_arch(
    device: tuple[int, int] | str, arch_list: Sequence[str], facts: Facts | None = None
) -> ArchVerdict:
    """Can a build with ``arch_list`` (``torch.cuda.get_arch_list()``) run on ``device``?

    Args:
        device: a CUDA compute capability ``(major, minor)``, e.g. ``(8, 6)``, or a ROCm gfx
            target string, e.g. ``"gfx90a:sramecc+:xnack-"`` (feature flags are ignored).
        arch_list: the build's entries, e.g. ``["sm_80", "sm_90a", "compute_90"]`` or
            ``["gfx90a", "gfx1100"]``; blank entries are skipped, unparsable ones ignored. Empty
            for a CPU-only build (never ok).
        facts: the facts whose ``device_code_compat`` table decides cubins (default: the
            shipped ones, loaded once).

    CUDA: an ``sm_XY`` cubin runs per ``device_code_compat`` (torch's ``DEVICE_REQUIREMENT``:
    same major, minor >= X.Y, minus Jetson exclusions, or an explicit set; a code torch does not
    list: same major, minor >= Y); ``sm_XYa`` runs on X.Y only, ``sm_XYf`` on X.Y and later
    minors of X. A ``compute_XY`` PTX entry is JIT-compiled for any capability >= X.Y (same
    suffix rules). The first runnable cubin in list order wins, else the highest usable PTX.
    ROCm: the gfx target must be listed. Pure: no torch, no device.

    Returns:
        An :class:`ArchVerdict`; ``reason`` says "no kernel image" when nothing runs.

    Raises:
        ValueError / TypeError: a CUDA ``device`` that is not two integers.
    """
    entries = [entry.strip() for entry in arch_list if entry and entry.strip()]
    if isinstance(device, str):
        target = normalise_gfx(device)
        if not entries:
            return ArchVerdict(
                False,
                None,
                None,
                f"the build lists no gfx targets (CPU-only build?), device is {target}",
            )
        for entry in entries:
            if normalise_gfx(entry) == target:
                return ArchVerdict(True, "gfx", entry, f"{target} is in the build's gfx list")
        return ArchVerdict(
            False, None, None, f"{target} is not in the build's gfx list ({' '.join(entries)})"
        )

    major, minor = (int(part) for part in device)
    code = 10 * major + minor
    name = f"sm_{code}"
    if not entries:
        return ArchVerdict(
            False,
            None,
            None,
            f"the build lists no CUDA architectures (CPU-only build?), device is {name}",
        )
    facts = facts or default_facts()
    ptx: list[tuple[int, str]] = []
    for entry in entries:
        found = _ARCH_RE.match(entry)
        if not found:
            continue
        kind, number, suffix = found.group(1), int(found.group(2)), found.group(3)
        if kind == "compute":
            if _runs_ptx(code, number, suffix):
                ptx.append((number, entry))
            continue
        runs, fact = _runs_cubin(facts, code, number, suffix)
        if runs:
            return ArchVerdict(True, "cubin", entry, f"{name} runs the {entry} cubin", fact)
    if ptx:
        entry = max(ptx)[1]
        return ArchVerdict(
            True, "ptx", entry, f"{name} can JIT the {entry} PTX (first use compiles it)"
        )
    return ArchVerdict(
        False, None, None,
        f"no kernel image for {name}: no cubin runs on it and no PTX <= {major}.{minor} in {' '.join(entries)}",
    )  # fmt: skip
