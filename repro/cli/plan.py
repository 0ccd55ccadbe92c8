"""``repro plan``: print the selected variants, cases and effective settings of matrix.yaml.

Parsing and printing only: the model comes from :mod:`repro.config`. ``--json`` is the
machine-readable plan a CI job matrix is built from; tests/fixtures/plan/plan.json is its golden
copy for the checked-in matrix.yaml.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from repro import config
from repro.cli import options
from repro.compat import check as compat_check
from repro.config import github_plan
from repro.errors import EXIT_OK, ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` subcommand (handler :func:`run`); options from :mod:`.options`."""
    plan = subparsers.add_parser(
        "plan", help="print the selected variants, cases and effective settings"
    )
    options.add(plan, "config", default=config.DEFAULT_FILE)
    options.add(plan, "variants", "json", "github", "tier")
    plan.set_defaults(handler=run)


def build(matrix: config.Matrix, selectors: list[str] | None) -> dict[str, Any]:
    """The plan as a JSON-ready dict: config path, defaults, selected variants, scenarios with
    their case counts and timeouts (seconds), total cases and runner labels.

    Raises ConfigError when a variant selector matches nothing."""
    variants = matrix.select_variants(selectors)
    scenarios = [
        {
            "name": s.name,
            "enabled": s.enabled,
            "module": s.module,
            "cases": len(s.cases(matrix.timeout_scale)) if s.enabled else 0,
            "timeout_s": s.timeout_s,
            "params": {k: list(v) for k, v in s.params.items()},
        }
        for s in matrix.scenarios
    ]
    return {
        "config": str(matrix.path),
        "defaults": dict(matrix.defaults),
        "variants": [v.as_dict() for v in variants],
        "scenarios": scenarios,
        "cases": sum(s["cases"] for s in scenarios),
        "runners": {k: list(v) for k, v in matrix.runners.items()},
    }


def warn_stale_pins(matrix: config.Matrix) -> None:
    """One warning line on stderr when matrix.yaml's newest torch pin is older than the newest
    release in the shipped compat facts (exit status unchanged)."""
    message = compat_check.stale_pins([v.torch for v in matrix.variants])
    if message:
        print(f"repro plan: warning: {matrix.path}: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Print the plan (text, or JSON with ``--json``). Returns 0 (also after the stale-pins
    warning on stderr); raises ConfigError."""
    matrix = config.load(args.config)
    if args.tier and not args.github:
        raise ConfigError("--tier: only with --github (the tier picks the CI jobs)")
    if args.github:
        jobs = github_plan.plan_github(matrix, args.tier, args.variants)
        warn_stale_pins(matrix)
        print(json.dumps(jobs))
        return EXIT_OK
    plan = build(matrix, args.variants)
    warn_stale_pins(matrix)
    if args.json:
        options.print_json(plan)
        return EXIT_OK
    print(f"matrix: {matrix.path}")
    print("defaults: " + ", ".join(f"{k}={v}" for k, v in sorted(matrix.defaults.items())))
    print(f"variants ({len(plan['variants'])}):")
    for v in plan["variants"]:
        print(
            f"  {v['id']:<22} torch {v['torch']:<8} {v['accelerator']:<4} python {v['python']:<5} "
            f"{v['base_image']}  index {v['index_url']}  mem {v['mem_limit'] or 'default'}  pids {v['pids_limit'] or 'default'}"
        )
    print(f"scenarios ({plan['cases']} cases):")
    for s in plan["scenarios"]:
        state = f"{s['cases']} cases" if s["enabled"] else "disabled"
        timeout = f", timeout {s['timeout_s']:g} s" if s["timeout_s"] else ""
        print(f"  {s['name']:<14} {state}{timeout}")
    if plan["runners"]:
        print("runners:")
        for kind, labels in plan["runners"].items():
            print(f"  {kind:<12} {', '.join(labels)}")
    return EXIT_OK
