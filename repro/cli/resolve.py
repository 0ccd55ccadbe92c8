"""The one resolve step of each command's options (issue 31, item 3), next to the flag table
(:mod:`repro.cli.options`): the parsed command line, ``REPRO_*`` and matrix.yaml become one
frozen, typed options object per command, which the command passes down whole.

Precedence, everywhere: the flag > its ``REPRO_*`` variable > matrix.yaml > the default.
Where each layer is applied:

- a flag with an environment default (``--builder``/``$REPRO_BUILDER``,
  ``--image-repo``/``$REPRO_IMAGE_REPO``) gets it from the flag table
  (:meth:`repro.cli.options.Option.kwargs`);
- the image overrides (``--base-image``, ``--index-url``, ``--wheelhouse``, ``--image-python``
  over ``$REPRO_BASE_IMAGE``, ``$REPRO_INDEX_URL``, ``$REPRO_WHEELHOUSE``, ``$REPRO_PYTHON``
  over matrix.yaml) in :meth:`repro.config.Overrides.collect` and ``settings_for``;
- ``--results-dir`` and ``--timeout-scale`` over matrix.yaml's ``defaults``, and the container
  limits (``--shm-size``/``--ipc``/``--user`` over the variant's ``shm_size``/``mem_limit``/
  ``pids_limit`` over :mod:`repro.config.limits`' defaults) here, for ``docker-run``; ``repro
  run`` applies matrix.yaml's ``results_dir`` and ``timeout_scale`` where it loads the file
  (``repro.runner.job``), as the run inside a container needs.

A field of an options object that has a flag carries the flag's ``dest`` name, so it is read
from the parse result by name (:func:`_by_name`), never copied field by field; only the values
derived from several layers are computed here. Errors: ConfigError (exit 2) naming the flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Any, TypeVar

from repro import bounds
from repro import config as matrix_mod
from repro.config import limits as container_limits
from repro.containers import build_settings
from repro.containers import job as container_job
from repro.containers import spec as container_spec
from repro.containers.options import ResolvedDockerRun, VariantRun
from repro.errors import ConfigError
from repro.runner.caselog import MIN_CAP_BYTES
from repro.runner.job import ResolvedRun

_MIB = 1024 * 1024
_T = TypeVar("_T")


def _by_name(cls: type[_T], args: argparse.Namespace, **derived: Any) -> _T:
    """``cls`` from the parse result: each field named like a flag's ``dest`` takes its value,
    ``derived`` gives the rest (and wins)."""
    given = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name not in derived and hasattr(args, f.name)
    }
    return cls(**given, **derived)


# ---------------------------------------------------------------------------------------------
# repro run


def run(args: argparse.Namespace) -> ResolvedRun:
    """``repro run``'s options; ConfigError for a ``--log-cap-mib``, ``--rerun-failures``,
    ``--rounds`` or ``-j`` out of range (``repro.bounds``)."""
    cap = bounds.log_cap_mib(MIN_CAP_BYTES).check(args.log_cap_mib, "--log-cap-mib")
    bounds.RERUNS.check(args.rerun_failures, "--rerun-failures")
    bounds.ROUNDS.check(args.rounds, "--rounds")
    if args.jobs is not None:
        bounds.JOBS.check(args.jobs, "-j/--jobs")
    return _by_name(ResolvedRun, args, doctor=not args.no_doctor, log_cap_bytes=int(cap * _MIB))


# ---------------------------------------------------------------------------------------------
# repro build / wheelhouse / docker-run: the image overrides


def source(args: argparse.Namespace) -> Path | None:
    """``--source DIR`` checked to be a repro-matrix checkout (ConfigError), or None."""
    given = getattr(args, "source", None)
    if given and not (Path(given) / "repro" / "__init__.py").is_file():
        raise ConfigError(f"--source {given}: not a repro-matrix checkout (no repro/__init__.py)")
    return Path(given) if given else None


def overrides(args: argparse.Namespace) -> matrix_mod.Overrides:
    """The image overrides: each flag over its ``REPRO_*`` variable
    (:meth:`repro.config.Overrides.collect`); matrix.yaml's value stays where neither is set."""
    cli = {name: getattr(args, name, None) for name in matrix_mod.OVERRIDE_ENV}
    cli["python"] = getattr(args, "image_python", None)  # --image-python X.Y
    return matrix_mod.Overrides.collect(cli)


def check_docker_run_numbers(args: argparse.Namespace) -> None:
    """Every number of ``repro docker-run``'s command line in range before use (ConfigError,
    exit 2): ``--timeout``, ``--timeout-scale``, ``--shm-size`` (a Docker size, as matrix.yaml's
    ``shm_size``), the indices of ``--gpus`` (``0,1``; a MIG device ``0:1``) and the ids of
    ``--user``. Names (a CDI device, a GPU UUID, a user name) go to Docker as they are."""
    if args.timeout is not None:
        bounds.CONTAINER_SECONDS.check(args.timeout, "--timeout")
    if args.timeout_scale is not None:
        bounds.TIMEOUT_SCALE.check(args.timeout_scale, "--timeout-scale")
    if args.shm_size is not None and not matrix_mod.size_ok(args.shm_size):
        raise ConfigError(f"--shm-size: expected {matrix_mod.SIZE_EXPECTED}, got {args.shm_size!r}")
    for item in (args.gpus or "").split(","):
        for part in item.strip().split(":"):
            if part.isascii() and part.isdigit():
                bounds.decimal(part, bounds.GPU_INDEX, "--gpus")
    for part in (args.user or "").split(":"):
        if part.isascii() and part.isdigit():
            bounds.decimal(part, bounds.USER_ID, "--user")


def docker_run(
    args: argparse.Namespace,
    config: matrix_mod.Matrix,
    variants: list[matrix_mod.Variant],
) -> ResolvedDockerRun:
    """``repro docker-run``'s options for the selected ``variants`` of ``config`` (matrix.yaml,
    loaded): each variant's build settings and container limits, the results root and the
    timeout scale. Raises ConfigError for a bad override, a results or config folder a bind
    mount cannot carry, or a variant whose memory limit leaves no room beside /dev/shm."""
    the_overrides = overrides(args)
    checkout = source(args)
    results = Path(args.results_dir or config.results_dir).resolve()
    container_spec.check_mount_source(results, "results directory")
    container_spec.check_mount_source(Path(args.config).resolve().parent, "matrix file's folder")
    user = args.user or container_job.container_user(os.getuid(), os.getgid())
    host_bytes = container_job.host_memory_bytes()
    parts = []
    for variant in variants:
        settings = build_settings.settings_for(variant, the_overrides, args.image_repo, checkout)
        limits = container_limits.resolve(
            settings.variant, shm_size=args.shm_size, ipc=args.ipc, user=user, host_bytes=host_bytes
        )
        parts.append(VariantRun(settings, limits))
    return _by_name(
        ResolvedDockerRun,
        args,
        config=Path(args.config),
        results_dir=results,
        patterns=tuple(args.patterns or ()),
        scale=args.timeout_scale or config.timeout_scale,
        variants=tuple(parts),
    )
