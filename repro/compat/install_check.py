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
:mod:`~repro.compat.install_wheel`, conda lines in :mod:`~repro.compat.install_conda`, why no
build fits in :mod:`~repro.compat.install_none`, torchvision/torchaudio pins in
:mod:`~repro.compat.install_companions`, Intel GPU (XPU) builds in
:mod:`~repro.compat.install_xpu`, the answer in :mod:`~repro.compat.install_result`, step 3 in
:mod:`~repro.compat.install_runs` and the line that works in :mod:`~repro.compat.install_fix`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import date

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro import properties as property_names
from repro.compat import check as build_check
from repro.compat import install_index, install_line, install_nightly, install_xpu
from repro.compat import install_offers as picks
from repro.compat import sources as src
from repro.compat.facts import Facts, default_facts, extra_facts
from repro.compat.install_companions import (
    companion_reasons,
    companions_only,
    numpy_abi,
    spec_of,
)
from repro.compat.install_conda import check_conda
from repro.compat.install_fix import companion_pins, fix_line, install_form, pypi_fix_line
from repro.compat.install_line import InstallLine
from repro.compat.install_none import why_none
from repro.compat.install_result import INSTALL_CHECKS, LineResult, host_of
from repro.compat.install_runs import needs, run_reasons_on
from repro.compat.install_wheel import check_wheel
from repro.compat.predictions import gpus_of, version
from repro.compat.results import FAIL, NOTE, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import Host
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
        driver = version(host_props.get(property_names.DRIVER_NVIDIA))
        if not driver:
            return "cpu", Reason(
                "install",
                NOTE,
                "--torch-backend auto: no NVIDIA driver here, uv takes the CPU index",
                property_names.DRIVER_NVIDIA,
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
        text = f"--torch-backend auto with driver {host_props.get(property_names.DRIVER_NVIDIA)}: uv takes {best or 'cpu'} (inferred from the minimum drivers)"
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
            bits=host.bits,
            libc=host.libc,
            implementation=host.implementation,
            macos=host.macos,
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


def _pypi_pytorch(line: InstallLine, extra: Facts) -> Reason:
    """pip/uv asked for ``pytorch``: PyPI's project of that name is a placeholder (compat-extra
    ``pypi_pytorch_placeholder``: its newest release is a tiny sdist whose setup.py raises), so
    the install fails either way: no matching distribution for a version after that release,
    the placeholder's own error otherwise."""
    requirement = line.pypi_pytorch
    assert requirement is not None
    newest = str(extra.get("pypi_pytorch_placeholder", "newest") or "1.0.2")
    message = str(extra.get("pypi_pytorch_placeholder", "message") or "")
    fact = "compat-extra:pypi_pytorch_placeholder"
    asked = str(requirement.specifier) or "any version"
    if requirement.specifier and not requirement.specifier.contains(newest, prereleases=True):
        text = (
            f"pip looks for the PyPI project 'pytorch' {asked}: on PyPI that name is a "
            f"placeholder whose newest release is {newest}, not torch (conda's 'pytorch' is): "
            f"no matching distribution; ask for torch{requirement.specifier}"
        )
        return Reason("install", FAIL, text, fact)
    text = (
        f"pip installs the PyPI project 'pytorch' {newest}, a placeholder whose setup.py raises "
        f"'{message}': the install fails; ask for torch{requirement.specifier}"
    )
    return Reason("install", FAIL, text, fact)


def _torch_nightly(line: InstallLine, extra: Facts) -> Reason:
    """pip/uv asked for ``torch_nightly``, the 1.0 preview's nightly package: by
    ``pip_torch_nightly.gone_by`` the nightly pages served ``torch`` X.Y.Z.devYYYYMMDD instead,
    so a line on or after that day (or undated: today) finds none; before it, which
    ``torch_nightly`` builds a page held is not in the facts (aiqm/torchani#294,
    fastai/course-v3#561)."""
    gone = str(extra.get("pip_torch_nightly", "gone_by") or "2019-08-20")
    fact = "compat-extra:pip_torch_nightly"
    day = src.as_of(extra)
    name = line.torch_nightly.name if line.torch_nightly is not None else "torch_nightly"
    if day is not None and day < gone:
        text = (
            f"unknown: the facts do not cover the 1.0 preview's {name} builds (the nightly "
            f"package's name until {gone[:7]})"
        )
        return Reason("install", UNKNOWN, text, fact)
    text = (
        f"no {name} package any more: by {gone} the nightly pages serve torch "
        "X.Y.Z.devYYYYMMDD (pip install --pre torch -f/--index-url .../whl/nightly/...): pip "
        f"finds no {name} ('from versions: none')"
    )
    return Reason("install", FAIL, text, fact)


def _musllinux_file(line: InstallLine) -> bool:
    """Whether the line installs a wheel file tagged for musl (someone else's build)."""
    return line.wheel is not None and "musllinux" in line.text


def _no_musl(line: InstallLine, host: Host) -> Reason:
    """A Linux interpreter on musl libc (Alpine): PyTorch publishes no musllinux wheel (PyPI's
    torch files are manylinux*/win/macosx only; download.pytorch.org's Linux files manylinux* or
    linux_x86_64, all built against glibc; compat-extra sources ``musl_libc``), so pip and uv find
    no wheel for a manylinux tag (only PyPI's 0.1.2 sdist, whose setup.py fails; a uv lock has no
    wheel for the platform), and a ``linux_x86_64`` file, which pip accepts on any Linux,
    installs and then fails at import on glibc's symbols (docker-library/python#341,
    pytorch/pytorch#71381, #102592, astral-sh/uv#9901)."""
    text = (
        "musl libc (Alpine): PyTorch publishes no musllinux wheel and its Linux wheels are built "
        "against glibc: pip and uv find none for a manylinux tag (pip falls back to the 0.1.2 "
        "sdist, which does not build), and a linux_x86_64 file installs but import torch fails "
        "('Error relocating ... symbol not found'); use a glibc image (python:3.X-slim)"
    )
    return Reason("platform", FAIL, text, "compat-extra:sources.musl_libc")


def _no_pypy(line: InstallLine, host: Host) -> Reason:
    """A PyPy interpreter: PyTorch publishes CPython wheels only (PyPI's torch files are tagged
    cp27 ... cp315, none pp; download.pytorch.org's likewise; compat-extra sources ``pypy``), so
    pip and uv find no wheel for PyPy's ``ppXY`` tag ('from versions: none'), and a ``cpXY``
    file is "not a supported wheel on this platform" (pytorch/pytorch#127181: PyPy 7.3.11 on an
    M1, the nightly cpu index)."""
    python = f"PyPy ({host.python})" if host.python else "PyPy"
    text = (
        f"{python}: PyTorch publishes CPython wheels only (cpXY tags, no ppXY): pip and uv find "
        "no torch for this interpreter ('from versions: none'); use CPython"
    )
    return Reason("python", FAIL, text, "compat-extra:sources.pypy")


def _macos_before_11_on_arm(host: Host) -> bool:
    """Whether an Apple-silicon interpreter reports a macOS version below 11 (pip's tag)."""
    parts = src.parse_version(host.macos or "")
    return host.wheel_platform == "macos-arm64" and parts is not None and parts.major < 11


def _no_arm64_tag(host: Host) -> Reason:
    """An arm64 interpreter that reports macOS 10.16 (a Python built against an old SDK, or run
    with SYSTEM_VERSION_COMPAT=1, on macOS 11+): PyTorch's macOS arm64 wheels are all tagged
    ``macosx_11_0_arm64`` or later (PyPI JSON: 139 macosx_11_0_arm64, 1 macosx_11_1_arm64, 44
    macosx_14_0_arm64 files; compat-extra sources ``macos_arm64_tags``), so pip, which builds its
    tags from that version, finds none (pytorch/pytorch#128939, #75534)."""
    text = (
        f"this arm64 Python reports macOS {host.macos} (platform.mac_ver(): built against an "
        "old SDK): PyTorch's arm64 wheels are tagged macosx_11_0_arm64 or later, so pip finds "
        "no torch ('from versions: none'); use a Python built for macOS 11+ (python.org's "
        "universal2 installer, Homebrew, conda)"
    )
    return Reason("platform", FAIL, text, "compat-extra:sources.macos_arm64_tags")


def _no_32bit(line: InstallLine, host: Host, extra: Facts) -> Reason:
    """A 32-bit interpreter: no torch after 0.1.2 has a 32-bit wheel (PyPI, download.pytorch.org)
    or conda package (compat-extra ``python_32bit``; 32-bit ARM, ``armv7l``: sources
    ``python_32bit_arm``), so every line fails on the platform check:
    pip and uv see only PyPI's 0.1.2 sdists (pinned past them: no matching distribution; unpinned:
    the sdist's setup.py raises), conda finds no package, a wheel file is not for this tag."""
    last = str(extra.get("python_32bit", "last_release") or "0.1.2")
    arm = host.machine in src.THIRTY_TWO_BIT_MACHINES and host.machine != "i686"
    if arm and line.conda is None and line.wheel is None:
        # Sources python_32bit_arm: pip on a 32-bit ARM Python lists no torch at all.
        text = (
            f"a 32-bit ARM Python (linux_{host.machine}): PyTorch publishes no 32-bit ARM wheel "
            "(PyPI, download.pytorch.org; piwheels has none either): pip says 'Could not find a "
            f"version that satisfies the requirement torch (from versions: none)'. This "
            f"{host.machine} system runs only 32-bit Pythons: install a 64-bit OS (aarch64)"
        )
        return Reason("platform", FAIL, text, "compat-extra:python_32bit")
    tag = (
        f"linux_{host.machine}"
        if arm
        else str(extra.get("python_32bit", "tags", host.platform) or "32-bit")
    )
    where = f"a 32-bit Python ({tag})"
    if line.conda is not None:
        how = "conda's 32-bit platforms hold no pytorch package: PackagesNotFoundError"
    elif line.wheel is not None:
        how = "the wheel is not for this tag: 'is not a supported wheel on this platform'"
    else:
        how = (
            f"pip/uv see only PyPI's torch {last} sdists: a pin past them finds no matching "
            f"distribution, an unpinned line builds {last}.post2, whose setup.py raises"
        )
    text = f"{where}: no torch after {last} has a 32-bit wheel or conda package; {how}. " + (
        f"A {host.machine} system runs only 32-bit Pythons: install a 64-bit OS"
        if host.machine in src.THIRTY_TWO_BIT_MACHINES
        else "Install a 64-bit Python"
    )
    return Reason("platform", FAIL, text, "compat-extra:python_32bit")


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
    bits: int | None = None,
    libc: str | None = None,
    implementation: str | None = None,
    macos: str | None = None,
) -> LineResult:
    """Whether ``line`` installs and runs on the host of ``host_props`` (``host.*`` fingerprint
    properties), for Python ``python``, ``platform``, CPU ``machine`` (``x86_64``/``aarch64``),
    interpreter ``bits`` (32 or 64; default 64), C library ``libc`` (``musl``; default: what
    the fingerprint's ``host.os`` implies) and interpreter ``implementation`` (``pypy``; default
    CPython) and, on macOS, the version the interpreter reports ``macos`` ("10.16") when given (else the line's own environment
    Python, else the host's), on the day ``as_of``
    (the indexes then served only the releases out by that day: an old unpinned line gets that
    day's build, and the driver floor is that build's; None: today's facts). ``follow_fix``:
    also check the line that works, and drop it when it would not install on this host either
    (off for that check itself)."""
    facts, extra = facts or default_facts(), extra or extra_facts()
    if as_of is not None:
        facts, extra = src.dated(facts, extra, as_of)
    result = _check_line(
        line,
        host_props,
        python,
        platform,
        machine,
        facts,
        extra,
        follow_fix,
        bits,
        libc,
        implementation,
        macos,
    )
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
            bits=result.host.bits,
            libc=result.host.libc,
            implementation=result.host.implementation,
            macos=result.host.macos,
        )
        if fixed.installs is False:
            result = replace(result, fix=None)
    if follow_fix and (result.nearest or result.instead):
        nearest = tuple(n for n in result.nearest if _installs(n, result, host_props, facts, extra))
        instead = tuple(b for b in result.instead if _installs(b, result, host_props, facts, extra))
        result = replace(result, nearest=nearest, instead=instead)
    return result


def _armv8_0_sigill(release: Version, offer: src.Offer, host: Host, extra: Facts) -> list[Reason]:
    """An unknown ``runs`` reason where ``offer`` is a Linux aarch64 CPU wheel of a release
    whose wheels stop with SIGILL on ARMv8.0 cores (compat-extra ``aarch64.armv8_0_sigill``:
    at import for 2.0.0 from the cpu index, 2.1.0, 2.4.0, 2.10.0, pytorch/pytorch#97226, #132032,
    #176993; in the first kernels for 1.9.0, 1.10.0, 1.13.0, KumaTea/pytorch-aarch64#8,
    mpcabete/bombcrypto-bot#220, pytorch/pytorch#90535): no host fact says the CPU's ISA level."""
    table = extra.get("aarch64", "armv8_0_sigill")
    if host.wheel_platform != "linux-aarch64" or offer.runtime != "cpu":
        return []
    if not isinstance(table, Mapping) or str(release) not in (table.get("releases") or []):
        return []
    only = (table.get("only_from") or {}).get(str(release))
    if only and str(only) not in offer.source:
        return []
    text = (
        f"unknown: the facts do not cover this host's CPU: torch {release}'s Linux aarch64 wheel "
        "uses instructions ARMv8.0 cores lack and stops with SIGILL ('Illegal instruction') on "
        "them (Raspberry Pi 3/4, AWS a1; pytorch/pytorch#132032, #97226, #90535); a newer core "
        "(Graviton2+, Neoverse, Apple) runs it"
    )
    return [Reason("runs", UNKNOWN, text, "compat-extra:aarch64.armv8_0_sigill")]


def _windows_libomp_fixed(reasons: list[Reason], extra: Facts) -> Version | None:
    """The release that fixes the missing ``libomp140.x86_64.dll`` (compat-extra
    ``windows_libomp.fixed_in``) when ``reasons`` hold that failure, else None."""
    if not any(r.verdict == FAIL and r.fact == "compat-extra:windows_libomp" for r in reasons):
        return None
    return src.parse_version(str(extra.get("windows_libomp", "fixed_in") or ""))


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
        bits=result.host.bits,
        libc=result.host.libc,
        implementation=result.host.implementation,
        macos=result.host.macos,
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
    bits: int | None = None,
    libc: str | None = None,
    implementation: str | None = None,
    macos: str | None = None,
) -> LineResult:
    host_props = {k: v for k, v in host_props.items() if k.startswith("host.")}
    host = host_of(
        host_props, python or line.python, platform, machine, bits, libc, implementation, macos
    )
    if host.bits == 32:
        return LineResult(line, host, None, None, combine([_no_32bit(line, host, extra)]))
    if host.libc == "musl" and line.conda is None and not _musllinux_file(line):
        return LineResult(line, host, None, None, combine([_no_musl(line, host)]))
    if host.implementation == "pypy" and line.conda is None:
        return LineResult(line, host, None, None, combine([_no_pypy(line, host)]))
    if _macos_before_11_on_arm(host) and line.conda is None:
        return LineResult(line, host, None, None, combine([_no_arm64_tag(host)]))
    if host.machine not in src.COVERED_MACHINES:
        text = (
            f"the facts cover x86_64 and aarch64 CPUs; this one is {host.machine} (uname -m): "
            "which builds its indexes serve is not in them"
        )
        return LineResult(line, host, None, None, combine([Reason("platform", UNKNOWN, text, "-")]))
    if line.conda is not None:
        return check_conda(line, host_props, host, facts, extra)
    if line.wheel is not None:
        return check_wheel(line, line.wheel, host_props, host, facts, extra)
    if line.pypi_pytorch is not None:
        return LineResult(line, host, None, None, combine([_pypi_pytorch(line, extra)]))
    if line.torch_nightly is not None and line.torch is None:
        return LineResult(line, host, None, None, combine([_torch_nightly(line, extra)]))
    reasons: list[Reason] = []
    if line.unread and line.torch is None and not line.companions:
        text = f"cannot read {', '.join(line.unread)} here: give its lines instead"
        return LineResult(line, host, None, None, combine([Reason("install", UNKNOWN, text, "-r")]))
    spec, notes = spec_of(line, facts)
    reasons += notes
    if line.torch is None and not notes:
        gaps = companions_only(line, facts, extra, host)
        if gaps:
            return LineResult(line, host, None, None, combine(gaps))
        text = "the line pins torchvision/torchaudio only, to a version the facts do not pair with torch"
        return LineResult(
            line, host, None, None, combine([Reason("install", UNKNOWN, text, "companions")])
        )
    backend, backend_note = _backend(line, host_props, facts, extra)
    if backend_note:
        reasons.append(backend_note)
    found = src.sources(line, facts, extra, host, backend)
    groups = found.groups
    for url in found.page_indexes:
        text = (
            f"{url} is a find-links page given as an index: pip and uv read an index as "
            "<url>/<project>/ (the simple repository API), which a page of links does not have, "
            "so they find no torch there (-f takes a page; astral-sh/uv#12980)"
        )
        reasons.append(Reason("install", NOTE, text, "compat-extra:sources.pip_index_url"))
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
        or install_index.amd_index_python(line, found, host, extra)
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
    lie = install_index.uv_requires_python(line, spec, host, facts, extra)
    if lie is not None:
        return LineResult(line, host, None, None, combine([*reasons, lie[0]]), lie[1])
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
        why, fix, nearest = why_none(line, groups, spec, facts, extra, host, host_props)
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
    reasons += companion_reasons(line, facts, release, offer.runtime, host, src.as_of(extra), extra)
    reasons += [r for r in [numpy_abi(line, release, host, extra)] if r is not None]
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
    reasons += _armv8_0_sigill(release, offer, host, extra)
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
    fixed = _windows_libomp_fixed(reasons, extra)
    if fixed is not None:
        # Every Windows build of the release has the missing DLL: the fix is the next release.
        instead = []
        if offer.source == "PyPI" or offer.runtime is None:
            fix = pypi_fix_line(facts, fixed, line)
        else:
            fix = fix_line(facts, fixed, offer.runtime, line, companion_pins(facts, fixed, line))
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
