"""NVML fine, CUDA broken: what the probe's ``runtime.cuda_init_error`` means and what to do.

``torch.cuda.device_count()`` counts through NVML, so a host whose ``cudaGetDeviceCount()``
fails still reports its GPUs: without this module every cuda case would be skipped (or pass on
the CPU) and the doctor would stay green. :func:`diagnose` names the CUDA error in the probe's
text (field reports F7-1..F7-4), the doctor's ``cuda_init`` check fails with it
(:mod:`repro.host.checks`), and :func:`case_error` gives every accelerator case on such a host
an ``error`` result with signature ``infra.cuda_init`` instead of a skip.

Causes, from CUDA's ``cudaError_t`` numbers and the public reports they come from:

- 802 ``cudaErrorSystemNotReady`` "system not yet initialized": Fabric Manager not running on an
  HGX/NVSwitch host (pytorch/pytorch#35710, microsoft/lisa#2823,
  aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop#33, nanoporetech/dorado#1214);
- 803 ``cudaErrorSystemDriverMismatch`` "system has unsupported display driver / cuda driver
  combination": libcuda and the kernel module differ, typically after a driver upgrade without
  a reboot (vllm-project/vllm#15335, NVIDIA/nvidia-docker#1256);
- 804 ``cudaErrorCompatNotSupportedOnDevice`` "forward compatibility was attempted on non
  supported HW" (PKU-YuanGroup/Video-LLaVA#22, gpustack/gpustack#1254);
- 46 ``cudaErrorDevicesUnavailable`` "all CUDA-capable devices are busy or unavailable": on a
  native host, a compute mode EXCLUSIVE_PROCESS (or PROHIBITED) GPU another process holds
  (NVIDIA/DIGITS#2005, pytorch/pytorch#3871).

Never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro import properties as property_names
from repro.model import Fingerprint
from repro.outcomes import CaseResult, Outcome

#: The signature of the doctor's check and of every accelerator case on such a host.
SIGNATURE = "infra.cuda_init"
#: Requirement tokens that make a case need a working accelerator (see repro.scenarios).
ACCELERATOR_TOKENS = ("accelerator", "gpus>=")


@dataclass(frozen=True)
class Cause:
    """One known CUDA initialisation failure: ``code`` (cudaError_t number), ``name``
    (``cudaErrorSystemNotReady``), what it means on a host and how to fix it, and the public
    reports it rests on."""

    code: int
    name: str
    pattern: re.Pattern[str]
    meaning: str
    fix: str
    source: str


CAUSES: tuple[Cause, ...] = (
    Cause(
        802,
        "cudaErrorSystemNotReady",
        re.compile(
            r"Error 802|\b802\b.*not yet initiali[sz]ed|cudaErrorSystemNotReady|system not yet initiali[sz]ed",
            re.I,
        ),
        "system not yet initialized: Fabric Manager is not running (HGX/NVSwitch host)",
        "install and start nvidia-fabricmanager matching the driver version "
        "(systemctl enable --now nvidia-fabricmanager)",
        "F7-1 pytorch/pytorch#35710, microsoft/lisa#2823, "
        "aws-samples/aws-deep-learning-ami-ubuntu-dcv-desktop#33, nanoporetech/dorado#1214",
    ),
    Cause(
        803,
        "cudaErrorSystemDriverMismatch",
        re.compile(
            r"Error 803|\(803 vs\. 0\)|code=803|unsupported display driver\s*/\s*cuda driver combination",
            re.I,
        ),
        "the user-space CUDA driver (libcuda) and the kernel module differ",
        "reboot after the driver upgrade so the kernel module matches the libraries "
        "(or remove a libcuda the image carries)",
        "F7-2 vllm-project/vllm#15335, NVIDIA/nvidia-docker#1256",
    ),
    Cause(
        804,
        "cudaErrorCompatNotSupportedOnDevice",
        re.compile(r"Error 804|forward compatibility was attempted on non supported HW", re.I),
        "CUDA forward compatibility libraries on a GPU that does not support them",
        "remove the cuda-compat libraries from the library path (consumer GPU) or install a "
        "driver that supports the runtime natively",
        "F7-3 PKU-YuanGroup/Video-LLaVA#22, gpustack/gpustack#1254",
    ),
    Cause(
        46,
        "cudaErrorDevicesUnavailable",
        re.compile(r"busy or unavailable|cudaErrorDevicesUnavailable|error[ =(]+46\b", re.I),
        "all CUDA-capable devices are busy or unavailable: compute mode EXCLUSIVE_PROCESS or "
        "PROHIBITED with the GPU held by another process",
        "set compute mode DEFAULT (sudo nvidia-smi -c DEFAULT) or stop the process holding the "
        "GPU (nvidia-smi -q -d COMPUTE,PIDS)",
        "F7-4 NVIDIA/DIGITS#2005, pytorch/pytorch#3871",
    ),
)

_ANY_ERROR_NUMBER = re.compile(r"(?:Error|error|code=)\s*(\d{1,4})\b")
_GENERIC_FIX = (
    "run a CUDA sample (deviceQuery) on the host and fix the driver install until it passes"
)


@dataclass(frozen=True)
class Diagnosis:
    """What a CUDA initialisation error text means: ``code`` (None when no number is in the
    text), ``cause`` (a known :class:`Cause`, else None), the ``line`` as CUDA said it."""

    line: str
    code: int | None
    cause: Cause | None

    @property
    def summary(self) -> str:
        """One line: error number, meaning and fix, e.g. "CUDA Error 802
        (cudaErrorSystemNotReady, system not yet initialized: ...): install and start ..."."""
        if self.cause is not None:
            c = self.cause
            return f"CUDA error {c.code} ({c.name}, {c.meaning}); fix: {c.fix}"
        number = f"CUDA error {self.code}" if self.code is not None else "CUDA does not initialise"
        return f"{number}: {self.line}; fix: {_GENERIC_FIX}"

    @property
    def source(self) -> str:
        return self.cause.source if self.cause else "field reports family 7 (F7-1..F7-4)"


def diagnose(text: str) -> Diagnosis:
    """The :class:`Diagnosis` of one CUDA error text (the probe's ``cuda_init_error``)."""
    line = " ".join(text.split())
    for cause in CAUSES:
        if cause.pattern.search(line):
            return Diagnosis(line, cause.code, cause)
    number = _ANY_ERROR_NUMBER.search(line)
    return Diagnosis(line, int(number.group(1)) if number else None, None)


def init_error(fp: Fingerprint) -> Diagnosis | None:
    """The fingerprint's CUDA initialisation failure, diagnosed; None when CUDA initialised (or
    the build has no accelerator, or no device was counted)."""
    text = fp.runtime.cuda_init_error
    return diagnose(text) if text else None


def needs_accelerator(requires: Sequence[str]) -> bool:
    """Whether requirement tokens ask for a working accelerator (``accelerator``, ``gpus>=N``)."""
    return any(token.startswith(ACCELERATOR_TOKENS) for token in requires)


def case_error(case: Any, fingerprint: Fingerprint) -> CaseResult | None:
    """The ``error``/``infra.cuda_init`` result for an accelerator ``case`` (a
    ``repro.scenarios.Case``: ``scenario``, ``case_id``, ``params``, ``requires``) on a host whose
    CUDA does not initialise; None when the case may run (or skip) as usual. Never a skip: a
    broken GPU host must show red, never green-by-absence."""
    if not needs_accelerator(tuple(case.requires)):
        return None
    found = init_error(fingerprint)
    if found is None:
        return None
    properties = {f"param.{key}": str(value) for key, value in case.params}
    properties[property_names.CUDA_INIT_ERROR] = found.line
    return CaseResult(
        case.scenario,
        case.case_id,
        Outcome.ERROR,
        message=f"not run: {found.summary}",
        signature=SIGNATURE,
        detail=f"CUDA does not initialise on this host: {found.line}\n{found.summary}\n"
        f"source: {found.source}\n",
        properties=properties,
    )
