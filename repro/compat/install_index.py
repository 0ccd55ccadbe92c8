"""Where an install line's torch may come from when that is not PyPI or download.pytorch.org alone
(issue 30 item 4): indexes and ``-f`` pages the facts do not cover, NVIDIA's Jetson wheels, and
``uv add``'s lock for every platform.

- An index or ``-f`` page the facts do not know (neither PyPI, a PyPI mirror of ``pypi_hosts``,
  download.pytorch.org nor a Jetson index) could serve any torch (``--index-url`` replaces PyPI;
  pip merges every index and page and takes the highest match; uv takes the first index that has
  torch): the answer is ``unknown: the facts do not cover INDEX``, never another index's build.
- NVIDIA's Jetson wheels (compat-extra ``jetson``) are Linux aarch64 CUDA builds for the Tegra
  GPUs of one JetPack; the facts know their platform and GPUs, not their versions.
- ``uv add`` locks for every platform the project declares (uv's universal resolution): it takes
  the newest torch with a wheel for the project's Python on some platform, then installs that lock
  here, failing where it has no wheel for this platform (uv docs, "Resolution": environments and
  required-environments). A PyTorch index given on its command line is not ``explicit``, so uv
  takes generic dependencies from it too; those carry Linux wheels only (astral-sh/uv#11532).

Pure functions of the facts; never touches the network.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_line import InstallLine, runtime_from_url
from repro.compat.predictions import gpus_of
from repro.compat.results import FAIL, PASS, UNKNOWN, Reason
from repro.compat.sources import Host, Offer, Sources

_EXTRA = "compat-extra:"
_PLATFORM_NAMES = {
    "linux": "Linux x86_64",
    "linux-aarch64": "Linux aarch64",
    "windows": "Windows x86_64",
    "windows-arm64": "Windows on Arm",
    "macos": "macOS x86_64",
    "macos-arm64": "macOS arm64",
}


def platform_name(host: Host) -> str:
    return _PLATFORM_NAMES.get(host.wheel_platform, host.wheel_platform)


# --------------------------------------------------------------------------------------------
# Indexes the facts do not cover


def unknown_index(line: InstallLine, found: Sources) -> Reason | None:
    """The ``unknown`` reason for the indexes and ``-f`` pages of ``found`` the facts do not
    cover (None when there are none): pip merges every index and page and takes the highest
    matching version (a ``+local`` label sorts above the plain one), uv takes torch from the
    first index that has it, so such an index could serve what installs, and the facts cannot
    say what that is."""
    if not found.unknown:
        return None
    names = ", ".join(found.unknown)
    if line.indexes and not any(offers for _s, offers in found.groups):
        how = "--index-url replaces PyPI, so torch comes from there"
    elif set(found.unknown) & set(line.find_links):
        how = "pip merges its wheels with the indexes' and takes the highest matching torch"
    else:
        how = "pip merges it with the other indexes and takes the highest matching torch"
    text = f"the facts do not cover {names}: {how}"
    return Reason("install", UNKNOWN, text, _EXTRA + "pypi_hosts")


def amd_index_python(line: InstallLine, found: Sources, host: Host, extra: Facts) -> Reason | None:
    """A fail where ``--index-url`` points at AMD's own wheel index (compat-extra
    ``amd_wheel_indexes.hosts``), every index and page of the line is one, and a Windows host's
    Python is none of the Windows wheels' Pythons read there (``windows_pythons``, on
    ``read_day``; sources ``amd_wheel_indexes``), judged on or before that day: pip finds no
    torch ('from versions: none'). None otherwise (AMD's builds stay unknown)."""
    table = extra.get("amd_wheel_indexes") or {}
    hosts = [str(h).rstrip("/") + "/" for h in table.get("hosts") or ()]
    pythons = [str(v) for v in table.get("windows_pythons") or ()]
    read_day = str(table.get("read_day") or "")
    day = src.as_of(extra)
    every = (*line.indexes, *line.extra_indexes, *line.find_links)
    if (
        not hosts
        or not line.indexes
        or host.wheel_platform != "windows"
        or host.python is None
        or host.python in pythons
        or day is None
        or day > read_day
    ):
        return None

    def amd(url: str) -> bool:
        bare = url.split("://", 1)[-1].rstrip("/") + "/"
        return any(bare.startswith(h) for h in hosts)

    if not all(amd(u) for u in every) or not found.unknown:
        return None
    text = (
        f"{', '.join(line.indexes)} (AMD's own wheel index) had Windows torch wheels for Python "
        f"{', '.join(pythons)} (read {read_day}), none for Python {host.python}: --index-url "
        "replaces PyPI, so pip finds no torch (from versions: none)"
    )
    fact = _EXTRA + "amd_wheel_indexes.windows_pythons"
    return Reason("python", FAIL, text, fact)


def labelled_build_elsewhere(
    found: Sources, spec: SpecifierSet, facts: Facts, extra: Facts, host: Host
) -> Reason | None:
    """A fail where the line pins one of PyTorch's own builds (``==X+cu116``: a runtime label
    of download.pytorch.org) that PyTorch never built for the host's Python, and the line also
    names indexes the facts do not cover: a wheel with PyTorch's label is PyTorch's build (the
    facts judge such a wheel file by its name wherever it lies; mirrors copy it), so no index can
    have one for this Python. None otherwise (those indexes stay unknown)."""
    if not found.unknown or host.python is None:
        return None
    pinned = next((src.parse_version(s.version) for s in spec if s.operator in ("==", "===")), None)
    if pinned is None or not pinned.local or src.runtime_tag(pinned.local) is None:
        return None
    release = src.parse_version(pinned.public)
    if release is None or release not in src.releases(facts, extra):
        return None
    if src._fits(facts, release, host) is not False:
        return None
    pythons = src.pypi_pythons(facts, release, host) or []
    text = (
        f"torch {pinned} is PyTorch's own build ({pinned.local}); PyTorch built {release} for "
        f"Python {', '.join(pythons) or 'other versions'} on {platform_name(host)}, not "
        f"{host.python}, so no index has it for this Python ({', '.join(found.unknown)} "
        "included: the facts take a wheel with PyTorch's label for PyTorch's)"
    )
    fact = Facts.name("pypi_python", str(release), host.wheel_platform)
    return Reason("python", FAIL, text, fact, True)


# --------------------------------------------------------------------------------------------
# NVIDIA's Jetson wheels


def is_jetson_url(url: str, extra: Facts) -> bool:
    return src.index_kind(url, extra) == "jetson"


def jetson_reasons(host_props: Mapping[str, str], host: Host, extra: Facts) -> list[Reason]:
    """Whether a Jetson wheel (a CUDA build for Tegra GPUs) runs on the host: its platform,
    then its GPU (``jetson.capabilities``)."""
    fact = _EXTRA + "jetson"
    plat = str(extra.get("jetson", "platform") or "linux-aarch64")
    if host.wheel_platform != plat:
        text = (
            f"NVIDIA's Jetson wheels are Linux aarch64 builds for Jetson GPUs; this host is "
            f"{platform_name(host)}"
        )
        return [Reason("platform", FAIL, text, fact)]
    capabilities = [str(c) for c in extra.get("jetson", "capabilities") or ()]
    gpus = [g for g in gpus_of(host_props) or [] if g.vendor == "nvidia"]
    known = [g for g in gpus if g.capability]
    if not known:
        text = (
            "a Jetson build (NVIDIA's wheels for one JetPack's CUDA): it needs a Jetson GPU "
            f"(compute capability {', '.join(capabilities)}) and that JetPack"
        )
        return [Reason("runs", PASS, text, fact, True)]
    if all(g.capability in capabilities for g in known):
        text = f"a Jetson build on a Jetson GPU (compute capability {known[0].capability})"
        return [Reason("runs", PASS, text, fact, True)]
    text = (
        f"a Jetson build (Tegra GPUs {', '.join(capabilities)}) on a {known[0].name} "
        f"(compute capability {known[0].capability}): its kernels are not built for it"
    )
    return [Reason("kernel_image", FAIL, text, fact, True)]


def jetson_index(
    line: InstallLine, spec: SpecifierSet, found: Sources, host_props, host: Host, extra: Facts
) -> list[Reason]:
    """The reasons for a pip/uv line whose torch comes from a Jetson index: the platform and
    GPU, and ``unknown`` for a pinned version (the facts list no Jetson versions)."""
    names = ", ".join(found.jetson)
    runs = jetson_reasons(host_props, host, extra)
    if any(r.check == "platform" for r in runs):
        return runs
    if any(s.operator in ("==", "===", "<", "<=", "~=") for s in spec):
        text = f"{names} is NVIDIA's Jetson index: the facts list its platform, not its versions"
        return [Reason("install", UNKNOWN, text, _EXTRA + "jetson"), *runs]
    text = f"pip gets a Jetson build of torch from {names} (NVIDIA's index for Jetson)"
    return [Reason("install", PASS, text, _EXTRA + "jetson", True), *runs]


# --------------------------------------------------------------------------------------------
# uv add: one lock for every platform


def uv_requires_python(
    line: InstallLine, spec: SpecifierSet, host: Host, facts: Facts, extra: Facts
) -> tuple[Reason, str] | None:
    """A fail where ``uv add`` locks by Requires-Python a release with no wheel for the host's
    Python (compat-extra ``uv_requires_python_gaps``: torch 2.5.x says >=3.8.0 but has no cp38
    wheel; astral-sh/uv#14836): the newest release out on the line's day that the spec admits and
    whose metadata admits that Python is one of them. Returns the reason and a line that works
    (``uv add "torch<X.Y"``, X.Y the oldest such release). None for other lines and Pythons, for
    today's facts or a day after ``seen_through`` (uv may have fixed it: astral-sh/uv#15932)."""
    gaps = extra.get("uv_requires_python_gaps", host.python or "") or {}
    day = src.as_of(extra)
    if not line.universal or not gaps or day is None or day > str(gaps.get("seen_through") or ""):
        return None
    lying = {str(r) for r in gaps.get("releases") or ()}
    linux = src.Host(host.python, "linux", "x86_64")
    admitted = [
        r
        for r in src.releases(facts, extra)
        if spec.contains(r, prereleases=True)
        and (str(r) in lying or host.python in (src.pypi_pythons(facts, r, linux) or []))
    ]
    if not admitted or str(max(admitted)) not in lying:
        return None
    pick = max(admitted)
    wheeled = [r for r in admitted if str(r) not in lying]
    text = (
        f"uv add locks by Requires-Python: torch {pick}'s metadata admits Python {host.python} "
        f"but it has no cp{host.python.replace('.', '')} wheel, so uv locks {pick} and cannot "
        "install it (\"can't be installed because it doesn't have a source distribution or wheel "
        'for the current platform"; astral-sh/uv#14836)'
        + (f"; uv pip install takes {max(wheeled)}" if wheeled else "")
    )
    fact = _EXTRA + Facts.name("uv_requires_python_gaps", host.python or "")
    first = min(Version(r) for r in lying)
    return Reason("python", FAIL, text, fact), f'uv add "torch<{first.major}.{first.minor}"'


def universal_lock(
    line: InstallLine,
    locked: Offer | None,
    groups: list,
    host: Host,
    extra: Facts,
) -> tuple[Offer | None, list[Reason], str | None]:
    """What ``uv add`` installs here: ``locked`` is the build its universal resolution takes
    (the newest with a wheel for the project's Python on some platform); returns the host's
    offer of that build (None when it has no wheel here), the reasons, and a line that works."""
    reasons: list[Reason] = []
    fact = _EXTRA + "sources.uv_resolution"
    pytorch = [
        u for u in (*line.extra_indexes, *line.indexes) if src.index_kind(u, extra) == "pytorch"
    ]
    if pytorch and host.platform in ("windows", "macos"):
        text = (
            f"uv add takes every package {pytorch[0]} has from it (an index given on the command "
            "line is not explicit = true): the PyTorch indexes carry generic dependencies such "
            f"as markupsafe with Linux wheels only, so the lock fails on {platform_name(host)} "
            "(astral-sh/uv#11532; uv docs: explicit = true in [[tool.uv.index]])"
        )
        reasons.append(Reason("install", FAIL, text, _EXTRA + "sources.uv_11532"))
    if locked is None:
        return None, reasons, None
    here = [
        o
        for _s, offers in groups
        for o in offers
        if o.version == locked.version and o.source == locked.source and o.fits is not False
    ]
    if here:
        plain = plain_aarch64(line, locked, host, extra)
        if plain is not None:
            return here[0], [*reasons, plain], None
        text = (
            f"uv add locks torch {locked.version} from {locked.source} for every platform the "
            f"project declares; it has a wheel for {platform_name(host)}"
        )
        return here[0], [*reasons, Reason("install", PASS, text, fact)], None
    text = (
        f"uv add locks for every platform the project declares (universal resolution): it takes "
        f"torch {locked.version} from {locked.source}, the newest with a wheel for Python "
        f"{host.python}, which has no wheel for {platform_name(host)}: uv sync fails here "
        "(\"can't be installed because it doesn't have a source distribution or wheel for the "
        'current platform")'
    )
    reasons.append(Reason("platform", FAIL, text, fact))
    fitting = [o for _s, offers in groups for o in offers if o.fits and o.source == "PyPI"]
    fix = None
    if fitting:
        best = max(fitting, key=lambda o: o.version)
        fix = f'uv add "torch=={best.version}"'
    return None, reasons, fix


def plain_aarch64(line: InstallLine, locked: Offer, host: Host, extra: Facts) -> Reason | None:
    """The ``unknown`` reason where ``uv add`` locks from a download.pytorch.org CUDA or ROCm
    index a release before compat-extra ``uv_lock_plain_aarch64.before`` (2.6.0) and the line
    pins no ``+local`` label for torch or a companion, off Linux aarch64: that index lists the
    release's Linux aarch64 wheels under the plain version beside the labelled ones
    (pytorch/builder#1585), and uv's universal lock has taken the plain version, which installs
    on Linux aarch64 only (astral-sh/uv#4377, #11418, #10843); whether it does depends on uv's
    version and the lock's age, which the facts do not cover. None otherwise."""
    rule = extra.get("uv_lock_plain_aarch64") or {}
    runtime = runtime_from_url(locked.source) or ""
    if (
        not rule
        or host.wheel_platform == "linux-aarch64"
        or src.index_kind(locked.source, extra) != "pytorch"
        or not runtime.startswith(tuple(str(r) for r in rule.get("runtimes") or ()))
        or Version(locked.version.base_version) >= Version(str(rule.get("before")))
    ):
        return None
    asked = [r for r in (line.torch, *line.companions.values()) if r is not None]
    if asked and all(any("+" in s.version for s in r.specifier) for r in asked):
        return None
    text = (
        f"unknown: the facts do not cover which torch {locked.version.base_version} files uv's "
        f"universal lock takes from {locked.source}: that index lists the release's Linux "
        "aarch64 wheels under the plain version beside the +" + runtime + " ones "
        "(pytorch/builder#1585), and uv has locked the plain one, which installs on Linux "
        f"aarch64 only, not on {platform_name(host)} (astral-sh/uv#4377, #11418); a +{runtime} "
        "pin on every package taken from it avoids that"
    )
    return Reason("install", UNKNOWN, text, _EXTRA + "uv_lock_plain_aarch64")
