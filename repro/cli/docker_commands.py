"""The container lane's commands: ``repro build``, ``repro host``, ``repro docker-run`` and
``repro wheelhouse``.

``register(subparsers)`` adds them to the ``repro`` parser and ``handle(args)`` runs one; errors
are ``ConfigError`` (exit 2) or ``FatalError`` (exit 3), one line each. ``python -m
repro.cli.docker_commands`` runs them standalone (the nox sessions use that).

``repro docker-run VARIANT`` = detect the host, pre-flight (nothing is built or written when the
host cannot run the variant), build the image if needed, fingerprint the host, run ``repro run``
inside with the host's passthrough, and optionally refresh the matrix (``--report DIR``).
``--shell`` drops into the same image with the same passthrough instead and prints the exact
``docker run`` command used. Never imports torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from repro.config import matrix as matrix_mod
from repro.containers import hostkind as host_mod
from repro.containers import images
from repro.containers import spec as container_mod
from repro.errors import EXIT_CASES_FAILED, EXIT_FATAL, EXIT_OK, ConfigError, FatalError, ReproError

PROG = "repro"
COMMANDS = ("build", "host", "docker-run", "wheelhouse")
#: Seconds added to the sum of the case timeouts for the container's hard timeout (start-up,
#: the in-container fingerprint, stack dumps).
TIMEOUT_MARGIN_S = 180.0


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
        default=os.environ.get("REPRO_IMAGE_REPO", images.DEFAULT_REPO),
        metavar="NAME",
        help="image repository; tags are NAME:<variant-id> (default: %(default)s)",
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
    build.add_argument(
        "--json",
        action="store_true",
        help="print the image records (tag, id, labels, installed versions) as JSON",
    )
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
        help="results root on the host, the only writable mount (default: defaults.results_dir)",
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
    run.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help=f"hard timeout for the whole container in seconds (default: the sum of the case timeouts + {TIMEOUT_MARGIN_S:g})",
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
        help="container user (default: the host's uid:gid, so results are yours)",
    )
    run.add_argument("--fixture", metavar="DIR", help=argparse.SUPPRESS)
    _add_overrides(run)

    wheelhouse = subparsers.add_parser(
        "wheelhouse",
        help="download the wheels a variant needs into DIR (pip download) for offline builds",
    )
    wheelhouse.add_argument("variant", metavar="VARIANT", help="variant id")
    wheelhouse.add_argument("dest", metavar="DIR", help="directory for the wheels")
    matrix_mod.add_config_argument(wheelhouse)
    _add_overrides(wheelhouse)


def handle(args: argparse.Namespace) -> int:
    """Run the container-lane command in ``args.command``; returns the exit status."""
    return {
        "build": cmd_build,
        "host": cmd_host,
        "docker-run": cmd_docker_run,
        "wheelhouse": cmd_wheelhouse,
    }[args.command](args)


def _source(args: argparse.Namespace) -> Path | None:
    source = getattr(args, "source", None)
    if source and not (Path(source) / "repro" / "__init__.py").is_file():
        raise ConfigError(f"--source {source}: not a repro-matrix checkout (no repro/__init__.py)")
    return Path(source) if source else None


def _overrides(args: argparse.Namespace) -> images.Overrides:
    return images.Overrides.collect(
        {name: getattr(args, name, None) for name in images.OVERRIDE_ENV}
    )


def _print_settings(
    settings: images.BuildSettings, extra: list[tuple[str, str]] | None = None
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
        images.settings_for(v, overrides, args.image_repo, _source(args)) for v in variants
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
    client = images.client()
    records = []
    for settings in all_settings:
        _print_settings(settings)
        records.append(
            images.ensure_image(client, settings, force=args.force, no_cache=args.no_cache)
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
    settings = images.settings_for(
        variant,
        images.Overrides(
            {k: v for k, v in overrides.values.items() if k != "wheelhouse"}, overrides.sources
        ),
    )
    wheels = images.download_wheelhouse(
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


def _container_timeout(cases: list, scale: float) -> float:
    return sum(c.timeout_s for c in cases) * scale + 5.0 * len(cases) + TIMEOUT_MARGIN_S


def _write_host_fingerprint() -> Path:
    """Collect the host fingerprint (repro.host.fingerprint.collect) into a fresh directory that is
    mounted read-only at /repro/host."""
    from repro.host import fingerprint

    directory = Path(tempfile.mkdtemp(prefix="repro-host-fp-"))
    directory.chmod(0o755)
    fp = fingerprint.collect(python=sys.executable)
    path = directory / "fingerprint.json"
    path.write_text(json.dumps(fp, indent=2, sort_keys=True) + "\n")
    path.chmod(0o644)
    return directory


def _signature(exc: BaseException) -> str:
    """`` [container_gpu_setup]`` when the daemon's error matches a known signature."""
    from repro.signatures import engine as signatures

    found = signatures.classify(str(exc))
    return "" if found.name == signatures.UNKNOWN else f" [{found.name}]"


def _shm_text(shm_size: str | None, ipc: str | None) -> str:
    if ipc == "host":
        return "host /dev/shm (--ipc host)"
    return shm_size or "64m (Docker's default)"


def _parity_probe(
    client,
    host: host_mod.Host,
    variant: matrix_mod.Variant,
    options: container_mod.RunOptions,
    host_fp: dict,
) -> str:
    """Run the torch probe with the same passthrough; compare the GPUs with the host's."""
    from repro.host.fingerprint import _last_json_object

    probe_options = dataclasses.replace(
        options, command=("python", "-m", "repro.host.torch_probe"), name=None, keep=False
    )
    spec = container_mod.docker_run_spec(host, variant.accelerator, probe_options)
    buffer = io.StringIO()
    try:
        container_mod.run_container(client, spec, timeout_s=180, out=buffer)
    except Exception as exc:
        raise FatalError(
            f"the GPU passthrough failed to start a container{_signature(exc)}: {' '.join(str(exc).split())[:400]}",
            hint=host_mod.HINTS.get(spec.passthrough, ""),
        ) from None
    ok, text = container_mod.gpu_parity(host_fp, _last_json_object(buffer.getvalue()))
    if not ok:
        _err(f"warning: host/container GPU parity: {text}")
    return ("" if ok else "warning: ") + text


def cmd_docker_run(args: argparse.Namespace) -> int:
    config = matrix_mod.load(args.config)
    variants = config.select_variants([args.variant])
    if args.shell and len(variants) != 1:
        raise ConfigError(
            f"--shell: {args.variant!r} matches {len(variants)} variants; name one ({', '.join(v.id for v in variants)})"
        )
    cases = matrix_mod.select_cases(config.cases(), args.patterns)
    overrides = _overrides(args)
    all_settings = [
        images.settings_for(v, overrides, args.image_repo, _source(args)) for v in variants
    ]

    host = _detect(args)
    for settings in all_settings:
        check = host_mod.preflight(
            host, settings.variant.id, settings.variant.accelerator, args.gpu_mode
        )
        for warning in check.warnings:
            _err(f"warning: {warning}")
        if not check.ok:
            raise FatalError(check.line(), hint=host_mod.hint_for(check, host))

    results = Path(args.results or config.results_dir).resolve()
    scale = args.timeout_scale or config.timeout_scale
    timeout = args.timeout or _container_timeout(cases, scale)
    client = None if args.dry_run else images.client()
    worst = EXIT_OK
    for settings in all_settings:
        code = _run_one(args, config, settings, host, cases, results, timeout, client)
        worst = max(worst, code)
    if args.report and not args.dry_run and not args.shell:
        done = subprocess.run(
            [sys.executable, "-m", "repro", "report", str(results), "--output", args.report]
        )
        if done.returncode not in (0, 1):
            _err(f"warning: `repro report` exited with status {done.returncode}")
    return worst


def _run_one(
    args, config, settings: images.BuildSettings, host, cases, results: Path, timeout: float, client
) -> int:
    variant = settings.variant
    shm_size = args.shm_size or variant.shm_size
    if args.dry_run or args.no_build:
        image = images.find_image(client, settings.tag) if client is not None else None
        if image is None and not args.dry_run:
            raise FatalError(
                f"--no-build: image {settings.tag} does not exist", hint=f"repro build {variant.id}"
            )
        image_id = image.id if image is not None else settings.tag
    else:
        _print_settings(settings)
        image_id = images.ensure_image(client, settings).id
    user = args.user or container_mod.host_user()
    properties = {
        "variant.image": image_id,
        "variant.image_tag": settings.tag,
        "variant.base_image": variant.base_image,
        "variant.python": variant.python,
        "variant.index_url": f"wheelhouse:{settings.wheelhouse}"
        if settings.wheelhouse
        else variant.index_url,
        "container.host_kind": host.kind,
        "container.passthrough": host_mod.passthrough_kind(host, variant.accelerator),
        "container.shm_size": _shm_text(shm_size, args.ipc),
        "container.ipc": args.ipc or "private",
        "container.network": args.network,
        "container.user": user or "",
    }
    fp_dir = (
        Path(tempfile.mkdtemp(prefix="repro-host-fp-"))
        if args.dry_run
        else _write_host_fingerprint()
    )
    try:
        options = container_mod.RunOptions(
            image=image_id,
            variant_id=variant.id,
            results_dir=str(results),
            config_file=str(Path(args.config).resolve()),
            host_fingerprint_dir=str(fp_dir),
            patterns=tuple(args.patterns or ()),
            properties=(),
            env=tuple(variant.env),
            gpus=args.gpus,
            gpu_mode=args.gpu_mode,
            shm_size=shm_size,
            ipc=args.ipc,
            network=args.network,
            user=user,
            timeout_scale=args.timeout_scale,
            keep=args.keep_container,
        )
        if not args.dry_run and variant.accelerator != "cpu":
            host_fp = json.loads((fp_dir / "fingerprint.json").read_text())
            properties["container.gpu_parity"] = _parity_probe(
                client, host, variant, options, host_fp
            )
        else:
            properties["container.gpu_parity"] = (
                "n/a (cpu variant)" if variant.accelerator == "cpu" else "not checked (dry run)"
            )
        options = dataclasses.replace(options, properties=tuple(properties.items()))
        if args.shell:
            return _shell(host, variant, options, args.dry_run)
        spec = container_mod.docker_run_spec(host, variant.accelerator, options)
        _err(
            f"host kind {host.kind}, passthrough {spec.passthrough}; /dev/shm {_shm_text(shm_size, args.ipc)}; "
            f"{len(cases)} case(s); container timeout {timeout:g} s; results -> {results}"
        )
        for note in spec.notes:
            _err(note)
        _err("docker command:")
        _show(spec.command_line)
        if args.dry_run:
            return EXIT_OK
        results.mkdir(parents=True, exist_ok=True)
        before = [p.name for p in results.iterdir()]
        try:
            outcome = container_mod.run_container(client, spec, timeout, keep=args.keep_container)
        except Exception as exc:
            if isinstance(exc, ReproError):
                raise
            raise FatalError(
                f"cannot run the container{_signature(exc)}: {' '.join(str(exc).split())[:400]}",
                hint=host_mod.HINTS.get(spec.passthrough, ""),
            ) from None
        new = container_mod.new_run_dirs(results, before)
        where = ", ".join(str(p) for p in new) or "(no run directory was created)"
        if args.keep_container:
            _err(
                f"kept container {outcome.name} (docker logs {outcome.name}; docker rm {outcome.name})"
            )
        if outcome.timed_out:
            _err(
                f"error: container {outcome.name} killed after its {timeout:g} s timeout; every finished case is kept in {where}"
                + ("" if outcome.removed or args.keep_container else "; removing it failed")
            )
            return EXIT_FATAL
        _err(
            f"container exited with status {outcome.exit_code} after {outcome.duration_s:.1f} s; results in {where}"
        )
        if outcome.exit_code in (EXIT_OK, EXIT_CASES_FAILED):
            return int(outcome.exit_code)
        return EXIT_FATAL
    finally:
        shutil.rmtree(fp_dir, ignore_errors=True)


def _shell(
    host: host_mod.Host,
    variant: matrix_mod.Variant,
    options: container_mod.RunOptions,
    dry_run: bool,
) -> int:
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
    _err("docker command (the same passthrough and mounts as the run):")
    _show(spec.command_line)
    _err("inside, this reruns the selected case(s):")
    _show(shlex.join(inner))
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
    Path(options.results_dir).mkdir(parents=True, exist_ok=True)
    return subprocess.call(spec.argv)


# ---------------------------------------------------------------------------------------------
# standalone entry point


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="repro-matrix container lane: build images, detect the host, run cases in containers.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return handle(args)
    except ReproError as exc:
        for line in str(exc).splitlines():
            hint = f"; {exc.hint}" if exc.hint else ""
            print(f"{PROG}: error: {line}{hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
