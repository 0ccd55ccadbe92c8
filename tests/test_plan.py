"""`repro plan`: its JSON for the checked-in matrix.yaml against a golden file, and the text form.

The golden file tests/fixtures/plan/plan.json is rewritten only with ``REPRO_UPDATE_GOLDEN=1``
(as pytorch/test-infra does for its generated build matrix): a change to matrix.yaml or to the
plan's shape shows up as a diff to review, never silently.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO, run_cli

GOLDEN = REPO / "tests" / "fixtures" / "plan" / "plan.json"


def test_plan_json_of_the_checked_in_matrix_matches_the_golden_file():
    plan = run_cli("plan", "--json", "--config", "matrix.yaml", cwd=REPO, timeout=120)
    assert plan.returncode == 0, plan.stderr
    if os.environ.get("REPRO_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(plan.stdout)
    golden = GOLDEN.read_text()
    assert json.loads(plan.stdout) == json.loads(golden), (
        "repro plan --json differs from tests/fixtures/plan/plan.json; "
        "rerun with REPRO_UPDATE_GOLDEN=1 if the change is intended"
    )
    assert plan.stdout == golden  # same bytes too: sorted keys, stable order


def test_plan_text_names_each_selected_variant_with_its_limits():
    plan = run_cli("plan", "--variant", "rocm*", cwd=REPO, timeout=120)
    assert plan.returncode == 0, plan.stderr
    variant_lines = [
        line for line in plan.stdout.splitlines() if line.startswith("  rocm") and "-torch" in line
    ]
    assert [line.split()[0] for line in variant_lines] == [
        "rocm6.4-torch2.8",
        "rocm7.1-torch2.10",
        "rocm7.2-torch2.13",
        "rocm7.2-torch2.14",
    ]
    assert all("mem default" in line and "pids default" in line for line in variant_lines)


@pytest.mark.slow
def test_plan_warns_when_the_newest_pin_is_older_than_the_facts_and_still_exits_0(tmp_path):
    from repro.compat.check import newest_torch

    newest = newest_torch()
    assert newest == "2.15.0"  # compat-extra.yaml torch_releases for the facts' newest minor
    body = (
        "version: 1\n"
        "variants:\n"
        '  - {{runtime: cpu, torch: "{pin}", base_image: "python:3.12-slim"}}\n'
        "scenarios:\n"
        "  fork_safety: {{}}\n"
        "runners: {{cpu: [ubuntu-latest]}}\n"
    )
    (tmp_path / "matrix.yaml").write_text(body.format(pin="2.13.0"))
    for argv in (("plan",), ("plan", "--json"), ("plan", "--github")):
        done = run_cli(*argv, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr == (
            "repro plan: warning: matrix.yaml: the newest torch pin is 2.13.0, but the shipped "
            f"facts know {newest} (compat-facts.yaml of 2026-11-21): add variants for the newer "
            "releases\n"
        )
        if "--json" in argv or "--github" in argv:
            json.loads(done.stdout)  # stdout stays machine-readable
    (tmp_path / "matrix.yaml").write_text(body.format(pin=newest))
    done = run_cli("plan", cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    # The checked-in matrix.yaml is up to date with the facts.
    assert run_cli("plan", "--json", cwd=REPO, timeout=120).stderr == ""
