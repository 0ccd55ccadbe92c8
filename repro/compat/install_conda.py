"""``repro check`` for a conda/mamba line: which pytorch-channel build conda picks (it keeps the
environment's Python minor version, takes the newest matching release, and installs the CPU build
when that release has no build for the asked CUDA: pytorch#69202), the channel's end (2.5.1,
pytorch#138506), and whether the build runs on the host.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_fix import fix_line, nearest_python
from repro.compat.install_result import LineResult
from repro.compat.install_runs import run_reasons
from repro.compat.predictions import version
from repro.compat.results import FAIL, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import Host


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


def check_conda(line, host_props, host, facts, extra) -> LineResult:
    """``line``'s conda install on ``host`` (see the module docstring); only the pytorch
    channel's builds are in the facts, other channels are ``unknown``."""
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
    return run_reasons(
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
