"""torchvision/torchaudio beside torch on a pip/uv line: the torch a bare ``torch`` takes from a
pinned companion (each companion release pins the torch it was built with: ``companions`` facts),
and whether the line's companion pins go with the torch it gets.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_line import InstallLine
from repro.compat.results import FAIL, PASS, Reason
from repro.compat.sources import Host


def spec_of(line: InstallLine, facts: Facts) -> tuple[SpecifierSet, list[Reason]]:
    """The torch specifier; a bare torch beside a pinned torchvision/torchaudio takes the torch
    that companion was released with (it pins torch exactly)."""
    spec = line.torch.specifier if line.torch is not None else SpecifierSet()
    notes: list[Reason] = []
    if len(spec) == 0:
        for name, requirement in line.companions.items():
            pinned = pinned_of(requirement)
            if pinned is None:
                continue
            torch = torch_for(facts, name, pinned)
            if torch:
                spec = SpecifierSet(f"=={torch}")
                text = f"{name}=={pinned} was released with torch {torch} and pins it"
                notes.append(Reason("companion", PASS, text, Facts.name("companions", torch)))
                break
    return spec, notes


def pinned_of(requirement: Requirement) -> Version | None:
    pins = [
        s for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version
    ]
    return src.parse_version(pins[0].version) if len(pins) == 1 else None


def torch_for(facts: Facts, name: str, pinned: Version) -> str | None:
    for torch, pair in (facts.get("companions") or {}).items():
        if isinstance(pair, Mapping) and pinned.public in (
            str(pair.get(name)),
            str(pair.get(f"{name}_conda")),
        ):
            return str(torch)
    return None


def python_gap(
    facts: Facts, name: str, version: str, host: Host, day: str | None, pinned: bool
) -> Reason | None:
    """A companion release with no wheel for the host's Python (``companion_python_first``:
    torchvision's cp311 wheels came with 0.15.0, its cp313 ones with 0.21.0, after torch's);
    an unpinned one only from the day its old pure-Python wheels were known yanked (before, pip
    fell back to 0.2.2.post3)."""
    first = facts.get("companion_python_first", name, host.python or "")
    if not first or Version(version) >= Version(str(first)):
        return None
    yanked = str(facts.get("companion_python_first", "pure_wheels_yanked_by") or "")
    if not pinned and (not yanked or (day or "9999") < yanked):
        return None
    path = ("companion_python_first", name, host.python or "")
    text = (
        f"{name} {version} has no wheel for Python {host.python}: {name}'s first Python "
        f"{host.python} wheels are {first}; pip finds no matching distribution for {name}"
    )
    return Reason("companion", FAIL, text, Facts.name(*path), facts.unverified(*path))


def companion_reasons(
    line: InstallLine,
    facts: Facts,
    torch: Version,
    runtime: str | None,
    host: Host | None = None,
    day: str | None = None,
) -> list[Reason]:
    """torchvision/torchaudio beside torch: each release pins the torch it was built with
    (``companions`` facts), a local label must match torch's runtime, and (given the ``host``,
    judged on ``day``) the release pip takes must have a wheel for its Python."""
    reasons = []
    for name, requirement in line.companions.items():
        pinned = pinned_of(requirement)
        if pinned is None:
            paired = facts.get("companions", str(torch.public), name)
            gap = (
                python_gap(facts, name, str(paired), host, day, False) if host and paired else None
            )
            reasons += [gap] if gap else []
            continue
        gap = python_gap(facts, name, str(pinned.public), host, day, True) if host else None
        if gap is not None:
            reasons.append(gap)
            continue
        if pinned.local and runtime and runtime != "cpu" and pinned.local != runtime:
            text = (
                f"{name}=={pinned} is a {pinned.local} build, torch is {runtime}: "
                "pip cannot resolve both"
            )
            reasons.append(Reason("companion", FAIL, text, "wheel_index.stable"))
            continue
        missing = facts.get("companions_missing", name, str(pinned.public)) or []
        if pinned.local and pinned.local in missing:
            path = ("companions_missing", name, str(pinned.public))
            text = (
                f"{name}=={pinned} was never on the wheel pages (pip: 'No matching distribution "
                f"found'; pytorch/vision#2912): its {pinned.public} had no local builds"
            )
            reasons.append(
                Reason("companion", FAIL, text, Facts.name(*path), facts.unverified(*path))
            )
            continue
        other = torch_for(facts, name, pinned)
        if other is None:
            continue
        path = Facts.name("companions", other)
        if Version(other) == Version(torch.public):
            text = f"{name}=={pinned.public} goes with torch {torch.public}"
            reasons.append(Reason("companion", PASS, text, path))
            continue
        paired = facts.get("companions", str(torch.public), name)
        need = f"; torch {torch.public} needs {name}=={paired}" if paired else ""
        text = (
            f"{name}=={pinned.public} was released with torch {other} and pins it: pip cannot "
            f"install it beside torch {torch.public} (ResolutionImpossible){need}"
        )
        reasons.append(Reason("companion", FAIL, text, path))
    return reasons
