"""``repro run``: options and printing only; the job itself is ``repro.runner.job``."""

from __future__ import annotations

import argparse
import sys

from repro import config as matrix_mod
from repro.cli import options
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError
from repro.outcomes import totals_line
from repro.runner import job
from repro.runner.caselog import DEFAULT_CAP_BYTES, MIN_CAP_BYTES

PROG = "repro"
_MIB = 1024 * 1024
#: Upper bound of ``-j``: beyond it a host runs out of memory long before it gains speed.
MAX_JOBS = 256
#: Upper bound of ``--rerun-failures``: a hung case costs its whole timeout on every rerun.
MAX_RERUNS = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand (handler: :func:`cmd_run`); options from :mod:`.options`."""
    run = subparsers.add_parser(
        "run", help="run the scenario cases, each in an isolated child process"
    )
    options.add(run, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(run, "patterns", "list", "json", "as_variant", "results_dir", "run_dir", "python")
    options.add(run, "timeout_scale")
    options.add(run, "log_cap_mib", default=DEFAULT_CAP_BYTES / _MIB)
    options.add(run, "fingerprint", "no_doctor", "rerun_failures", "properties", "isolation")
    options.add(run, "jobs")
    run.set_defaults(handler=cmd_run)


def options_from(args: argparse.Namespace) -> job.RunOptions:
    """The job's options from parsed arguments; ConfigError for a bad ``--log-cap-mib``."""
    cap = args.log_cap_mib
    if not (cap == cap and cap * _MIB >= MIN_CAP_BYTES and cap < 1024 * 1024):
        raise ConfigError(
            f"--log-cap-mib: expected a number of MiB from {MIN_CAP_BYTES / _MIB:g} to 1048575, got {cap}"
        )
    if not 0 <= args.rerun_failures <= MAX_RERUNS:
        raise ConfigError(
            f"--rerun-failures: expected a whole number from 0 to {MAX_RERUNS}, got {args.rerun_failures}"
        )
    if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
        raise ConfigError(
            f"-j/--jobs: expected a whole number from 1 to {MAX_JOBS}, got {args.jobs}"
        )
    return job.RunOptions(
        jobs=args.jobs,
        config=args.config,
        patterns=args.patterns,
        variant=args.as_variant,
        results=args.results_dir,
        run_dir=args.run_dir,
        python=args.python,
        timeout_scale=args.timeout_scale,
        host_fingerprint=args.fingerprint,
        doctor=not args.no_doctor,
        properties=args.properties,
        log_cap_bytes=int(cap * _MIB),
        isolation=args.isolation,
        rerun_failures=args.rerun_failures,
    )


def _say(line: str) -> None:
    from repro.runner.progress import fit_to_terminal

    print(fit_to_terminal(f"{PROG}: {line}", sys.stderr), file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """``repro run``: 0 when every case passed or was skipped, 1 when one is red."""
    from repro.runner.progress import Progress

    run_options = options_from(args)
    if args.list:
        _config, cases = job.select_cases(run_options)
        if args.json:
            options.print_json(
                {"cases": [{"id": c.case_id, "scenario": c.scenario} for c in cases]}
            )
            return EXIT_OK
        for case in cases:
            print(case.case_id)
        return EXIT_OK
    progress = Progress()
    summary = job.run_job(run_options, _say, progress)
    progress.run_finished(summary.results, summary.run_dir)
    _say(totals_line(summary.results))
    _say(f"results: {summary.run_dir / 'junit.xml'}")
    if args.json:
        options.print_json(
            {
                "run_dir": str(summary.run_dir.resolve()),
                "junit": str(summary.run_dir.resolve() / "junit.xml"),
                "red": bool(summary.red),
                "cases": [
                    {
                        "id": r.case_id,
                        "scenario": r.scenario,
                        "outcome": r.outcome.value,
                        "signature": r.signature or None,
                    }
                    for r in summary.results
                ],
            }
        )
    return EXIT_CASES_FAILED if summary.red else EXIT_OK
