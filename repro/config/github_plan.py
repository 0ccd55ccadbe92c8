"""The GitHub Actions job matrix for the fleet: ``repro plan --github --tier NAME``.

One job per (variant, runner kind): a CUDA variant runs on the ``cuda`` runners and, where
matrix.yaml names ``cuda-wsl2`` runners, again inside WSL2 on a Windows runner; a ROCm variant on
``rocm``; a CPU variant on ``cpu``. A kind without a ``runners:`` entry gets no jobs. Each job says
where it runs (``runs-on``: the kind's labels), how (``shell``: ``bash``, or ``wsl`` for a Windows
runner that runs the same job script inside its WSL2 distribution), what (``command``: the
``repro docker-run`` call with the tier's scenario selectors) and for how long at most
(``timeout-minutes``: the sum of the job's case timeouts, the container's own margin, an image
build allowance and set-up time, so it is always above the cases' own timeouts).

Tiers come from matrix.yaml's ``tiers:`` (:mod:`repro.config.tiers`); without ``--tier`` every
variant and enabled scenario is planned. The
output is ``{"include": [job, ...]}``, ready for ``strategy.matrix: ${{ fromJSON(...) }}``.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from repro.config.model import Matrix
from repro.config.tiers import Tier
from repro.errors import ConfigError

#: Runner kinds that run a variant of each accelerator, in job order.
KINDS_BY_ACCELERATOR: Mapping[str, tuple[str, ...]] = {
    "cuda": ("cuda", "cuda-wsl2"),
    "rocm": ("rocm",),
    "cpu": ("cpu",),
}
#: Kinds whose runner is a Windows machine running the job inside WSL2.
WSL_KINDS = frozenset({"cuda-wsl2"})
#: The WSL2 distribution a Windows runner uses unless its REPRO_WSL_DISTRO says otherwise.
DEFAULT_WSL_DISTRO = "Ubuntu-24.04"
#: Seconds `repro docker-run` adds to the sum of case timeouts for its container (start, probe).
CONTAINER_MARGIN_S = 180.0
#: Seconds allowed for building a variant's image on a cold runner (base image, torch wheels).
BUILD_ALLOWANCE_S = 45 * 60.0
#: Seconds for checkout, the job's venv and `repro doctor`.
SETUP_ALLOWANCE_S = 10 * 60.0
#: GitHub's ceiling for a self-hosted runner's job (72 h); a job planned above it is an error.
MAX_JOB_MINUTES = 72 * 60
RESULTS_DIR = "results"


def job_timeout_minutes(case_timeouts_s: Iterable[float]) -> int:
    """The job's ``timeout-minutes``: cases + container margin + build + set-up, rounded up.

    Always strictly above ``sum(case_timeouts_s) / 60``. Raises ConfigError past GitHub's
    72-hour ceiling for self-hosted jobs (split the variant's scenarios across tiers then)."""
    total_s = sum(case_timeouts_s) + CONTAINER_MARGIN_S + BUILD_ALLOWANCE_S + SETUP_ALLOWANCE_S
    minutes = math.ceil(total_s / 60.0)
    if minutes > MAX_JOB_MINUTES:
        raise ConfigError(
            f"a job needs {minutes} minutes, above GitHub's 72-hour ({MAX_JOB_MINUTES}-minute) limit for self-hosted jobs",
            hint="give the tier fewer scenarios or lower their timeout_s",
        )
    return minutes


def selectors(scenarios: Sequence[str]) -> list[str]:
    """``-k`` arguments that select every case of the named scenarios (ids ``name`` or ``name[...]``)."""
    args: list[str] = []
    for name in scenarios:
        args += ["-k", name, "-k", f"{name}[*"]
    return args


def job_command(variant_id: str, scenarios: Sequence[str]) -> str:
    """The shell command a job runs (quoted for ``bash -c``)."""
    argv = ["repro", "docker-run", "--variant", variant_id, "--results-dir", RESULTS_DIR]
    return shlex.join(argv + selectors(scenarios))


def plan_jobs(
    variants: Sequence[Any],
    cases_of: Mapping[str, Sequence[Any]],
    runners: Mapping[str, Sequence[str]],
    tier: Tier,
) -> dict[str, list[dict[str, Any]]]:
    """The job matrix of one tier.

    Args:
        variants: the tier's variants (objects with ``id`` and ``accelerator``), in matrix order.
        cases_of: variant id -> the cases that variant runs in this tier (objects with
            ``timeout_s`` in seconds, already scaled).
        runners: matrix.yaml's ``runners:`` (kind -> labels).
        tier: the tier (its scenario names go into the command).

    Returns ``{"include": [...]}``: each job has ``name`` (stable: ``<variant> · <kind>``),
    ``variant``, ``kind``, ``runs-on`` (labels), ``shell`` (``bash``/``wsl``), ``wsl-distro``,
    ``command``, ``timeout-minutes`` and ``cases`` (count). Raises ConfigError when no job results.
    """
    include = []
    for variant in variants:
        timeouts = [float(case.timeout_s) for case in cases_of.get(variant.id, ())]
        if not timeouts:
            continue
        for kind in KINDS_BY_ACCELERATOR.get(variant.accelerator, ()):
            labels = runners.get(kind)
            if not labels:
                continue
            include.append(
                {
                    "name": f"{variant.id} · {kind}",
                    "variant": variant.id,
                    "kind": kind,
                    "runs-on": list(labels),
                    "shell": "wsl" if kind in WSL_KINDS else "bash",
                    "wsl-distro": DEFAULT_WSL_DISTRO if kind in WSL_KINDS else "",
                    "command": job_command(variant.id, tier.scenarios),
                    "timeout-minutes": job_timeout_minutes(timeouts),
                    "cases": len(timeouts),
                }
            )
    if not include:
        raise ConfigError(
            f"tier {tier.name!r}: no jobs (no variant of the tier has both cases and a runners: entry)"
        )
    return {"include": include}


def plan_github(
    matrix: Matrix, tier_name: str | None, selectors: Sequence[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The job matrix for ``tier_name`` (None: every variant and enabled scenario), narrowed by
    variant id ``selectors``. Raises ConfigError for an unknown tier, a selector matching none
    of the tier's variants, or a plan without jobs."""
    tier = Tier("all", ("*",)) if tier_name is None else matrix.tier(tier_name)
    variants = matrix.select_variants(list(tier.variants))
    if selectors:
        wanted = {v.id for v in matrix.select_variants(list(selectors))}
        variants = [v for v in variants if v.id in wanted]
        if not variants:
            raise ConfigError(
                f"--variant {' '.join(selectors)}: matches no variant of tier {tier.name!r}"
            )
    cases = matrix.cases()
    if tier.scenarios:
        cases = [c for c in cases if c.scenario in set(tier.scenarios)]
    # Every variant runs the same cases (a case that cannot run there skips with its reason).
    cases_of = {v.id: cases for v in variants}
    return plan_jobs(variants, cases_of, matrix.runners, tier)
