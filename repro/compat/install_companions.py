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


def platform_gap(extra: Facts, name: str, torch: Version, host: Host) -> Reason | None:
    """A companion with no wheel for the host's platform beside ``torch`` (compat-extra
    ``companion_platforms``: ``{none_through: T}``, no release of ``name`` paired with torch T or
    older had one: torchaudio on Windows before 0.6.0, on Linux aarch64 through 0.12.0; sources
    ``torchaudio_platforms``): pip finds no matching distribution. None otherwise (later releases
    are either read to have wheels or not read)."""
    plat = host.wheel_platform
    last = extra.get("companion_platforms", name, plat, "none_through")
    if not last or torch.public == "" or Version(torch.public) > Version(str(last)):
        return None
    text = (
        f"{name} had no wheel for {plat} beside torch {torch.public}: none of its releases up to "
        f"the one paired with torch {last} was built for {plat}; pip finds no matching "
        f"distribution for {name}"
    )
    path = ("companion_platforms", name, plat)
    return Reason("platform", FAIL, text, "compat-extra:" + Facts.name(*path))


def _pypi_wheel_day(entry: Mapping, plat: str, python: str) -> str | None:
    """The day PyPI first had a wheel of one ``companion_pypi_wheels`` release for ``plat`` and
    ``python``, or None when it never had one."""
    wheels = entry.get("wheels") or {}
    if python not in str(wheels.get(plat) or "").split():
        return None
    later = entry.get("later") or {}
    return str(later.get(f"{plat} {python}") or entry.get("day") or "")


def pypi_gap(
    facts: Facts,
    extra: Facts,
    line: InstallLine,
    name: str,
    requirement: Requirement,
    host: Host,
    day: str | None,
) -> Reason | None:
    """A companion a pip/uv line takes from PyPI alone (no index but PyPI or a mirror of it, compat-extra
    ``pypi_hosts``; no ``-f`` page, no uv ``--torch-backend``) that PyPI has no wheel of for the host's platform and Python on the line's day
    (compat-extra ``companion_pypi_wheels``, every file of every torchvision and torchaudio
    release read from PyPI's JSON API; neither has an sdist after torchvision 0.1.6, so pip finds
    no matching distribution). Pinned (``==V``): release V's wheels. Otherwise every release out
    on the day that the specifier admits (yanked ones only before the facts'
    ``pure_wheels_yanked_by``): a fail only when none has such a wheel (pip backtracks to any
    older one, even beside a pinned torch: old torchvision releases pin no exact torch). None when
    the line names an index, a pinned release is not in the table or not out yet, or the host's
    Python is not known."""
    indexes = (*line.indexes, *line.extra_indexes)
    if line.find_links or line.torch_backend or line.tool == "conda":
        return None
    if not host.python or not str(host.python).replace(".", "").isdigit():
        return None  # unknown, or a free-threaded 3.13t: the table leaves cpXYt wheels out
    if any(src.index_kind(url, extra) != "pypi" for url in indexes):
        return None  # another index may serve it (download.pytorch.org's pages, a vendor's)
    table = extra.get("companion_pypi_wheels", name) or {}
    if not table:
        return None
    plat, python, on = host.wheel_platform, str(host.python), day or "9999-12-31"
    path = "compat-extra:" + Facts.name("companion_pypi_wheels", name)
    pinned = pinned_of(requirement)
    if pinned is not None:
        entry = table.get(str(pinned.public))
        if pinned.local or not isinstance(entry, Mapping) or str(entry.get("day")) > on:
            return None
        first = _pypi_wheel_day(entry, plat, python)
        if first is not None and first <= on:
            return None
        has = entry.get("wheels") or {}
        own = str(has.get(plat) or "none").replace(" ", ", ")
        text = (
            f"{name} {pinned.public} has no wheel for Python {python} on {plat} on PyPI "
            f"(its {plat} wheels: {own}{'' if first is None else f'; that one came {first}'}): "
            f"pip finds no matching distribution for {name}=={pinned.public}"
        )
        return Reason("companion", FAIL, text, path)
    yanked_by = str(facts.get("companion_python_first", "pure_wheels_yanked_by") or "9999-12-31")
    out = [
        (version, entry)
        for version, entry in table.items()
        if isinstance(entry, Mapping)
        and str(entry.get("day")) <= on
        and requirement.specifier.contains(str(version))
        and (not entry.get("yanked") or on < yanked_by)
    ]
    if not out or any((d := _pypi_wheel_day(e, plat, python)) and d <= on for _, e in out):
        return None
    text = (
        f"no {name} release on PyPI up to {on if day else 'today'} has a wheel for Python "
        f"{python} on {plat} ({len(out)} releases read): pip finds no matching distribution "
        f"for {name} (from versions: none)"
    )
    return Reason("companion", FAIL, text, path)


def past_last(
    facts: Facts,
    extra: Facts,
    line: InstallLine,
    name: str,
    torch: Version,
    runtime: str | None,
    day: str | None,
) -> Reason | None:
    """A companion asked beside a torch newer than the companion's last release (compat-extra
    ``companion_last``: torchaudio's newest release is 2.11.0, with torch 2.11.0, as read on
    PyPI) where the line's only index is a download.pytorch.org one whose runtime no torch up to
    that release had (cu132 came with 2.12): that index has no such companion at all ("from
    versions: none"). None otherwise: from PyPI or an older runtime's index pip takes the last
    pair (an older torch); a pinned newer torch beside it cannot pair either, but the fix lines
    this module's callers write pin the newest torch beside unpinned companions, so that case is
    left to a later change; days after ``read`` are not judged."""
    last = extra.get("companion_last", name)
    if not isinstance(last, Mapping) or Version(torch.public) <= Version(str(last["torch"])):
        return None
    if day is not None and day > str(last.get("read") or ""):
        return None
    fact = "compat-extra:" + Facts.name("companion_last", name)
    head = (
        f"{name}'s last release is {last['release']} (with torch {last['torch']}; PyPI as read "
        f"on {last.get('read')})"
    )
    pytorch_only = (
        line.indexes
        and not line.extra_indexes
        and not line.find_links
        and all(src.index_kind(url, extra) == "pytorch" for url in line.indexes)
    )
    if not pytorch_only or not runtime or runtime == "cpu":
        return None
    older = [r for r in src.releases(facts, extra) if r <= Version(str(last["torch"]))]
    if any(runtime in (src.runtimes_of(facts, r) or []) for r in older):
        return None
    text = (
        f"{head}: no torch up to {last['torch']} had {runtime} builds, so "
        f"{', '.join(line.indexes)} has no {name} at all: pip finds no matching distribution "
        f"for {name} (from versions: none)"
    )
    return Reason("companion", FAIL, text, fact)


def newest_on(facts: Facts, extra: Facts) -> Version | None:
    """The newest torch release out on the day a :func:`repro.compat.sources.dated` view stands
    for (by its release day; an undated release, 1.8.2 LTS, is never taken); None for today's
    facts or when no dated release is out."""
    day = src.as_of(extra)
    if day is None:
        return None
    out = [
        r
        for r in src.releases(facts, extra)
        if (d := src.release_day(facts, extra, r)) is not None and d.isoformat() <= day
    ]
    return max(out) if out else None


def companions_only(line: InstallLine, facts: Facts, extra: Facts, host: Host) -> list[Reason]:
    """A line of companions and no torch: first the companions PyPI has no wheel of for the
    host (:func:`pypi_gap`, pinned or not); else, for unpinned companions judged on a day (pip
    takes each companion's newest release, paired with the newest torch of that day), the
    platform gaps of :func:`platform_gap` for that torch (empty when none, when a companion is
    pinned, or for today's facts)."""
    day = src.as_of(extra)
    found = [pypi_gap(facts, extra, line, n, r, host, day) for n, r in line.companions.items()]
    if any(found):
        return [g for g in found if g is not None]
    if any(pinned_of(r) is not None or len(r.specifier) for r in line.companions.values()):
        return []
    torch = newest_on(facts, extra)
    if torch is None:
        return []
    gaps = [platform_gap(extra, name, torch, host) for name in line.companions]
    return [g for g in gaps if g is not None]


def numpy_abi(line: InstallLine, torch: Version, host: Host, extra: Facts) -> Reason | None:
    """A fail where the line names numpy with a specifier that admits NumPy 2, pip takes NumPy 2
    (judged on or after ``numpy2_abi.numpy2_from``, today when undated, for Python >= 3.9), and
    ``torch`` was built against NumPy 1.x (before ``numpy1_builds_before``; on Windows before
    ``numpy1_builds_before_windows``; compat-extra ``numpy2_abi``, sources ``numpy2_abi``):
    import torch warns and torch's NumPy interop fails. None otherwise (no numpy on the line: pip
    installs none with torch, whatever the environment already has is not in the line)."""
    table = extra.get("numpy2_abi") or {}
    if line.numpy is None or not table or host.python is None:
        return None
    day = src.as_of(extra) or "9999-12-31"
    if day < str(table.get("numpy2_from") or "9999") or Version(host.python) < Version(
        str(table.get("numpy2_min_python") or "99")
    ):
        return None
    if not any(line.numpy.specifier.contains(v) for v in ("2.0.0", "2.0.2", "2.1.0", "2.2.0")):
        return None
    key = "numpy1_builds_before_windows" if host.platform == "windows" else "numpy1_builds_before"
    before = str(table.get(key) or "0")
    if Version(torch.public) >= Version(before):
        return None
    asked = str(line.numpy) if len(line.numpy.specifier) else "numpy (unpinned)"
    text = (
        f"{asked} gives NumPy 2, and torch {torch.public} was built against NumPy 1.x (before "
        f"{before}{' on Windows' if host.platform == 'windows' else ''}): import torch warns 'A "
        "module that was compiled using NumPy 1.x cannot be run in NumPy 2' and torch's NumPy "
        "interop fails ('RuntimeError: Numpy is not available'); pin numpy<2 or take a newer torch"
    )
    return Reason("companion", FAIL, text, "compat-extra:" + Facts.name("numpy2_abi", key))


def companion_reasons(
    line: InstallLine,
    facts: Facts,
    torch: Version,
    runtime: str | None,
    host: Host | None = None,
    day: str | None = None,
    extra: Facts | None = None,
) -> list[Reason]:
    """torchvision/torchaudio beside torch: each release pins the torch it was built with
    (``companions`` facts), a local label must match torch's runtime, and (given the ``host``,
    judged on ``day``) the release pip takes must have a wheel for its Python and (given
    ``extra``) its platform (:func:`platform_gap`), and a companion taken from PyPI alone a wheel
    there (:func:`pypi_gap`)."""
    reasons = []
    for name, requirement in line.companions.items():
        gap = platform_gap(extra, name, torch, host) if extra is not None and host else None
        if gap is None and extra is not None:
            gap = past_last(facts, extra, line, name, torch, runtime, day)
        if gap is not None:
            reasons.append(gap)
            continue
        on_pypi = (
            pypi_gap(facts, extra, line, name, requirement, host, day)
            if extra is not None and host
            else None
        )
        pinned = pinned_of(requirement)
        if pinned is None:
            paired = facts.get("companions", str(torch.public), name)
            gap = (
                python_gap(facts, name, str(paired), host, day, False) if host and paired else None
            )
            gap = gap or on_pypi
            reasons += [gap] if gap else []
            continue
        gap = python_gap(facts, name, str(pinned.public), host, day, True) if host else None
        gap = gap or on_pypi
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
