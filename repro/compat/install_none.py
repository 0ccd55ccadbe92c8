"""Why no build of a pip/uv line fits the host (``repro check``'s step 1 when the installer finds
nothing): a release that came out after the line's day or never existed, a local label no index
serves, an index without wheels for this platform or Python, a runtime the index does not serve,
a torchvision/torchaudio pin made for another torch; with the line that works and the nearest
releases that would install.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import check as build_check
from repro.compat import install_index, install_line
from repro.compat import install_offers as picks
from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_fix import companion_pins, fix_line, nearest_python, pypi_fix_line
from repro.compat.install_line import InstallLine
from repro.compat.predictions import gpus_of
from repro.compat.results import FAIL, UNKNOWN, Reason
from repro.compat.sources import DOWNLOAD, Host


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


def _glibc_reason(
    line: InstallLine, all_offers: list, matching: list, facts: Facts, extra: Facts, host: Host
) -> tuple[list[Reason], str | None, list[str]] | None:
    """The newest matching build is a manylinux_2_28 wheel and the host's glibc is older
    (compat-extra ``manylinux_glibc``; pytorch/pytorch#156215, Ubuntu 18.04 and torch 2.7.0):
    pip and uv skip it. The line that works: the newest release of the same build whose wheel
    this glibc takes."""
    newest = max(matching, key=lambda o: o.version)
    floor = src.glibc_short(extra, Version(newest.version.public), newest.runtime, host)
    if floor is None:
        return None
    older = [
        o
        for o in all_offers
        if (o.source == "PyPI" if newest.source == "PyPI" else o.runtime == newest.runtime)
        and o.fits is not False
        and not src.glibc_short(extra, Version(o.version.public), o.runtime, host)
    ]
    near = max(older, key=lambda o: o.version) if older else None
    text = (
        f"torch {newest.version.public}'s Linux wheels are manylinux_2_28 (glibc >= {floor}) and "
        f"this host's glibc is {host.glibc}: pip and uv skip them (no matching distribution)"
    )
    fix = None
    if near is not None:
        release = Version(near.version.public)
        build = "release" if near.source == "PyPI" else f"{near.runtime} build"
        text += f"; the newest {build} this glibc takes is torch {release}"
        if near.source == "PyPI" or not near.version.local:
            fix = pypi_fix_line(facts, release, line)
        else:
            fix = fix_line(
                facts, release, near.version.local, line, companion_pins(facts, release, line)
            )
    reason = Reason("platform", FAIL, text, "compat-extra:manylinux_glibc")
    return [reason], fix, [str(near.version)] if near is not None else []


def _nightly_after_branch_cut(
    facts: Facts, extra: Facts, pinned: Version | None, groups: list
) -> str | None:
    """The unknown's text for a nightly pin one line past the nightly line of a dated view
    (``torch==2.11.0.dev20251215+cu130`` from .../whl/nightly/cu130 on 2025-12-15, when the newest
    release was 2.9.1): :func:`sources.nightly_line` takes the nightlies to build the newest
    release's next minor, but once that minor's release branch is cut (weeks before its release)
    the nightlies build the one after (apple/ml-sharp#5: 2.11.0.dev20251215+cu130 installed and
    ran). The day of each branch cut is not in the facts. None for any other pin."""
    if pinned is None or not pinned.is_devrelease or src.as_of(extra) is None:
        return None
    nightly = [s for s, _ in groups if install_line.is_nightly(s)]
    line = Version(src.nightly_line(facts, extra))
    if not nightly or (pinned.major, pinned.minor) != (line.major, line.minor + 1):
        return None
    cut = f"{line.major}.{line.minor}"
    return (
        f"unknown: the facts do not cover the day {cut}'s release branch was cut: torch {pinned} "
        f"is a nightly of the {pinned.major}.{pinned.minor} line, which {', '.join(nightly)} "
        f"builds from that cut on; on {src.as_of(extra)} the facts take the nightlies to build {cut}"
    )


def why_none(
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
            ever = [Version(str(v)) for v in extra.get("releases_ever") or ()]
            ahead = _nightly_after_branch_cut(facts, extra, pinned, groups)
            if ahead is not None:
                return [Reason("install", UNKNOWN, ahead, "wheel_index.nightly")], None, []
            if pinned is not None and ever and pinned < ever[-1] and pinned not in ever:
                # Judged as of a day: the facts know the releases after it too, and this pin is
                # none of them (cheniison/e2e-coref-pytorch#1's 1.15.0, a typo for 1.5.0).
                major = [str(v) for v in ever if v.major == pinned.major]
                dated = [r for r in releases if src.release_day(facts, extra, r)] or releases
                text = (
                    f"torch {pinned} was never released (on {day} the newest was "
                    f"{dated[-1]}"
                    + (f"; {pinned.major}.x ended with {major[-1]}" if major else "")
                    + ")"
                )
                return [Reason("install", FAIL, text, "torch_releases")], None, []
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
        default = str(facts.get("torch_variants", f"{wanted.major}.{wanted.minor}", "pypi_default"))
        if (
            local
            and local == default
            and pages
            and src.default_unlabelled_only(facts, wanted, host)
        ):
            # pytorch/pytorch#37113: torch==1.4.0+cu101 -f torch_stable.html finds nothing; the
            # CUDA 10.1 build of 1.4.0 is the plain version (find_links_pages.default_unlabelled_only).
            text = (
                f"there is no torch {wanted}+{local} on {', '.join(pages)}: the page lists "
                f"{wanted}'s {local} build only as the plain torch=={wanted}"
            )
            asked = str(line.torch) if line.torch else ""
            fix = None
            if asked and asked in line.text and "\n" not in line.text.strip():
                fix = line.text.strip().replace(asked, f"torch=={wanted}", 1)
            path = ("find_links_pages", "default_unlabelled_only")
            return [Reason("install", FAIL, text, Facts.name(*path))], fix, []
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
    glibc = _glibc_reason(line, all_offers, matching, facts, extra, host)
    if glibc is not None:
        return glibc
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
    elif late := src.pypi_wheel_late(extra, Version(best.public), host):
        text = (
            f"torch {best.public}'s wheel for Python {host.python} on {plat} came to PyPI on "
            f"{late}, after this day: pip finds none on {', '.join(s for s, _ in groups)}"
        )
        fact = "compat-extra:" + Facts.name("pypi_wheels_later", str(best.public))
        return [Reason("platform", FAIL, text, fact)], None, []
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
