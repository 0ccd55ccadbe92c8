"""The container lane's commands: ``repro build``, ``repro host``, ``repro docker-run`` and
``repro wheelhouse`` (argument parsing and printing; the docker-run job is
``repro.containers.job``).

``register(subparsers)`` adds them to the ``repro`` parser, each with ``handler`` set; errors
are ``ConfigError`` (exit 2) or ``FatalError`` (exit 3) and reach the one boundary in
``repro.cli.main``.

``repro docker-run --variant GLOB`` = detect the host, pre-flight (nothing is built or written when the
host cannot run the variant), build the image if needed, fingerprint the host, run ``repro run``
inside with the host's passthrough, and optionally refresh the matrix (``--output-dir DIR``).
``--shell`` drops into the same image with the same passthrough instead and prints the exact
``docker run`` command used; ``--dry-run`` prints it without the Docker SDK or a daemon.
Never imports torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from repro import config as matrix_mod
from repro.cli import options, resolve
from repro.containers import build_settings, images, job, wheelhouse
from repro.containers import builder as builder_mod
from repro.errors import EXIT_OK, ConfigError
from repro.host import hostkind as host_mod

PROG = "repro"


def _err(*lines: Any) -> None:
    for line in lines:
        print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def _show(command: str) -> None:
    """A command line on its own line, indented, without the prefix (to copy and paste)."""
    print(f"    {command}", file=sys.stderr, flush=True)


def _add_overrides(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "overrides (command line > $REPRO_BASE_IMAGE, $REPRO_INDEX_URL, $REPRO_WHEELHOUSE, "
        "$REPRO_PYTHON > matrix.yaml)"
    )
    options.add(group, "base_image", "index_url", "wheelhouse", "image_python", "source")
    options.add(group, "image_repo")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``build``, ``host``, ``docker-run`` and ``wheelhouse`` to the ``repro`` parser;
    options from :mod:`.options`. Old positional variant ids still work, with a note."""
    build = subparsers.add_parser(
        "build", help="build (or reuse) the image of each selected variant"
    )
    build.add_argument("old_variants", nargs="*", help=argparse.SUPPRESS)
    options.add(build, "variants")
    options.add(build, "config", default=matrix_mod.DEFAULT_FILE)
    _add_overrides(build)
    options.add(build, "force", "no_cache", "builder", "json", "context_dir")
    build.set_defaults(handler=cmd_build)

    host = subparsers.add_parser(
        "host",
        help="detect the host kind (NVIDIA, NVIDIA-WSL2, ROCm, ROCm-WSL2, CPU) and pre-flight each variant",
    )
    options.add(host, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(host, "variants", "json", "fixture")
    host.set_defaults(handler=cmd_host)

    run = subparsers.add_parser(
        "docker-run",
        help="run the scenario cases inside a variant's image with this host's GPU passthrough",
    )
    run.add_argument("old_variant", nargs="?", help=argparse.SUPPRESS)
    options.add(run, "variants")
    options.add(run, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(run, "patterns", "results_dir", "output_dir", "shell", "keep_container")
    options.add(
        run, "dry_run", "json", "no_build", "builder", "timeout", "timeout_scale", "shm_size", "ipc"
    )
    options.add(run, "network", "gpus", "gpu_mode", "user", "fixture")
    options.add(run, "rerun_failures", "rounds", "jobs")
    _add_overrides(run)
    run.set_defaults(handler=cmd_docker_run)

    wheelhouse_cmd = subparsers.add_parser(
        "wheelhouse",
        help="download the wheels a variant needs into DIR (pip download) for offline builds",
    )
    # The old `wheelhouse VARIANT DIR` still parses (a note names --variant); DIR stays shown.
    wheelhouse_cmd.add_argument("old_variant", nargs="?", help=argparse.SUPPRESS)
    options.add(wheelhouse_cmd, "dest", "variants")
    options.add(wheelhouse_cmd, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(wheelhouse_cmd, "json")
    _add_overrides(wheelhouse_cmd)
    wheelhouse_cmd.set_defaults(handler=cmd_wheelhouse)


def _selectors(args: argparse.Namespace, old: str, command: str) -> list[str]:
    """``--variant`` globs plus the deprecated positional ones; ConfigError when none."""
    selectors = list(args.variants or []) + options.deprecated_positional(
        args, old, "--variant GLOB"
    )
    if not selectors:
        raise ConfigError(f"{command}: select variants with --variant GLOB (repeatable)")
    return selectors


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
    variants = config.select_variants(_selectors(args, "old_variants", "build"))
    overrides = resolve.overrides(args)
    all_settings = [
        build_settings.settings_for(v, overrides, args.image_repo, resolve.source(args))
        for v in variants
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
        command = f"docker build {flags} -t {all_settings[0].tag} {dest}"
        if args.json:
            options.print_json({"images": [], "context_dir": str(dest), "command": command})
        else:
            print(command)
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
        options.print_json({"images": [r.as_dict() for r in records]})
    else:
        for record in records:
            state = "built" if record.built else "up to date"
            print(
                f"{record.tag}  {record.id}  {state}  "
                + " ".join(f"{k}={v}" for k, v in record.installed.items())
            )
    return EXIT_OK


def cmd_wheelhouse(args: argparse.Namespace) -> int:
    dest = args.dest
    config = matrix_mod.load(args.config)
    variants = config.select_variants(_selectors(args, "old_variant", "wheelhouse"))
    if len(variants) != 1:
        raise ConfigError(
            f"wheelhouse: --variant must select exactly one variant ({len(variants)} matched: "
            f"{', '.join(v.id for v in variants)})"
        )
    variant = variants[0]
    overrides = resolve.overrides(args)
    settings = build_settings.settings_for(
        variant,
        matrix_mod.Overrides(
            {k: v for k, v in overrides.values.items() if k != "wheelhouse"}, overrides.sources
        ),
    )
    wheels = wheelhouse.download_wheelhouse(
        settings, Path(dest), index_url=overrides.values.get("index_url")
    )
    if args.json:
        options.print_json(
            {"variant": variant.id, "dir": str(dest), "wheels": [str(w) for w in wheels]}
        )
        return EXIT_OK
    print(
        f"{len(wheels)} wheels in {dest}; build offline with: "
        f"repro build --variant {variant.id} --wheelhouse {dest}"
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
    if Path(args.config).exists() or args.variants:
        variants = matrix_mod.load(args.config).select_variants(args.variants)
    checks = [host_mod.preflight(host, v.id, v.accelerator) for v in variants]
    if args.json:
        options.print_json({"host": host.as_dict(), "preflight": [c.as_dict() for c in checks]})
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


class _JsonOutput:
    """``docker-run --dry-run --json``: the same events, collected into one JSON object."""

    def __init__(self) -> None:
        self.payload: dict[str, list[Any]] = {"settings": [], "commands": [], "lines": []}

    def line(self, text: str) -> None:
        self.payload["lines"].append(text)

    def command(self, text: str) -> None:
        self.payload["commands"].append(text)

    def settings(self, settings: build_settings.BuildSettings) -> None:
        self.payload["settings"].append(
            {"variant": settings.variant.id, **{k: str(v) for k, v in settings.describe()}}
        )


def cmd_docker_run(args: argparse.Namespace) -> int:
    resolve.check_docker_run_numbers(args)
    config = matrix_mod.load(args.config)
    selectors = _selectors(args, "old_variant", "docker-run")
    variants = config.select_variants(selectors)
    if args.shell and len(variants) != 1:
        raise ConfigError(
            f"--shell: {' '.join(selectors)!r} matches {len(variants)} variants; name one ({', '.join(v.id for v in variants)})"
        )
    if args.json and not args.dry_run:
        raise ConfigError("docker-run: --json only with --dry-run (a run's results are junit.xml)")
    cases = matrix_mod.select_cases(config.cases(), args.patterns)
    run_options = resolve.docker_run(args, config, variants)
    if args.json:
        collected = _JsonOutput()
        code = job.docker_run(run_options, _detect(args), cases, collected)
        options.print_json(collected.payload)
        return code
    return job.docker_run(run_options, _detect(args), cases, _StderrOutput())
