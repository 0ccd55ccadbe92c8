"""``repro run``: options and printing only; the job itself is ``repro.runner.job``."""

from __future__ import annotations

import argparse
import sys

from repro import config as matrix_mod
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.runner import job
from repro.runner.caselog import DEFAULT_CAP_BYTES, MIN_CAP_BYTES

PROG = "repro"
_MIB = 1024 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand (handler: :func:`cmd_run`)."""
    run = subparsers.add_parser(
        "run", help="run the scenario cases, each in an isolated child process"
    )
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
        help="multiply every case timeout by X, a finite positive number (slow machines)",
    )
    run.add_argument(
        "--log-cap-mib",
        type=float,
        default=DEFAULT_CAP_BYTES / _MIB,
        metavar="MIB",
        help="cap of each case log in MiB; the middle is cut, the tail kept (default: %(default)g)",
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


def options_from(args: argparse.Namespace) -> job.RunOptions:
    """The job's options from parsed arguments; ConfigError for a bad ``--log-cap-mib``."""
    cap = args.log_cap_mib
    if not (cap == cap and cap * _MIB >= MIN_CAP_BYTES and cap < 1024 * 1024):
        raise ConfigError(
            f"--log-cap-mib: expected a number of MiB from {MIN_CAP_BYTES / _MIB:g} to 1048575, got {cap}"
        )
    return job.RunOptions(
        config=args.config,
        patterns=args.patterns,
        variant=args.variant,
        results=args.results,
        run_dir=args.run_dir,
        python=args.python,
        timeout_scale=args.timeout_scale,
        host_fingerprint=args.host_fingerprint,
        doctor=not args.no_doctor,
        properties=args.properties,
        log_cap_bytes=int(cap * _MIB),
    )


def _say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """``repro run``: 0 when every case passed or was skipped, 1 when one is red."""
    from repro.runner.progress import Progress

    options = options_from(args)
    if args.list:
        _config, cases = job.select_cases(options)
        for case in cases:
            print(case.case_id)
        return EXIT_OK
    summary = job.run_job(options, _say, Progress())
    counts = ", ".join(f"{outcome}: {n}" for outcome, n in summary.counts().items())
    _say(f"{counts}  ({summary.run_dir / 'junit.xml'})")
    return EXIT_CASES_FAILED if summary.red else EXIT_OK
