"""``repro run``: options and printing only; the job itself is ``repro.runner.job``."""

from __future__ import annotations

import argparse
import sys

from repro import config as matrix_mod
from repro.cli import options, resolve
from repro.errors import EXIT_CASES_FAILED, EXIT_OK
from repro.runner import job
from repro.runner.caselog import DEFAULT_CAP_BYTES

PROG = "repro"
_MIB = 1024 * 1024


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand (handler: :func:`cmd_run`); options from :mod:`.options`."""
    run = subparsers.add_parser(
        "run", help="run the scenario cases, each in an isolated child process"
    )
    options.add(run, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(
        run, "patterns", "list", "json", "as_variant", "allow_variant_mismatch", "run_dir", "python"
    )
    options.add(run, "results_dir", "timeout_scale")
    options.add(run, "log_cap_mib", default=DEFAULT_CAP_BYTES / _MIB)
    options.add(
        run,
        "fingerprint",
        "no_doctor",
        "expect_accelerator",
        "rerun_failures",
        "rounds",
        "properties",
        "isolation",
    )
    options.add(run, "jobs")
    run.set_defaults(handler=cmd_run)


def _say(line: str) -> None:
    from repro.runner.progress import fit_to_terminal

    print(fit_to_terminal(f"{PROG}: {line}", sys.stderr), file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """``repro run``: 0 when every red case was an expected reproduction (a scenario's ``EXPECT``
    or matrix.yaml's ``expect:``), 1 on an unexpected red, a strict entry's case that passed or
    a failed doctor check (``repro.errors.EXIT_CODES``)."""
    from repro.runner.progress import Progress

    run_options = resolve.run(args)
    if args.list:
        config, cases = job.select_cases(run_options)
        if run_options.as_variant:  # refused (or warned about) exactly as a run under it would be
            fp = job.fingerprint_host(run_options)
            job.checked_variant(config, run_options, fp, _say, "a run records under it anyway")
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
    totals = summary.totals()
    _say(totals.line())
    _say(f"results: {summary.run_dir / 'junit.xml'}")
    if args.json:
        options.print_json(
            {
                "run_dir": str(summary.run_dir.resolve()),
                "junit": str(summary.run_dir.resolve() / "junit.xml"),
                "red": bool(summary.red),
                "totals": totals.line(),
                "counts": totals.to_json(),
                "cases": [
                    {
                        "id": r.case_id,
                        "scenario": r.scenario,
                        "outcome": r.outcome.value,
                        "signature": r.signature or None,
                        "expect": r.expect.status if r.expect is not None else None,
                    }
                    for r in summary.results
                ],
            }
        )
    return EXIT_CASES_FAILED if summary.red else EXIT_OK
