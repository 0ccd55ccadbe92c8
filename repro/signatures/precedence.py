"""Precedence: the tier of each row kind, the names the demotion rules refer to, and the table's
output rows compiled for a kind of host (only the rows and lines whose host condition holds).

The rules are listed in :mod:`repro.signatures.engine`'s docstring; ``_Scanner._tier``
(:mod:`repro.signatures.scanner`) applies them with these tiers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from repro.signatures import prefilter
from repro.signatures.hostfacts import HostFacts
from repro.signatures.table import (
    ENVIRONMENT,
    EVIDENCE,
    ROOT,
    SECONDARY,
    SIGNATURES,
    WARNING,
    WRAPPER,
    Signature,
    Table,
)

# Names the precedence rules refer to.
_CUDA_ASYNC = frozenset({"cuda_illegal_instruction", "cuda_illegal_memory_access"})
_POISONERS = frozenset(
    {"cudnn_execution_failed", "cudnn_internal_error", "cudnn_no_engine", "nan_detected"}
)


@dataclass(frozen=True)
class _Compiled:
    """A table's output rows as matched on one kind of host: per row, the pattern of its lines
    whose host condition holds (``None``: the row is inactive there) and that pattern's needles."""

    table: Table
    rows: tuple[Signature, ...]
    patterns: tuple[re.Pattern[str] | None, ...]
    needles: tuple[tuple[str, ...] | None, ...]
    nan_index: int | None


_COMPILED: dict[tuple[int, HostFacts], _Compiled] = {}


def _compile_for(table: Table, facts: HostFacts) -> _Compiled:
    key = (id(table), facts)
    found = _COMPILED.get(key)
    if found is not None and found.table is table:
        return found
    patterns: list[re.Pattern[str] | None] = []
    for sig in table.patterns:
        lines = [line.pattern for line in sig.lines if facts.applies(line.when)]
        if not facts.applies(sig.when) or not lines:
            patterns.append(None)
        elif len(lines) == len(sig.lines):
            patterns.append(sig.pattern)
        else:
            patterns.append(re.compile("|".join(lines)))
    names = [sig.name for sig in table.patterns]
    compiled = _Compiled(
        table,
        table.patterns,
        tuple(patterns),
        tuple(None if p is None else prefilter.needles(p) for p in patterns),
        names.index("nan_detected") if "nan_detected" in names else None,
    )
    if len(_COMPILED) > 64:  # users' tables come and go (tests); the shipped ones stay few
        _COMPILED.clear()
    _COMPILED[key] = compiled
    return compiled


_NEEDLES: tuple[tuple[str, ...] | None, ...] = tuple(
    prefilter.needles(sig.pattern) for sig in SIGNATURES
)

_TIER_BY_KIND = {ENVIRONMENT: 0, ROOT: 2, SECONDARY: 3, WRAPPER: 4, WARNING: 5, EVIDENCE: 5}
_TIER_DEMOTED_ENVIRONMENT = 1
_TIER_WEAK = 5
#: How far after the deciding line a more specific row still belongs to the same error report
#: (a wrapped message, an exception and its cause on the next lines: rule 2b).
_SAME_REPORT_LINES = 5
#: Rows whose line reports an error code or a generic failure whose cause a more specific row
#: reads on the next lines (rule 2b); any other deciding row keeps "the earliest error is the
#: cause" (a CUDA error cascade names its first error).
_GENERAL_REPORTS = frozenset({"nccl_init_failure", "cuda_unavailable_host_unknown"})
#: Rows whose line only announces an exception whose message follows on the next lines (rule 2c,
#: issue 30, round five): "terminate called after throwing an instance of 'X'" then "what():
#: MSG". A row that reads MSG within :data:`_SAME_REPORT_LINES` lines, at the same tier, names the
#: report whatever its family: c10::DistBackendError's "what(): ... Watchdog caught collective
#: operation timeout" is nccl_timeout (sgl-project/sglang#1693, NVIDIA/Megatron-LM#935,
#: arrival-ltd/catalyst-rl-tutorial#15, instructlab/training#520, huggingface/open-r1#620).
_ANNOUNCING_REPORTS = frozenset({"cpp_terminate"})
#: Rule 2d (issue 30, round eight): the "what():" line of an announcing report (rule 2c) that
#: carries a GPU runtime's error. When no row reads that message, the error it names is the
#: failure and the C++ abort only reports it, as rule 4b says of an unnamed Python exception
#: before "terminate called": unknown, the what() line deciding. First-sight records of the
#: studied sets: cpp_terminate was named 3 times and wrong 3 times, twice over an unnamed CUDA
#: error in its what() (facebookresearch/DeepSDF#40, test5: "what():  CUDA error: unspecified
#: launch failure"; pytorch/pytorch#2567, test6: "what():  cuda runtime error (4) : unspecified
#: launch failure"), once over a watchdog timeout a row reads (rule 2c).
_WHAT_GPU_ERROR = re.compile(
    r"(?im)^[ \t]*what\(\):[ \t]*(?:\[[^\]\n]*\][ \t]*)?"
    r"(?:(?:CUDA|HIP|NCCL|cuDNN|cuBLAS|CUDA driver) error\b|cuda runtime error\b|CUDNN_STATUS_"
    r"|CUBLAS_STATUS_|HIPBLAS_STATUS_|rocBLAS error|hipErrorNo|cudaError\w)[^\n]*"
)
