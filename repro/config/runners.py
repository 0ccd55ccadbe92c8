"""matrix.yaml ``runners:``: host kind -> runner labels, and the GPU count a runner should have.

Each entry is either a list of labels (``cuda: [self-hosted, linux, gpu, nvidia]``) or a mapping
``{labels: [...], gpus: N}``; ``gpus`` (optional, 1 to 1024) is the number of GPUs one runner of
that kind is given, which ``repro doctor`` checks against the GPUs the job really uses
(``repro.host.gpu_checks.gpu_count_check``: two of eight by ``CUDA_VISIBLE_DEVICES``, a MIG
instance, ...). :func:`expected_gpus` names the kind for a variant on a host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from repro import bounds

#: Keys of the mapping form of a runner entry.
ENTRY_KEYS = ("labels", "gpus")
MAX_LABEL = 200


class Problems(Protocol):
    """``repro.config.load``'s problem collector (``add(key, expected, got)``)."""

    def add(self, key: str, expected: str, got: Any = ...) -> None: ...


def _labels_ok(labels: Any) -> bool:
    return (
        isinstance(labels, list)
        and bool(labels)
        and all(isinstance(x, str) and x.isprintable() and len(x) <= MAX_LABEL for x in labels)
    )


def parse_runners(
    raw: Any, problems: Problems
) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    """``(kind -> labels, kind -> expected GPU count)`` from the ``runners:`` value; every
    problem is added to ``problems`` as ``runners.KIND[.KEY]: expected ...``."""
    if not isinstance(raw, dict):
        problems.add("runners", "a mapping of host kind to a list of runner labels", raw)
        return {}, {}
    labels_by_kind: dict[str, tuple[str, ...]] = {}
    gpus_by_kind: dict[str, int] = {}
    for kind, entry in raw.items():
        where = f"runners.{str(kind)[:80]!s}"
        if isinstance(entry, dict):
            unknown = [k for k in entry if k not in ENTRY_KEYS]
            if unknown:
                problems.add(f"{where}.{str(unknown[0])[:80]}", "one of the keys labels, gpus")
                continue
            labels, gpus = entry.get("labels"), entry.get("gpus")
            if gpus is not None and not bounds.RUNNER_GPUS.ok(gpus):
                problems.add(f"{where}.gpus", bounds.RUNNER_GPUS.expected, gpus)
                continue
            if gpus is not None:
                gpus_by_kind[str(kind)] = gpus
            where += ".labels"
        else:
            labels = entry
        if not _labels_ok(labels):
            problems.add(where, "a non-empty list of runner label strings", labels)
            continue
        labels_by_kind[str(kind)] = tuple(labels)
    return labels_by_kind, gpus_by_kind


def runner_kind(accelerator: str, wsl2: bool) -> str:
    """The ``runners:`` kind a variant of ``accelerator`` runs on: ``cuda``, ``cuda-wsl2``,
    ``rocm``, ``cpu`` (the kinds ``repro plan --github`` emits)."""
    if accelerator == "cuda" and wsl2:
        return "cuda-wsl2"
    return accelerator if accelerator in ("cuda", "rocm") else "cpu"


def expected_gpus(runner_gpus: Mapping[str, int], accelerator: str, wsl2: bool) -> int | None:
    """The GPU count matrix.yaml names for the runner kind of this variant and host, or None."""
    return runner_gpus.get(runner_kind(accelerator, wsl2))
