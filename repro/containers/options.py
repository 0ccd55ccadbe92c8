"""``repro docker-run``'s options, resolved once (issue 31, item 3): the command line,
``REPRO_*`` and matrix.yaml become one :class:`ResolvedDockerRun` (``repro.cli.resolve``),
passed down whole to the job (``repro.containers.job``) and the run spec
(``repro.containers.spec``); nothing below the command line copies a field of it.

The shape follows cibuildwheel's ``Options``/``BuildOptions``: settings of the whole command,
and one :class:`VariantRun` per selected variant (its build settings and its container limits).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.config import DEFAULT_FILE
from repro.config.limits import ContainerLimits
from repro.containers.build_settings import BuildSettings
from repro.model import Variant


@dataclass(frozen=True)
class VariantRun:
    """One selected variant's part of the options: its effective build settings (matrix.yaml
    under ``--base-image``/``$REPRO_BASE_IMAGE`` and the other overrides) and its container's
    limits (``--shm-size``/``--ipc``/``--user`` over matrix.yaml over the defaults of
    :mod:`repro.config.limits`)."""

    settings: BuildSettings
    limits: ContainerLimits

    @property
    def variant(self) -> Variant:
        """The variant as built (overrides applied)."""
        return self.settings.variant


@dataclass(frozen=True)
class ResolvedDockerRun:
    """What ``repro docker-run`` was asked to do, every layer applied.

    Fields carry the flag table's names (``repro.cli.options``). Paths are host paths:
    ``config`` matrix.yaml; ``results_dir`` the results root (``--results-dir`` > matrix.yaml's
    ``defaults.results_dir``), absolute. ``patterns``: the ``-k`` selectors, passed to the run
    inside. ``timeout``: hard limit of each whole container in seconds (None: the sum of the
    case timeouts scaled by ``scale``, plus a margin). ``timeout_scale``: the command line's
    (passed to the run inside; None there means matrix.yaml's); ``scale``: the effective one
    (``--timeout-scale`` > matrix.yaml's ``defaults.timeout_scale``). ``network``: ``none`` or a
    Docker network. ``gpus``: ``all``, indices, UUIDs or CDI names, ``none``; ``gpu_mode``
    ``auto | toolkit | cdi | wsl``. ``builder``: ``repro.containers.builder.BUILDERS``
    (``--builder`` > ``$REPRO_BUILDER`` > auto). ``output_dir``: refresh the matrix there
    afterwards. ``variants``: one :class:`VariantRun` per selected variant, in order.
    ``rerun_failures``, ``rounds``, ``jobs``: ``repro run``'s options of those names, passed to
    the run inside (``repro.runner.job.ResolvedRun``); they also widen the default ``timeout``
    (:func:`repro.containers.job.container_timeout`).
    """

    config: Path = Path(DEFAULT_FILE)
    results_dir: Path = Path("results")
    patterns: tuple[str, ...] = ()
    timeout: float | None = None
    timeout_scale: float | None = None
    scale: float = 1.0
    network: str = "none"
    gpus: str = "all"
    gpu_mode: str = "auto"
    keep_container: bool = False
    dry_run: bool = False
    no_build: bool = False
    builder: str = "auto"
    shell: bool = False
    output_dir: str | None = None
    variants: tuple[VariantRun, ...] = ()
    rerun_failures: int = 0
    rounds: int = 1
    jobs: int | None = None

    @property
    def attempts(self) -> int:
        """The most times the run inside starts one case: each case is either red (its first
        try and up to ``rerun_failures`` reruns) or passed and measured (``rounds`` rounds)."""
        return max(self.rounds, 1 + self.rerun_failures)
