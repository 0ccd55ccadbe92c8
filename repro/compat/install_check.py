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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import check as build_check
from repro.compat import install_line
from repro.compat import sources as src
from repro.compat.facts import Facts, default_facts, extra_facts
from repro.compat.install_line import InstallLine, Wheel
from repro.compat.predictions import gpus_of, predict, version
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Prediction, Reason, combine
from repro.compat.sources import DOWNLOAD, Host, Offer
from repro.errors import ConfigError

_MAX_NEAREST = 4


@dataclass(frozen=True)
class LineResult:
    """The answer for one install line on one host: the build it gets (``torch`` "2.7.1+cu118",
    None when nothing installs), the reasons, the ``fix`` (a line that works, when one is known),
    ``nearest`` (releases/builds that would install) and ``instead`` (builds this host runs)."""

    line: InstallLine
    host: Host
    torch: str | None
    runtime: str | None
    prediction: Prediction
    fix: str | None = None
    nearest: tuple[str, ...] = ()
    instead: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def outcome(self) -> str:
        return self.prediction.outcome

    @property
    def installs(self) -> bool | None:
        """False when the line will not install, True when it does, None when unknown."""
        install = [r for r in self.prediction.reasons if r.check in _INSTALL_CHECKS]
        if any(r.verdict == FAIL for r in install):
            return False
        return None if any(r.verdict == UNKNOWN for r in install) else True

    @property
    def summary(self) -> str:
        """``installs and runs``, ``will not install``, ``installs but will not run`` or
        ``unknown``."""
        if self.outcome == PASS:
            return "installs and runs"
        if self.installs is False:
            if any(r.check == "accelerator" and r.verdict == FAIL for r in self.prediction.reasons):
                return "installs a CPU-only build: the GPU stays unused"
            return "will not install"
        if self.outcome == FAIL:
            return "installs but will not run"
        return "unknown"

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line.text,
            "tool": self.line.tool,
            "python": self.host.python,
            "platform": self.host.platform,
            "torch": self.torch,
            "runtime": self.runtime,
            "summary": self.summary,
            **self.prediction.to_json(),
            "fix": self.fix,
            "nearest": list(self.nearest),
            "instead": list(self.instead),
        }


_INSTALL_CHECKS = ("install", "python", "platform", "companion", "published", "accelerator")


def host_of(
    host_props: Mapping[str, str], python: str | None = None, platform: str | None = None
) -> Host:
    """The interpreter to install into: ``python``/``platform`` when given (``--python 3.10``,
    ``--platform windows``), else the fingerprint's ``host.python`` and ``host.os``
    (``Windows`` -> windows, ``macOS``/``Darwin`` -> macos, anything else linux)."""
    if python is None:
        parts = version(host_props.get("host.python"))
        python = f"{parts[0]}.{parts[1]}" if parts and len(parts) >= 2 else None
    if platform is None:
        os_name = (host_props.get("host.os") or "").lower()
        platform = (
            "windows"
            if "windows" in os_name
            else "macos"
            if "mac" in os_name or "darwin" in os_name
            else "linux"
        )
    machine = (host_props.get("host.arch") or "x86_64").lower()
    return Host(python, platform, machine)


# --------------------------------------------------------------------------------------------
# What the build needs (no GPU facts for this host)


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
        arch = facts.get("arch_lists", facts.get(*entry, "arch")) if entry else None
        driver = f"an NVIDIA driver >= {minimum} ({side})" if minimum else "an NVIDIA driver"
        what = f"needs {driver}"
        fact = Facts.name(*path)
        unverified = facts.unverified(*path)
        if isinstance(arch, list) and arch:
            what += f" and a GPU of compute capability {_capability_range(arch)}"
            fact += f"; {Facts.name(*entry, 'arch')}"
            unverified = unverified or facts.unverified(*entry, "arch")
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


def _run_reasons(
    host_props: Mapping[str, str],
    torch: str,
    runtime: str | None,
    facts: Facts,
    host: Host,
    arch_list: list[str] | None = None,
    fact_label: str | None = None,
) -> list[Reason]:
    if runtime is None:
        return [
            Reason("runs", UNKNOWN, "the build's runtime is not in the facts", "torch_variants")
        ]
    if runtime == "cpu":
        return [Reason("runs", PASS, "CPU build: no driver or GPU requirement", "variant.runtime")]
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
                "host.gpu",
            )
        )
        return reasons
    variant = {"variant.runtime": runtime, "variant.torch": torch}
    if arch_list:
        variant["runtime.arch_list"] = ",".join(arch_list)
    reasons = list(predict(host_props, variant, None, facts).reasons)
    # A GPU without a known driver or capability: say what the build needs instead of unknown.
    missing = [
        r
        for r in reasons
        if r.verdict == UNKNOWN
        and (r.fact == "host.driver.nvidia" or r.fact.endswith(".compute_capability"))
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


# --------------------------------------------------------------------------------------------
# The line that works


def install_form(facts: Facts, release: Version) -> str:
    """How the previous-versions page installs a release's pip builds (``index``,
    ``extra_index``, ``find_links`` or ``wheel_page``); ``index`` from 2.0 on."""
    if str(release.public) == "1.8.2":
        return "lts"
    form = facts.get("torch_variants", f"{release.major}.{release.minor}", "install_form")
    return str(form) if form else "index"


def fix_line(
    facts: Facts, release: Version, runtime: str, line: InstallLine, companions: dict[str, str]
) -> str:
    """A pip line that installs ``release`` built for ``runtime`` (pytorch_previous_versions),
    with ``companions`` pinned and the line's other torchvision/torchaudio unpinned (pip picks
    the one that pins this torch)."""
    tool = "uv pip install" if line.tool == "uv" else "pip install"
    form = install_form(facts, release)
    public = release.public
    local = runtime != "cpu" or form != "index"
    pins = [
        f"torch=={public}+{runtime}"
        if form in ("extra_index", "find_links") and local
        else f"torch=={public}"
    ]
    for name, pinned in companions.items():
        label = (
            f"+{runtime}" if form in ("extra_index", "find_links") and name == "torchvision" else ""
        )
        pins.append(f"{name}=={pinned}{label}")
    pins += [name for name in line.companions if name not in companions]  # pip picks the pair
    if form == "find_links":
        where = f"-f {DOWNLOAD}/torch_stable.html"
    elif form == "wheel_page":
        where = f"-f {DOWNLOAD}/{runtime}/torch_stable.html"
    elif form == "extra_index":
        where = f"--extra-index-url {DOWNLOAD}/{runtime}"
    elif form == "lts":
        where = f"--extra-index-url {DOWNLOAD}/lts/1.8/{runtime}"
    else:
        where = f"--index-url {DOWNLOAD}/{runtime}"
    return f"{tool} {' '.join(pins)} {where}"


def pypi_fix_line(facts: Facts, release: Version, line: InstallLine) -> str:
    """A pip line that installs ``release`` from PyPI, with the torchvision/torchaudio released
    with it for the companions the line names: ``pip install torch==2.2.2 torchvision==0.17.2``."""
    tool = "uv pip install" if line.tool == "uv" else "pip install"
    pins = _companion_pins(facts, release, line)
    names = [f"{n}=={pins[n]}" if n in pins else n for n in line.companions]
    return " ".join([f"{tool} torch=={release}", *names])


def _companion_pins(facts: Facts, release: Version, line: InstallLine) -> dict[str, str]:
    """torchvision/torchaudio versions released with ``release`` for the companions the line
    names (``companions`` facts); unknown ones are left out."""
    out = {}
    for name in line.companions:
        paired = facts.get("companions", str(release.public), name)
        if paired:
            out[name] = str(paired)
    return out


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


def _matches(spec: SpecifierSet, offer: Offer) -> bool:
    return spec.contains(offer.version, prereleases=True)


def _local_of(spec: SpecifierSet) -> str | None:
    for item in spec:
        parsed = src.parse_version(item.version.replace("*", "0"))
        if parsed is not None and parsed.local:
            return parsed.local
    return None


def _public_spec(spec: SpecifierSet) -> SpecifierSet:
    return SpecifierSet(",".join(f"{s.operator}{s.version.split('+')[0]}" for s in spec))


def _pick(line: InstallLine, groups: list, spec: SpecifierSet) -> Offer | None:
    if line.uv_first_index:
        # uv: the first index that has torch (first-index), or that has a fitting torch
        # (unsafe-first-match); uv docs, "Index strategies".
        for _source, offers in groups:
            if offers:
                fitting = [o for o in offers if _matches(spec, o) and o.fits is not False]
                if not fitting and line.index_strategy == "unsafe-first-match":
                    continue
                return max(fitting, key=lambda o: o.version) if fitting else None
        return None
    fitting = [
        o for _s, offers in groups for o in offers if _matches(spec, o) and o.fits is not False
    ]
    return max(fitting, key=lambda o: o.version) if fitting else None


def _ever_published(facts: Facts, extra: Facts, runtime: str) -> bool:
    """Whether any release the facts know has ``runtime`` builds (cu114, cu131: none)."""
    return any(runtime in (src.runtimes_of(facts, r) or []) for r in src.releases(facts, extra))


_PLATFORM_NAMES = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}


def _indexes_without_platform(groups: list, host: Host) -> list[str]:
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


def _nearest_python(facts: Facts, extra: Facts, host: Host, wanted: Version | None) -> list[str]:
    """Releases with a PyPI wheel for the host's Python and platform, nearest to ``wanted``."""
    if host.python is None:
        return []
    ok = [
        r
        for r in src.releases(facts, extra)
        if host.python in (src.pypi_pythons(facts, r, host) or [])
    ]
    if not ok:
        return []
    if wanted is None:
        return [str(ok[-1])]
    older = [r for r in ok if r < wanted]
    newer = [r for r in ok if r > wanted]
    out = ([str(older[-1])] if older else []) + ([str(newer[0])] if newer else [])
    return out


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
    public = _public_spec(spec)
    local = _local_of(spec)
    releases = src.releases(facts, extra)
    released = [r for r in releases if public.contains(r, prereleases=True)]
    wanted = max(released) if released else None
    pinned = next((src.parse_version(s.version) for s in spec if s.operator in ("==", "===")), None)
    sources_text = ", ".join(s for s, _ in groups) or "no index"
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
    matching = [o for o in all_offers if _matches(spec, o)]
    if not matching and local and not src.runtime_tag(local):
        text = f"+{local} is no PyTorch build tag (cuXYZ, rocmX.Y, cpu): no index serves it"
        return [Reason("install", FAIL, text, "wheel_index.stable")], None, []
    elsewhere = _indexes_without_platform(groups, host)
    if not matching and elsewhere:
        # liva#4, rohitg00/ai-engineering-from-scratch#316: "(from versions: none)" on a Mac.
        what = (
            "CUDA and ROCm builds are Linux and Windows only"
            if host.platform == "macos"
            else "ROCm builds are Linux only"
        )
        gets = "CPU/MPS" if host.platform == "macos" else "CPU"
        text = (
            f"{', '.join(elsewhere)} has no {_PLATFORM_NAMES[host.platform]} wheels: {what} "
            f"(previous-versions page); {_PLATFORM_NAMES[host.platform]} gets PyPI's {gets} build"
        )
        on_pypi = [
            o.version
            for o in src.pypi_offers(facts, extra, host)
            if public.contains(o.version, prereleases=True) and o.fits is not False
        ]
        fix = pypi_fix_line(facts, max(on_pypi), line) if on_pypi else None
        nearest = [str(max(on_pypi))] if on_pypi else _nearest_python(facts, extra, host, wanted)
        return [Reason("platform", FAIL, text, "wheel_index.pypi_note")], fix, nearest
    first = next(((s, offers) for s, offers in groups if offers), None)
    elsewhere_fits = [
        s
        for s, offers in groups
        if first
        and s != first[0]
        and any(_matches(spec, o) and o.fits is not False for o in offers)
    ]
    if line.uv_first_index and first and elsewhere_fits:
        # uv's default index strategy (uv docs, "Index strategy": first-index).
        text = (
            f"uv takes torch only from the first index that has it, {first[0]}, which has no "
            f"torch {spec} for Python {host.python} on {host.wheel_platform}; "
            f"{', '.join(elsewhere_fits)} has one, but uv does not look there (first-index)"
        )
        fix = None
        if "\n" not in line.text.strip():
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
            fix = fix_line(facts, wanted, runtime, line, _companion_pins(facts, wanted, line))
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
            fix = fix_line(facts, wanted, runtime, line, _companion_pins(facts, wanted, line))
        return [Reason("install", FAIL, text, "wheel_index.nightly")], fix, []
    if not matching:
        if local and not any(o.version.local == local for o in all_offers):
            only_pypi = all(s == "PyPI" or not src.is_pytorch_index(s) for s, _ in groups)
            fix = fix_line(facts, wanted, local, line, _companion_pins(facts, wanted, line))
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
            if not _ever_published(facts, extra, runtime):
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
        runtimes = src.runtimes_of(facts, Version(best.public)) or []
        if runtimes and host.platform != "macos":
            gpu = any(g.vendor == "nvidia" for g in gpus_of(host_props) or [])
            default = facts.get("torch_variants", f"{best.major}.{best.minor}", "pypi_default")
            runtime = str(default) if gpu and default in runtimes else "cpu"
            fix = fix_line(
                facts,
                Version(best.public),
                runtime,
                line,
                _companion_pins(facts, Version(best.public), line),
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
    nearest = _nearest_python(facts, extra, host, Version(best.public))
    fix = None
    if nearest:
        runtime = next((o.runtime for o in matching if o.runtime), None)
        near = Version(nearest[-1])
        if all(o.source == "PyPI" for o in matching):
            fix = pypi_fix_line(facts, near, line)
        elif runtime and runtime in (src.runtimes_of(facts, near) or []):
            fix = fix_line(facts, near, runtime, line, _companion_pins(facts, near, line))
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
    local = _local_of(spec)
    if local and local != "cpu":
        return f"+{local}"
    for url in line.all_indexes:
        runtime = src.runtime_from_url(url)
        if runtime and runtime != "cpu":
            return url
    if line.torch_backend and line.torch_backend not in ("cpu", "auto"):
        return f"--torch-backend {line.torch_backend}"
    return None


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
        )
    except ConfigError:
        return [], (), True, None
    if fixed.installs is not True:
        return [], (), fixed.installs is None, None
    out = [
        Reason(r.check, r.verdict, f"with torch {fixed.torch}: {r.text}", r.fact, r.unverified)
        for r in fixed.prediction.reasons
        if r.check not in _INSTALL_CHECKS and r.verdict != PASS
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
) -> LineResult:
    """Whether ``line`` installs and runs on the host of ``host_props`` (``host.*`` fingerprint
    properties), for Python ``python`` and ``platform`` when given (else the line's own
    environment Python, else the host's). ``follow_fix``: also check the line that works, and
    drop it when it would not install on this host either (off for that check itself)."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    result = _check_line(line, host_props, python, platform, facts, extra, follow_fix)
    if follow_fix and result.fix and result.fix.startswith(("pip install", "uv pip install")):
        fixed = check_line(
            install_line.parse(result.fix),
            host_props,
            result.host.python,
            result.host.platform,
            facts,
            extra,
            follow_fix=False,
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
    )
    return checked.installs is not False


def _check_line(
    line: InstallLine,
    host_props: Mapping[str, str],
    python: str | None,
    platform: str | None,
    facts: Facts,
    extra: Facts,
    follow_fix: bool,
) -> LineResult:
    host_props = {k: v for k, v in host_props.items() if k.startswith("host.")}
    host = host_of(host_props, python or line.python, platform)
    if line.conda is not None:
        return _check_conda(line, host_props, host, facts, extra)
    if line.wheel is not None:
        return _check_wheel(line, line.wheel, host_props, host, facts, extra)
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
    groups, nightlies = src.sources(line, facts, extra, host, backend)
    nightly_result = _check_nightly(
        line, spec, nightlies, groups, host_props, host, facts, extra, reasons
    )
    if nightly_result is not None:
        return nightly_result
    offer = _pick(line, groups, spec)
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
        if wanted and not _ever_published(facts, extra, wanted):
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
                fix = fix_line(facts, release, runtime, line, _companion_pins(facts, release, line))
    elif offer.runtime == "cpu" and any(g.vendor == "nvidia" for g in gpus_of(host_props) or []):
        cuda = [r for r in src.runtimes_of(facts, release) or [] if r.startswith("cu")]
        if cuda:
            fix = fix_line(facts, release, cuda[-1], line, _companion_pins(facts, release, line))
        reasons.append(
            Reason(
                "accelerator",
                NOTE,
                f"a CPU-only build on {host.platform}: torch.cuda.is_available() is False on this NVIDIA host",
                offer.fact or "wheel_index.pypi_note",
                offer.unverified,
            )
        )
    reasons += _run_reasons(host_props, str(release), offer.runtime, facts, host)
    if offer.runtime and any(r.check == "driver" and r.verdict == FAIL for r in reasons):
        hint = build_check._forward_compat_hint(host_props, offer.runtime, facts, extra)
        reasons += [hint] if hint else []
    prediction = combine(reasons)
    instead: list[str] = []
    if (
        prediction.outcome == FAIL
        and offer.runtime not in (None, "cpu")
        and not any(r.verdict == FAIL and r.check in _INSTALL_CHECKS for r in reasons)
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
                _companion_pins(facts, Version(near.public), line),
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
                facts, release, offer.runtime, line, _companion_pins(facts, release, line)
            )
    return LineResult(
        line, host, str(offer.version), offer.runtime, prediction, fix, (), tuple(instead)
    )


def _check_nightly(
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
                if runtime in (src.runtimes_of(facts, base) or [])
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
    if not same_line and not _public_spec(spec).contains(today, prereleases=True):
        return None  # a pin the nightly line cannot meet (_why_none names the nightly index)
    if not line.pre and any(_matches(spec, o) for _s, offers in groups for o in offers):
        return None  # a final release fits elsewhere: without --pre pip takes it
    runtime = nightly.runtime
    elsewhere = _indexes_without_platform([(nightly.url, [])], host)
    if elsewhere:
        what = "CUDA and ROCm" if host.platform == "macos" else "ROCm"
        text = (
            f"{nightly.url} has no {_PLATFORM_NAMES[host.platform]} wheels: {what} nightlies are "
            f"built for {'Linux and Windows' if host.platform == 'macos' else 'Linux'} only"
        )
        names = " ".join(["torch", *line.companions])
        tool = "uv pip install" if line.tool == "uv" else "pip install"
        fix = f"{tool} --pre {names} --index-url {DOWNLOAD}/nightly/cpu"
        reason = Reason("platform", FAIL, text, "wheel_index.nightly")
        return LineResult(line, host, None, runtime, combine([*reasons, reason]), fix)
    with_runtime = [r for r in releases if runtime in (src.runtimes_of(facts, r) or [])]
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
    if runtime not in (src.runtimes_of(facts, newest) or []):
        text = (
            f"no {runtime} nightlies any more: the newest release with {runtime} is {judged}, "
            f"{newest} has {', '.join(src.runtimes_of(facts, newest) or [])}; the nightly index "
            "keeps only recent builds, so pip finds no torch there"
        )
        current = [r for r in src.runtimes_of(facts, newest) or [] if r[:2] == runtime[:2]]
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
    if fits is False:
        pythons = src.pypi_pythons(facts, judged, host) or []
        text = f"nightlies follow {judged}'s Python set: no Python {host.python} wheel ({', '.join(pythons)})"
        reasons.append(Reason("python", FAIL, text, Facts.name("pypi_python", str(judged)), True))
    reasons += _run_reasons(host_props, str(judged), runtime, facts, host)
    return LineResult(line, host, f"{nightly.line} nightly", runtime, combine(reasons))


def _check_wheel(line, wheel: Wheel, host_props, host, facts, extra) -> LineResult:
    reasons: list[Reason] = []
    release = Version(wheel.version.base_version)
    label = f"{wheel.name} {wheel.version}"
    if wheel.pythons and host.python and host.python not in wheel.pythons:
        text = (
            f"the wheel is for Python {', '.join(wheel.pythons)}; the host has Python {host.python}"
        )
        reasons.append(Reason("python", FAIL, text, "wheel file name (cpXY tag)"))
    elif wheel.pythons and host.python:
        reasons.append(
            Reason(
                "python",
                PASS,
                f"the wheel is for Python {host.python}",
                "wheel file name (cpXY tag)",
            )
        )
    if wheel.platforms and host.wheel_platform not in wheel.platforms:
        text = f"the wheel is for {', '.join(wheel.platforms)}; the host is {host.wheel_platform}"
        reasons.append(Reason("platform", FAIL, text, "wheel file name (platform tag)"))
    published = src.runtimes_of(facts, release)
    runtime = wheel.runtime
    if any(r.verdict == FAIL for r in reasons):
        nearest = _nearest_python(facts, extra, host, release)
        fix = None
        same = _same_wheel_for_python(wheel, host, facts, release)
        if runtime and runtime not in (published or [runtime]):
            same = None  # that build was never published (nor for this Python)
        fits_here = src._fits(facts, release, host) is True
        if same and not any(r.check == "platform" for r in reasons):
            fix, nearest = f"pip install {same}", [str(wheel.version), *nearest]
        elif (
            host.platform == "macos"
            and wheel.name == "torch"
            and host.python in (src.pypi_pythons(facts, release, host) or [])
        ):
            # The same release from PyPI: macOS wheels are CPU/MPS builds (previous-versions page).
            fix, nearest = pypi_fix_line(facts, release, line), [str(release), *nearest]
        elif fits_here and runtime and runtime in (published or []) and wheel.name == "torch":
            fix, nearest = fix_line(facts, release, runtime, line, {}), [str(release), *nearest]
        elif (
            nearest and runtime and runtime in (src.runtimes_of(facts, Version(nearest[-1])) or [])
        ):
            fix = fix_line(facts, Version(nearest[-1]), runtime, line, {})
        return LineResult(
            line, host, str(wheel.version), runtime, combine(reasons), fix, tuple(nearest)
        )
    reasons.append(
        Reason("install", PASS, f"pip installs {label} from the file", "wheel file name")
    )
    if runtime is None and published is not None:
        runtime, fact, unverified = src.pypi_runtime(facts, extra, release, host)
    if wheel.name != "torch":
        return LineResult(line, host, None, runtime, combine(reasons))
    if published is not None and runtime and runtime not in published:
        reasons.append(
            Reason(
                "published",
                UNKNOWN,
                f"{runtime} builds of {release} are not in the facts",
                "torch_variants",
            )
        )
    reasons += _run_reasons(host_props, str(release), runtime, facts, host)
    return LineResult(line, host, str(wheel.version), runtime, combine(reasons))


def _same_wheel_for_python(wheel: Wheel, host: Host, facts: Facts, release: Version) -> str | None:
    """The same wheel built for the host's Python (``cp35-cp35m`` -> ``cp36-cp36m``; the ``m``
    ABI suffix up to 3.7, PEP 3149 / Python 3.8 "What's new"), when the release has wheels for
    it (``pypi_python``; pytorch#29434: the cp36 wheel of the same URL installs). None for a
    file name: the host has no such file."""
    if (
        "://" not in wheel.source
        or host.python is None
        or len(wheel.pythons) != 1
        or src._fits(facts, release, host) is not True
    ):
        return None
    old, new = wheel.pythons[0].replace(".", ""), host.python.replace(".", "")
    old_abi = f"cp{old}m" if int(old[1:]) <= 7 else f"cp{old}"
    new_abi = f"cp{new}m" if int(new[1:]) <= 7 else f"cp{new}"
    tags = f"-cp{old}-{old_abi}-"
    if tags not in wheel.source:
        return None
    return wheel.source.replace(tags, f"-cp{new}-{new_abi}-")


def _conda_cuda(facts: Facts, release: Version, platform: str = "linux") -> list[str]:
    """CUDA versions of the pytorch channel's builds of ``release`` (``torch_variants.<minor>
    .conda``: the linux-64 packages), less ``windows_missing`` on Windows."""
    minor = f"{release.major}.{release.minor}"
    by_release = facts.get("torch_variants", minor, "conda", "cuda_by_release", str(release))
    values = by_release or facts.get("torch_variants", minor, "conda", "cuda") or []
    missing = facts.get("torch_variants", minor, "conda", "windows_missing") or []
    if platform == "windows":
        values = [v for v in values if str(v) not in [str(m) for m in missing]]
    return [str(v) for v in values]


def _check_conda(line, host_props, host, facts, extra) -> LineResult:
    conda = line.conda
    assert conda is not None
    channel = facts.get("conda_channel", "name") or "pytorch"
    last = Version(str(facts.get("conda_channel", "last_release") or "2.5.1"))
    fact_end = "conda_channel.last_release"
    if channel not in conda.channels:
        where = ", ".join(conda.channels) or "the default channels"
        text = f"{conda.tool} installs pytorch from {where}: only the pytorch channel's builds are in the facts"
        return LineResult(
            line, host, None, None, combine([Reason("install", UNKNOWN, text, "conda_channel")])
        )
    spec = SpecifierSet(conda.spec) if conda.spec else SpecifierSet()
    releases = [
        r for r in src.releases(facts, extra) if r <= last and spec.contains(r, prereleases=True)
    ]
    releases = [r for r in releases if str(r) != "1.8.2" or "pytorch-lts" in conda.channels]
    if not releases:
        newer = [r for r in src.releases(facts, extra) if spec.contains(r, prereleases=True)]
        if newer:
            text = (
                f"the pytorch conda channel stopped at {last} (pytorch#138506): no pytorch "
                f"{conda.spec} there"
            )
            fix = fix_line(facts, newer[0], _conda_runtime(conda.cuda) or "cpu", line, {})
            return LineResult(
                line, host, None, None, combine([Reason("install", FAIL, text, fact_end)]), fix
            )
        text = f"no pytorch release matches {conda.spec}"
        return LineResult(
            line, host, None, None, combine([Reason("install", FAIL, text, "torch_releases")])
        )
    # conda keeps the environment's Python minor version unless python is named (conda
    # core/solve.py: "we never want to update python beyond the current minor version"; conda
    # #11001 got pytorch-1.10.0-py3.6_cpu_0): the newest release with a build for it. The
    # channel's Python set per release is taken from PyPI's wheels (unverified).
    for_python = [r for r in releases if src._fits(facts, r, host) is not False]
    if not for_python:
        pythons = src.pypi_pythons(facts, releases[-1], host) or []
        text = (
            f"no pytorch {conda.spec or releases[-1]} build for Python {host.python} on the "
            f"pytorch channel (pytorch {releases[-1]}: Python {', '.join(pythons)}, as on PyPI); "
            "conda: 'incompatible with the existing python installation in your environment'"
        )
        nearest = [
            r for r in _nearest_python(facts, extra, host, releases[-1]) if Version(r) <= last
        ]
        fact = Facts.name("pypi_python", str(releases[-1]), host.wheel_platform)
        return LineResult(
            line,
            host,
            None,
            None,
            combine([Reason("python", FAIL, text, fact, True)]),
            None,
            tuple(nearest),
        )
    releases = for_python
    python_reason = (
        [
            Reason(
                "python",
                PASS,
                f"pytorch {releases[-1]} has builds for Python {host.python} (as on PyPI)",
                Facts.name("pypi_python", str(releases[-1]), host.wheel_platform),
                True,
            )
        ]
        if host.python
        else []
    )
    if host.platform == "macos" or conda.cpu_only:
        release = releases[-1]
        text = f"{conda.tool} gets the pytorch {release} CPU build from the pytorch channel"
        reasons = python_reason + [
            Reason(
                "install",
                PASS,
                text,
                Facts.name("torch_variants", f"{release.major}.{release.minor}", "conda"),
            )
        ]
        if conda.cuda and conda.cpu_only:
            reasons.append(
                Reason(
                    "accelerator",
                    FAIL,
                    f"cpuonly with CUDA {conda.cuda} asked: the CPU build wins",
                    "conda_channel.forms",
                )
            )
        reasons += _run_reasons(host_props, str(release), "cpu", facts, host)
        return LineResult(line, host, str(release), "cpu", combine(reasons))
    wanted = conda.cuda
    # conda maximises the pytorch version first, then prefers a CUDA build of it; a version
    # without a build for the asked CUDA comes as its CPU build (pytorch#69202, conda/conda#11001).
    with_cuda = (
        [releases[-1]]
        if wanted is None or wanted in _conda_cuda(facts, releases[-1], host.platform)
        else []
    )
    if not with_cuda:
        release = releases[-1]
        builds = _conda_cuda(facts, release, host.platform)
        text = (
            f"the pytorch channel has no pytorch {release} build for CUDA {wanted}"
            f"{' on Windows' if host.platform == 'windows' else ''} (its builds: "
            f"CUDA {', '.join(builds) or 'none listed'}): conda installs its CPU build "
            f"(pytorch#69202)"
        )
        path = Facts.name("torch_variants", f"{release.major}.{release.minor}", "conda")
        fix = None
        if builds:
            best = min(
                builds,
                key=lambda b: abs(
                    (version(b) or (0, 0))[0] * 10
                    + (version(b) or (0, 0))[1]
                    - ((version(wanted) or (0, 0))[0] * 10 + (version(wanted) or (0, 0))[1])
                ),
            )
            package = facts.get(
                "torch_variants", f"{release.major}.{release.minor}", "conda", "package"
            )
            fix = f"{conda.tool} install pytorch=={release} {package}={best} -c pytorch" + (
                " -c nvidia" if package == "pytorch-cuda" else ""
            )
        reason = Reason("accelerator", FAIL, text, path, host.platform == "windows")
        return LineResult(
            line,
            host,
            f"{release}",
            "cpu",
            combine([*python_reason, reason]),
            fix,
            tuple(f"{release} CUDA {b}" for b in builds),
        )
    release = with_cuda[-1]
    builds = _conda_cuda(facts, release, host.platform)
    cuda = wanted or (builds[-1] if builds else None)
    runtime = _conda_runtime(cuda) if cuda else None
    path = Facts.name("torch_variants", f"{release.major}.{release.minor}", "conda")
    text = f"{conda.tool} gets pytorch {release} built for CUDA {cuda} from the pytorch channel"
    reasons = [
        *python_reason,
        Reason("install", PASS if runtime else UNKNOWN, text, path, wanted is None),
    ]
    reasons += _conda_run_reasons(host_props, host, facts, release, cuda, runtime)
    prediction = combine(reasons)
    fix = None
    if prediction.outcome == FAIL:
        # The channel's build of this release that runs here (the highest CUDA), else cpuonly.
        runs = [
            b
            for b in builds
            if b != cuda
            and combine(
                _conda_run_reasons(host_props, host, facts, release, b, _conda_runtime(b))
            ).outcome
            != FAIL
        ]
        minor = f"{release.major}.{release.minor}"
        package = facts.get("torch_variants", minor, "conda", "package") or "cudatoolkit"
        if runs:
            fix = f"{conda.tool} install pytorch=={release} {package}={runs[-1]} -c pytorch" + (
                " -c nvidia" if package == "pytorch-cuda" else ""
            )
        else:
            fix = f"{conda.tool} install pytorch=={release} cpuonly -c pytorch"
    return LineResult(line, host, str(release), runtime, prediction, fix)


def _conda_run_reasons(
    host_props: Mapping[str, str],
    host: Host,
    facts: Facts,
    release: Version,
    cuda: str | None,
    runtime: str | None,
) -> list[Reason]:
    """Run reasons of the pytorch channel's ``release`` built for CUDA ``cuda``, with that
    package's own sm_XY list (``arch_lists.conda_<major>_<minor>_cu<XY>``) where known."""
    arch_name = f"conda_{release.major}_{release.minor}_cu{(cuda or '').replace('.', '')}"
    arch = facts.get("arch_lists", arch_name)
    return _run_reasons(
        host_props,
        str(release),
        runtime,
        facts,
        host,
        [str(a) for a in arch] if isinstance(arch, list) else None,
        f"arch_lists.{arch_name}",
    )


def _conda_runtime(cuda: str | None) -> str | None:
    parts = version(cuda)
    return f"cu{parts[0]}{parts[1]}" if parts and len(parts) >= 2 else None
