"""The ``repro report`` and ``repro compare`` commands: arguments, the calls, what is printed.

``register(subparsers)`` adds both; each sets ``handler`` (``args -> exit status``) that
``repro.cli.main`` dispatches to. Errors are raised (``ConfigError`` exit 2, ``FatalError`` exit
3) and printed by the one error boundary in ``repro.cli.main``; a regression is exit 1.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import Any

from repro import bounds
from repro.cli import options
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError, FatalError
from repro.junit.files import file_kind
from repro.report import compare as compare_mod
from repro.report import sides
from repro.report.annotations import github_annotations
from repro.report.history import archive_previous, load_history
from repro.report.merge import build_report, report_totals
from repro.report.model import STATE_INVALID, Report
from repro.report.outputs import write_outputs
from repro.report.stream import read_states


def register(subparsers: Any) -> None:
    """Add the ``report`` and ``compare`` subcommands to an ``add_subparsers()`` object."""
    report = subparsers.add_parser(
        "report",
        help="merge JUnit files into matrix.json, matrix.md and matrix.html",
        description="Merge JUnit XML results (directories are searched for *.xml) into "
        "matrix.json, matrix.md and matrix.html; --config applies its expect: entries and the "
        "scenarios' EXPECT (as `repro run` does). Exit 0 when the outputs are written, even with "
        "problems (each is listed), unless --fail-on-problems: then 1 on an unexpected red, a "
        "strict entry's pass, a failed doctor check or an invalid input; 2 for a missing input, "
        "no JUnit file at all or a bad --config/--history; 3 when outputs cannot be written.",
    )
    _report_arguments(report)
    report.set_defaults(handler=run_report)
    compare = subparsers.add_parser(
        "compare",
        help="compare two result sets: regressions, fixes, new signatures, throughput drops",
        description="Compare a baseline matrix with a candidate: regressions (pass -> anything "
        "else), fixes, new or changed signatures, cases that appeared or vanished, throughput "
        "drops past the threshold and the runs' own spread (drops within the spread are listed "
        "apart). BASE and CAND are matrix.json files or results directories; --base-run and "
        "--cand-run pool more runs of the same build into a side, so the spread between runs "
        "is weighed (one run per side cannot show it). Exit 1 on a "
        "regression, 2 for bad input, 3 when the Markdown file cannot be written.",
    )
    _compare_arguments(compare)
    compare.set_defaults(handler=run_compare)


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    options.add(parser, "inputs")
    options.add(parser, "output_dir", default=".")
    options.add(parser, "config", "history", "predict", "coverage", "json", "github_annotations")
    options.add(parser, "fail_on_problems")


def _compare_arguments(parser: argparse.ArgumentParser) -> None:
    options.add(parser, "base", "cand", "base_runs", "cand_runs", "json", "markdown")
    options.add(parser, "threshold", default=compare_mod.DEFAULT_THRESHOLD * 100)
    options.add(parser, "config", "fail_on_throughput")


def _load_config(path: Path | None) -> Any:
    """The loaded ``--config`` matrix file, or None. A FIFO, device or directory is refused before
    anything opens it (opening a FIFO would block). Raises ConfigError."""
    if path is None:
        return None
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"--config {path}: expected a regular file, got a {file_kind(mode)}")
    from repro import config as matrix_mod

    return matrix_mod.load(path)


def run_report(args: argparse.Namespace) -> int:
    """``repro report``: merge, print each problem and warning, archive the previous matrix.json
    (``--history``), write the outputs, print their paths and the totals line. Returns 0, or 1
    with ``--fail-on-problems`` when the totals line counts a problem or an input is invalid.

    Raises ConfigError (bad input) or FatalError (outputs not writable).
    """
    if args.json and args.github_annotations:
        raise ConfigError("--github-annotations: not with --json (both print to standard output)")
    config = _load_config(args.config)
    args.inputs = [Path(p) for p in args.inputs]
    args.output = Path(args.output_dir)
    history, previous, notes = None, None, []
    if args.history is not None:
        history, notes = load_history(Path(args.history))
        previous_path = args.output / "matrix.json"
        if previous_path.is_file():
            try:
                previous = read_states(previous_path)
            except ConfigError as exc:
                notes.append(f"history: {exc}; not kept")
        if previous is not None and not any(
            h.get("generated_at") == previous.get("generated_at") and h == previous for h in history
        ):
            history.append(previous)
    report = build_report(
        args.inputs,
        config=config,
        history=history,
        predict=args.predict,
        coverage=args.coverage,
    )
    if not report.inputs:  # nothing to merge: an empty matrix would read as "all clear"
        where = ", ".join(str(path) for path in args.inputs)
        raise ConfigError(f"{where}: no JUnit XML files (*.xml) found; nothing to report")
    for path, reason in report.problems:
        print(f"repro report: {path}: {reason}", file=sys.stderr)
    for line in notes + report.warnings:
        print(f"repro report: warning: {line}", file=sys.stderr)
    try:
        if previous is not None:
            archive_previous(args.output, Path(args.history), previous)
        written = write_outputs(report, args.output)
    except OSError as exc:
        where = exc.filename or args.output
        raise FatalError(f"cannot write {where}: {exc.strerror or exc}") from None
    totals = report_totals(report)
    failing = args.fail_on_problems and bool(totals.problem_count or _invalid_inputs(report))
    if args.json:
        options.print_json(
            {
                "written": [str(p) for p in written],
                "totals": totals.line(),
                "counts": totals.to_json(),
                "problems": [{"path": str(p), "reason": r} for p, r in report.problems],
                "warnings": notes + list(report.warnings),
                "failed_on_problems": failing,
            }
        )
        return EXIT_CASES_FAILED if failing else EXIT_OK
    for path in written:
        print(path)
    print(totals.line())
    if args.github_annotations:
        for line in github_annotations(report):
            print(line)
    if failing:
        invalid = _invalid_inputs(report)
        why = [f"{totals.problem_count} problem(s)"] if totals.problem_count else []
        why += [f"{invalid} invalid input file(s)"] if invalid else []
        print(f"repro report: exit 1 (--fail-on-problems): {', '.join(why)}", file=sys.stderr)
    return EXIT_CASES_FAILED if failing else EXIT_OK


def _invalid_inputs(report: Report) -> int:
    """Input files that could not be read as results (a truncated or foreign file)."""
    return sum(1 for record in report.inputs if record.state == STATE_INVALID)


def run_compare(args: argparse.Namespace) -> int:
    """``repro compare``: print the comparison (Markdown, or JSON with ``--json``), optionally
    write the Markdown; returns 1 on a regression (``compare.exit_code``), else 0.

    Raises ConfigError (bad input, exit 2) or FatalError (``--markdown`` not writable, exit 3).
    """
    bounds.THRESHOLD_PCT.check(args.threshold, "--threshold")
    config = _load_config(args.config)
    args.base, args.cand = Path(args.base), Path(args.cand)
    try:
        base = sides.load_sides([args.base, *map(Path, args.base_runs)], config)
        cand = sides.load_sides([args.cand, *map(Path, args.cand_runs)], config)
    except OSError as exc:
        raise ConfigError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    result = compare_mod.compare(
        base,
        cand,
        threshold=args.threshold / 100,
        base_name=str(args.base),
        cand_name=str(args.cand),
    )
    del base, cand  # the indexes are done with: only the result is kept (bounded memory)
    markdown = (
        compare_mod.render_markdown(result) if args.markdown is not None or not args.json else ""
    )
    if args.json:
        options.print_json(result)  # written as it is encoded
    else:
        print(markdown, end="")
    if args.markdown is not None:
        try:
            Path(args.markdown).write_text(markdown, encoding="utf-8")
        except OSError as exc:
            raise FatalError(f"cannot write {args.markdown}: {exc.strerror or exc}") from None
    return compare_mod.exit_code(result, fail_on_throughput=args.fail_on_throughput)
