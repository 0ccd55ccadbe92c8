"""`repro plan`: its JSON for the checked-in matrix.yaml against a golden file, and the text form.

The golden file tests/fixtures/plan/plan.json is rewritten only with ``REPRO_UPDATE_GOLDEN=1``
(as pytorch/test-infra does for its generated build matrix): a change to matrix.yaml or to the
plan's shape shows up as a diff to review, never silently.
"""

from __future__ import annotations

import json
import os

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
    ]
    assert all("mem default" in line and "pids default" in line for line in variant_lines)
