"""``repro check`` for a conda line's CUDA packages: which CUDA build the pytorch channel serves
for a release (``cudatoolkit`` before 1.13, ``pytorch-cuda`` from 1.13: pytorch/builder#1385), a
toolkit package asked without pytorch, the nvidia channel ``pytorch-cuda`` needs, CUDA on macOS,
and conda's fuzzy version match (``cudatoolkit=11`` takes an 11.x build). Split from
:mod:`repro.compat.install_conda` (the line's release, Python and platform), which calls these.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.version import Version

from repro.compat.facts import Facts
from repro.compat.install_result import LineResult
from repro.compat.install_runs import run_reasons
from repro.compat.predictions import gpus_of, version
from repro.compat.results import FAIL, PASS, UNKNOWN, Reason, combine
from repro.compat.sources import Host


def conda_cuda(facts: Facts, release: Version, platform: str = "linux") -> list[str]:
    """CUDA versions of the pytorch channel's builds of ``release`` (``torch_variants.<minor>
    .conda``: the linux-64 packages), less ``windows_missing`` on Windows."""
    minor = f"{release.major}.{release.minor}"
    by_release = facts.get("torch_variants", minor, "conda", "cuda_by_release", str(release))
    values = by_release or facts.get("torch_variants", minor, "conda", "cuda") or []
    missing = facts.get("torch_variants", minor, "conda", "windows_missing") or []
    if platform == "windows":
        values = [v for v in values if str(v) not in [str(m) for m in missing]]
    return [str(v) for v in values]


def pytorch_cuda_versions(facts: Facts) -> list[str]:
    """The CUDA versions of the pytorch channel's ``pytorch-cuda`` meta-package (the GPU
    selector of its builds from 1.13 on: every ``torch_variants.<minor>.conda`` whose package is
    pytorch-cuda; source ``pytorch_cuda_versions``), oldest first."""
    ever: set[str] = set()
    for variants in (facts.get("torch_variants") or {}).values():
        conda = variants.get("conda") if isinstance(variants, Mapping) else None
        if isinstance(conda, Mapping) and conda.get("package") == "pytorch-cuda":
            ever |= {str(c) for c in conda.get("cuda") or ()}
    return sorted(ever, key=cuda_key)


def toolkit_only(conda, host: Host, facts: Facts, extra: Facts) -> Reason:
    """A conda line that installs a CUDA toolkit package and no pytorch (``conda install
    pytorch-cuda=11.3 -c nvidia``): a fail where conda cannot find it (a pytorch-cuda version
    never built, :func:`pytorch_cuda_versions`; a cudatoolkit 11.x on none of the line's
    channels, :func:`cudatoolkit_reason`), else unknown (the line installs no pytorch)."""
    asked = conda.cuda
    if conda.cuda_package == "pytorch-cuda" and asked:
        ever = pytorch_cuda_versions(facts)
        if ever and asked not in ever:
            text = (
                f"pytorch-cuda={asked} was never built: the pytorch channel's pytorch-cuda "
                f"(its CUDA selector from pytorch 1.13 on) exists for CUDA {', '.join(ever)} "
                f"only: conda stops with PackagesNotFoundError: pytorch-cuda={asked}"
            )
            return Reason("install", FAIL, text, "compat-extra:sources.pytorch_cuda_versions")
    toolkit = cudatoolkit_reason(conda, host, extra)
    if toolkit is not None:
        return toolkit
    what = str(conda.cuda_package)
    if asked and not what[4:].isdigit():  # cuda80 names its version
        what += f"={asked}"
    text = f"the line installs {what} and no pytorch: nothing more to check"
    return Reason("install", UNKNOWN, text, "conda_channel")


def no_nvidia_channel(
    line, host_props, host: Host, facts: Facts, extra: Facts, release: Version, python_reason
) -> LineResult | None:
    """The pytorch channel from 1.13 on (compat-extra ``conda_pytorch_cuda``): a CUDA build of
    pytorch needs the ``pytorch-cuda`` meta-package, whose CUDA libraries (cuda-runtime,
    libcublas, ...) are on the nvidia channel. A line that asks for no CUDA and names neither
    nvidia nor a channel with those libraries gets the CPU build (pytorch-mutex cpu):
    open-mmlab/mmpose#3238 (the docs' ``conda install pytorch torchvision -c pytorch``, a GPU
    host: 'the cuda-toolkit is not installed'), bioimage-io/core-bioimage-io-python#307 (an
    unpinned cudatoolkit beside -c pytorch -c conda-forge: py3.9_cpu_0). conda-forge has the
    CUDA 12 libraries (not 11.x): with it, a release whose pytorch-cuda builds include 12.x is
    left as before. None when the rule does not apply."""
    conda = line.conda
    minor = f"{release.major}.{release.minor}"
    table = extra.get("conda_pytorch_cuda")
    if (
        conda.cuda is not None
        or conda.cuda_package is not None
        or not isinstance(table, Mapping)
        or facts.get("torch_variants", minor, "conda", "package") != "pytorch-cuda"
    ):
        return None
    builds = conda_cuda(facts, release, host.platform)
    providers = {str(c) for c in table.get("cuda_channels") or ()}
    cuda12 = {str(c) for c in table.get("cuda12_channels") or ()}
    if providers & set(conda.channels):
        return None
    if cuda12 & set(conda.channels) and any(b.startswith("12") for b in builds):
        return None
    gpu = any(g.vendor == "nvidia" for g in gpus_of(host_props) or [])
    text = (
        f"the pytorch channel's CUDA builds of pytorch {release} need pytorch-cuda, whose CUDA "
        f"libraries are on the nvidia channel; the line asks for no CUDA and names no nvidia "
        f"channel ({', '.join(conda.channels)}): {conda.tool} installs the CPU build "
        "(pytorch-mutex cpu)"
    )
    fact = "compat-extra:conda_pytorch_cuda"
    reasons = [*python_reason, Reason("install", PASS, text, fact)]
    if gpu:
        reasons.append(
            Reason("accelerator", FAIL, "a CPU-only build: the host's NVIDIA GPU stays unused "
                   "(torch.cuda.is_available() is False)", fact)
        )  # fmt: skip
    else:
        reasons += run_reasons(host_props, str(release), "cpu", facts, host)
    fix = None
    if builds:
        fix = (
            f"{conda.tool} install pytorch=={release} pytorch-cuda={builds[-1]} "
            "-c pytorch -c nvidia"
        )
    return LineResult(line, host, str(release), "cpu", combine(reasons), fix)


def macos_cuda_reason(conda, host: Host, extra: Facts) -> Reason | None:
    """A CUDA toolkit package (``pytorch-cuda=Y``, ``cudatoolkit=Y``, the older ``cudaXY``) asked
    for on macOS: none of the channels read (compat-extra ``conda_cuda_packages.channels_read``:
    pytorch's, nvidia, conda-forge, anaconda's main, soumith's) builds one for osx-64 or osx-arm64 (PyTorch's macOS binaries
    have no CUDA), so conda stops with PackagesNotFoundError: a fail; None on other platforms,
    without such a package, or when the line adds a channel not read."""
    table = extra.get("conda_cuda_packages") or {}
    packages = [str(p) for p in table.get("packages") or ()]
    platforms = [str(p) for p in table.get("platforms") or ()]
    if host.platform in platforms or not platforms or conda.cuda_package not in packages:
        return None
    read = {str(c) for c in table.get("channels_read") or ()}
    names = {c.rstrip("/").rsplit("/", 1)[-1] for c in conda.channels}
    if not names <= read:
        return None  # a channel not read (numba's once had cudatoolkit 10.0 for osx-64)
    where = ", ".join(conda.channels) or "the default channels"
    asked = str(conda.cuda_package)
    if not asked[4:].isdigit():  # cuda80 names its version; cudatoolkit=Y, pytorch-cuda=Y
        asked += f"={conda.cuda}"
    text = (
        f"{asked} has no macOS package on {where} or the default channels (linux and Windows "
        "only; PyTorch's macOS binaries have no CUDA): conda stops with "
        f"PackagesNotFoundError: {asked}; drop it on a Mac"
    )
    return Reason("platform", FAIL, text, "compat-extra:conda_cuda_packages")


def cudatoolkit_reason(conda, host: Host, extra: Facts) -> Reason | None:
    """Whether conda finds ``cudatoolkit=X`` (11.x) on the line's channels and the default ones
    (compat-extra ``conda_cudatoolkit``): a fail where none has it, unknown where a channel that
    might was not read, None where one has it (or for other versions)."""
    table = extra.get("conda_cudatoolkit") or {}
    wanted = conda.cuda
    if conda.cuda_package != "cudatoolkit" or not wanted or not wanted.startswith("11."):
        return None

    def has(key: str) -> bool:
        return wanted in [str(v) for v in table.get(key) or ()]

    fact = "compat-extra:conda_cudatoolkit"
    channels = [c.rstrip("/").rsplit("/", 1)[-1] for c in conda.channels]
    if has("default_channels") or ("conda-forge" in channels and has("conda_forge")):
        return None
    if "nvidia" in channels and has("nvidia"):
        platforms = (table.get("nvidia_platforms") or {}).get(wanted)
        subdir = {"linux": "linux-64", "windows": "win-64"}.get(host.wheel_platform)
        seen = (table.get("nvidia_platforms_seen") or {}).get(wanted) or ()
        if subdir in [str(p) for p in seen]:
            return None
        missing = (table.get("nvidia_platforms_missing") or {}).get(wanted) or ()
        if platforms is None and subdir in [str(p) for p in missing]:
            platforms = [str(p) for p in seen]  # seen elsewhere, not for this platform
        if platforms is None:
            text = (
                f"which platforms the nvidia channel's cudatoolkit {wanted} has is not in the facts"
            )
            return Reason("install", UNKNOWN, text, f"{fact}.nvidia")
        if subdir in [str(p) for p in platforms]:
            return None
    where = ", ".join(conda.channels) or "no channel"
    nvidia_note = ""
    if "nvidia" in channels and has("nvidia"):
        known = (table.get("nvidia_platforms") or {}).get(wanted)
        if known is None:
            gone = (table.get("nvidia_platforms_missing") or {}).get(wanted) or ()
            nvidia_note = (
                f" (the nvidia channel's {wanted} has no {', '.join(map(str, gone))} package)"
            )
        else:
            platforms = ", ".join(str(p) for p in known)
            nvidia_note = f" (the nvidia channel's {wanted} is for {platforms} only)"
    defaults = ", ".join(str(v) for v in table.get("default_channels") or ())
    text = (
        f"cudatoolkit={wanted} is on none of {where}{nvidia_note}, nor on the default channels "
        f"(their 11.x: {defaults}); the pytorch channel carries no cudatoolkit: "
        "PackagesNotFoundError; conda-forge has it (the previous-versions page adds "
        "-c conda-forge)"
    )
    inferred = "pytorch" in channels and not has("not_on_pytorch")
    return Reason("install", FAIL, text, fact, inferred)


def fuzzy_cuda(asked: str | None, builds: list[str]) -> str | None:
    """The CUDA version conda's solver takes for ``cudatoolkit=<asked>``: conda's ``=X`` is a
    fuzzy match (conda's package match specifications: ``=11`` is ``11.*``), so a version
    without a minor takes the newest of ``builds`` on that line; otherwise ``asked`` itself."""
    if asked and asked not in builds and "." not in asked:
        return next((b for b in reversed(builds) if b.startswith(f"{asked}.")), asked)
    return asked


def cuda_key(cuda: str | None) -> int:
    """A CUDA version as major * 10 + minor (``"11"`` is 110), for nearness."""
    parts = (*((version(cuda) or ()) if cuda else ()), 0, 0)
    return parts[0] * 10 + parts[1]


def conda_runtime(cuda: str | None) -> str | None:
    parts = version(cuda)
    return f"cu{parts[0]}{parts[1]}" if parts and len(parts) >= 2 else None
