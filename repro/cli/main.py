"""The ``repro`` command line: builds the parser from the command modules and holds THE one
error boundary.

Contract for a command module (``repro/cli/<name>.py``): ``register(subparsers)`` adds its
subcommand(s) with ``subparsers.add_parser(...)`` and ``parser.set_defaults(handler=FUNC)``,
where ``FUNC(args: argparse.Namespace) -> int`` returns the exit status (0 ok, 1 red cases or
a regression) and raises :class:`repro.errors.ConfigError` (2) or
:class:`repro.errors.FatalError` (3) for everything else; it never catches them itself and
never calls ``sys.exit``. :func:`main` dispatches ``args.handler(args)`` and turns every error
into one line on stderr and its exit status (the table is :data:`repro.errors.EXIT_CODES`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import repro
from repro import config as matrix_mod
from repro.cli import check as check_cmd
from repro.cli import classify as classify_cmd
from repro.cli import docker
from repro.cli import host as host_cmd
from repro.cli import plan as plan_cmd
from repro.cli import report as report_cmd
from repro.errors import (
    EXIT_CASES_FAILED,
    EXIT_CODES,
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    ConfigError,
    FatalError,
    ReproError,
    unexpected,
)

PROG = "repro"
#: Set to 1 to get the traceback of an unexpected exception instead of its one line.
DEBUG_ENV = "REPRO_DEBUG"


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (``repro run: error: ...``) and exit status 2,
    like every other bad input; subparsers inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CONFIG, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _epilog() -> str:
    codes = "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)
    return (
        "Typical host run: repro run && repro report results -o .   (see README.md)\n\n"
        f"exit status:\n{codes}\n\n"
        f"Errors are one line on stderr; {DEBUG_ENV}=1 shows the traceback of an unexpected one."
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``repro`` parser: every subcommand sets ``handler`` (see the module docstring)."""
    parser = Parser(
        prog=PROG,
        description="Reproduce machine-dependent PyTorch failures in isolated processes and merge the results into a compatibility matrix.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"repro-matrix {repro.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # One register() per command module; the commands still defined below keep theirs here.
    plan_cmd.register(sub)
    check_cmd.register(sub)
    host_cmd.register(sub)
    _register_run(sub)
    report_cmd.register(sub)
    classify_cmd.register(sub)
    docker.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the command's handler, and map every outcome to an exit status.

    The one error boundary: ReproError -> its line(s) and ``exit_code``; Ctrl-C -> 130;
    a closed stdout pipe (``repro run --list | head``) -> 0; any other exception (an OSError
    such as ENOSPC/EROFS/EACCES mid-run, or a bug) -> one line and 3, with the traceback only
    when ``REPRO_DEBUG=1``.
    """
    args = build_parser().parse_args(argv)
    try:
        code = args.handler(args)
        _flush_stdout()  # a full disk under `> out.json` fails here, inside the boundary
        return code
    except ReproError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        _silence_stdout()
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader left, not an error
        _silence_stdout()
        return EXIT_OK
    except Exception as exc:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        return _fail(unexpected(exc))


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise FatalError(f"cannot write standard output: {unexpected(exc)}") from None


def _fail(exc: ReproError) -> int:
    _silence_stdout()
    hint = f"; {exc.hint}" if exc.hint else ""
    lines = str(exc).splitlines() or [type(exc).__name__]
    for line in lines:
        print(f"{PROG}: error: {line}{hint}", file=sys.stderr)
    return exc.exit_code


def _silence_stdout() -> None:
    """Drop what is left in stdout's buffer when it cannot be written (a closed pipe, a full
    disk), so the interpreter's exit does not fail on it a second time."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# ---------------------------------------------------------------------------------------------
# run (moves to repro/cli/run.py)


def _register_run(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run the scenario cases, each in an isolated child process")
    matrix_mod.add_config_argument(run)
    matrix_mod.add_case_selector_argument(run)
    run.add_argument("--list", action="store_true", help="list the selected case ids and exit")
    run.add_argument(
        "--variant",
        metavar="ID",
        help="record results as this matrix.yaml variant (used inside its image); default: derived from the interpreter's torch build",
    )
    run.add_argument(
        "--results",
        metavar="DIR",
        help="results root (default: defaults.results_dir in the matrix file, else 'results')",
    )
    run.add_argument(
        "--run-dir",
        metavar="DIR",
        help="write into this existing, empty directory (its name is the run id) instead of a new one under --results; the container lane mounts only it",
    )
    run.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that runs the cases (default: this one)",
    )
    run.add_argument(
        "--timeout-scale",
        type=float,
        metavar="X",
        help="multiply every case timeout by X (slow machines)",
    )
    run.add_argument(
        "--host-fingerprint",
        metavar="FILE",
        help="fingerprint JSON collected on the host (inside a container: key the results by the real host, not the image)",
    )
    run.add_argument(
        "--no-doctor",
        action="store_true",
        help="skip the health pre-flight (otherwise its findings are the run's 'doctor' testsuite)",
    )
    run.add_argument(
        "--property",
        dest="properties",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra testsuite property, e.g. variant.image=sha256:... (repeatable)",
    )
    run.set_defaults(handler=cmd_run)


def _host_variant(fp: dict[str, Any]) -> dict[str, Any]:
    """The variant a host-lane run belongs to, derived from the interpreter's torch build."""
    from repro.host import fingerprint

    torch_version = (fp.get("runtime") or {}).get("torch")
    if not torch_version:
        why = next(
            (u["why"] for u in fp.get("unreadable", []) if u.get("what") == "torch"),
            "torch not importable",
        )
        raise FatalError(
            f"the interpreter under test has no usable torch ({why})",
            hint="install the torch build to test, e.g. pip install torch==2.13.0",
        )
    runtime = fingerprint.runtime_tag(fp)
    return {
        "id": matrix_mod.canonical_id(runtime, torch_version),
        "runtime": runtime,
        "torch": torch_version,
        "accelerator": matrix_mod.accelerator_of(runtime),
        "source": "host",
    }


def _parse_properties(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--property: expected NAME=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


def _read_json(path: str, option: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{option} {path}: expected a fingerprint JSON object: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("host"), dict):
        raise ConfigError(
            f"{option} {path}: expected a fingerprint JSON object with a 'host' section"
        )
    return data


def merge_host_fingerprint(host_fp: dict[str, Any], inner_fp: dict[str, Any]) -> dict[str, Any]:
    """Fingerprint of a run inside a container: host, GPUs and driver as the host sees them
    (they key the matrix row), runtime (torch build, visible devices) as the container sees it,
    and the container's own OS/glibc/Python under ``container``."""
    merged = dict(inner_fp)
    for section in ("host", "gpus", "driver"):
        if section in host_fp:
            merged[section] = host_fp[section]
    inner_host = inner_fp.get("host") or {}
    merged["container"] = {
        key: inner_host.get(key) for key in ("os", "glibc", "python", "container")
    }
    merged["unreadable"] = list(inner_fp.get("unreadable") or []) + [
        dict(u, what=f"host:{u.get('what')}") for u in host_fp.get("unreadable") or []
    ]
    return merged


def _given_run_dir(run_dir: Path) -> tuple[str, Path]:
    """``--run-dir``: (run id = the directory's name, the directory), which must exist and be
    empty, so a run never mixes into (or overwrites) another run's results."""
    if not run_dir.is_dir():
        raise ConfigError(f"--run-dir {run_dir}: not a directory")
    if any(run_dir.iterdir()):
        raise ConfigError(f"--run-dir {run_dir}: not empty; a run writes into a fresh directory")
    return run_dir.name, run_dir


def cmd_run(args: argparse.Namespace) -> int:
    from repro.host import fingerprint
    from repro.outcomes import OUTCOME_ORDER
    from repro.runner import executor as runner
    from repro.runner.progress import Progress

    config = matrix_mod.load(args.config)
    cases = matrix_mod.select_cases(config.cases(), args.patterns)
    if args.timeout_scale:
        if args.timeout_scale <= 0:
            raise ConfigError(
                f"--timeout-scale: expected a positive number, got {args.timeout_scale}"
            )
        cases = [dataclasses.replace(c, timeout_s=c.timeout_s * args.timeout_scale) for c in cases]
    if args.list:
        for case in cases:
            print(case.case_id)
        return EXIT_OK

    extra_properties = _parse_properties(args.properties)
    print(f"{PROG}: fingerprinting {args.python} ...", file=sys.stderr, flush=True)
    fp = fingerprint.collect(python=args.python).to_json()
    if args.host_fingerprint:
        fp = merge_host_fingerprint(_read_json(args.host_fingerprint, "--host-fingerprint"), fp)
    if args.variant:
        variant = dict(config.variant(args.variant).as_dict(), source="matrix")
    else:
        variant = _host_variant(fp)
    if args.run_dir:
        run_id, run_dir = _given_run_dir(Path(args.run_dir))
    else:
        results_root = Path(args.results or config.results_dir)
        try:
            run_id, run_dir = runner.new_run_dir(results_root, variant["id"])
        except OSError as exc:
            raise FatalError(
                f"cannot create a run directory under {results_root}: {exc.strerror or exc}"
            ) from None

    host_key = fingerprint.host_key(fp)
    (run_dir / "fingerprint.json").write_text(json.dumps(fp, indent=2, sort_keys=True) + "\n")
    suite_properties = dict(fingerprint.to_properties(fp))
    suite_properties.update(
        {
            f"variant.{k}": str(v)
            for k, v in variant.items()
            if isinstance(v, (str, int, float)) and v is not None
        }
    )
    suite_properties.update(
        {"repro.run_id": run_id, "repro.version": repro.__version__, "host.key": host_key}
    )
    for section, values in (fp.get("container") or {}).items():
        if values is not None:
            suite_properties[f"container.{section}"] = str(values)
    suite_properties.update(extra_properties)
    run_info = {
        "schema": 1,
        "run_id": run_id,
        "variant": {k: variant[k] for k in ("id", "runtime", "torch", "accelerator", "source")},
        "host_key": host_key,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": None,
        "repro_version": repro.__version__,
    }
    ctx = runner.RunContext(
        run_dir=run_dir,
        fingerprint=fp,
        suite_properties=suite_properties,
        run_info=run_info,
        python=args.python,
        expect_accelerator=variant["source"] == "matrix" and variant["accelerator"] != "cpu",
        env=dict(variant.get("env") or {}),
    )
    print(
        f"{PROG}: run {run_id}: {len(cases)} cases, variant {variant['id']} (torch {variant['torch']}), host {host_key}",
        file=sys.stderr,
    )
    print(f"{PROG}: results -> {run_dir}", file=sys.stderr, flush=True)
    preflight = []
    if not args.no_doctor:
        from repro.host import doctor

        findings = doctor.run_checks(fp)
        for finding in findings:
            if finding.status in (doctor.WARN, doctor.FAIL):
                print(
                    f"{PROG}: doctor: {finding.check} {finding.status}: {finding.detail}",
                    file=sys.stderr,
                )
        preflight = doctor.to_results(findings, doctor.write_log(run_dir, findings))
    results = runner.run_all(ctx, cases, Progress(), preflight=preflight)

    counts = {o: sum(1 for r in results if r.outcome is o) for o in OUTCOME_ORDER}
    print(
        f"{PROG}: "
        + ", ".join(f"{o.value}: {n}" for o, n in counts.items())
        + f"  ({run_dir / 'junit.xml'})",
        file=sys.stderr,
    )
    return EXIT_CASES_FAILED if any(r.outcome.is_problem for r in results) else EXIT_OK
