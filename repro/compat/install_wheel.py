"""``repro check`` for a wheel named by URL or file name: its ``cpXY`` and platform tags against
the host, its CUDA against the driver and GPU, and, when it does not fit, the same wheel for the
host's Python or the same release for its platform.
"""

from __future__ import annotations

from packaging.version import Version

from repro.compat import install_index
from repro.compat import sources as src
from repro.compat.facts import Facts
from repro.compat.install_fix import fix_line, nearest_python, pypi_fix_line
from repro.compat.install_line import Wheel
from repro.compat.install_result import LineResult
from repro.compat.install_runs import run_reasons_on
from repro.compat.results import FAIL, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import Host


def check_wheel(line, wheel: Wheel, host_props, host, facts, extra) -> LineResult:
    """``line``'s wheel on ``host``: Python and platform tags first (with the line that works
    and the nearest releases when they do not fit), then whether its build runs."""
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
        nearest = nearest_python(facts, extra, host, release)
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
    if wheel.name == "torch" and _is_jetson(wheel, extra):
        # NVIDIA's Jetson wheels (torch-2.0.0+nv23.05-...-linux_aarch64.whl): CUDA for Tegra GPUs.
        missing = _jetson_missing(wheel, extra)
        if missing is not None:
            return LineResult(line, host, str(wheel.version), "jetson", combine([missing]))
        reasons += install_index.jetson_reasons(host_props, host, extra)
        return LineResult(line, host, str(wheel.version), "jetson", combine(reasons))
    builder = _unknown_builder(wheel, extra)
    if builder is not None:
        return LineResult(line, host, str(wheel.version), runtime, combine([*reasons, builder]))
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
    reasons += run_reasons_on(host_props, str(release), runtime, facts, extra, host)
    return LineResult(line, host, str(wheel.version), runtime, combine(reasons))


def _unknown_builder(wheel: Wheel, extra: Facts) -> Reason | None:
    """An unknown ``runs`` reason for a torch wheel whose Linux aarch64 platform tag is none of
    PyTorch's own (compat-extra ``aarch64.own_tags``: PyPI's and download.pytorch.org's aarch64
    wheels are manylinux2014_aarch64 / manylinux_2_28_aarch64; a ``linux_aarch64`` file is
    NVIDIA's Jetson wheel, a community or a local build): the facts do not hold what it needs.
    None for other wheels (NVIDIA's Jetson indexes are judged by :func:`_is_jetson` first)."""
    own = [str(tag) for tag in extra.get("aarch64", "own_tags") or ()]
    name = wheel.source.rsplit("/", 1)[-1]
    if wheel.name != "torch" or not own or not name.endswith(".whl"):
        return None
    tags = name[: -len(".whl")].rsplit("-", 1)[-1].split(".")
    arm = [tag for tag in tags if tag.endswith("_aarch64")]
    if not arm or any(tag in own for tag in arm):
        return None
    text = (
        f"unknown: the facts do not cover who built {name}: its {arm[0]} tag is none of "
        f"PyTorch's own aarch64 wheels' ({', '.join(own)}); such files are NVIDIA's Jetson wheels "
        "or community and local builds, whose CUDA/JetPack, glibc and CPU needs the facts do not "
        "hold"
    )
    return Reason("runs", UNKNOWN, text, "compat-extra:aarch64.own_tags")


def _is_jetson(wheel: Wheel, extra: Facts) -> bool:
    """A wheel from one of NVIDIA's Jetson indexes, or named with NVIDIA's ``+nvYY.MM`` label."""
    if "://" in wheel.source and install_index.is_jetson_url(wheel.source, extra):
        return True
    local = wheel.version.local or ""
    return local.startswith("nv") and local[2:3].isdigit()


def _jetson_missing(wheel: Wheel, extra: Facts) -> Reason | None:
    """A wheel URL in one of NVIDIA's redist folders for a Python that folder has no wheels for
    (compat-extra ``jetson.folder_pythons``): the file does not exist."""
    for folder, pythons in (extra.get("jetson", "folder_pythons") or {}).items():
        if f"/{folder}" not in wheel.source:
            continue
        listed = [str(p) for p in pythons or ()]
        if wheel.pythons and not set(wheel.pythons) & set(listed):
            text = (
                f"NVIDIA's {folder} folder has Python {', '.join(listed)} wheels only: no "
                f"cp{wheel.pythons[0].replace('.', '')} file there (HTTP 404)"
            )
            return Reason("install", FAIL, text, "compat-extra:jetson.folder_pythons")
    return None


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
