"""``repro run``: options and printing only; the job itself is ``repro.runner.job``."""

from __future__ import annotations

import argparse
import sys

from repro import bounds
from repro import config as matrix_mod
from repro.errors import EXIT_CASES_FAILED, EXIT_OK
from repro.outcomes import totals_line
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
        job.ALLOW_MISMATCH_FLAG,
        action="store_true",
        help="with --variant: record the results under it even when its torch pin or runtime "
        "is not this interpreter's (otherwise refused, exit 2)",
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
        "--no-expect-accelerator",
        dest="expect_accelerator",
        action="store_false",
        help="with --variant: a cuda/rocm case whose torch sees no device is skipped, not failed "
        "as accelerator_unavailable (`repro venv-run` passes it on a host with no GPU of the "
        "variant's kind)",
    )
    run.add_argument(
        "--rerun-failures",
        type=int,
        default=0,
        metavar="N",
        help="rerun each red case up to N times in a fresh process; a case that then passes is "
        "recorded as flaky (repro.flaky=true), one red every time as deterministic (default: 0)",
    )
    run.add_argument(
        "--property",
        dest="properties",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra testsuite property, e.g. variant.image=sha256:... (repeatable)",
    )
    run.add_argument(
        "--isolation",
        choices=("fresh", "zygote", "auto"),
        default="auto",
        help="fresh: a new interpreter per case; zygote: fork each case from a pre-imported one; auto: zygote unless the scenario declares FRESH (default: %(default)s)",
    )
    run.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="run up to N cases at once; cases declaring EXCLUSIVE (timing, fixed ports, a whole "
        "device) run alone, junit.xml and progress stay in catalogue order (default: 1 on a GPU "
        "lane, else the usable CPU cores, each case then getting cores/N torch threads)",
    )
    run.set_defaults(handler=cmd_run)


def options_from(args: argparse.Namespace) -> job.RunOptions:
    """The job's options from parsed arguments; ConfigError for a bad ``--log-cap-mib``."""
    cap = bounds.log_cap_mib(MIN_CAP_BYTES).check(args.log_cap_mib, "--log-cap-mib")
    bounds.RERUNS.check(args.rerun_failures, "--rerun-failures")
    if args.jobs is not None:
        bounds.JOBS.check(args.jobs, "-j/--jobs")
    return job.RunOptions(
        jobs=args.jobs,
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
        isolation=args.isolation,
        rerun_failures=args.rerun_failures,
        allow_variant_mismatch=args.allow_variant_mismatch,
        expect_accelerator=args.expect_accelerator,
    )


def _say(line: str) -> None:
    from repro.runner.progress import fit_to_terminal

    print(fit_to_terminal(f"{PROG}: {line}", sys.stderr), file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """``repro run``: 0 when every case passed or was skipped, 1 when one is red."""
    from repro.runner.progress import Progress

    options = options_from(args)
    if args.list:
        config, cases = job.select_cases(options)
        if options.variant:  # refused (or warned about) exactly as a run under it would be
            fp = job.fingerprint_host(options)
            job.checked_variant(config, options, fp, _say, "a run records under it anyway")
        for case in cases:
            print(case.case_id)
        return EXIT_OK
    progress = Progress()
    summary = job.run_job(options, _say, progress)
    progress.run_finished(summary.results, summary.run_dir)
    _say(totals_line(summary.results))
    _say(f"results: {summary.run_dir / 'junit.xml'}")
    return EXIT_CASES_FAILED if summary.red else EXIT_OK
