"""NVML fine, CUDA broken: what the probe's ``runtime.cuda_init_error`` means and what to do.

``torch.cuda.device_count()`` counts through NVML, so a host whose ``cudaGetDeviceCount()``
fails still reports its GPUs: without this module every cuda case would be skipped (or pass on
the CPU) and the doctor would stay green. :func:`diagnose` names the CUDA error in the probe's
text (field reports F7-1..F7-4), the doctor's ``cuda_init`` check fails with it
(:mod:`repro.host.gpu_checks`), and :func:`case_error` gives every accelerator case on such a host
an ``error`` result with signature ``infra.cuda_init`` instead of a skip.

The causes are rows of the one signature table (``repro/data/signatures.yaml``, each row's
``cuda_errors``: code, meaning, fix, sources), read with the host's facts: the same text means
different causes on different hosts, and the doctor and the cases read the same row for the same
text on the same host (issue 31). "all CUDA-capable devices are busy or unavailable" (46) is an
exclusive-process GPU on a native host (``cuda_device_busy``), the WSL2 GPU bridge on WSL2
(``wsl_gpu_unavailable``); 802 (Fabric Manager) and 803 (libcuda vs kernel module) are
``cuda_init_failed``, 804 ``forward_compat_unsupported``.

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
from repro.signatures import engine, table
from repro.signatures.hostfacts import HostFacts
from repro.signatures.table import CudaError

#: The signature of the doctor's check and of every accelerator case on such a host.
SIGNATURE = "infra.cuda_init"
#: Requirement tokens that make a case need a working accelerator (see repro.scenarios).
ACCELERATOR_TOKENS = ("accelerator", "gpus>=")

#: A CUDA error number as CUDA, torch and the CUDA samples print it: "Error 802: ...",
#: "error=46 :", "code=802(cudaErrorSystemNotReady)", "cuda runtime error (46)", "returned 802".
_ANY_ERROR_NUMBER = re.compile(r"(?:\berror|\bcode|\breturned)\s*[=:(]?\s*\(?\s*(\d{1,4})\b", re.I)
_CUDA_ERROR_NAME = re.compile(r"\bcudaError[A-Za-z]+")
_GENERIC_FIX = (
    "run a CUDA sample (deviceQuery) on the host and fix the driver install until it passes"
)
_GENERIC_SOURCE = "field reports family 7 (F7-1..F7-4)"


def cause(signature: str, code: int | None) -> CudaError:
    """The table's entry for CUDA error ``code`` in row ``signature`` (e.g.
    ``cause("cuda_init_failed", 802)``). Raises KeyError when the row has no such entry."""
    for entry in table.row(signature).cuda_errors:
        if entry.code == code:
            return entry
    raise KeyError(f"signature {signature!r} has no cuda_errors entry for code {code!r}")


@dataclass(frozen=True)
class Diagnosis:
    """What a CUDA initialisation error text means on a host: ``line`` (as CUDA said it, one
    line), ``code`` (None when neither the text nor the cause gives a number), ``cause`` (the
    table's :class:`~repro.signatures.table.CudaError`, else None), ``signature`` (the table row
    the text names on this host, ``unknown`` for none)."""

    line: str
    code: int | None
    cause: CudaError | None
    signature: str = table.UNKNOWN

    @property
    def summary(self) -> str:
        """One line: error number, meaning and fix, e.g. "CUDA error 802
        (cudaErrorSystemNotReady, system not yet initialized: ...); fix: install and start ..."."""
        number = f"CUDA error {self.code}" if self.code is not None else "CUDA does not initialise"
        c = self.cause
        if c is None:
            return f"{number}: {self.line}; fix: {_GENERIC_FIX}"
        if c.name and c.code == self.code:
            return f"{number} ({c.name}, {c.meaning}); fix: {c.fix}"
        return f"{number}: {c.meaning}; fix: {c.fix}"

    @property
    def source(self) -> str:
        return self.cause.source if self.cause else _GENERIC_SOURCE


def _entry(row: table.Signature, line: str, number: int | None) -> CudaError | None:
    """The row's entry for the text: by the cudaError name in it, else by its number, else (no
    number printed) by CUDA's own message for the error, else the row's entry for any number."""
    entries = row.cuda_errors
    for name in _CUDA_ERROR_NAME.findall(line):
        for entry in entries:
            if entry.name == name:
                return entry
    for entry in entries:
        if entry.code is not None and entry.code == number:
            return entry
    if number is None:
        lowered = line.lower()
        for entry in entries:
            if entry.message and entry.message.lower() in lowered:
                return entry
    return next((e for e in entries if e.code is None), None)


def diagnose(text: str, host: HostFacts | None = None) -> Diagnosis:
    """The :class:`Diagnosis` of one CUDA error text (the probe's ``cuda_init_error``) on a host
    with facts ``host`` (None: unknown, the text's own evidence decides): the signature table
    names the row (``repro.signatures.classify``), the row's ``cuda_errors`` the cause."""
    line = " ".join(text.split())
    found = _ANY_ERROR_NUMBER.search(line)
    number = int(found.group(1)) if found else None
    name = engine.classify(line, host).name
    row = table.row(name) if name != table.UNKNOWN and table.known(name) else None
    entry = _entry(row, line, number) if row is not None else None
    code = number if number is not None else (entry.code if entry else None)
    return Diagnosis(line, code, entry, name)


def init_error(fp: Fingerprint) -> Diagnosis | None:
    """The fingerprint's CUDA initialisation failure, diagnosed with the host's facts (WSL2,
    compute modes); None when CUDA initialised (or the build has no accelerator, or no device was
    counted). The doctor's check and :func:`case_error` both call this: one verdict per host."""
    text = fp.runtime.cuda_init_error
    return diagnose(text, HostFacts.from_fingerprint(fp)) if text else None


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
