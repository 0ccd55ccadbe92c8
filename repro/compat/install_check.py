"""``repro check LINE``: will this install line install, and will what it installs run, on a host?

Three steps, each a :class:`~repro.compat.results.Reason` naming the fact it rests on:

1. **install**: which build the installer picks (:mod:`repro.compat.sources`: pip merges its
   indexes, uv takes the first index that has torch, conda the channel's builds), or why none
   fits: a local version (``+cu118``) PyPI never serves, a runtime the index does not serve, a
   release that never existed, no wheel for the host's Python or platform (with the nearest
   releases that have one), a torchvision/torchaudio pin made for another torch.
2. **python**/**platform**: the wheel fits the interpreter (PyPI's ``cpXY`` tags per release).
3. **runs**: driver, kernel image, gfx target (:func:`repro.compat.predictions.predict`) when
   the host's GPUs are known; without them, what the build needs ("an NVIDIA driver >= 525.60.13
   and a GPU of compute capability 5.0-9.0").

Outcome ``fail`` when any step fails (exit 1), ``unknown`` when one lacked facts, else ``pass``.
Pure; the host comes in as fingerprint properties plus an optional Python/platform override.
This module judges pip/uv lines and nightly indexes; wheels are in
:mod:`~repro.compat.install_wheel`, conda lines in :mod:`~repro.compat.install_conda`, the
answer in :mod:`~repro.compat.install_result`, step 3 in :mod:`~repro.compat.install_runs`
and the line that works in :mod:`~repro.compat.install_fix`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import check as build_check
from repro.compat import install_index, install_line, install_nightly, install_xpu
from repro.compat import install_offers as picks
from repro.compat import sources as src
from repro.compat.facts import Facts, default_facts, extra_facts
from repro.compat.install_conda import check_conda
from repro.compat.install_fix import (
    companion_pins,
    fix_line,
    install_form,
    nearest_python,
    pypi_fix_line,
)
from repro.compat.install_line import InstallLine
from repro.compat.install_result import INSTALL_CHECKS, LineResult, host_of
from repro.compat.install_runs import needs, run_reasons_on
from repro.compat.install_wheel import check_wheel
from repro.compat.predictions import gpus_of, version
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import DOWNLOAD, Host
from repro.errors import ConfigError

__all__ = [
    "LineResult",
    "check_line",
    "fix_line",
    "host_of",
    "install_form",
    "needs",
    "pypi_fix_line",
]

_MAX_NEAREST = 4


# --------------------------------------------------------------------------------------------
# Picking the build


def _spec(line: InstallLine, facts: Facts) -> tuple[SpecifierSet, list[Reason]]:
    """The torch specifier; a bare torch beside a pinned torchvision/torchaudio takes the torch
    that companion was released with (it pins torch exactly)."""
    spec = line.torch.specifier if line.torch is not None else SpecifierSet()
    notes: list[Reason] = []
    if len(spec) == 0:
        for name, requirement in line.companions.items():
            pinned = _pinned(requirement)
            if pinned is None:
                continue
            torch = _torch_for(facts, name, pinned)
            if torch:
                spec = SpecifierSet(f"=={torch}")
                text = f"{name}=={pinned} was released with torch {torch} and pins it"
                notes.append(Reason("companion", PASS, text, Facts.name("companions", torch)))
                break
    return spec, notes


def _pinned(requirement: Requirement) -> Version | None:
    pins = [
        s for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version
    ]
    return src.parse_version(pins[0].version) if len(pins) == 1 else None


def _torch_for(facts: Facts, name: str, pinned: Version) -> str | None:
    for torch, pair in (facts.get("companions") or {}).items():
        if isinstance(pair, Mapping) and pinned.public in (
            str(pair.get(name)),
            str(pair.get(f"{name}_conda")),
        ):
            return str(torch)
    return None


def _platform_builds(facts: Facts, extra: Facts, host: Host) -> str:
    """What download.pytorch.org builds for the host's platform, in words."""
    plat = host.wheel_platform
    if plat == "linux-aarch64":
        first = sorted(
            (Version(str(m)) for m in extra.get("aarch64", "cuda_builds") or {}),
            key=lambda v: v.release,
        )
        since = f"; its CUDA (sbsa) builds start with {first[0]}" if first else ""
        return f"Linux aarch64 gets CPU builds{since} (Jetson wheels are NVIDIA's own)"
    if plat == "windows-arm64":
        return "no Windows on Arm wheels on PyPI or download.pytorch.org"
    if plat in ("macos", "macos-arm64"):
        return "macOS gets CPU/MPS builds only"
    return "Windows gets no ROCm builds"


def _platform_fact(host: Host) -> str:
    if host.wheel_platform == "linux-aarch64":
        return "compat-extra:aarch64.cuda_builds"
    return "wheel_index.pypi_note"


def _why_none(
    line: InstallLine,
    groups: list,
    spec: SpecifierSet,
    facts: Facts,
    extra: Facts,
    host: Host,
    host_props: Mapping[str, str],
) -> tuple[list[Reason], str | None, list[str]]:
    """Why no build fits: reasons, a line that works and the nearest alternatives."""
    all_offers = [o for _s, offers in groups for o in offers]
    public = picks.public_spec(spec)
    local = picks.local_of(spec)
    releases = src.releases(facts, extra)
    released = [r for r in releases if public.contains(r, prereleases=True)]
    wanted = max(released) if released else None
    pinned = next((src.parse_version(s.version) for s in spec if s.operator in ("==", "===")), None)
    sources_text = ", ".join(s for s, _ in groups) or "no index"
    day = src.as_of(extra)
    known = [
        Version(str(r))
        for r in extra.get("torch_release_dates") or {}
        if pinned and Version(str(r)) == Version(pinned.public)
    ]
    later = src.release_day(facts, extra, known[0]) if known and day else None
    if not released and later is not None and later.isoformat() > (day or ""):
        text = f"torch {known[0]} was released on {later}, after {day}: no index served it then"
        return [Reason("install", FAIL, text, "compat-extra:torch_release_dates")], None, []
    if not released:
        minor = f"{pinned.major}.{pinned.minor}" if pinned else None
        patches = [str(r) for r in releases if minor and f"{r.major}.{r.minor}" == minor]
        if minor and not patches and (pinned or Version("0")) > releases[-1]:
            text = f"torch {pinned} is newer than the facts know (newest {releases[-1]})"
            return [Reason("install", UNKNOWN, text, "torch_releases")], None, []
        text = f"no torch release matches {line.torch}" + (
            f": {minor} releases are {', '.join(patches)}" if patches else ""
        )
        nearest = patches or [str(r) for r in releases[-1:]]
        return [Reason("install", FAIL, text, "torch_releases")], None, nearest
    matching = [o for o in all_offers if picks.matches(spec, o)]
    if not matching and local and not src.runtime_tag(local):
        text = f"+{local} is no PyTorch build tag (cuXYZ, rocmX.Y, cpu): no index serves it"
        return [Reason("install", FAIL, text, "wheel_index.stable")], None, []
    elsewhere = picks.indexes_without_platform(groups, host)
    if not matching and elsewhere:
        # liva#4, rohitg00/ai-engineering-from-scratch#316: "(from versions: none)" on a Mac.
        xpu_only = all(src.runtime_from_url(url) == "xpu" for url in elsewhere)
        what = (
            "XPU builds are Linux and Windows only"
            if xpu_only
            else "CUDA and ROCm builds are Linux and Windows only"
            if host.platform == "macos"
            else "ROCm builds are Linux only"
        )
        gets = "CPU/MPS" if host.platform == "macos" else "CPU"
        text = (
            f"{', '.join(elsewhere)} has no {picks.PLATFORM_NAMES[host.platform]} wheels: {what} "
            f"({'compat-extra xpu' if xpu_only else 'previous-versions page'}); {picks.PLATFORM_NAMES[host.platform]} gets PyPI's {gets} build"
        )
        on_pypi = [
            o.version
            for o in src.pypi_offers(facts, extra, host)
            if public.contains(o.version, prereleases=True) and o.fits is not False
        ]
        fix = pypi_fix_line(facts, max(on_pypi), line) if on_pypi else None
        nearest = [str(max(on_pypi))] if on_pypi else nearest_python(facts, extra, host, wanted)
        return [Reason("platform", FAIL, text, "wheel_index.pypi_note")], fix, nearest
    first = next(((s, offers) for s, offers in groups if offers), None)
    elsewhere_fits = [
        s
        for s, offers in groups
        if first
        and s != first[0]
        and any(picks.matches(spec, o) and o.fits is not False for o in offers)
    ]
    if line.uv_first_index and first and elsewhere_fits:
        # uv's default index strategy (uv docs, "Index strategy": first-index).
        text = (
            f"uv takes torch only from the first index that has it, {first[0]}, which has no "
            f"torch{f' {spec}' if spec else ''} for Python {host.python} on "
            f"{host.wheel_platform}; {', '.join(elsewhere_fits)} has one, but uv does not look "
            "there (first-index)"
        )
        fix = None
        if "\n" not in line.text.strip() and not line.torch_backend:
            fix = f"{line.text.strip()} --index-strategy unsafe-best-match"
        return [Reason("install", FAIL, text, "uv index strategy first-index")], fix, []
    page_last = src.parse_version(str(facts.get("find_links_pages", "last_release") or ""))
    pages = [
        s for s, _ in groups if s.endswith("torch_stable.html") and not install_line.is_nightly(s)
    ]
    if not matching and pages and page_last and wanted > page_last:
        text = (
            f"{', '.join(pages)} stopped with torch {page_last} (pytorch#136939: the -f pages "
            f"were not updated from 2.4 on): no torch {wanted} there"
        )
        runtime = local or src.runtime_from_url(pages[0]) or "cpu"
        fix = None
        if runtime in (src.runtimes_of(facts, wanted) or []):
            fix = fix_line(facts, wanted, runtime, line, companion_pins(facts, wanted, line))
        path = ("find_links_pages", "last_release")
        unverified = facts.unverified(*path)
        return [Reason("install", FAIL, text, Facts.name(*path), unverified)], fix, []
    nightly_only = [s for s, _ in groups if install_line.is_nightly(s)]
    if not all_offers and nightly_only:
        text = (
            f"{', '.join(nightly_only)} serves only nightly builds of the "
            f"{src.nightly_line(facts, extra)} line (X.Y.0.devYYYYMMDD): no torch {spec} there"
        )
        runtime = src.runtime_from_url(nightly_only[0]) or "cpu"
        fix = None
        if runtime in (src.runtimes_of(facts, wanted) or []):
            fix = fix_line(facts, wanted, runtime, line, companion_pins(facts, wanted, line))
        return [Reason("install", FAIL, text, "wheel_index.nightly")], fix, []
    if not matching:
        if local and not any(o.version.local == local for o in all_offers):
            only_pypi = all(s == "PyPI" or not src.is_pytorch_index(s) for s, _ in groups)
            fix = fix_line(facts, wanted, local, line, companion_pins(facts, wanted, line))
            published = src.runtimes_of(facts, wanted)
            if published is not None and local not in published:
                text = (
                    f"torch {wanted}+{local} was not published: {wanted} builds are "
                    f"{', '.join(published)}"
                )
                nearest = build_check.nearest_published(
                    build_check.BuildRequest(str(wanted), local), local, facts, extra
                )
                fix = None
                if nearest:
                    near = Version(nearest[0])
                    fix = fix_line(facts, near, near.local or "cpu", line, {})
                return (
                    [
                        Reason(
                            "install",
                            FAIL,
                            text,
                            f"torch_variants.{wanted.major}.{wanted.minor}.variants",
                        )
                    ],
                    fix,
                    nearest,
                )
            if only_pypi:
                text = (
                    f"PyPI serves no local versions: there is no torch=={wanted}+{local} on "
                    f"{sources_text} (pip: 'No matching distribution found'); +{local} builds "
                    f"come from {DOWNLOAD}/{local}"
                )
                return [Reason("install", FAIL, text, "wheel_index.pypi_note")], fix, []
            if (
                published
                and local in published
                and not src.platform_has(facts, extra, wanted, local, host)
            ):
                # pytorch/pytorch#71473: torch==1.8.1+cu102 on a Jetson (aarch64).
                text = (
                    f"torch {wanted}+{local} has no {install_index.platform_name(host)} build: "
                    f"{_platform_builds(facts, extra, host)}"
                )
                return [Reason("platform", FAIL, text, _platform_fact(host))], None, []
            served = sorted({o.version.local for o in all_offers if o.version.local}) or ["no"]
            text = (
                f"no torch=={wanted}+{local} on {sources_text} (local versions there: "
                f"+{', +'.join(served[:8])})"
            )
            return [Reason("install", FAIL, text, "wheel_index.stable")], fix, []
        runtimes = sorted({o.runtime or "?" for o in all_offers})
        published = src.runtimes_of(facts, wanted)
        text = f"torch {wanted} is not on {sources_text}"
        if published is not None:
            text += f": {wanted.major}.{wanted.minor} builds are {', '.join(published)}"
        runtime = runtimes[0] if len(runtimes) == 1 else None
        asked = [src.runtime_from_url(s) for s, offers in groups if not offers]
        asked = [r for r in asked if r]
        if runtime is None and not all_offers and asked:
            runtime = asked[0]
            if not picks.ever_published(facts, extra, runtime):
                text += (
                    f" (no release has {runtime} builds: download.pytorch.org has no such index)"
                )
        nearest: list[str] = []
        fix = None
        if runtime and runtime != "?":
            nearest = build_check.nearest_published(
                build_check.BuildRequest(str(wanted), runtime), runtime, facts, extra
            )
            if nearest:
                near = Version(nearest[0])
                fix = fix_line(facts, near, near.local or runtime, line, {})
        fact = f"torch_variants.{wanted.major}.{wanted.minor}.variants"
        return [Reason("install", FAIL, text, fact)], fix, nearest
    # Something matches, but no wheel fits this interpreter.
    releases_matching = sorted({o.version for o in matching})
    best = releases_matching[-1]
    pythons = src.pypi_pythons(facts, Version(best.public), host) or []
    plat = host.wheel_platform
    if not pythons:
        text = f"torch {best.public} has no wheel for {plat} on {', '.join(s for s, _ in groups)}"
        check = "platform"
        runtimes = [
            r
            for r in src.runtimes_of(facts, Version(best.public)) or []
            if src.platform_has(facts, extra, Version(best.public), r, host)
        ]
        if runtimes and host.platform != "macos":
            gpu = any(g.vendor == "nvidia" for g in gpus_of(host_props) or [])
            default = facts.get("torch_variants", f"{best.major}.{best.minor}", "pypi_default")
            runtime = str(default) if gpu and default in runtimes else "cpu"
            fix = fix_line(
                facts,
                Version(best.public),
                runtime,
                line,
                companion_pins(facts, Version(best.public), line),
            )
            text += f"; download.pytorch.org has its {', '.join(runtimes)} builds"
            fact = Facts.name("pypi_python", str(best.public), plat)
            return [Reason(check, FAIL, text, fact)], fix, []
    else:
        text = (
            f"torch {best.public} has no wheel for Python {host.python} on {plat} "
            f"(its wheels: Python {', '.join(pythons)})"
        )
        check = "python"
    nearest = nearest_python(facts, extra, host, Version(best.public))
    fix = None
    if nearest:
        runtime = next((o.runtime for o in matching if o.runtime), None)
        near = Version(nearest[-1])
        if all(o.source == "PyPI" for o in matching):
            fix = pypi_fix_line(facts, near, line)
        elif runtime and runtime in (src.runtimes_of(facts, near) or []):
            fix = fix_line(facts, near, runtime, line, companion_pins(facts, near, line))
        elif runtime and runtime != "cpu":
            # That release's closest CUDA/ROCm build (1.12.1+cu113 -> 2.0.0+cu117).
            closest = build_check.nearest_published(
                build_check.BuildRequest(str(near), runtime), runtime, facts, extra
            )
            same = [Version(c) for c in closest if Version(c).public == str(near)]
            if same and same[0].local:
                pins = companion_pins(facts, near, line)
                fix = fix_line(facts, near, same[0].local, line, pins)
    fact = Facts.name("pypi_python", str(best.public), plat)
    return [Reason(check, FAIL, text, fact)], fix, nearest


def _companion_reasons(
    line: InstallLine, facts: Facts, torch: Version, runtime: str | None
) -> list[Reason]:
    """torchvision/torchaudio pins beside torch: each release pins the torch it was built with
    (``companions`` facts), and a local label must match torch's runtime."""
    reasons = []
    for name, requirement in line.companions.items():
        pinned = _pinned(requirement)
        if pinned is None:
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
        other = _torch_for(facts, name, pinned)
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


def _backend(
    line: InstallLine, host_props: Mapping[str, str], facts: Facts, extra: Facts
) -> tuple[str | None, Reason | None]:
    """The runtime uv's ``--torch-backend`` stands for (``auto``: from the host's driver)."""
    value = line.torch_backend
    if not value:
        return None, None
    if src.runtime_tag(value):
        return value, None
    if value == "auto":
        driver = version(host_props.get("host.driver.nvidia"))
        if not driver:
            return "cpu", Reason(
                "install",
                NOTE,
                "--torch-backend auto: no NVIDIA driver here, uv takes the CPU index",
                "host.driver.nvidia",
            )
        newest = src.releases(facts, extra)[-1]
        best = None
        for tag in src.runtimes_of(facts, newest) or []:
            if not tag.startswith("cu"):
                continue
            digits = tag[2:]
            cuda = f"{int(digits[:-1])}.{digits[-1]}"
            minimum = version(facts.get("cuda_min_driver", cuda, "family_min", "linux"))
            if minimum and driver >= minimum and (best is None or int(digits) > int(best[2:])):
                best = tag
        text = f"--torch-backend auto with driver {host_props.get('host.driver.nvidia')}: uv takes {best or 'cpu'} (inferred from the minimum drivers)"
        return best or "cpu", Reason("install", NOTE, text, "cuda_min_driver", True)
    return None, Reason(
        "install", UNKNOWN, f"--torch-backend {value} is not in the facts", "wheel_index"
    )


# --------------------------------------------------------------------------------------------
# The three kinds of line


def _asked_gpu(line: InstallLine, spec: SpecifierSet) -> str | None:
    local = picks.local_of(spec)
    if local and local != "cpu":
        return f"+{local}"
    for url in line.all_indexes:
        runtime = src.runtime_from_url(url)
        if runtime and runtime != "cpu":
            return url
    if line.torch_backend and line.torch_backend not in ("cpu", "auto"):
        return f"--torch-backend {line.torch_backend}"
    return None


_FAMILY_NAMES = {"cu": "CUDA", "rocm": "ROCm", "cpu": "CPU", "xpu": "Intel XPU"}


def _family(runtime: str | None) -> str | None:
    """``cu``, ``rocm``, ``xpu`` or ``cpu`` for a runtime tag; None for an unknown one."""
    if not runtime:
        return None
    if runtime == "xpu":
        return "xpu"
    if runtime.startswith("cu"):
        return "cu"
    if runtime.startswith("rocm"):
        return "rocm"
    return "cpu" if runtime == "cpu" else None


def _asked_cpu(line: InstallLine, spec: SpecifierSet) -> bool:
    """Whether the line asks for the CPU build itself (``+cpu``, a ``/cpu`` index,
    ``--torch-backend cpu``): then a CPU build on a GPU host is what it wants."""
    if picks.local_of(spec) == "cpu" or line.torch_backend == "cpu":
        return True
    return any(src.runtime_from_url(url) == "cpu" for url in line.all_indexes)


def _unused_gpu(host_props: Mapping[str, str], runtime: str | None) -> str | None:
    """ "NVIDIA"/"AMD" when the host's GPUs are known, the build is CPU-only or for the other
    vendor, and no GPU of the build's vendor is there: the GPU stays unused."""
    gpus = gpus_of(host_props) or []
    vendors = {g.vendor for g in gpus if g.vendor in ("nvidia", "amd")}
    if not vendors or _family(runtime) is None:
        return None
    needs = {"cu": "nvidia", "rocm": "amd"}.get(_family(runtime) or "")
    if needs in vendors:
        return None
    return "NVIDIA" if "nvidia" in vendors else "AMD"


def _after_fix(
    fix: str | None, host_props: Mapping[str, str], host: Host, facts: Facts, extra: Facts
) -> tuple[list[Reason], tuple[str, ...], bool, str | None]:
    """How the build of the line that works would run here (its run reasons, each prefixed
    "with torch X"), the builds this host runs when it would not, False when that pip line is
    no line that works here (it would not install, or it installs a build that would not run
    and none runs), and the line of a build this host runs when the first one would not run."""
    if not fix or not fix.startswith(("pip install", "uv pip install")):
        return [], (), True, None
    try:
        fixed = check_line(
            install_line.parse(fix),
            host_props,
            host.python,
            host.platform,
            facts,
            extra,
            follow_fix=False,
            machine=host.machine,
        )
    except ConfigError:
        return [], (), True, None
    if fixed.installs is not True:
        return [], (), fixed.installs is None, None
    out = [
        Reason(r.check, r.verdict, f"with torch {fixed.torch}: {r.text}", r.fact, r.unverified)
        for r in fixed.prediction.reasons
        if r.check not in INSTALL_CHECKS and r.verdict != PASS
    ]
    if fixed.outcome == FAIL:
        # It installs but would not run: the line of a build that runs, else none.
        return out, fixed.instead, fixed.fix is not None, fixed.fix
    return out, fixed.instead, True, None


def check_line(
    line: InstallLine,
    host_props: Mapping[str, str],
    python: str | None = None,
    platform: str | None = None,
    facts: Facts | None = None,
    extra: Facts | None = None,
    *,
    follow_fix: bool = True,
    machine: str | None = None,
    as_of: date | None = None,
) -> LineResult:
    """Whether ``line`` installs and runs on the host of ``host_props`` (``host.*`` fingerprint
    properties), for Python ``python``, ``platform`` and CPU ``machine`` (``x86_64``/``aarch64``)
    when given (else the line's own environment Python, else the host's), on the day ``as_of``
    (the indexes then served only the releases out by that day: an old unpinned line gets that
    day's build, and the driver floor is that build's; None: today's facts). ``follow_fix``:
    also check the line that works, and drop it when it would not install on this host either
    (off for that check itself)."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    if as_of is not None:
        facts, extra = src.dated(facts, extra, as_of)
    result = _check_line(line, host_props, python, platform, machine, facts, extra, follow_fix)
    if follow_fix and result.fix and result.fix.startswith(("pip install", "uv pip install")):
        fixed = check_line(
            install_line.parse(result.fix),
            host_props,
            result.host.python,
            result.host.platform,
            facts,
            extra,
            follow_fix=False,
            machine=result.host.machine,
        )
        if fixed.installs is False:
            result = replace(result, fix=None)
    if follow_fix and (result.nearest or result.instead):
        nearest = tuple(n for n in result.nearest if _installs(n, result, host_props, facts, extra))
        instead = tuple(b for b in result.instead if _installs(b, result, host_props, facts, extra))
        result = replace(result, nearest=nearest, instead=instead)
    return result


def _installs(
    build: str, result: LineResult, host_props: Mapping[str, str], facts: Facts, extra: Facts
) -> bool:
    """Whether a "nearest" or "this host runs" build (``2.7.0+cu126``, ``2.2.0``; conda's
    ``1.9.0 CUDA 10.2`` are kept) would install on the result's host: its pip line, checked like
    the line itself."""
    parsed = src.parse_version(build)
    if parsed is None:
        return True
    release = Version(parsed.public)
    if parsed.local:
        if parsed.local not in (src.runtimes_of(facts, release) or []):
            return False
        candidate = fix_line(facts, release, parsed.local, result.line, {})
    else:
        candidate = pypi_fix_line(facts, release, result.line)
    checked = check_line(
        install_line.parse(candidate),
        host_props,
        result.host.python,
        result.host.platform,
        facts,
        extra,
        follow_fix=False,
        machine=result.host.machine,
    )
    return checked.installs is not False


def _check_line(
    line: InstallLine,
    host_props: Mapping[str, str],
    python: str | None,
    platform: str | None,
    machine: str | None,
    facts: Facts,
    extra: Facts,
    follow_fix: bool,
) -> LineResult:
    host_props = {k: v for k, v in host_props.items() if k.startswith("host.")}
    host = host_of(host_props, python or line.python, platform, machine)
    if line.conda is not None:
        return check_conda(line, host_props, host, facts, extra)
    if line.wheel is not None:
        return check_wheel(line, line.wheel, host_props, host, facts, extra)
    reasons: list[Reason] = []
    if line.unread and line.torch is None and not line.companions:
        text = f"cannot read {', '.join(line.unread)} here: give its lines instead"
        return LineResult(line, host, None, None, combine([Reason("install", UNKNOWN, text, "-r")]))
    spec, notes = _spec(line, facts)
    reasons += notes
    if line.torch is None and not notes:
        text = "the line pins torchvision/torchaudio only, to a version the facts do not pair with torch"
        return LineResult(
            line, host, None, None, combine([Reason("install", UNKNOWN, text, "companions")])
        )
    backend, backend_note = _backend(line, host_props, facts, extra)
    if backend_note:
        reasons.append(backend_note)
    found = src.sources(line, facts, extra, host, backend)
    groups = found.groups
    for url in found.no_archives:
        text = (
            f"-f {url} is an index root (it lists projects, not wheel files): pip's -f reads "
            "archive links only, so it finds no torch there (--index-url takes an index)"
        )
        reasons.append(Reason("install", NOTE, text, "compat-extra:sources.pip_find_links"))
    if found.jetson:
        why = install_index.jetson_index(line, spec, found, host_props, host, extra)
        return LineResult(line, host, None, "jetson", combine(reasons + why))
    blocked = (
        install_xpu.intel_page_platform(found.unknown, spec, host, extra)
        or install_index.labelled_build_elsewhere(found, spec, facts, extra, host)
        or install_index.unknown_index(line, found)
    )
    if blocked is not None:
        return LineResult(line, host, None, None, combine([*reasons, blocked]))
    nightlies, gone = install_nightly.live_nightlies(found.nightlies, facts, extra)
    reasons += gone
    nightly_result = install_nightly.check_nightly(
        line, spec, nightlies, groups, host_props, host, facts, extra, reasons
    )
    if nightly_result is not None:
        return nightly_result
    if line.universal:
        # uv add: the lock's pick (for any platform, Linux x86_64 standing for the widest) and
        # whether this host has a wheel of it.
        every = src.Host(host.python, "linux", "x86_64")
        locked = picks.pick(line, src.sources(line, facts, extra, every, backend).groups, spec)
        offer, why, fix = install_index.universal_lock(line, locked, groups, host, extra)
        reasons += why
        if offer is None and locked is not None:
            return LineResult(line, host, None, None, combine(reasons), fix)
        if any(r.verdict == FAIL for r in why):
            return LineResult(line, host, None, None, combine(reasons))
    offer = picks.pick(line, groups, spec) if not line.universal else offer
    if offer is None:
        why, fix, nearest = _why_none(line, groups, spec, facts, extra, host, host_props)
        after, instead, works, runs = [], (), True, None
        if follow_fix:
            after, instead, works, runs = _after_fix(fix, host_props, host, facts, extra)
        if not works:
            fix = None  # it would not install, or not run, here either: no line that works
        fix = runs or fix  # the build this host runs, when the nearest one would not run
        return LineResult(
            line,
            host,
            None,
            None,
            combine(reasons + why + after),
            fix,
            tuple(nearest[:_MAX_NEAREST]),
            instead,
        )
    release = Version(offer.version.public)
    tool = {"uv": "uv", "pip": "pip"}.get(line.tool, "pip")
    text = f"{tool} gets torch {offer.version} from {offer.source}"
    if offer.runtime and not offer.version.local:
        text += f" (the {offer.runtime} build)"
    reasons.append(
        Reason(
            "install",
            PASS if offer.runtime else UNKNOWN,
            text,
            offer.fact or "torch_releases",
            offer.unverified,
        )
    )
    if offer.runtime == "xpu":
        reasons += install_xpu.index_faults(release, extra)
    if offer.fits:
        own = host.python in (src.pypi_pythons(facts, release, host) or [])
        plat = host.wheel_platform if own else "linux"
        text = f"torch {release} has wheels for Python {host.python} on {plat}"
        if not own:
            text += f" (taken for {host.wheel_platform}'s index wheels too)"
        fact = Facts.name("pypi_python", str(release), plat)
        reasons.append(
            Reason(
                "python", PASS, text, fact, not own or facts.unverified("pypi_python", str(release))
            )
        )
    reasons += _companion_reasons(line, facts, release, offer.runtime)
    asked = _asked_gpu(line, spec)
    wanted_runtime = (
        (src.runtime_from_url(asked) or src.runtime_tag(asked.lstrip("+"))) if asked else None
    ) or (backend if backend and backend != "cpu" else None)
    fix = None
    if offer.runtime == "cpu" and asked and host.platform == "macos":
        text = (
            f"the line asks for a GPU build ({asked}); macOS has none (CUDA and ROCm builds are "
            "Linux and Windows only): pip gets PyPI's CPU/MPS build"
        )
        reasons.append(Reason("accelerator", NOTE, text, "wheel_index.pypi_note"))
    elif offer.runtime == "cpu" and asked:
        text = f"the line asks for a GPU build ({asked}) but gets the CPU build"
        wanted = src.runtime_from_url(asked) or src.runtime_tag(asked.lstrip("+"))
        if wanted and not picks.ever_published(facts, extra, wanted):
            text += f" (no release has {wanted} builds: download.pytorch.org has no such index)"
        reasons.append(Reason("accelerator", FAIL, text, offer.fact or "torch_variants"))
        if wanted:
            # pytorch#90845: the cu114 index does not exist; the release's nearest CUDA build.
            near = build_check.nearest_published(
                build_check.BuildRequest(str(release), wanted), wanted, facts, extra
            )
            same = [n for n in near if Version(n).public == str(release)]
            if same:
                runtime = Version(same[0]).local or "cpu"
                fix = fix_line(facts, release, runtime, line, companion_pins(facts, release, line))
    elif asked and _family(wanted_runtime) not in (None, _family(offer.runtime)):
        # ROCm/hip#3465: a ROCm nightly index without --pre; pip took PyPI's CUDA build.
        text = (
            f"the line asks for a {_FAMILY_NAMES[_family(wanted_runtime)]} build ({asked}) but "
            f"gets torch {offer.version} from {offer.source}, a "
            f"{_FAMILY_NAMES.get(_family(offer.runtime), 'unknown')} build ({offer.runtime})"
        )
        reasons.append(Reason("accelerator", FAIL, text, offer.fact or "torch_variants"))
    elif not _asked_cpu(line, spec) and (unused := _unused_gpu(host_props, offer.runtime)):
        # pytorch/pytorch#123835, #160162: PyPI's aarch64 torch on a GH200 is a CPU build.
        cuda = [r for r in src.runtimes_of(facts, release) or [] if r.startswith("cu")]
        if unused == "NVIDIA" and cuda and src.platform_has(facts, extra, release, cuda[-1], host):
            fix = fix_line(facts, release, cuda[-1], line, companion_pins(facts, release, line))
        what = "CPU-only" if offer.runtime == "cpu" else f"{offer.runtime}"
        text = (
            f"a {what} build on {host.wheel_platform}: the host's {unused} GPU stays unused "
            f"(torch.cuda.is_available() is False)"
        )
        reasons.append(
            Reason(
                "accelerator",
                FAIL,
                text,
                offer.fact or "wheel_index.pypi_note",
                offer.unverified,
            )
        )
    reasons += run_reasons_on(host_props, str(release), offer.runtime, facts, extra, host)
    if offer.runtime and any(r.check == "driver" and r.verdict == FAIL for r in reasons):
        hint = build_check._forward_compat_hint(host_props, offer.runtime, facts, extra)
        reasons += [hint] if hint else []
    prediction = combine(reasons)
    instead: list[str] = []
    if (
        prediction.outcome == FAIL
        and offer.runtime not in (None, "cpu")
        and not any(r.verdict == FAIL and r.check in INSTALL_CHECKS for r in reasons)
    ):
        instead = [
            b
            for b in build_check.builds_that_run(host_props, str(release), facts, extra)
            if b != f"{release}+{offer.runtime}"
        ]
        if instead:
            near = Version(instead[0])
            fix = fix_line(
                facts,
                Version(near.public),
                near.local or "cpu",
                line,
                companion_pins(facts, Version(near.public), line),
            )
    companion_fails = [r for r in reasons if r.check == "companion" and r.verdict == FAIL]
    if (
        fix is None
        and companion_fails
        and all(r.fact.startswith("companions.") for r in companion_fails)
    ):
        # The same torch with the torchvision/torchaudio released with it (not when a pinned
        # companion build was never served: the facts do not name its replacement's pairing).
        if offer.source == "PyPI" or offer.runtime is None:
            fix = pypi_fix_line(facts, release, line)
        else:
            fix = fix_line(
                facts, release, offer.runtime, line, companion_pins(facts, release, line)
            )
    return LineResult(
        line, host, str(offer.version), offer.runtime, prediction, fix, (), tuple(instead)
    )
