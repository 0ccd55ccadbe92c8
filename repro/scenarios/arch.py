"""``arch``: does this torch build carry code for this device? Compute capability (or ROCm gfx
target) against ``torch.cuda.get_arch_list()``, then a trivial kernel.

Failure family: the cross-cutting environment failures of ../shared/field-reports.md -
``no kernel image is available for execution on the device`` after the warning ``... with CUDA
capability sm_120 is not compatible with the current PyTorch installation`` (RTX 5090 with a
<= sm_90 wheel: pytorch/pytorch#150733, #167244, HybridRobotics/berkeley-humanoid-lite#49;
GTX 1080 Ti sm_61 with a cu128 wheel: mmartial/ComfyUI-Nvidia-Docker#61; sm_86 with cu10x
builds: pytorch/pytorch#45028), its ROCm twin ``hipErrorNoBinaryForGpu`` / ``HIP error: invalid
device function`` (pytorch/pytorch#73534, #164346), and F3-2 (an arch-unsupported build can show
up as ``CUDNN_STATUS_EXECUTION_FAILED`` instead, so every result records arch vs arch list).

``device=cuda``: the capability (or gfx target) and arch list are compared by
:func:`repro.compat.match_arch`, the one implementation the compatibility predictions use too:
cubins per torch's ``DEVICE_REQUIREMENT`` table (torch/cuda/__init__.py, shipped as
``device_code_compat`` in repro/data/compat-facts.yaml, a copy of
../shared/compat/compat-facts.yaml), plus PTX: a ``compute_XY`` entry can be JIT-compiled for any
device of capability >= X.Y. Then the first CUDA use and a trivial kernel run under
``warnings.catch_warnings(record=True)``. The "not compatible" warning or a "no kernel image"
error fail the case with signature ``no_kernel_image`` (``rocm_no_code_object`` on ROCm).

``device=cpu``: checks that the build describes itself consistently (``torch.__config__.show()``
build settings vs ``torch.version.cuda``/``hip``, the compiled arch list, cuDNN availability, the
CPU capability) and records it. It runs no GPU code and says nothing about a GPU.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence

from repro.compat import match_arch

PARAMS = {"device": ["cpu", "cuda"]}
TIMEOUT_S = 120.0

#: Warning texts torch prints at CUDA initialisation when the wheel lacks code for the GPU.
CAPABILITY_WARNING = re.compile(
    r"is not compatible with the current PyTorch installation"
    r"|Minimum and Maximum cuda capability supported by this version of PyTorch"
    r"|does not include kernels for this GPU"
    r"|No published PyTorch CUDA builds for release"
)
NO_KERNEL_ERROR = re.compile(r"no kernel image is available for execution on the device")
ROCM_NO_CODE_ERROR = re.compile(r"hipErrorNoBinaryForGpu|HIP error: invalid device function")


def build_flags(config_text: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs of the ``Build settings:`` line of ``torch.__config__.show()``."""
    for line in config_text.splitlines():
        if "Build settings:" in line:
            settings = line.split("Build settings:", 1)[1]
            return dict(re.findall(r"([A-Z_][A-Z0-9_]*)=([^,]*)", settings))
    return {}


def _on(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "TRUE", "YES"}


def build_consistency(
    config_text: str,
    cuda_version: str | None,
    hip_version: str | None,
    arch_list: Sequence[str],
    cudnn_available: bool,
    cpu_capability: str | None = None,
) -> list[str]:
    """Contradictions in how a torch build describes itself (empty list = consistent).

    Inputs are ``torch.__config__.show()``, ``torch.version.cuda``, ``torch.version.hip``,
    ``torch.cuda.get_arch_list()``, ``torch.backends.cudnn.is_available()`` and
    ``torch.backends.cpu.get_cpu_capability()``. Pure: no torch.
    """
    problems = []
    flags = build_flags(config_text)
    if not flags:
        return ["torch.__config__.show() has no 'Build settings' line"]
    accel_build = cuda_version is not None or hip_version is not None
    if "USE_CUDA" in flags and _on(flags["USE_CUDA"]) != (cuda_version is not None):
        problems.append(
            f"build settings say USE_CUDA={flags['USE_CUDA']} but torch.version.cuda is {cuda_version!r}"
        )
    if "USE_ROCM" in flags and _on(flags["USE_ROCM"]) != (hip_version is not None):
        problems.append(
            f"build settings say USE_ROCM={flags['USE_ROCM']} but torch.version.hip is {hip_version!r}"
        )
    if accel_build and not arch_list:
        problems.append("an accelerator build with an empty arch list (no device code at all)")
    if not accel_build and arch_list:
        problems.append(f"a CPU-only build that lists device architectures: {' '.join(arch_list)}")
    if cudnn_available and not _on(flags.get("USE_CUDNN")) and hip_version is None:
        problems.append(
            f"cuDNN is available but build settings say USE_CUDNN={flags.get('USE_CUDNN')}"
        )
    if cuda_version is not None and _on(flags.get("USE_CUDNN")) and not cudnn_available:
        problems.append(
            "built with cuDNN (USE_CUDNN=ON) but torch.backends.cudnn.is_available() is False"
        )
    usage = re.search(r"CPU capability usage: ([^\n]+)", config_text)
    if cpu_capability and usage:
        configured = usage.group(1).strip()
        configured = "DEFAULT" if configured == "NO AVX" else configured  # same capability
        if configured != cpu_capability:
            problems.append(
                f"config says CPU capability {configured}, runtime reports {cpu_capability}"
            )
    return problems


def requires(params) -> list[str]:
    return ["accelerator"] if params["device"] == "cuda" else []


def run(ctx, params) -> None:
    import torch

    arch_list = torch.cuda.get_arch_list()
    ctx.property("arch_list", " ".join(arch_list) or "(empty)")
    ctx.property("torch_cuda", torch.version.cuda)
    ctx.property("torch_hip", torch.version.hip)
    if params["device"] == "cpu":
        _run_cpu(ctx, torch, arch_list)
    else:
        _run_accelerator(ctx, torch, arch_list)


def _run_cpu(ctx, torch, arch_list: list[str]) -> None:
    ctx.heartbeat("build_info")
    config = torch.__config__.show()
    first = next((line.strip() for line in config.splitlines() if line.strip()), "")
    ctx.property("config_first_line", first)
    flags = build_flags(config)
    for key in ("USE_CUDA", "USE_ROCM", "USE_CUDNN", "USE_NCCL", "TORCH_VERSION"):
        ctx.property(f"build.{key}", flags.get(key, "(absent)"))
    capability = torch.backends.cpu.get_cpu_capability()
    ctx.property("cpu_capability", capability)
    problems = build_consistency(
        config, torch.version.cuda, torch.version.hip, arch_list,
        torch.backends.cudnn.is_available(), capability,
    )  # fmt: skip
    kind = "ROCm" if torch.version.hip else ("CUDA" if torch.version.cuda else "CPU-only")
    ctx.log(
        f"{kind} build, arch list: {' '.join(arch_list) or '(empty)'}, CPU capability {capability}"
    )
    if problems:
        ctx.fail("torch build info is inconsistent: " + "; ".join(problems))
    # The CPU runs code of the capability torch chose; a trivial op proves the kernels load.
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    assert float((x @ x.T).trace()) == float((x * x).sum()), (
        "a trivial CPU kernel gave a wrong result"
    )


def _run_accelerator(ctx, torch, arch_list: list[str]) -> None:
    rocm = torch.version.hip is not None
    signature = "rocm_no_code_object" if rocm else "no_kernel_image"
    ctx.heartbeat("cuda_init")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # First CUDA use: torch's lazy init runs its capability checks here (and warns).
            props = torch.cuda.get_device_properties(0)
            device_key = props.gcnArchName if rocm else (props.major, props.minor)
            ctx.heartbeat("kernel")
            x = torch.arange(1024, device="cuda", dtype=torch.float32)
            y = (x * 2 + 1).sum()
            torch.cuda.synchronize()
            value = float(y)
        except RuntimeError as exc:  # incl. torch.AcceleratorError (>= 2.8)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if NO_KERNEL_ERROR.search(str(exc)) or ROCM_NO_CODE_ERROR.search(str(exc)):
                ctx.fail(f"{first} (arch list: {' '.join(arch_list)})", signature=signature)
            raise
    texts = [str(w.message) for w in caught]
    for text in texts:
        print(f"warning at CUDA init: {text}", flush=True)
    name = torch.cuda.get_device_name(0)
    ctx.property("device_name", name)
    ctx.property("device_arch", device_key if rocm else f"sm_{device_key[0]}{device_key[1]}")
    if rocm:
        override = os.environ.get("HSA_OVERRIDE_GFX_VERSION")
        ctx.property("hsa_override_gfx_version", override or "(unset)")
    verdict = match_arch(device_key, arch_list)
    ctx.property("arch_verdict", "ok" if verdict.ok else "no_code")
    ctx.property("arch_via", verdict.via or "none")
    ctx.log(f"{name}: {verdict.reason}")
    warned = [text for text in texts if CAPABILITY_WARNING.search(text)]
    if warned:
        ctx.fail(
            f"torch warned at CUDA init: {warned[0].strip().splitlines()[0]}", signature=signature
        )
    expected = float(sum(2 * i + 1 for i in range(1024)))
    assert value == expected, f"trivial kernel returned {value}, expected {expected}"
    if not verdict.ok:
        # The kernel ran although the arch table says it cannot: record it, trust the device.
        ctx.property("arch_verdict_mismatch", 1)
        ctx.log(f"arch table predicted no code ({verdict.reason}) but the kernel ran")
