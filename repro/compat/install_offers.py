"""Which build an installer picks among the offers of its indexes (:mod:`repro.compat.sources`):
pip merges every index and takes the highest version that fits, uv stops at the first index that
has torch (its ``first-index`` strategy); and the small predicates the checks share.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_line import InstallLine
from repro.compat.sources import Host, Offer


def matches(spec: SpecifierSet, offer: Offer) -> bool:
    return spec.contains(offer.version, prereleases=True)


def local_of(spec: SpecifierSet) -> str | None:
    for item in spec:
        parsed = src.parse_version(item.version.replace("*", "0"))
        if parsed is not None and parsed.local:
            return parsed.local
    return None


def public_spec(spec: SpecifierSet) -> SpecifierSet:
    return SpecifierSet(",".join(f"{s.operator}{s.version.split('+')[0]}" for s in spec))


def pick(line: InstallLine, groups: list, spec: SpecifierSet) -> Offer | None:
    if line.uv_first_index:
        # uv: the first index that has torch (first-index), or that has a fitting torch
        # (unsafe-first-match); uv docs, "Index strategies".
        for _source, offers in groups:
            if offers:
                fitting = [o for o in offers if matches(spec, o) and o.fits is not False]
                if not fitting and line.index_strategy == "unsafe-first-match":
                    continue
                return max(fitting, key=lambda o: o.version) if fitting else None
        return None
    fitting = [
        o for _s, offers in groups for o in offers if matches(spec, o) and o.fits is not False
    ]
    return max(fitting, key=lambda o: o.version) if fitting else None


def ever_published(facts: Facts, extra: Facts, runtime: str) -> bool:
    """Whether any release the facts know has ``runtime`` builds (cu114, cu131: none)."""
    return any(
        runtime in (src.runtimes_with_xpu(facts, extra, r) or [])
        for r in src.releases(facts, extra)
    )


PLATFORM_NAMES = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}


def indexes_without_platform(groups: list, host: Host) -> list[str]:
    """The PyTorch indexes of ``groups`` that serve no wheel for the host's platform: CUDA and
    ROCm indexes on macOS, ROCm indexes on Windows ("ROCM ... (Linux only)", previous-versions
    page)."""
    out = []
    for source, _offers in groups:
        runtime = src.runtime_from_url(source) if source != "PyPI" else None
        if runtime is None or runtime == "cpu":
            continue
        if host.platform == "macos" or host.platform == "windows" and runtime.startswith("rocm"):
            out.append(source)
    return out
