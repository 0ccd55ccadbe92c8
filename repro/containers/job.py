"""The ``repro docker-run`` job: pre-flight, image, host fingerprint, parity probe, the run
container with its limits, and the report afterwards.

:func:`docker_run` runs the selected variants in turn; each gets a fresh ``results/<run-id>``
created on the host, and that directory is the container's only writable mount (a case cannot
touch earlier runs). The container runs with a pids limit and a memory limit (from the
variant's ``pids_limit``/``mem_limit``, else the defaults of :mod:`repro.config.limits`,
resolved once per variant into a ``ContainerLimits``), as an unprivileged user (:func:`container_user`), never privileged,
without network unless asked. Progress goes through an :class:`Output` the CLI provides; errors
are ``ConfigError`` / ``FatalError``. ``--dry-run`` needs neither the Docker SDK nor a daemon.

A variant whose container cannot start (its CUDA runtime needs a newer driver than the host's,
checked before anything is built; or docker refuses the parity probe or the run container) gets
a red cell, not a missing one: its run directory holds one ``error`` case naming why
(:mod:`repro.containers.start_failure`), and the job goes on with the next variant and exits
non-zero at the end. Never imports torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from repro import config as matrix_mod
from repro import properties as property_names
from repro.config import scripts as script_entries
from repro.containers import build_settings, images, start_failure
from repro.containers import spec as container_mod
from repro.containers.options import ResolvedDockerRun, VariantRun
from repro.errors import EXIT_CASES_FAILED, EXIT_FATAL, EXIT_OK, ConfigError, FatalError, ReproError
from repro.host import hostkind as host_mod
from repro.host import selection as gpu_selection
from repro.model import Fingerprint

#: Seconds added to the sum of the case timeouts for the container's hard timeout (start-up,
#: the in-container fingerprint, stack dumps).
TIMEOUT_MARGIN_S = 180.0


class Output(Protocol):
    """Where the job reports progress (the CLI prints it to stderr)."""

    def line(self, text: str) -> None:
        """One progress or warning line."""

    def command(self, text: str) -> None:
        """A command line to copy and paste."""

    def settings(self, settings: build_settings.BuildSettings) -> None:
        """The effective build settings of one variant."""


# ---------------------------------------------------------------------------------------------
# limits and user


def host_memory_bytes() -> int | None:
    """Physical memory of this machine in bytes (``sysconf``), or None where unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def container_user(uid: int, gid: int) -> str:
    """``UID:GID`` the container runs as: the caller's own ids so the results are theirs,
    except for root, which gets the image's unprivileged user (``images.USER_UID``) instead of
    0:0; device access comes from ``group_add`` (ROCm's video/render groups)."""
    if uid == 0:
        return f"{images.USER_UID}:{images.USER_UID}"
    return f"{uid}:{gid}"


def container_timeout(cases: Sequence[Any], scale: float, attempts: int = 1) -> float:
    """Seconds for a whole container: each case's timeout scaled plus 5 s, times ``attempts``
    (the most times the run inside starts one case: ``ResolvedDockerRun.attempts``), and a
    margin."""
    return (
        sum(c.timeout_s for c in cases) * scale + 5.0 * len(cases)
    ) * attempts + TIMEOUT_MARGIN_S


# ---------------------------------------------------------------------------------------------
# the job


def preflight(
    host: host_mod.Host,
    all_settings: Sequence[build_settings.BuildSettings],
    gpu_mode: str,
    out: Output,
    dry_run: bool = False,
) -> None:
    """Stop with FatalError before anything is built or written when the host cannot run a
    selected variant; a dry run only warns (it prints the spec, even without a daemon)."""
    for settings in all_settings:
        check = host_mod.preflight(
            host, settings.variant.id, settings.variant.accelerator, gpu_mode
        )
        for warning in check.warnings:
            out.line(f"warning: {warning}")
        if not check.ok and dry_run:
            out.line(f"warning: a real run would stop here: {check.line()}")
        elif not check.ok:
            raise FatalError(check.line(), hint=host_mod.hint_for(check, host))


def docker_run(
    opts: ResolvedDockerRun, host: host_mod.Host, cases: Sequence[Any], out: Output
) -> int:
    """Run the cases in each of ``opts.variants``' images in turn; the worst exit status (0, 1
    or 3).

    The container timeout is ``opts.timeout``, else the cases' timeouts scaled by
    ``opts.scale``. Refreshes ``opts.output_dir`` afterwards. Raises ConfigError before
    anything starts when a ``script:`` case lies outside matrix.yaml's folder
    (``allow_outside``: the container mounts only that folder).
    """
    all_settings = [part.settings for part in opts.variants]
    script_entries.check_container_lane(cases, opts.config)
    preflight(host, all_settings, opts.gpu_mode, out, dry_run=opts.dry_run)
    timeout = opts.timeout or container_timeout(cases, opts.scale, opts.attempts)
    too_old = {s.variant.id: start_failure.driver_check(host, s.variant) for s in all_settings}
    # No client (and no daemon) is needed when no variant will start a container.
    needs_docker = not opts.dry_run and (opts.shell or not all(too_old.values()))
    client = images.client() if needs_docker else None
    worst = EXIT_OK
    for part in opts.variants:
        failure = None if opts.shell else too_old[part.variant.id]
        worst = max(worst, run_one(part, host, cases, timeout, client, opts, out, failure))
    if opts.output_dir and not opts.dry_run and not opts.shell:
        # --config: the matrix applies the same expectations the run inside did.
        done = subprocess.run(
            [sys.executable, "-m", "repro", "report", str(opts.results_dir), "-o", opts.output_dir,
             "--config", str(opts.config)]
        )  # fmt: skip
        if done.returncode not in (0, 1):
            out.line(f"warning: `repro report` exited with status {done.returncode}")
    return worst


def host_fingerprint() -> Fingerprint:
    """The host's fingerprint, collected once per container run (it keys the cell)."""
    from repro.host import fingerprint

    return fingerprint.collect(python=sys.executable)


def write_host_fingerprint(fp: Fingerprint) -> Path:
    """Write ``fp`` into a fresh directory mounted read-only at /repro/host."""
    directory = Path(tempfile.mkdtemp(prefix="repro-host-fp-"))
    directory.chmod(0o755)
    path = directory / "fingerprint.json"
    path.write_text(json.dumps(fp.to_json(), indent=2, sort_keys=True) + "\n")
    path.chmod(0o644)
    return directory


class DidNotStart(Exception):
    """Docker could not start a container of this variant; ``failure`` says why."""

    def __init__(self, failure: start_failure.StartFailure):
        super().__init__(failure.message)
        self.failure = failure


def parity_probe(
    client,
    host: host_mod.Host,
    variant: matrix_mod.Variant,
    options: container_mod.ContainerRun,
    host_fp: Fingerprint,
    out: Output,
) -> str:
    """Run the torch probe with the same passthrough; compare its GPUs with the host's.
    Returns the ``container.gpu_parity`` text; :class:`DidNotStart` when docker cannot start it."""
    from repro.host.torch_probe import last_json_object

    probe_options = dataclasses.replace(
        options,
        command=("python", "-m", "repro.host.torch_probe"),
        name=None,
        resolved=dataclasses.replace(options.resolved, keep_container=False),
    )
    spec = container_mod.docker_run_spec(host, variant.accelerator, probe_options)
    buffer = io.StringIO()
    try:
        container_mod.run_container(client, spec, timeout_s=180, out=buffer)
    except ReproError:
        raise
    except Exception as exc:
        failure = start_failure.from_exception(exc, host, variant, "the parity probe")
        raise DidNotStart(failure) from None
    ok, text = container_mod.gpu_parity(host_fp, last_json_object(buffer.getvalue()))
    if not ok:
        out.line(f"warning: host/container GPU parity: {text}")
    return ("" if ok else "warning: ") + text


def _image_id(
    client, settings: build_settings.BuildSettings, opts: ResolvedDockerRun, out: Output
) -> str:
    if opts.dry_run or opts.no_build:
        image = images.find_image(client, settings.tag) if client is not None else None
        if image is None and not opts.dry_run:
            raise FatalError(
                f"--no-build: image {settings.tag} does not exist",
                hint=f"repro build --variant {settings.variant.id}",
            )
        return image.id if image is not None else settings.tag
    out.settings(settings)
    return images.ensure_image(client, settings, builder=opts.builder).id


def _make_run_dir(results: Path, variant_id: str, user: str) -> Path:
    """``results/<run-id>`` on the host, writable by the container's user."""
    from repro.runner.run_all import new_run_dir

    try:
        _, run_dir = new_run_dir(results, variant_id)
    except OSError as exc:
        raise FatalError(
            f"cannot create a run directory under {results}: {exc.strerror or exc}"
        ) from None
    uid, _, gid = user.partition(":")
    if os.geteuid() == 0 and uid.isdigit() and int(uid) != 0:
        os.chown(run_dir, int(uid), int(gid) if gid.isdigit() else -1)
    return run_dir


def run_one(
    part: VariantRun,
    host: host_mod.Host,
    cases: Sequence[Any],
    timeout: float,
    client,
    opts: ResolvedDockerRun,
    out: Output,
    too_old: start_failure.StartFailure | None = None,
) -> int:
    """One variant: image, run directory, parity probe, the container (or ``--shell``).

    ``too_old``: the pre-start driver check's verdict (:func:`start_failure.driver_check`):
    nothing is built or started, the run directory gets its red cell. The same happens when
    docker cannot start the parity probe or the run container. Returns 0, 1 or 3.
    """
    settings, limits, variant = part.settings, part.limits, part.variant
    user = limits.user or container_user(os.getuid(), os.getgid())
    if too_old is not None:
        out.line(f"error: {variant.id}: {too_old.message}")
        if opts.dry_run:
            out.line("a real run would write this as the variant's one error case")
            return EXIT_CASES_FAILED
        return _red_cell(opts.results_dir, variant, user, too_old, {}, out)
    image_id = _image_id(client, settings, opts, out)
    facts = property_names.ImageFacts(
        image=image_id,
        image_tag=settings.tag,
        base_image=variant.base_image,
        python=variant.python,
        index_url=f"wheelhouse:{settings.wheelhouse}" if settings.wheelhouse else variant.index_url,
        host_kind=host.kind,
        passthrough=host_mod.passthrough_kind(host, variant.accelerator),
        shm_size=limits.shm_text,
        ipc=limits.ipc or "private",
        network=opts.network,
        user=user,
        mem_limit=limits.mem_limit,
        pids_limit=str(limits.pids_limit),
    )
    properties = property_names.of_image(facts)
    run_dir = (
        opts.results_dir / "<run-id>"
        if opts.dry_run
        else _make_run_dir(opts.results_dir, variant.id, user)
    )
    fp_dir = Path(tempfile.mkdtemp(prefix="repro-host-fp-")) if opts.dry_run else None
    host_fp = Fingerprint() if opts.dry_run else host_fingerprint()
    try:
        fp_dir = fp_dir or write_host_fingerprint(host_fp)
        options = container_mod.ContainerRun(
            image=image_id,
            variant_id=variant.id,
            run_dir=str(run_dir),
            config_file=os.path.abspath(opts.config),
            host_fingerprint_dir=str(fp_dir),
            resolved=opts,
            # The host's HSA_OVERRIDE_GFX_VERSION first, so the variant's own env still wins.
            env=gpu_selection.container_env(os.environ, variant.accelerator) + tuple(variant.env),
            # The runner's GPU selection (CUDA_/NVIDIA_/ROCR_/HIP_VISIBLE_DEVICES), not all GPUs.
            gpus=opts.gpus
            if opts.gpus != "all"
            else gpu_selection.container_gpus(os.environ, variant.accelerator),
            limits=limits,
        )
        if not opts.dry_run and variant.accelerator != "cpu":
            properties[property_names.GPU_PARITY] = parity_probe(
                client, host, variant, options, host_fp, out
            )
        else:
            properties[property_names.GPU_PARITY] = (
                "n/a (cpu variant)" if variant.accelerator == "cpu" else "not checked (dry run)"
            )
        options = dataclasses.replace(options, properties=tuple(properties.items()))
        if opts.shell:
            return shell(host, variant, options, opts.dry_run, out)
        return _run_container(client, host, variant, options, len(cases), timeout, opts, out)
    except DidNotStart as exc:
        out.line(f"error: {variant.id}: {exc.failure.message}")
        _write_cell(run_dir, exc.failure, variant, host_fp, properties, out)
        return EXIT_CASES_FAILED
    finally:
        if fp_dir is not None:
            shutil.rmtree(fp_dir, ignore_errors=True)
        if not opts.dry_run:
            with contextlib.suppress(OSError):  # keep it when anything was written
                run_dir.rmdir()


def _red_cell(
    results: Path,
    variant: matrix_mod.Variant,
    user: str,
    failure: start_failure.StartFailure,
    properties: dict[str, str],
    out: Output,
) -> int:
    """A fresh run directory with the host's fingerprint and the one error case; 1."""
    run_dir = _make_run_dir(results, variant.id, user)
    _write_cell(run_dir, failure, variant, host_fingerprint(), properties, out)
    return EXIT_CASES_FAILED


def _write_cell(
    run_dir: Path,
    failure: start_failure.StartFailure,
    variant: matrix_mod.Variant,
    host_fp: Fingerprint,
    properties: dict[str, str],
    out: Output,
) -> None:
    try:
        junit = start_failure.write_cell(
            run_dir, run_dir.name, failure, variant, host_fp, properties
        )
    except OSError as exc:
        raise FatalError(f"cannot write {run_dir}: {exc.strerror or exc}") from None
    out.line(f"{variant.id}: error [{failure.signature}] written to {junit}")


def _run_container(
    client,
    host: host_mod.Host,
    variant: matrix_mod.Variant,
    options: container_mod.ContainerRun,
    n_cases: int,
    timeout: float,
    opts: ResolvedDockerRun,
    out: Output,
) -> int:
    spec = container_mod.docker_run_spec(host, variant.accelerator, options)
    out.line(
        f"host kind {host.kind}, passthrough {spec.passthrough}; /dev/shm {options.limits.shm_text}; "
        f"memory {options.limits.mem_limit}, pids {options.limits.pids_limit}; {n_cases} case(s); "
        f"container timeout {timeout:g} s; results -> {options.run_dir}"
    )
    for note in spec.notes:
        out.line(note)
    out.line("docker command:")
    out.command(spec.command_line)
    if opts.dry_run:
        return EXIT_OK
    try:
        outcome = container_mod.run_container(client, spec, timeout, keep=opts.keep_container)
    except ReproError:
        raise
    except Exception as exc:
        raise DidNotStart(
            start_failure.from_exception(exc, host, variant, "the run container")
        ) from None
    where = options.run_dir if any(Path(options.run_dir).iterdir()) else "(nothing was written)"
    if opts.keep_container:
        out.line(
            f"kept container {outcome.name} (docker logs {outcome.name}; docker rm {outcome.name})"
        )
    if outcome.timed_out:
        out.line(
            f"error: container {outcome.name} killed after its {timeout:g} s timeout; every finished case is kept in {where}"
            + ("" if outcome.removed or opts.keep_container else "; removing it failed")
        )
        return EXIT_FATAL
    out.line(
        f"container exited with status {outcome.exit_code} after {outcome.duration_s:.1f} s; results in {where}"
    )
    if outcome.exit_code in (EXIT_OK, EXIT_CASES_FAILED):
        return int(outcome.exit_code)
    return EXIT_FATAL


def shell(
    host: host_mod.Host,
    variant: matrix_mod.Variant,
    options: container_mod.ContainerRun,
    dry_run: bool,
    out: Output,
) -> int:
    """``--shell``: the same image, passthrough, limits and mounts, with a shell instead."""
    inner = container_mod.docker_run_spec(host, variant.accelerator, options).kwargs["command"]
    shell_options = dataclasses.replace(
        options,
        interactive=True,
        command=(
            "/bin/sh",
            "-c",
            "if command -v bash >/dev/null 2>&1; then exec bash; fi; exec sh",
        ),
    )
    spec = container_mod.docker_run_spec(host, variant.accelerator, shell_options)
    out.line("docker command (the same passthrough, limits and mounts as the run):")
    out.command(spec.command_line)
    out.line("inside, this reruns the selected case(s):")
    out.command(shlex.join(inner))
    if dry_run:
        return EXIT_OK
    if shutil.which(spec.argv[0]) is None:
        raise FatalError(
            "--shell needs the docker command-line client on PATH",
            hint="run the docker command printed above where the client is installed",
        )
    if not sys.stdin.isatty():
        raise ConfigError(
            "--shell needs a terminal (stdin is not a TTY); the command is printed above"
        )
    return subprocess.call(spec.argv)
