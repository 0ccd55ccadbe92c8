"""`repro plan --github --tier NAME`: the fleet's job matrix from matrix.yaml.

Golden files tests/fixtures/plan/github-<tier>.json are rewritten only with
``REPRO_UPDATE_GOLDEN=1`` (as pytorch/test-infra does for its generated build matrix).
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO, run_cli

from repro import config
from repro.config import github_plan
from repro.errors import ConfigError

GOLDEN_DIR = REPO / "tests" / "fixtures" / "plan"
TIERS = ("pr", "nightly", "full")


@pytest.mark.parametrize("tier", TIERS)
def test_github_plan_of_the_checked_in_matrix_matches_the_golden_file(tier):
    done = run_cli("plan", "--github", "--tier", tier, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1  # one line: it goes into $GITHUB_OUTPUT as is
    golden = GOLDEN_DIR / f"github-{tier}.json"
    pretty = json.dumps(json.loads(done.stdout), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("REPRO_UPDATE_GOLDEN") == "1":
        golden.write_text(pretty)
    assert pretty == golden.read_text(), (
        f"repro plan --github --tier {tier} differs from {golden.name}; "
        "rerun with REPRO_UPDATE_GOLDEN=1 if the change is intended"
    )


def test_every_cuda_variant_also_runs_under_wsl2_on_a_windows_runner():
    plan = github_plan.plan_github(config.load(REPO / "matrix.yaml"), "full")["include"]
    cuda = {j["variant"] for j in plan if j["kind"] == "cuda"}
    wsl = [j for j in plan if j["kind"] == "cuda-wsl2"]
    assert cuda and {j["variant"] for j in wsl} == cuda
    assert all(j["shell"] == "wsl" and j["wsl-distro"] and "windows" in j["runs-on"] for j in wsl)
    assert all(j["shell"] == "bash" for j in plan if j["kind"] != "cuda-wsl2")


@pytest.mark.parametrize("tier", TIERS)
def test_every_job_timeout_exceeds_the_sum_of_its_case_timeouts(tier):
    matrix = config.load(REPO / "matrix.yaml")
    chosen = matrix.tier(tier).scenarios
    cases = [c for c in matrix.cases() if not chosen or c.scenario in chosen]
    for job in github_plan.plan_github(matrix, tier)["include"]:
        assert job["cases"] == len(cases)
        assert job["timeout-minutes"] * 60 > sum(c.timeout_s for c in cases)


def _matrix(tmp_path, extra_variant: str = "") -> config.Matrix:
    text = (REPO / "matrix.yaml").read_text()
    if extra_variant:
        text = text.replace("variants:\n", f"variants:\n  - {extra_variant}\n", 1)
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return config.load(path)


def test_adding_a_variant_adds_exactly_its_jobs(tmp_path):
    before = github_plan.plan_github(_matrix(tmp_path), "full")["include"]
    after = github_plan.plan_github(
        _matrix(
            tmp_path,
            '{runtime: cu129, torch: "2.11.0", base_image: "nvidia/cuda:12.9.1-cudnn-runtime-ubuntu24.04"}',
        ),
        "full",
    )["include"]
    added = [j for j in after if j not in before]
    assert [(j["variant"], j["kind"]) for j in added] == [
        ("cu129-torch2.11", "cuda"),
        ("cu129-torch2.11", "cuda-wsl2"),
    ]
    assert [j for j in after if j in before] == before  # nothing else moved or changed


def test_tier_scenarios_become_case_selectors_and_variant_glob_narrows(tmp_path):
    matrix = _matrix(tmp_path)
    jobs = github_plan.plan_github(matrix, "pr", ["cpu-*"])["include"]
    assert [(j["variant"], j["kind"]) for j in jobs] == [("cpu-torch2.13", "cpu")]
    assert "-k 'ddp[*'" in jobs[0]["command"] and jobs[0]["command"].startswith(
        "repro docker-run --variant cpu-torch2.13 "
    )
    with pytest.raises(ConfigError, match="matches no variant of tier 'pr'"):
        github_plan.plan_github(matrix, "pr", ["cu126-*"])


def test_unknown_tier_and_bad_tiers_section_are_one_line_errors(tmp_path):
    done = run_cli("plan", "--github", "--tier", "weekly", cwd=REPO, timeout=120)
    assert done.returncode == 2 and "no tier 'weekly' (known: pr, nightly, full)" in done.stderr
    bad = tmp_path / "matrix.yaml"
    bad.write_text(
        (REPO / "matrix.yaml")
        .read_text()
        .replace("scenarios: [cuda_basic, arch, cudnn, dataloader, ddp]", "scenarios: [nope]")
    )
    done = run_cli("plan", "--github", "--tier", "pr", "--config", str(bad), cwd=REPO, timeout=120)
    assert done.returncode == 2 and "tiers.pr.scenarios: expected enabled scenarios" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["--privileged", "-x", "_under"])
def test_a_tier_named_like_an_option_is_refused_at_load(tmp_path, name):
    bad = tmp_path / "matrix.yaml"
    bad.write_text(
        (REPO / "matrix.yaml")
        .read_text()
        .replace("tiers:\n", f"tiers:\n  {name!r}: {{variants: ['*']}}\n", 1)
    )
    assert f"{name!r}: {{variants" in bad.read_text()
    done = run_cli("plan", "--github", "--tier", "pr", "--config", str(bad), cwd=REPO, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "starting with a letter or digit" in done.stderr and name in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_job_above_githubs_72_hour_limit_is_refused():
    with pytest.raises(ConfigError, match="72"):
        github_plan.job_timeout_minutes([3600.0] * 80)
