"""Which torch build an install line gets: what each index serves, and how pip, uv and conda pick.

Facts (``repro.compat.facts``): the releases per line (``torch_releases``), the builds of each
(``torch_variants.<minor>.variants``, ``only:`` limits one to some patch releases), the PyPI
build per release (``pypi_default``; ``compat-extra pypi_wheels``), PyPI's Python per release
and platform (``pypi_python``), the conda channel's builds (``torch_variants.<minor>.conda``,
``conda_channel``) and the torchvision/torchaudio of each release (``companions``).

Installer rules encoded here (pip and uv documentation):

- PyPI never serves local versions (``+cu118``): a pin with one needs a PyTorch index.
- pip merges every index and ``-f`` page and takes the highest version that fits (a local label
  sorts above the plain version: ``2.0.0+cu118`` beats PyPI's ``2.0.0``); uv searches
  ``--index``/``--extra-index-url`` before the default index and stops at the first index that
  has the package at all (``first-index``).
- pip skips wheels whose ``cpXY`` tag or platform does not fit the interpreter.

Pure functions of the facts; never touches the network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlparse

from packaging.version import InvalidVersion, Version

from repro.compat.facts import Facts
from repro.compat.install_line import (
    INDEX_RUNTIME_RE,
    RUNTIME_RE,
    InstallLine,
    is_nightly,
    is_pytorch_index,
    runtime_from_url,
)

PLATFORMS = ("linux", "windows", "macos")
DOWNLOAD = "https://download.pytorch.org/whl"


@dataclass(frozen=True)
class Host:
    """The interpreter a line is installed into: ``python`` "3.10" (None: unknown),
    ``platform`` ``linux``/``windows``/``macos``, ``machine`` ``x86_64``/``aarch64``/``arm64``,
    ``bits`` 64 or 32 (a 32-bit interpreter: pip's platform tag ``win32``/``linux_i686``, not
    ``win_amd64``/``linux_x86_64``, whatever the CPU), ``glibc`` "2.27" on Linux (None: unknown;
    pip's manylinux tags: a wheel for a newer glibc is skipped), ``libc`` "musl" on a musl Linux
    (Alpine; None: glibc or unknown), ``implementation`` "pypy" for a PyPy interpreter (None:
    CPython or unknown; pip's interpreter tag ``pp38``, not ``cp38``), ``macos`` the macOS
    version the interpreter reports (``platform.mac_ver()``, pip's ``macosx_X_Y`` tags; "10.16"
    from a Python built against an old SDK on macOS 11+; None: unknown)."""

    python: str | None
    platform: str
    machine: str = "x86_64"
    bits: int = 64
    glibc: str | None = None
    libc: str | None = None
    implementation: str | None = None
    macos: str | None = None

    @property
    def wheel_platform(self) -> str:
        """The key of ``pypi_python``: linux, linux-aarch64, windows, windows-arm64, macos,
        macos-arm64 (no release has a ``windows-arm64`` entry: PyPI has no win_arm64 torch); a
        machine the facts do not cover gives ``<platform>-<machine>`` (``linux-armv7l``), a key
        no release has."""
        arm = self.machine in ("aarch64", "arm64")
        if self.platform == "linux" and arm:
            return "linux-aarch64"
        if self.platform == "macos" and arm:
            return "macos-arm64"
        if self.platform == "windows" and arm:
            return "windows-arm64"
        if self.machine not in COVERED_MACHINES:
            return f"{self.platform}-{self.machine}"
        return self.platform


#: ``uname -m`` / ``--machine`` spellings -> the machine names of :class:`Host`.
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64", "aarch64": "aarch64",
            "arm64": "aarch64", "i386": "i686", "i586": "i686", "i686": "i686", "x86": "i686",
            "armv6l": "armv6l", "armv7l": "armv7l", "armv8l": "armv8l"}  # fmt: skip

#: The machines the facts cover (PyPI's and download.pytorch.org's wheel platforms).
COVERED_MACHINES = frozenset({"x86_64", "aarch64", "arm64"})

#: Machines that run only a 32-bit Python: 32-bit x86 and 32-bit ARM userlands (a Raspberry Pi
#: OS 32-bit reports armv7l, or armv8l on a 64-bit CPU; pip's tags linux_i686, linux_armv7l).
THIRTY_TWO_BIT_MACHINES = frozenset({"i686", "armv6l", "armv7l", "armv8l"})


def machine_of(text: str | None, platform: str) -> str:
    """The :class:`Host` machine for a ``uname -m``-style name on ``platform``: ``aarch64`` and
    ``arm64`` are one architecture (``arm64`` on macOS), the 32-bit x86 spellings are ``i686``;
    None is x86_64; any other name is kept as given, lower-cased (``ppc64le``, ``riscv64``:
    machines the facts do not cover, :data:`COVERED_MACHINES`, never judged as x86_64)."""
    name = (text or "x86_64").strip().lower()
    machine = MACHINES.get(name, name)
    return "arm64" if machine == "aarch64" and platform == "macos" else machine


@dataclass(frozen=True)
class Offer:
    """One build a source serves: ``version`` (with its local label where the index has one),
    ``runtime`` (None: unknown), ``source`` (``PyPI``, an index URL, ``conda -c pytorch``),
    ``fits`` (None: unknown; else whether a wheel fits the host's Python and platform) and
    ``unverified`` (the runtime rests on an unverified fact)."""

    version: Version
    runtime: str | None
    source: str
    fits: bool | None
    unverified: bool = False
    fact: str = ""


def _minor_of(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def releases(facts: Facts, extra: Facts) -> list[Version]:
    """Every published torch release the facts know, oldest first."""
    out: set[Version] = set()
    for table in (extra.get("torch_releases") or {}, facts.get("torch_releases") or {}):
        for items in table.values():
            out.update(Version(str(v)) for v in items or ())
    return sorted(out)


def release_day(facts: Facts, extra: Facts, release: Version) -> date | None:
    """The day ``release`` reached PyPI (compat-extra ``torch_release_dates``, else its minor's
    ``released``); None when neither is known."""
    text = extra.get("torch_release_dates", str(release.public)) or facts.get(
        "torch_variants", _minor_of(release), "released"
    )
    try:
        return date.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def dated(facts: Facts, extra: Facts, day: date) -> tuple[Facts, Facts]:
    """The facts as of ``day``: views whose ``torch_releases`` hold only the releases out by
    then (:func:`release_day`; a release with no known day is kept), so PyPI's newest torch,
    the nightly line and every "nearest release" are those of that day; ``extra``'s ``as_of``
    records the day and ``releases_ever`` every release the undated facts know (a pin that is
    none of them and older than the newest was never released, not "too new")."""
    ever = [str(r) for r in releases(facts, extra)]
    out = []
    for source in (facts, extra):
        table = source.get("torch_releases") or {}
        kept = {}
        for minor, items in table.items():
            keep = [
                v for v in items or () if (release_day(facts, extra, Version(str(v))) or day) <= day
            ]
            if keep:
                kept[minor] = keep
        out.append(source.replaced("torch_releases", kept))
    return out[0], out[1].replaced("as_of", day.isoformat()).replaced("releases_ever", ever)


def as_of(extra: Facts) -> str | None:
    """The day (YYYY-MM-DD) a :func:`dated` view stands for, None for today's facts."""
    value = extra.get("as_of")
    return str(value) if value else None


def runtimes_of(facts: Facts, release: Version) -> list[str] | None:
    """Runtime tags published for ``release`` (None: the facts do not list its pip builds)."""
    minor = _minor_of(release)
    if facts.get("torch_variants", minor, "pip_builds_unknown"):
        return None
    entries = facts.get("torch_variants", minor, "variants")
    if not entries:
        return None
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("published", True) is False:
            continue
        only = entry.get("only")
        if only and str(release.public) not in [str(o) for o in only]:
            continue
        tag = str(entry.get("runtime"))
        if RUNTIME_RE.match(tag):  # cu128-aarch64 and the like are platform builds
            out.append(tag)
    if "cpu" not in out:
        out.append("cpu")  # CPU builds exist for every release (pytorch_previous_versions)
    return out


def pypi_runtime(
    facts: Facts, extra: Facts, release: Version, host: Host
) -> tuple[str | None, str, bool]:
    """(runtime, fact, unverified) of the wheel PyPI serves for ``release`` on ``host``."""
    plat = host.wheel_platform
    if plat in ("windows", "macos", "macos-arm64"):
        unverified = release < Version("2.4")
        return "cpu", "wheel_index.pypi_note", unverified and plat == "windows"
    if plat == "linux-aarch64":
        # PyPI's aarch64 wheels are CPU-only (compat-extra aarch64.pypi_runtime).
        until = Version(str(extra.get("aarch64", "pypi_runtime_read_until") or "0"))
        runtime = extra.get("aarch64", "pypi_runtime")
        fact = "compat-extra:aarch64.pypi_runtime"
        return (str(runtime) if runtime else None), fact, release > until
    wheel = extra.get("pypi_wheels", str(release.public), "runtime")
    if wheel:
        return str(wheel), f"compat-extra:pypi_wheels.{release.public}", False
    minor = _minor_of(release)
    path = ("torch_variants", minor, "pypi_default")
    value = facts.get(*path)
    return (str(value) if value else None), Facts.name(*path), facts.unverified(*path)


def pypi_pythons(facts: Facts, release: Version, host: Host) -> list[str] | None:
    """Python versions of PyPI's wheels of ``release`` on the host's platform ([] = none;
    None = unknown)."""
    table = facts.get("pypi_python", str(release.public))
    if not isinstance(table, Mapping):
        return None
    return [str(p) for p in table.get(host.wheel_platform) or ()]


def _fits(facts: Facts, release: Version, host: Host) -> bool | None:
    """Whether a PyTorch-index wheel of ``release`` fits the host's Python: PyPI's Python set
    for the platform, else Linux's on Windows (download.pytorch.org had Windows wheels before
    PyPI did). A macOS release PyPI has no wheel of is on no index either: the indexes' macOS
    wheels are PyPI's CPU wheels, so Intel Macs end with 2.2.2 there too (pytorch/pytorch#127870:
    'no build seems to exist in the index https://download.pytorch.org/whl/torch/'; the macOS
    x86 deprecation of pytorch/pytorch#114602; RedditVideoMakerBot#2117's whl/test/cpu line)."""
    pythons = pypi_pythons(facts, release, host)
    if pythons == [] and host.platform == "macos":
        return False
    if not pythons:
        linux = facts.get("pypi_python", str(release.public), "linux")
        pythons = [str(p) for p in linux] if linux else None
    if pythons is None or host.python is None:
        return None
    return host.python in pythons


def glibc_floor(extra: Facts, release: Version, runtime: str | None, host: Host) -> str | None:
    """The glibc a Linux wheel of ``release`` (any ``runtime`` build: the facts know the switch
    per release only) needs when it is above manylinux2014's 2.17 (compat-extra
    ``manylinux_glibc``: manylinux_2_28 wheels); None on Windows/macOS, for earlier releases, or
    when the facts lack the table."""
    table = extra.get("manylinux_glibc")
    if host.platform != "linux" or not isinstance(table, Mapping) or not table.get("floor"):
        return None
    first = table.get("from")
    if first and Version(release.public) >= Version(str(first)):
        return str(table["floor"])
    return None


def glibc_short(extra: Facts, release: Version, runtime: str | None, host: Host) -> str | None:
    """The glibc floor of ``release``'s Linux wheel when the host's glibc is below it (pip and
    uv skip such a wheel: pytorch/pytorch#156215); None when it fits or either is unknown."""
    have = parse_version(host.glibc) if host.glibc else None
    floor = glibc_floor(extra, release, runtime, host)
    if have is None or floor is None:
        return None
    return floor if have < Version(floor) else None


def pypi_offers(facts: Facts, extra: Facts, host: Host) -> list[Offer]:
    out = []
    for release in releases(facts, extra):
        if str(release) == "1.8.2":
            continue  # 1.8.2 (LTS) was never on PyPI (pypi_torch_json)
        runtime, fact, unverified = pypi_runtime(facts, extra, release, host)
        pythons = pypi_pythons(facts, release, host)
        fits = None if pythons is None or host.python is None else host.python in pythons
        if pythons == [] or glibc_short(extra, release, runtime, host):
            fits = False
        if fits and pypi_wheel_late(extra, release, host):
            fits = False
            fact, unverified = (
                "compat-extra:" + Facts.name("pypi_wheels_later", str(release)),
                False,
            )
        out.append(Offer(release, runtime, "PyPI", fits, unverified, fact))
    return out


def pypi_wheel_late(extra: Facts, release: Version, host: Host) -> str | None:
    """The day PyPI got ``release``'s wheel for the host's platform and Python when that is after
    the day a :func:`dated` view stands for (compat-extra ``pypi_wheels_later``, from PyPI's file
    list: torch 1.7.0's Windows wheels came on 2020-12-04, 38 days after its Linux and macOS
    ones); None otherwise or for today's facts."""
    day = as_of(extra)
    if day is None or host.python is None:
        return None
    late = extra.get(
        "pypi_wheels_later", str(release.public), f"{host.wheel_platform} {host.python}"
    )
    return str(late) if late and str(late) > day else None


def index_offers(
    facts: Facts, extra: Facts, host: Host, runtime: str | None, url: str
) -> list[Offer]:
    """Builds a PyTorch index (or ``-f`` page) serves: one runtime, or every runtime (root)."""
    out = []
    lts = "/lts/" in url  # download.pytorch.org/whl/lts/1.8/...: the 1.8.2 LTS builds only
    stable_page = urlparse(url).path.endswith("torch_stable.html")
    page_last = facts.get("find_links_pages", "last_release") if stable_page else None
    root = runtime is None and urlparse(url).path.rstrip("/") == "/whl"
    for release in releases(facts, extra):
        if lts != (str(release) == "1.8.2"):
            continue
        if page_last and release > Version(str(page_last)):
            continue  # the -f pages stopped with 2.4 (find_links_pages)
        published = runtimes_of(facts, release)
        if published is None:
            continue
        if runtime == "xpu" and xpu_release(extra, release):
            published = [*published, "xpu"]
        tags = published if runtime is None else [runtime]
        if stable_page and default_unlabelled_only(facts, release, host):
            # No +<default> wheel of this release on the page (find_links_pages.default_unlabelled_only).
            default = str(facts.get("torch_variants", _minor_of(release), "pypi_default") or "")
            tags = [t for t in tags if t != default]
        unverified = not patch_matrix_read(facts, extra, release)
        if root:
            tags, root_unverified = _root_index(facts, release, published)
            unverified = unverified or root_unverified
        for tag in tags:
            if tag not in published:
                continue
            if not platform_has(facts, extra, release, tag, host):
                plain = _aarch64_cpu_on_cuda_index(facts, extra, release, tag, host, url)
                out.extend([plain] if plain is not None else [])
                continue
            version = Version(f"{release.public}+{tag}")
            if tag == "cpu" and host.wheel_platform in _unlabelled_cpu(extra):
                version = Version(str(release.public))  # macOS's CPU wheels carry no +cpu
            fact = (
                "root_index"
                if root
                else "compat-extra:xpu.from_release"
                if tag == "xpu"
                else Facts.name("torch_variants", _minor_of(release), "variants")
            )
            fits = False if glibc_short(extra, release, tag, host) else _fits(facts, release, host)
            out.append(Offer(version, tag, url, fits, unverified, fact))
        if stable_page and _windows_unlabelled(facts, release, host):
            # The page's unlabelled Windows wheel of the release's default build
            # (find_links_pages.windows_unlabelled; pytorch/pytorch#54172, #31243).
            default = str(facts.get("torch_variants", _minor_of(release), "pypi_default") or "")
            if default in published and platform_has(facts, extra, release, default, host):
                fact = "find_links_pages.windows_unlabelled"
                fits = _fits(facts, release, host)
                out.append(Offer(Version(str(release.public)), default, url, fits, False, fact))
    return out


def _aarch64_cpu_on_cuda_index(
    facts: Facts, extra: Facts, release: Version, tag: str, host: Host, url: str
) -> Offer | None:
    """The Linux aarch64 CPU wheel a download.pytorch.org CUDA index lists for ``release`` under
    the plain version when the index has no aarch64 CUDA build of it (compat-extra
    ``aarch64.cpu_on_cuda_indexes``: from ``from_release``; pytorch/builder#1585,
    astral-sh/uv#4377, #11418, skypilot-org/skypilot#8837); None elsewhere."""
    first = parse_version(str(extra.get("aarch64", "cpu_on_cuda_indexes", "from_release") or ""))
    if (
        host.wheel_platform != "linux-aarch64"
        or not tag.startswith("cu")
        or first is None
        or release < first
    ):
        return None
    fact = "compat-extra:aarch64.cpu_on_cuda_indexes"
    return Offer(Version(str(release.public)), "cpu", url, _fits(facts, release, host), False, fact)


def default_unlabelled_only(facts: Facts, release: Version, host: Host) -> bool:
    """Whether a ``torch_stable.html`` page lists ``release``'s default build (``pypi_default``)
    for the host's platform only under the plain version, with no ``+<default>`` wheel
    (``find_links_pages.default_unlabelled_only``: Linux 1.3.0-1.4.0, pytorch/pytorch#30631,
    #37113; Windows 1.3.0-1.6.0, pytorch/pytorch#54172)."""
    plat = host.wheel_platform if host.wheel_platform in ("linux", "windows") else None
    span = facts.get("find_links_pages", "default_unlabelled_only", plat) if plat else None
    if not isinstance(span, Mapping):
        return False
    first, last = parse_version(str(span.get("from"))), parse_version(str(span.get("through")))
    return first is not None and last is not None and first <= release <= last


def _windows_unlabelled(facts: Facts, release: Version, host: Host) -> bool:
    """Whether a ``torch_stable.html`` page lists ``release`` for Windows also without a label
    (its default build): releases ``find_links_pages.windows_unlabelled`` spans, before PyPI
    had Windows wheels."""
    span = facts.get("find_links_pages", "windows_unlabelled")
    if host.wheel_platform != "windows" or not isinstance(span, Mapping):
        return False
    first, last = parse_version(str(span.get("from"))), parse_version(str(span.get("through")))
    return first is not None and last is not None and first <= release <= last


def patch_matrix_read(facts: Facts, extra: Facts, release: Version) -> bool:
    """Whether the facts know ``release``'s download.pytorch.org builds: a minor's first release
    (its ``torch_variants``), a 1.x-2.3 patch release (compat-facts-history ``only`` lists, read
    from the previous-versions page) or a later patch release whose go-live build matrix was read
    (compat-extra ``patch_matrix``). False for a later patch release not read (2.14.1): its
    builds are taken to be its minor's, and every reason resting on that says unverified."""
    if release.micro == 0 or release < Version("2.4") or str(release.public) == "1.8.2":
        return True
    if facts.get("torch_variants", _minor_of(release), "released") is None:
        return True  # not a release line compat-facts.yaml describes
    return str(release.public) in (extra.get("patch_matrix") or {})


def _unlabelled_cpu(extra: Facts) -> list[str]:
    return [str(p) for p in extra.get("aarch64", "unlabelled_cpu_platforms") or ()]


def platform_has(facts: Facts, extra: Facts, release: Version, tag: str, host: Host) -> bool:
    """Whether download.pytorch.org has a ``tag`` build of ``release`` for the host's platform:
    XPU builds for Linux and Windows x86_64 (compat-extra ``xpu.platforms``); macOS only CPU builds; Windows no ROCm builds ("ROCM ... (Linux only)") nor the builds the -f
    page never had (``pip_windows_missing``; previous-versions page); Windows on Arm none; Linux
    aarch64 CPU builds and, from 2.7, the CUDA builds of ``aarch64.cuda_builds``."""
    plat = host.wheel_platform
    if tag == "xpu":
        return plat in [str(p) for p in extra.get("xpu", "platforms") or ()]
    if plat in ("macos", "macos-arm64"):
        return tag == "cpu"
    if plat == "windows-arm64":
        return False
    if plat == "windows":
        missing = facts.get("torch_variants", _minor_of(release), "pip_windows_missing") or {}
        return not tag.startswith("rocm") and tag not in (missing.get(str(release.public)) or [])
    if plat == "linux-aarch64":
        if tag == "cpu":
            return True
        builds = extra.get("aarch64", "cuda_builds", _minor_of(release)) or []
        return tag in [str(b) for b in builds]
    return True


def runtimes_with_xpu(facts: Facts, extra: Facts, release: Version) -> list[str] | None:
    """:func:`runtimes_of` and, from ``xpu.from_release``, the ``xpu`` builds of /whl/xpu."""
    out = runtimes_of(facts, release)
    if out is not None and xpu_release(extra, release):
        out = [*out, "xpu"]
    return out


def xpu_release(extra: Facts, release: Version) -> bool:
    """Whether download.pytorch.org/whl/xpu has ``release`` (compat-extra ``xpu.from_release``)."""
    first = parse_version(str(extra.get("xpu", "from_release") or ""))
    return first is not None and release >= first


def aarch64_arch(extra: Facts, runtime: str) -> list[str] | None:
    """The sm_XY list of download.pytorch.org's Linux aarch64 (sbsa) ``runtime`` build."""
    arch = extra.get("aarch64", "arch", runtime)
    return [str(a) for a in arch] if isinstance(arch, list) else None


def _root_index(facts: Facts, release: Version, published: list[str]) -> tuple[list[str], bool]:
    """Runtimes the root index (``.../whl``) lists for ``release`` (``root_index`` facts):
    +cpu from 1.13, GPU builds only from 2.6; after the last release read, every build
    (unverified)."""
    cpu_from = Version(str(facts.get("root_index", "cpu_from") or "0"))
    read_until = Version(str(facts.get("root_index", "read_until") or "0"))
    if release > read_until:
        return published, True
    tags = ["cpu"] if release >= cpu_from else []
    tags += [str(t) for t in facts.get("root_index", "gpu", str(release)) or ()]
    return tags, False


@dataclass(frozen=True)
class Nightly:
    """A nightly index: the line it builds (``2.16``) and its runtime."""

    line: str
    runtime: str | None
    url: str


def nightly_line(facts: Facts, extra: Facts) -> str:
    """The release line the nightlies build (today's, or the day of a :func:`dated` view): the
    minor after the newest release (1.13 -> 2.0, the next ``torch_variants`` line when the facts
    have it), else the newest minor plus one."""
    newest = releases(facts, extra)[-1]
    later = sorted(
        (Version(str(m)) for m in facts.get("torch_variants") or {}),
        key=lambda v: v.release,
    )
    after = [v for v in later if v.release > (newest.major, newest.minor)]
    if after:
        return f"{after[0].major}.{after[0].minor}"
    return f"{newest.major}.{newest.minor + 1}"


@dataclass(frozen=True)
class Sources:
    """What a pip/uv line's indexes serve: ``groups`` (source, offers) in search order,
    ``nightlies``, and the indexes and ``-f`` pages the facts do not cover: ``unknown`` (any
    other host) and ``jetson`` (NVIDIA's Jetson wheels, whose versions the facts do not list);
    ``no_archives``: ``-f`` pages that are index roots; ``page_indexes``: find-links pages given
    as an index (both serve no torch)."""

    groups: list[tuple[str, list[Offer]]]
    nightlies: list[Nightly]
    unknown: tuple[str, ...] = ()
    jetson: tuple[str, ...] = ()
    no_archives: tuple[str, ...] = ()
    page_indexes: tuple[str, ...] = ()


def index_root_page(url: str) -> bool:
    """A download.pytorch.org index root (``.../whl/cu121``, ``.../whl/nightly/cu121/``,
    ``.../whl/``) rather than a page of files (``torch_stable.html``, ``.../whl/torch/``): PEP
    503 roots list project names, so as a ``-f`` page they hold no archive links
    (compat-extra ``sources.pip_find_links``)."""
    path = urlparse(url.strip()).path.rstrip("/")
    if path.endswith(".html"):
        return False
    return runtime_from_url(url) is not None or path in ("/whl", "/whl/nightly", "/whl/test")


def index_kind(url: str, extra: Facts) -> str:
    """``pytorch`` (download.pytorch.org or a path-for-path mirror), ``pypi`` (PyPI or a mirror
    of it: compat-extra ``pypi_hosts``, a host or a host and path prefix), ``jetson``
    (``jetson.indexes``), ``no_torch`` (an index of other packages only: compat-extra
    ``no_torch_hosts``, NVIDIA's CUDA library indexes) or ``unknown``."""
    if is_pytorch_index(url) or "download.pytorch.org" in url:
        return "pytorch"
    parsed = urlparse(url.strip() if "://" in url else f"https://{url.strip()}")
    where = f"{parsed.netloc}{parsed.path}"
    if any(where.startswith(str(prefix)) for prefix in extra.get("jetson", "indexes") or ()):
        return "jetson"
    host = parsed.netloc.lower().split("@")[-1].split(":")[0]
    at = f"{host}{parsed.path}".rstrip("/")
    for entry in (str(h).rstrip("/") for h in extra.get("pypi_hosts") or ()):
        if at == entry or at.startswith(entry + "/"):
            return "pypi"
    for entry in (str(h).rstrip("/") for h in extra.get("no_torch_hosts") or ()):
        if at == entry or at.startswith(entry + "/"):
            return "no_torch"
    return "unknown"


def sources(
    line: InstallLine, facts: Facts, extra: Facts, host: Host, backend: str | None
) -> Sources:
    """What each index and ``-f`` page of a pip/uv line serves (:class:`Sources`).

    Order: uv ``--index``/extra indexes first, then ``--index-url``/default (PyPI unless
    replaced), then ``-f`` pages. ``backend``: the runtime uv's ``--torch-backend`` resolved to.
    """
    groups: list[tuple[str, list[Offer]]] = []
    nightlies: list[Nightly] = []
    unknown: list[str] = []
    jetson: list[str] = []
    empty: list[str] = []
    pages: list[str] = []
    replaced = bool(line.indexes)
    ordered = list(line.extra_indexes) + list(line.indexes) + list(line.find_links)
    if backend:
        url = f"{DOWNLOAD}/{backend}"
        groups.append((url, index_offers(facts, extra, host, backend, url)))
    for url in ordered:
        kind = index_kind(url, extra)
        if kind == "pytorch" and url in line.find_links and index_root_page(url):
            empty.append(url)  # pip -f reads archive links only: none on an index root
            groups.append((url, []))
            continue
        if kind == "pytorch" and url not in line.find_links and _page(url):
            pages.append(url)  # an index is read as <url>/torch/: a flat page has none
            groups.append((url, []))
            continue
        if kind == "pytorch":
            if is_nightly(url):
                nightlies.append(Nightly(nightly_line(facts, extra), runtime_from_url(url), url))
                groups.append((url, []))
                continue
            runtime = runtime_from_url(url)
            if runtime is None and "/whl" not in urlparse(url).path:
                continue
            groups.append((url, index_offers(facts, extra, host, runtime, url)))
        elif kind == "pypi":
            groups.append((url, pypi_offers(facts, extra, host)))
        elif kind == "jetson":
            jetson.append(url)
        elif kind == "no_torch":
            groups.append((url, []))  # NVIDIA's CUDA library wheels, no torch
        else:
            unknown.append(url)
    if not replaced:
        groups.append(("PyPI", pypi_offers(facts, extra, host)))
    return Sources(groups, nightlies, tuple(unknown), tuple(jetson), tuple(empty), tuple(pages))


def _page(url: str) -> bool:
    """A find-links page (``.../torch_stable.html``), not an index (compat-extra
    ``sources.pip_index_url``)."""
    return urlparse(url.strip()).path.endswith(".html")


def runtime_tag(text: str | None) -> str | None:
    return text if text and INDEX_RUNTIME_RE.match(text) else None


def parse_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
