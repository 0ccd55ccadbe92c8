"""A nightly index (``download.pytorch.org/whl/nightly/<runtime>``): the line it builds on the
day the line runs, judged by that line's release where the facts know it, else by the newest
release of its runtime; and the nightly indexes that never existed.
"""

from __future__ import annotations

from packaging.version import Version

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_fix import fix_line
from repro.compat.install_index import platform_name
from repro.compat.install_offers import (
    PLATFORM_NAMES,
    ever_published,
    indexes_without_platform,
    matches,
    public_spec,
)
from repro.compat.install_result import LineResult
from repro.compat.install_runs import run_reasons_on
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import DOWNLOAD


def check_nightly(
    line, spec, nightlies, groups, host_props, host, facts, extra, reasons
) -> LineResult | None:
    """A nightly index: the line it builds today, judged by the newest release of its runtime.

    None (judge the other sources) when the spec admits no build of today's nightly line (a
    release pin: nightly indexes serve only ``X.Y.0.devYYYYMMDD`` builds), or when another source
    has a final release that fits and ``--pre`` is not given: pip and uv take pre-releases only
    with ``--pre`` or when nothing else fits (packaging ``SpecifierSet.filter``; uv
    ``--prerelease if-necessary-or-explicit``)."""
    if not nightlies:
        return None
    nightly = nightlies[0]
    pinned = next((src.parse_version(s.version) for s in spec if s.operator in ("==", "===")), None)
    releases = src.releases(facts, extra)
    if pinned is not None and pinned.is_prerelease:
        base = Version(pinned.base_version)
        if any(r >= base for r in releases):
            text = (
                f"torch {pinned} is a nightly of a line that has since been released ({base}): "
                f"the nightly index keeps only recent builds, so pip finds no such version"
            )
            runtime = pinned.local or nightly.runtime or "cpu"
            fix = (
                fix_line(facts, base, runtime, line, {})
                if runtime in (src.runtimes_with_xpu(facts, extra, base) or [])
                else None
            )
            return LineResult(
                line,
                host,
                None,
                nightly.runtime,
                combine(reasons + [Reason("install", FAIL, text, "torch_releases")]),
                fix,
            )
    today = Version(f"{nightly.line}.0.dev99999999")
    same_line = (
        pinned is not None and pinned.is_prerelease and pinned.release[:2] == today.release[:2]
    )
    if not same_line and not public_spec(spec).contains(today, prereleases=True):
        return None  # a pin the nightly line cannot meet (_why_none names the nightly index)
    if not line.pre and any(matches(spec, o) for _s, offers in groups for o in offers):
        return None  # a final release fits elsewhere: without --pre pip takes it
    runtime = nightly.runtime
    line_pythons = [str(p) for p in facts.get("torch_variants", nightly.line, "python") or ()]
    if (
        line_pythons
        and host.python
        and host.python not in line_pythons
        and any(matches(spec, o) and o.fits for _s, offers in groups for o in offers)
    ):
        # The nightly line has no wheel for this Python: pip takes the other indexes' build
        # (ROCm/legacy-rocm-build#2354: Python 3.7 got a CPU-for-ROCm torch beside a nightly).
        text = (
            f"the {nightly.line} nightlies of {nightly.url} have no Python {host.python} wheels "
            f"(the {nightly.line} line: Python {', '.join(line_pythons)}): pip takes another "
            "index's torch"
        )
        reasons.append(
            Reason("install", NOTE, text, Facts.name("torch_variants", nightly.line, "python"))
        )
        return None
    elsewhere = indexes_without_platform([(nightly.url, [])], host)
    if elsewhere:
        what = (
            "XPU" if runtime == "xpu" else "CUDA and ROCm" if host.platform == "macos" else "ROCm"
        )
        text = (
            f"{nightly.url} has no {PLATFORM_NAMES[host.platform]} wheels: {what} nightlies are "
            f"built for {'Linux' if what == 'ROCm' else 'Linux and Windows'} only"
        )
        names = " ".join(["torch", *line.companions])
        tool = "uv pip install" if line.tool == "uv" else "pip install"
        fix = f"{tool} --pre {names} --index-url {DOWNLOAD}/nightly/cpu"
        reason = Reason("platform", FAIL, text, "wheel_index.nightly")
        return LineResult(line, host, None, runtime, combine([*reasons, reason]), fix)
    with_runtime = [
        r for r in releases if runtime in (src.runtimes_with_xpu(facts, extra, r) or [])
    ]
    own = Version(f"{nightly.line}.0")
    if runtime is not None and runtime in (src.runtimes_with_xpu(facts, extra, own) or []):
        # The facts know the line this nightly built (a dated check): its release stands for it.
        with_runtime.append(own)
    if runtime is None or not with_runtime:
        text = f"the nightly index {nightly.url} serves a runtime the facts do not know"
        return LineResult(
            line,
            host,
            None,
            runtime,
            combine(reasons + [Reason("install", UNKNOWN, text, "wheel_index.nightly")]),
        )
    judged = with_runtime[-1]
    newest = releases[-1]
    if judged != own and runtime not in (src.runtimes_with_xpu(facts, extra, newest) or []):
        text = (
            f"no {runtime} nightlies any more: the newest release with {runtime} is {judged}, "
            f"{newest} has {', '.join(src.runtimes_with_xpu(facts, extra, newest) or [])}; the nightly index "
            "keeps only recent builds, so pip finds no torch there"
        )
        current = [
            r for r in src.runtimes_with_xpu(facts, extra, newest) or [] if r[:2] == runtime[:2]
        ]
        fix = None
        if current:
            tool = "uv pip install" if line.tool == "uv" else "pip install"
            names = " ".join(["torch", *line.companions])
            fix = f"{tool} --pre {names} --index-url {DOWNLOAD}/nightly/{current[-1]}"
        fact = f"torch_variants.{newest.major}.{newest.minor}.variants"
        return LineResult(
            line,
            host,
            None,
            runtime,
            combine(reasons + [Reason("install", FAIL, text, fact, True)]),
            fix,
        )
    text = (
        f"pip gets a {nightly.line} nightly ({runtime}) from {nightly.url}; judged by torch "
        f"{judged}+{runtime}, the newest release of that build"
    )
    reasons.append(Reason("install", PASS, text, "wheel_index.nightly", True))
    fits = src._fits(facts, judged, host)
    if src.pypi_pythons(facts, judged, host) == []:
        # 2.3 and later have no macOS x86_64 wheels at all: nor do the nightlies that follow
        # them (pytorch/executorch#7772: a 2.6 nightly pin on an x86_64 macOS Python, "from
        # versions: 1.11.0, ..., 2.2.2"); the line's Python set does not make up for that.
        text = (
            f"nightlies follow {judged}, which has no {platform_name(host)} wheels for any "
            "Python: pip finds no nightly here"
        )
        fact = Facts.name("pypi_python", str(judged), host.wheel_platform)
        reasons.append(Reason("platform", FAIL, text, fact))
        return LineResult(line, host, f"{nightly.line} nightly", runtime, combine(reasons))
    if line_pythons and host.python:
        fits = host.python in line_pythons
    if fits is False:
        pythons = line_pythons or src.pypi_pythons(facts, judged, host) or []
        text = f"nightlies follow {judged}'s Python set: no Python {host.python} wheel ({', '.join(pythons)})"
        reasons.append(Reason("python", FAIL, text, Facts.name("pypi_python", str(judged)), True))
    reasons += run_reasons_on(host_props, str(judged), runtime, facts, extra, host)
    return LineResult(line, host, f"{nightly.line} nightly", runtime, combine(reasons))


def live_nightlies(nightlies: list, facts: Facts, extra: Facts) -> tuple[list, list[Reason]]:
    """The nightly indexes that exist: a runtime no release ever had (``nightly/rocm5.4``,
    ``nightly/cu114``) has no index on download.pytorch.org, so pip finds nothing there and
    takes what the other indexes serve (ROCm/legacy-rocm-build#1916: PyPI's CUDA build). A
    runtime the nightly line's own release brought (judged as of a day before that release:
    cu128 nightlies of the 2.7 line from early 2025, before 2.7.0 on 2025-04-23) had its index:
    nightlies build a new runtime before any release has it (pytorch/pytorch#146977, #149845:
    RTX 50 owners installed --pre from nightly/cu128 in February-March 2025)."""
    live, notes = [], []
    for nightly in nightlies:
        own = src.runtimes_with_xpu(facts, extra, Version(f"{nightly.line}.0")) or []
        if nightly.runtime in own:
            live.append(nightly)
            continue
        if nightly.runtime and not ever_published(facts, extra, nightly.runtime):
            text = (
                f"no release has {nightly.runtime} builds: download.pytorch.org has no "
                f"{nightly.url} index, pip finds nothing there"
            )
            notes.append(Reason("install", NOTE, text, "torch_variants", True))
            continue
        live.append(nightly)
    return live, notes
