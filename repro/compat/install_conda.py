"""``repro check`` for a conda/mamba line: which pytorch-channel build conda picks (it keeps the
environment's Python minor version, takes the newest matching release, and installs the CPU build
when that release has no build for the asked CUDA: pytorch#69202), the channel's end (2.5.1,
pytorch#138506), and whether the build runs on the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_conda_cuda import (
    conda_cuda,
    conda_runtime,
    cuda_key,
    cudatoolkit_reason,
    fuzzy_cuda,
    macos_cuda_reason,
    no_nvidia_channel,
    toolkit_only,
)
from repro.compat.install_conda_forge import check_conda_forge
from repro.compat.install_fix import fix_line, nearest_python
from repro.compat.install_result import LineResult
from repro.compat.install_runs import glibc_import_reasons, run_reasons
from repro.compat.predictions import arch_floor
from repro.compat.results import FAIL, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import Host


def check_conda(line, host_props, host, facts, extra) -> LineResult:
    """``line``'s conda install on ``host`` (see the module docstring); only the pytorch
    channel's builds are in the facts, other channels are ``unknown``. A pass that rests on a
    conda dimension the facts do not list (:func:`uncovered`) is ``unknown`` instead."""
    result = _judge_conda(line, host_props, host, facts, extra)
    if result.outcome != PASS:
        return result
    gap = uncovered(line.conda, host, extra)
    if gap is None:
        return result
    return replace(result, prediction=combine([*result.prediction.reasons, gap]))


def uncovered(conda, host: Host, extra: Facts) -> Reason | None:
    """An ``unknown`` reason naming the conda dimension a would-be pass rests on that the facts
    do not list (compat-extra ``conda_coverage``), or None. Three, each measured as the first-sight
    precision of the engine's conda passes on the frozen install sets test3 ... test8
    (/work/notes/issue-30-install10-conda.md): companions from the nightly channel
    (``nightly_channels``: which companion nightlies a day held is not listed; the channel was
    pruned), conda companions on the platforms whose companion packages
    are not listed (``companion_platforms_unlisted``: empty since round thirteen, whose studied
    files made those passes right 2 of 4), and companion
    packages the facts hold nothing of (``companions_unlisted``: torchdata, torchtext)."""
    table = extra.get("conda_coverage") or {}
    fact = "compat-extra:conda_coverage"
    names = {c.rstrip("/").rsplit("/", 1)[-1] for c in conda.channels}
    if names == {"conda-forge"}:
        return None  # its companions are judged from conda_forge_builds (install_conda_forge)
    nightly = sorted(names & {str(c) for c in table.get("nightly_channels") or ()})
    if nightly and conda.companions:
        day = src.as_of(extra) or "today"
        text = (
            f"the facts do not cover the {nightly[0]} conda channel's {conda.companions[0]}"
            f" packages on {day} (which companion nightlies it held that day, and for which "
            "builds, is not listed)"
        )
        return Reason("companion", UNKNOWN, text, fact + ".nightly_channels")
    unlisted = [c for c in conda.companions if c in (table.get("companions_unlisted") or ())]
    if unlisted:
        text = f"the facts do not cover {unlisted[0]}'s conda packages (builds, pins)"
        return Reason("companion", UNKNOWN, text, fact + ".companions_unlisted")
    platforms = [str(p) for p in table.get("companion_platforms_unlisted") or ()]
    if conda.companions and host.wheel_platform in platforms:
        text = (
            f"the facts do not cover {conda.companions[0]}'s conda packages for "
            f"{host.wheel_platform} (which releases each channel built there)"
        )
        return Reason("companion", UNKNOWN, text, fact + ".companion_platforms_unlisted")
    return None


def _judge_conda(line, host_props, host, facts, extra) -> LineResult:
    """:func:`check_conda` before the coverage check."""
    conda = line.conda
    assert conda is not None
    channel = facts.get("conda_channel", "name") or "pytorch"
    nightly = str(extra.get("conda_nightly_channel", "name") or "pytorch-nightly")
    last = Version(str(facts.get("conda_channel", "last_release") or "2.5.1"))
    fact_end = "conda_channel.last_release"
    if conda.nightly_package and channel not in conda.channels:
        # maskrcnn-benchmark#1317: `conda install pytorch-nightly` on the default channels.
        where = ", ".join(conda.channels) or "the default channels"
        text = (
            f"the pytorch-nightly package (the 1.0 preview) was only on the pytorch channel: "
            f"{where} has none (PackagesNotFoundError)"
        )
        fact = "compat-extra:conda_nightly_channel.package"
        return LineResult(line, host, None, None, combine([Reason("install", FAIL, text, fact)]))
    if line.torch is None:
        reason = macos_cuda_reason(conda, host, extra) or toolkit_only(conda, host, facts, extra)
        return LineResult(line, host, None, None, combine([reason]))
    reason = (
        macos_cuda_reason(conda, host, extra)
        or _companion_platform(conda, host, extra)
        or _platform_reason(conda, host, facts, extra, channel)
    )
    if reason is not None:
        return LineResult(line, host, None, None, combine([reason]))
    if nightly in conda.channels:
        return _check_nightly_channel(line, host_props, host, facts, extra, nightly)
    if channel not in conda.channels:
        missing = _default_channels_missing(conda, host, extra)
        if missing is not None:
            return LineResult(line, host, None, None, combine([missing]))
        forge = check_conda_forge(line, host_props, host, facts, extra)
        if forge is not None:
            return forge
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
            fix = fix_line(facts, newer[0], conda_runtime(conda.cuda) or "cpu", line, {})
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
    # channel's Python set per release is taken from PyPI's wheels: an inference, so its reasons
    # say "as on PyPI" and are marked unverified in the answer.
    gap = _python_gap(extra, host)
    for_python = [
        r for r in releases if src._fits(facts, r, host) is not False and (gap is None or r > gap)
    ]
    if not for_python and gap is not None and all(r <= gap for r in releases):
        text = (
            f"the pytorch channel has no pytorch {conda.spec or releases[-1]} build for Python "
            f"{host.python}: its first Python {host.python} builds came after {gap} (the Anaconda "
            "platform lacked NumPy, SciPy, SymPy and Pillow for it; PyTorch 2.0 release notes); "
            "conda: 'incompatible with the existing python installation in your environment'"
        )
        fact = "compat-extra:" + Facts.name("conda_python_gaps", host.python)
        reason = Reason("python", FAIL, text, fact)
        return LineResult(line, host, None, None, combine([reason]))
    if not for_python:
        pythons = src.pypi_pythons(facts, releases[-1], host) or []
        text = (
            f"no pytorch {conda.spec or releases[-1]} build for Python {host.python} on the "
            f"pytorch channel (pytorch {releases[-1]}: Python {', '.join(pythons)}, as on PyPI); "
            "conda: 'incompatible with the existing python installation in your environment'"
        )
        nearest = [
            r for r in nearest_python(facts, extra, host, releases[-1]) if Version(r) <= last
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
    toolkit = cudatoolkit_reason(conda, host, extra)
    if toolkit is not None:
        return LineResult(line, host, None, None, combine([*python_reason, toolkit]))
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
        reasons += run_reasons(host_props, str(release), "cpu", facts, host)
        reasons += _mkl_break(conda, release, host, extra)
        reasons += glibc_import_reasons(str(release), host, extra, conda=True)
        return LineResult(line, host, str(release), "cpu", combine(reasons))
    unlinked = no_nvidia_channel(line, host_props, host, facts, extra, releases[-1], python_reason)
    if unlinked is not None:
        return unlinked
    wanted = fuzzy_cuda(conda.cuda, conda_cuda(facts, releases[-1], host.platform))
    # conda maximises the pytorch version first, then prefers a CUDA build of it; a version
    # without a build for the asked CUDA comes as its CPU build (pytorch#69202, conda/conda#11001).
    with_cuda = (
        [releases[-1]]
        if wanted is None or wanted in conda_cuda(facts, releases[-1], host.platform)
        else []
    )
    if not with_cuda:
        release = releases[-1]
        builds = conda_cuda(facts, release, host.platform)
        text = (
            f"the pytorch channel has no pytorch {release} build for CUDA {wanted}"
            f"{' on Windows' if host.platform == 'windows' else ''} (its builds: "
            f"CUDA {', '.join(builds) or 'none listed'}): conda installs its CPU build "
            f"(pytorch#69202)"
        )
        path = Facts.name("torch_variants", f"{release.major}.{release.minor}", "conda")
        fix = None
        if builds:
            best = min(builds, key=lambda b: abs(cuda_key(b) - cuda_key(wanted)))
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
    builds = conda_cuda(facts, release, host.platform)
    cuda = wanted or (builds[-1] if builds else None)
    runtime = conda_runtime(cuda) if cuda else None
    mamba = _mamba_cpu_variant(conda, release, cuda, extra)
    if mamba is not None:
        fix = f"conda install pytorch=={release} cudatoolkit={cuda} -c pytorch"
        return LineResult(line, host, f"{release}", "cpu", combine([*python_reason, mamba]), fix)
    path = Facts.name("torch_variants", f"{release.major}.{release.minor}", "conda")
    text = f"{conda.tool} gets pytorch {release} built for CUDA {cuda} from the pytorch channel"
    reasons = [
        *python_reason,
        Reason("install", PASS if runtime else UNKNOWN, text, path, wanted is None),
    ]
    reasons += _conda_run_reasons(host_props, host, facts, release, cuda, runtime)
    reasons += _mkl_break(conda, release, host, extra)
    reasons += glibc_import_reasons(str(release), host, extra, conda=True)
    prediction = combine(reasons)
    fix = None
    if prediction.outcome == FAIL:
        # The channel's build of this release that runs here (the highest CUDA), else cpuonly.
        runs = [
            b
            for b in builds
            if b != cuda
            and combine(
                _conda_run_reasons(host_props, host, facts, release, b, conda_runtime(b))
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
    package's own sm_XY list (``arch_lists.conda_<major>_<minor>_cu<XY>``) where known. On a
    Linux host the list is cut at ``conda_arch_floor`` (sm_37 from 1.3.1: the packages' cuobjdump
    keeps a bundled library's sm_35 cubins, torch's kernels start at sm_37; pytorch/builder
    2aac90bd, pytorch/pytorch#30532, #31319)."""
    arch_name = f"conda_{release.major}_{release.minor}_cu{(cuda or '').replace('.', '')}"
    arch = facts.get("arch_lists", arch_name)
    entries = [str(a) for a in arch] if isinstance(arch, list) else None
    label = f"arch_lists.{arch_name}"
    if entries and host.platform == "linux":
        kept = arch_floor(facts, "conda_arch_floor", str(release), entries)
        if len(kept) != len(entries):
            entries, label = kept, f"{label}, conda_arch_floor"
    return run_reasons(host_props, str(release), runtime, facts, host, entries, label)


#: Channels conda reaches by default (miniforge's conda-forge, anaconda's main): by their names.
_DEFAULT_CHANNELS = frozenset({"conda-forge", "defaults", "main", "anaconda"})


def _default_channels_missing(conda, host: Host, extra: Facts) -> Reason | None:
    """A line that names only conda's default channels (anaconda's main; or none) and channels
    with nothing for the host's platform (``other_channels``: soumith's had no win-64): a
    package it asks for that the default channels lacked for the platform through a day at least
    as late as the line's (compat-extra ``conda_default_channels.missing``: no win-64 pytorch on
    2017-09-15, no win-64 torchvision through 2020-10-20, no osx-64 pytorch through 2019-11-04)
    fails, PackagesNotFoundError. None otherwise (a later day, another channel: not judged)."""
    table = extra.get("conda_default_channels") or {}
    names = {str(n) for n in table.get("names") or ()}
    empty = set()
    for channel, platforms in (table.get("other_channels") or {}).items():
        if host.platform not in [str(p) for p in platforms or ()]:
            empty.add(str(channel))  # nothing for this platform there (soumith's on Windows)
    names |= empty
    asked = {c.rstrip("/").rsplit("/", 1)[-1] for c in conda.channels}
    day = src.as_of(extra)
    if not asked <= names or day is None:
        return None
    gone = (table.get("missing") or {}).get(host.platform) or {}
    for package in ("pytorch", *conda.companions):
        until = gone.get(package)
        if until and day <= str(until):
            others = sorted(asked & empty)
            text = (
                f"{package} is not on conda's default channels for {host.platform} (anaconda's "
                f"main had none through {until})"
                + (f", nor on {', '.join(others)} (no {host.platform} packages)" if others else "")
                + f": PackagesNotFoundError: {package}"
            )
            check = "platform" if package == "pytorch" else "companion"
            fact = f"compat-extra:conda_default_channels.missing.{host.platform}.{package}"
            return Reason(check, FAIL, text, fact)
    return None


def _companion_platform(conda, host: Host, extra: Facts) -> Reason | None:
    """A companion (torchaudio) the line asks conda for where none of its channels had a
    package for the host's conda platform through the line's day (compat-extra
    ``companion_platforms.<name>.conda.<platform>``: channel -> the last day read without one;
    sources ``torchaudio_platforms``): PackagesNotFoundError. The default channels stand for a
    line with no -c. None where a channel was not read, or the day is later."""
    day = src.as_of(extra) or "9999-12-31"
    for name in conda.companions:
        table = extra.get("companion_platforms", name, "conda", host.wheel_platform) or {}
        if not table:
            continue
        names = [c.rstrip("/").rsplit("/", 1)[-1] for c in conda.channels] or ["defaults"]
        if "defaults" not in names and "main" not in names:
            names.append("defaults")  # conda also searches the default channels
        until = [str(table.get(c) or "") for c in names]
        if not all(until) or day > min(until):
            continue
        where = ", ".join(dict.fromkeys(names))
        last = min(until)
        when = "ever" if last.startswith("9999") else f"through {last}"
        text = (
            f"{name} has no {host.wheel_platform} conda package on {where} (none there {when}, "
            f"as read): conda stops with PackagesNotFoundError: {name}"
        )
        fact = "compat-extra:" + Facts.name(
            "companion_platforms", name, "conda", host.wheel_platform
        )
        return Reason("platform", FAIL, text, fact)
    return None


def _platform_reason(conda, host: Host, facts: Facts, extra: Facts, channel: str) -> Reason | None:
    """The pytorch channel's builds for the host's conda platform (compat-extra
    ``conda_channel_platforms``): [] none (fail), ``{none_through: X}`` none of the releases up
    to X (fail when the line's pin allows no newer release out on the line's day, else unknown,
    or None where ``built_from`` says the newer ones are built); with ``no_channel_until``, a
    line whose day is after it may get pytorch from the default channels instead (unknown).
    None where the facts say nothing of the platform."""
    subdirs = extra.get("conda_channel_platforms") or {}
    if host.wheel_platform not in subdirs:
        return None
    path = ("conda_channel_platforms", host.wheel_platform)
    value = subdirs[host.wheel_platform]
    fact = "compat-extra:" + Facts.name(*path)
    table = value if isinstance(value, Mapping) else {}
    if channel not in conda.channels:
        # Only the default channels asked (conda-forge, anaconda's main): none had a build up
        # to no_channel_until; any other channel, or a later day, is the channel check's.
        day, until = src.as_of(extra), table.get("no_channel_until")
        names = {c.rstrip("/").rsplit("/", 1)[-1] for c in conda.channels}
        if until and day is not None and day <= str(until) and names <= _DEFAULT_CHANNELS:
            where = ", ".join(conda.channels) or "the default channels"
            text = (
                f"no conda channel had a {host.wheel_platform} pytorch on {day} ({where} "
                f"included; none had one up to {until}): PackagesNotFoundError"
            )
            return Reason("platform", FAIL, text, fact)
        return None
    through = src.parse_version(str(table.get("none_through") or ""))
    built_from = src.parse_version(str(table.get("built_from") or ""))
    spec = SpecifierSet(conda.spec) if conda.spec else SpecifierSet()
    newer = [
        r
        for r in src.releases(facts, extra)
        if through is not None and r > through and spec.contains(r, prereleases=True)
    ]
    if value == [] or (through is not None and not newer):
        pinned = f" of pytorch {conda.spec}" if conda.spec else ""
        day, until = src.as_of(extra), table.get("no_channel_until")
        if until and (day is None or day > str(until)):
            text = (
                f"the {channel} channel has no {host.wheel_platform} builds{pinned}; whether "
                f"conda's default channels (anaconda's main, conda-forge) had one "
                f"{'on ' + day if day else 'today'} is not in the facts (none had one on {until})"
            )
            return Reason("platform", UNKNOWN, text, fact)
        text = (
            f"the {channel} channel has no {host.wheel_platform} builds{pinned}: conda finds no "
            "pytorch for this platform (PackagesNotFoundError)"
        )
        return Reason("platform", FAIL, text, fact, extra.unverified(*path))
    if built_from is not None and any(r >= built_from for r in newer):
        return None
    after = f" after {through}" if through else ""
    text = f"which releases the {channel} channel built for {host.wheel_platform}{after} is not in the facts"
    return Reason("platform", UNKNOWN, text, fact)


def _python_gap(extra: Facts, host: Host) -> Version | None:
    """The last release the pytorch channel built no package of for the host's Python although
    PyPI had wheels (compat-extra ``conda_python_gaps``), or None."""
    gaps = extra.get("conda_python_gaps") or {}
    value = gaps.get(host.python) if host.python else None
    if not isinstance(value, Mapping):
        return None
    return src.parse_version(str(value.get("none_through") or ""))


def _mamba_cpu_variant(conda, release: Version, cuda: str | None, extra: Facts) -> Reason | None:
    """An ``accelerator`` FAIL where mamba/micromamba asks the pytorch channel for a CUDA build of
    ``release`` by ``cudatoolkit`` alone and the facts (compat-extra ``conda_mamba_cpu_variant``:
    1.8-1.11) say it takes the CPU build: mamba does not weigh the CPU variant down as conda does
    (mamba-org/mamba#1349, #1617, #336; pytorch/builder#823). None otherwise."""
    table = extra.get("conda_mamba_cpu_variant")
    if not isinstance(table, Mapping) or conda.tool not in (table.get("tools") or []):
        return None
    if conda.cuda_package != "cudatoolkit" or conda.cpu_only or cuda is None:
        return None
    first = src.parse_version(str(table.get("from_release") or ""))
    before = src.parse_version(str(table.get("before") or ""))
    if first is None or before is None or not first <= Version(release.public) < before:
        return None
    text = (
        f"{conda.tool} takes the CPU build of pytorch {release} beside cudatoolkit={cuda}: it does "
        "not weigh the CPU variant down as conda does (track_features, pytorch-mutex), so the GPU "
        "stays unused (mamba-org/mamba#1617, #1349); conda itself gets the CUDA build"
    )
    return Reason("accelerator", FAIL, text, "compat-extra:conda_mamba_cpu_variant")


def _mkl_break(conda, release: Version, host: Host, extra: Facts) -> list[Reason]:
    """pytorch/pytorch#123097: since mkl 2024.1 reached the default channels the pytorch
    channel's Linux builds (linked to MKL dynamically) fail at ``import torch`` ("undefined
    symbol: iJIT_NotifyEvent") unless the line pins mkl below 2024.1 (compat-extra
    ``conda_mkl_break``); lines run before that day are not affected, nor releases before the ITT
    API (``unaffected_before``). One between that and the oldest release a report names
    (``from_release``) is unknown."""
    since = extra.get("conda_mkl_break", "since")
    first = src.parse_version(str(extra.get("conda_mkl_break", "from_release") or ""))
    if not since or first is None or host.platform != "linux":
        return []
    day = src.as_of(extra)
    if day is not None and day < str(since):
        return []
    if conda.mkl and not SpecifierSet(conda.mkl).contains("2024.1"):
        return []
    unaffected = src.parse_version(str(extra.get("conda_mkl_break", "unaffected_before") or ""))
    if unaffected is not None and release < unaffected:
        return []
    if release < first:
        text = (
            f"whether the pytorch channel's {release} fails at import with mkl 2024.1 (taken from "
            f"the default channels since {since}, pytorch/pytorch#123097) is not in the facts: "
            f"the oldest release reported broken is {first}; mkl==2024.0 on the line avoids it"
        )
        return [Reason("install", UNKNOWN, text, "compat-extra:conda_mkl_break.from_release")]
    text = (
        f"import torch fails: the pytorch channel's {release} links MKL dynamically, and conda "
        f'takes mkl 2024.1 or newer from the default channels since {since} ("undefined symbol: '
        'iJIT_NotifyEvent", pytorch/pytorch#123097); add mkl==2024.0 to the line'
    )
    return [Reason("install", FAIL, text, "compat-extra:sources.conda_mkl_2024_1")]


def _dated_nightly(spec: str) -> str | None:
    """The dated nightly a conda spec pins (``==1.10.0.dev20210911``), else None."""
    if not spec.startswith("==") or "," in spec:
        return None
    parsed = src.parse_version(spec[2:])
    return str(parsed) if parsed is not None and parsed.is_devrelease else None


def _check_nightly_channel(line, host_props, host, facts, extra, channel: str) -> LineResult:
    """``-c pytorch-nightly``: the line after the newest release (of the day, when dated),
    built for the CUDA versions of that line's release on the pytorch channel; a CUDA version it
    does not build comes as the CPU build (pytorch/pytorch#91009); the channel stopped after
    ``conda_nightly_channel.last_line``."""
    conda = line.conda
    fact = "compat-extra:conda_nightly_channel"
    nightly_line = src.nightly_line(facts, extra)
    last = Version(str(extra.get("conda_nightly_channel", "last_line") or "0"))
    if Version(nightly_line) > last:
        text = (
            f"the {channel} conda channel stopped with the {last} nightlies (pytorch/pytorch"
            f"#138506): no {nightly_line} nightly there"
        )
        unverified = extra.unverified("conda_nightly_channel", "last_line")
        return LineResult(
            line, host, None, None, combine([Reason("install", FAIL, text, fact, unverified)])
        )
    day = _dated_nightly(conda.spec)
    if day is not None:
        text = (
            f"unknown: the facts do not cover which days' builds the {channel} conda channel "
            f"kept: pytorch {day} is one day's nightly, which the channel may have dropped or "
            "never built for this platform (pytorch/pytorch#64906)"
        )
        return LineResult(line, host, None, None, combine([Reason("install", UNKNOWN, text, fact)]))
    gap = _python_gap(extra, host)
    if gap is not None and Version(f"{nightly_line}.0") <= Version(f"{gap.major}.{gap.minor}.0"):
        text = (
            f"the {channel} channel's {nightly_line} nightlies have no Python {host.python} "
            f"builds: the pytorch channel's first came after {gap} (PyTorch 2.0 release notes: "
            "the Anaconda platform lacked NumPy, SciPy, SymPy and Pillow for it)"
        )
        fact = "compat-extra:" + Facts.name("conda_python_gaps", host.python)
        return LineResult(line, host, None, None, combine([Reason("python", FAIL, text, fact)]))
    pythons = [str(p) for p in facts.get("torch_variants", nightly_line, "python") or ()]
    if pythons and host.python and host.python not in pythons:
        text = (
            f"the {nightly_line} nightlies have no Python {host.python} builds (Python "
            f"{', '.join(pythons)})"
        )
        reason = Reason("python", FAIL, text, Facts.name("torch_variants", nightly_line, "python"))
        return LineResult(line, host, None, None, combine([reason]))
    own = Version(f"{nightly_line}.0")
    builds = conda_cuda(facts, own, host.platform)
    path = Facts.name("torch_variants", nightly_line, "conda")
    label = f"pytorch {nightly_line} nightly"
    # conda's "=X" is a fuzzy match ("cudatoolkit=11" takes any 11.x: conda's package match
    # specifications); the newest build of that line is what the solver picks
    # (pytorch/pytorch#46794: cudatoolkit=11 -c pytorch-nightly ran on an RTX 3090).
    asked = fuzzy_cuda(conda.cuda, builds)
    if host.platform == "macos" or conda.cpu_only or (asked and asked not in builds):
        reasons = []
        if asked and not conda.cpu_only and host.platform != "macos":
            text = (
                f"the {channel} channel builds the {nightly_line} nightlies for CUDA "
                f"{', '.join(builds) or 'none listed'}, not {asked}: conda installs the CPU "
                "build (pytorch/pytorch#91009)"
            )
            reasons.append(Reason("accelerator", FAIL, text, path, True))
        else:
            text = f"{conda.tool} gets the {label} CPU build from {channel}"
            reasons.append(Reason("install", PASS, text, path, True))
        reasons += run_reasons(host_props, str(own), "cpu", facts, host)
        return LineResult(line, host, f"{nightly_line} nightly", "cpu", combine(reasons))
    cuda = asked or (builds[-1] if builds else None)
    runtime = conda_runtime(cuda) if cuda else None
    text = f"{conda.tool} gets a {label} built for CUDA {cuda} from {channel}"
    reasons = [Reason("install", PASS if runtime else UNKNOWN, text, path, True)]
    reasons += _conda_run_reasons(host_props, host, facts, own, cuda, runtime)
    return LineResult(line, host, f"{nightly_line} nightly", runtime, combine(reasons))
