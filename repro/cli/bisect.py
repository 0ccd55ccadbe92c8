"""``repro bisect``: options and printing only; the search is ``repro.bisect``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from repro import config as matrix_mod
from repro.cli import options
from repro.cli import venv as venv_cli
from repro.errors import EXIT_CASES_FAILED, EXIT_OK, ConfigError

#: Bisect results go here by default, apart from results/: a step's run recorded as a variant
#: must never become a cell of the matrix (two torch 2.14.x steps would share one column).
DEFAULT_ROOT = "results-bisect"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``bisect`` (handler: :func:`cmd_bisect`)."""
    parser = subparsers.add_parser(
        "bisect",
        help="find the first bad release between a good and a bad version, judged by signature",
        description="Over the versions the index really serves from --good to --bad, run the "
        "cases chosen with -k (a `script:` case of matrix.yaml too) in a venv-lane environment "
        "per version, N times each. The regression is what the bad end does that the good end "
        "does not (outcome and signature); a step is bad only when it reproduces it, skipped "
        "for infrastructure (install failure, no wheel for this Python, infra.* signatures), "
        "flaky when its runs disagree, 'other' for another failure: none of those decide.",
    )
    options.add(parser, "good", "bad", required=True)
    options.add(parser, "package")
    options.add(parser, "config", default=matrix_mod.DEFAULT_FILE)
    options.add(parser, "patterns", "variants", "with_", "repeat", "results_dir")
    options.add(parser, "timeout_scale", "dry_run", "json")
    venv_cli.add_source_arguments(parser)
    parser.set_defaults(handler=cmd_bisect)


def make_plan(args: argparse.Namespace):  # -> repro.bisect.run.Plan
    """The plan from the options. ConfigError for no ``-k``, a selector matching nothing, a
    non-torch package without ``--variant``, ends the index does not serve."""
    from packaging.utils import canonicalize_name

    from repro.bisect import run as bisect_run
    from repro.bisect import versions
    from repro.containers.build_settings import SOURCE_ROOT
    from repro.envs import lane
    from repro.envs.spec import EnvSpec, project_spec_fields

    if not args.patterns:
        raise ConfigError(
            "repro bisect: choose the cases with -k PATTERN (a scenario case or a script: entry)"
        )
    bisect_run.check_repeats(args.repeat)
    config = matrix_mod.load(args.config)
    cases = matrix_mod.select_cases(config.cases(), args.patterns)
    scale = args.timeout_scale or 1.0
    overrides = venv_cli.overrides_from(args)
    options = venv_cli.source_options(args)
    package = args.package.strip()
    is_torch = canonicalize_name(package) == "torch"
    args.variant = _one_variant(config, args.variants)
    if not is_torch and not args.variant:
        raise ConfigError(
            f"repro bisect --package {package}: name the variant the steps are recorded as "
            "(--variant ID_OR_GLOB); add --with torch==PIN to hold torch at a pin"
        )
    no_accelerator = None
    if args.variant:
        variant = overrides.apply(config.variant(args.variant))
        python = variant.python
        # torch comes from the variant's wheel index; another package is listed and installed
        # where it comes from: the configured index (--index-url, $REPRO_INDEX_URL, else uv's
        # default), --find-links, the wheelhouse (issue 32: not the variant's torch index)
        configured = "index_url" in overrides.values
        index_url = variant.index_url if is_torch or configured else None
        no_accelerator = lane.missing_accelerator(variant.accelerator)
    else:
        python = overrides.values.get("python") or bisect_run.host_python()
        index_url = overrides.values.get("index_url")
    source = lane.source_for(index_url, overrides.values.get("wheelhouse"), options, "--wheelhouse")
    served = versions.served_versions(package, source)
    chosen = [str(v) for v in versions.between(served, args.good, args.bad)]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    results = Path(args.results_dir or Path(DEFAULT_ROOT) / f"{stamp}-{package}").resolve()
    base = EnvSpec(
        python=python, pinned=(), source=source, **project_spec_fields(Path(SOURCE_ROOT).resolve())
    )  # type: ignore[arg-type]
    return bisect_run.Plan(
        package=package,
        versions=chosen,
        base=base,
        with_=tuple(args.with_),
        config=str(Path(args.config).resolve()),
        patterns=tuple(args.patterns),
        variant=args.variant,
        repeats=args.repeat,
        results=results,
        step_timeout_s=bisect_run.step_timeout([c.timeout_s * scale for c in cases]),
        timeout_scale=args.timeout_scale,
        env_cache=Path(args.env_cache).expanduser() if args.env_cache else None,
        no_accelerator=no_accelerator,
    )


def _one_variant(config: matrix_mod.Matrix, selectors: list[str] | None) -> str | None:
    """The one matrix.yaml variant id ``--variant`` selects (ids or globs), None when not given.
    ConfigError when they match none (with "did you mean") or more than one."""
    if not selectors:
        return None
    variants = config.select_variants(selectors)
    if len(variants) != 1:
        raise ConfigError(
            f"bisect: --variant must select exactly one variant ({len(variants)} matched: "
            f"{', '.join(v.id for v in variants)})"
        )
    return variants[0].id


def cmd_bisect(args: argparse.Namespace) -> int:
    """0 when the first bad version was found, 1 when the search could not decide (or stopped
    at the ends), 2 for bad input, 3 when it cannot go on."""
    from repro.bisect import render
    from repro.bisect import run as bisect_run

    plan = make_plan(args)
    if plan.no_accelerator:
        venv_cli.say(f"{plan.no_accelerator}: the {plan.variant} steps skip its GPU cases")
    if args.dry_run:
        command = bisect_run.run_command(
            plan, "<env>/bin/python", "<key>", "<version>", plan.results / "<step>"
        )
        sys.stdout.write(render.plan_text(plan, command))
        return EXIT_OK
    if plan.results.exists() and any(plan.results.iterdir()):
        raise ConfigError(
            f"--results-dir {plan.results}: not empty; a bisect writes into a fresh directory"
        )
    plan.results.mkdir(parents=True, exist_ok=True)
    venv_cli.say(
        f"bisect {plan.package}: {len(plan.versions)} versions from {plan.versions[0]} to "
        f"{plan.versions[-1]}, {plan.repeats} run(s) each; results -> {plan.results}"
    )
    result = bisect_run.Bisect(plan, venv_cli.say).run()
    data = render.to_json(result)
    text = render.markdown(result)
    bisect_run.write_result(result, data, text)
    if args.json:
        options.print_json(data)
    else:
        sys.stdout.write(text)
    return EXIT_OK if data["found"] else EXIT_CASES_FAILED
