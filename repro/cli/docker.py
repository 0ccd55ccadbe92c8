"""The container lane's commands: ``repro build``, ``repro host``, ``repro docker-run`` and
``repro wheelhouse`` (argument parsing and printing; the docker-run job is
``repro.containers.job``).

``register(subparsers)`` adds them to the ``repro`` parser, each with ``handler`` set; errors
are ``ConfigError`` (exit 2) or ``FatalError`` (exit 3) and reach the one boundary in
``repro.cli.main``.

``repro docker-run VARIANT`` = detect the host, pre-flight (nothing is built or written when the
host cannot run the variant), build the image if needed, fingerprint the host, run ``repro run``
inside with the host's passthrough, and optionally refresh the matrix (``--report DIR``).
``--shell`` drops into the same image with the same passthrough instead and prints the exact
``docker run`` command used; ``--dry-run`` prints it without the Docker SDK or a daemon.
Never imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from repro import bounds
from repro import config as matrix_mod
from repro.containers import build_settings, images, job, wheelhouse
from repro.containers import builder as builder_mod
from repro.containers import hostkind as host_mod
from repro.containers import spec as container_mod
from repro.errors import EXIT_OK, ConfigError

PROG = "repro"


def _err(*lines: Any) -> None:
    for line in lines:
        print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def _show(command: str) -> None:
    """A command line on its own line, indented, without the prefix (to copy and paste)."""
    print(f"    {command}", file=sys.stderr, flush=True)


def _add_overrides(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "overrides (else $REPRO_BASE_IMAGE, $REPRO_INDEX_URL, $REPRO_WHEELHOUSE, $REPRO_PYTHON, else matrix.yaml)"
    )
    group.add_argument(
        "--base-image",
        metavar="IMAGE",
        help="base image instead of the variant's (a local image works offline)",
    )
    group.add_argument(
        "--index-url",
        metavar="URL",
        help="torch wheel index instead of the variant's ({runtime} is replaced)",
    )
    group.add_argument(
        "--wheelhouse",
        metavar="DIR",
        help="install from the wheels in DIR only, no index and no network (see `repro wheelhouse`)",
    )
    group.add_argument(
        "--python", metavar="X.Y", help="the base image's Python version (the build checks it)"
    )
    group.add_argument(
        "--source",
        metavar="DIR",
        help="build from the repro-matrix checkout in DIR (default: the one this repro runs from)",
    )
    group.add_argument(
        "--image-repo",
        default=os.environ.get("REPRO_IMAGE_REPO", build_settings.DEFAULT_REPO),
        metavar="NAME",
        help="image repository; tags are NAME:<variant-id> (default: %(default)s)",
    )


def _add_builder(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--builder",
        choices=builder_mod.BUILDERS,
        default=os.environ.get(builder_mod.ENV_VAR, builder_mod.AUTO),
        help="image builder: buildkit (the Docker CLI's buildx, or DOCKER_BUILDKIT=1 on a CLI "
        "before 23; one pip cache shared by every variant), classic (the SDK's deprecated "
        f"builder), auto: buildkit when usable (default: ${builder_mod.ENV_VAR}, else auto)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``build``, ``host``, ``docker-run`` and ``wheelhouse`` to the ``repro`` parser."""
    build = subparsers.add_parser(
        "build", help="build (or reuse) the image of each selected variant"
    )
    build.add_argument(
        "variants",
        nargs="+",
        metavar="VARIANT_GLOB",
        help="variant id globs, e.g. 'cu128-*' or cpu-torch2.13",
    )
    matrix_mod.add_config_argument(build)
    _add_overrides(build)
    build.add_argument(
        "--force",
        action="store_true",
        help="build even when the image is up to date (docker's layer cache still applies)",
    )
    build.add_argument("--no-cache", action="store_true", help="build without docker's layer cache")
    _add_builder(build)
    build.add_argument(
        "--json",
        action="store_true",
        help="print the image records (tag, id, labels, installed versions) as JSON",
    )
    build.set_defaults(handler=cmd_build)
    build.add_argument(
        "--context-dir",
        metavar="DIR",
        help="only write the build context (and build-args.json) to DIR, for a manual `docker build`",
    )

    host = subparsers.add_parser(
        "host",
        help="detect the host kind (NVIDIA, NVIDIA-WSL2, ROCm, ROCm-WSL2, CPU) and pre-flight each variant",
    )
    matrix_mod.add_config_argument(host)
    host.add_argument(
        "--variant",
        action="append",
        metavar="GLOB",
        help="pre-flight only these variants (repeatable)",
    )
    host.add_argument("--json", action="store_true", help="print JSON")
    host.add_argument("--fixture", metavar="DIR", help=argparse.SUPPRESS)
    host.set_defaults(handler=cmd_host)

    run = subparsers.add_parser(
        "docker-run",
        help="run the scenario cases inside a variant's image with this host's GPU passthrough",
    )
    run.add_argument(
        "variant", metavar="VARIANT", help="variant id (or a glob: every match runs in turn)"
    )
    matrix_mod.add_config_argument(run)
    matrix_mod.add_case_selector_argument(run)
    run.add_argument(
        "--results",
        metavar="DIR",
        help="results root on the host; each run's own results/<run-id> is the only writable mount (default: defaults.results_dir)",
    )
    run.add_argument(
        "--report",
        metavar="DIR",
        help="afterwards merge every run under --results into DIR/matrix.* (even after a timeout)",
    )
    run.add_argument(
        "--shell",
        action="store_true",
        help="open a shell in the image with the same passthrough and mounts instead of running the cases",
    )
    run.add_argument(
        "--keep-container", action="store_true", help="do not remove the container afterwards"
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the effective settings and the docker command, start nothing",
    )
    run.add_argument("--no-build", action="store_true", help="use the existing image, never build")
    _add_builder(run)
    run.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help=f"hard timeout for the whole container in seconds (default: the sum of the case timeouts + {job.TIMEOUT_MARGIN_S:g})",
    )
    run.add_argument(
        "--timeout-scale",
        type=float,
        metavar="X",
        help="multiply every case timeout by X (passed to `repro run`)",
    )
    run.add_argument(
        "--shm-size",
        metavar="SIZE",
        help="/dev/shm size instead of the variant's shm_size ('64m' is Docker's default)",
    )
    run.add_argument(
        "--ipc",
        choices=("host", "private", "shareable"),
        help="IPC namespace (host: the host's /dev/shm)",
    )
    run.add_argument(
        "--network",
        default="none",
        metavar="MODE",
        help="container network (default: none; loopback is enough for DDP)",
    )
    run.add_argument(
        "--gpus",
        default="all",
        metavar="LIST",
        help="all, indices '0,1' or CDI names 'nvidia.com/gpu=0' (default: all)",
    )
    run.add_argument(
        "--gpu-mode",
        default="auto",
        choices=container_mod.GPU_MODES,
        help="how NVIDIA GPUs are passed (default: auto)",
    )
    run.add_argument(
        "--user",
        metavar="UID:GID",
        help="container user (default: your uid:gid, so results are yours; as root the image's unprivileged user, never 0:0)",
    )
    run.add_argument("--fixture", metavar="DIR", help=argparse.SUPPRESS)
    _add_overrides(run)
    run.set_defaults(handler=cmd_docker_run)

    wheelhouse_cmd = subparsers.add_parser(
        "wheelhouse",
        help="download the wheels a variant needs into DIR (pip download) for offline builds",
    )
    wheelhouse_cmd.add_argument("variant", metavar="VARIANT", help="variant id")
    wheelhouse_cmd.add_argument("dest", metavar="DIR", help="directory for the wheels")
    matrix_mod.add_config_argument(wheelhouse_cmd)
    _add_overrides(wheelhouse_cmd)
    wheelhouse_cmd.set_defaults(handler=cmd_wheelhouse)


def _source(args: argparse.Namespace) -> Path | None:
    source = getattr(args, "source", None)
    if source and not (Path(source) / "repro" / "__init__.py").is_file():
        raise ConfigError(f"--source {source}: not a repro-matrix checkout (no repro/__init__.py)")
    return Path(source) if source else None


def _overrides(args: argparse.Namespace) -> matrix_mod.Overrides:
    return matrix_mod.Overrides.collect(
        {name: getattr(args, name, None) for name in matrix_mod.OVERRIDE_ENV}
    )


def _print_settings(
    settings: build_settings.BuildSettings, extra: list[tuple[str, str]] | None = None
) -> None:
    _err("effective settings:")
    for name, value in settings.describe() + (extra or []):
        print(f"  {name:<15} {value}", file=sys.stderr)
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# build / wheelhouse


def cmd_build(args: argparse.Namespace) -> int:
    config = matrix_mod.load(args.config)
    variants = config.select_variants(args.variants)
    overrides = _overrides(args)
    all_settings = [
        build_settings.settings_for(v, overrides, args.image_repo, _source(args)) for v in variants
    ]
    if args.context_dir:
        if len(all_settings) != 1:
            raise ConfigError(
                f"--context-dir: select exactly one variant ({len(all_settings)} matched)"
            )
        dest = Path(args.context_dir)
        build_args = images.write_context_dir(all_settings[0], dest)
        flags = " ".join(
            f"--build-arg {k}={json.dumps(v) if ' ' in v or not v else v}"
            for k, v in build_args.items()
        )
        print(f"docker build {flags} -t {all_settings[0].tag} {dest}")
        return EXIT_OK
    builder = builder_mod.choose(args.builder)  # before the daemon: a bad value is exit 2
    client = images.client()
    records = []
    for settings in all_settings:
        _print_settings(settings)
        records.append(
            images.ensure_image(
                client, settings, force=args.force, no_cache=args.no_cache, builder=builder
            )
        )
    if args.json:
        print(json.dumps([r.as_dict() for r in records], indent=2, sort_keys=True))
    else:
        for record in records:
            state = "built" if record.built else "up to date"
            print(
                f"{record.tag}  {record.id}  {state}  "
                + " ".join(f"{k}={v}" for k, v in record.installed.items())
            )
    return EXIT_OK


def cmd_wheelhouse(args: argparse.Namespace) -> int:
    config = matrix_mod.load(args.config)
    variant = config.variant(args.variant)
    overrides = _overrides(args)
    settings = build_settings.settings_for(
        variant,
        matrix_mod.Overrides(
            {k: v for k, v in overrides.values.items() if k != "wheelhouse"}, overrides.sources
        ),
    )
    wheels = wheelhouse.download_wheelhouse(
        settings, Path(args.dest), index_url=overrides.values.get("index_url")
    )
    print(
        f"{len(wheels)} wheels in {args.dest}; build offline with: repro build {variant.id} --wheelhouse {args.dest}"
    )
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# host


def _detect(args: argparse.Namespace) -> host_mod.Host:
    if getattr(args, "fixture", None):
        return host_mod.load_fixture(args.fixture)
    return host_mod.detect()


def cmd_host(args: argparse.Namespace) -> int:
    host = _detect(args)
    variants: list[matrix_mod.Variant] = []
    if Path(args.config).exists() or args.variant:
        variants = matrix_mod.load(args.config).select_variants(args.variant)
    checks = [host_mod.preflight(host, v.id, v.accelerator) for v in variants]
    if args.json:
        print(
            json.dumps(
                {"host": host.as_dict(), "preflight": [c.as_dict() for c in checks]},
                indent=2,
                sort_keys=True,
            )
        )
        return EXIT_OK
    print(f"host kind     {host.kind}{' (WSL2)' if host.wsl2 else ''}")
    for line in host.evidence or ("no GPU device nodes, no WSL2 GPU paravirtualisation",):
        print(f"  evidence    {line}")
    for line in host.notes:
        print(f"  note        {line}")
    daemon = host.daemon
    if daemon.reachable:
        print(
            f"docker        {daemon.server_version} on {daemon.operating_system}; runtimes {', '.join(daemon.runtimes) or '-'}"
            + (f"; CDI spec dirs {', '.join(daemon.cdi_spec_dirs)}" if daemon.cdi_spec_dirs else "")
        )
    else:
        print(f"docker        unreachable: {daemon.error}")
    if host.nvidia_query:
        q = host.nvidia_query
        print(
            f"nvidia        {q.tool}: "
            + (f"{', '.join(q.gpus)} (driver {q.driver})" if q.ok else f"FAILED: {q.error}")
        )
    if host.amd_query:
        q = host.amd_query
        print(f"amd           {q.tool}: " + (", ".join(q.gpus) if q.ok else f"FAILED: {q.error}"))
    if host.has_nvidia:
        print(
            f"gpu runtime   {', '.join(host.nvidia_container_runtime) or 'none (no nvidia runtime, hook or CDI spec)'}"
        )
    if host.device_gids and (host.kfd or host.dri_devices):
        print(f"device groups {', '.join(map(str, host.device_gids))}")
    if checks:
        print("pre-flight")
        for check in checks:
            state = "ok" if check.ok else "NO"
            why = f"  {'; '.join(check.problems)}" if check.problems else ""
            print(f"  {check.variant_id:<22} {state:<3} passthrough {check.passthrough}{why}")
            for warning in check.warnings:
                print(f"  {'':<22}     warning: {warning}")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# docker-run


class _StderrOutput:
    """The job's progress on stderr: ``repro: LINE``, commands indented without the prefix."""

    def line(self, text: str) -> None:
        _err(text)

    def command(self, text: str) -> None:
        _show(text)

    def settings(self, settings: build_settings.BuildSettings) -> None:
        _print_settings(settings)


def _check_numbers(args: argparse.Namespace) -> None:
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


def cmd_docker_run(args: argparse.Namespace) -> int:
    _check_numbers(args)
    config = matrix_mod.load(args.config)
    variants = config.select_variants([args.variant])
    if args.shell and len(variants) != 1:
        raise ConfigError(
            f"--shell: {args.variant!r} matches {len(variants)} variants; name one ({', '.join(v.id for v in variants)})"
        )
    cases = matrix_mod.select_cases(config.cases(), args.patterns)
    overrides = _overrides(args)
    all_settings = [
        build_settings.settings_for(v, overrides, args.image_repo, _source(args)) for v in variants
    ]
    options = job.JobOptions(
        config_file=Path(args.config),
        results=Path(args.results or config.results_dir).resolve(),
        patterns=tuple(args.patterns or ()),
        timeout_s=args.timeout,
        timeout_scale=args.timeout_scale,
        shm_size=args.shm_size,
        ipc=args.ipc,
        network=args.network,
        gpus=args.gpus,
        gpu_mode=args.gpu_mode,
        user=args.user,
        keep=args.keep_container,
        dry_run=args.dry_run,
        no_build=args.no_build,
        builder=args.builder,
        shell=args.shell,
        report_dir=args.report,
    )
    scale = args.timeout_scale or config.timeout_scale
    return job.docker_run(all_settings, _detect(args), cases, scale, options, _StderrOutput())
