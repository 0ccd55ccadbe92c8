"""matrix.yaml loading: validation of every field, all errors at once, ids and selection."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, run_cli, write_matrix

from repro import config as matrix
from repro.errors import ConfigError


def load_text(tmp_path: Path, text: str) -> matrix.Matrix:
    path = tmp_path / "matrix.yaml"
    path.write_text(textwrap.dedent(text))
    return matrix.load(path)


def errors_of(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_text(tmp_path, text)
    return str(info.value).splitlines()


def test_the_shipped_matrix_yaml_is_valid_and_has_the_runtimes_users_care_about():
    config = matrix.load(REPO / "matrix.yaml")
    runtimes = {v.runtime for v in config.variants}
    assert {"cu126", "cu128", "cu130", "cu132", "cpu"} <= runtimes
    assert any(r.startswith("rocm") for r in runtimes)
    assert all(
        v.index_url == f"https://download.pytorch.org/whl/{v.runtime}" for v in config.variants
    )
    assert len(config.cases()) >= 30


def test_variant_ids_are_canonical_and_globs_select_them(tmp_path):
    config = load_text(
        tmp_path,
        """\
        version: 1
        variants:
          - {runtime: cu126, torch: "2.8.0", base_image: a}
          - {runtime: cu128, torch: "2.8.0", base_image: a}
          - {runtime: cu128, torch: "2.10.0", base_image: a}
          - {runtime: rocm6.4, torch: "2.8.0+rocm6.4", base_image: b}
        """,
    )
    assert [v.id for v in config.variants] == [
        "cu126-torch2.8",
        "cu128-torch2.8",
        "cu128-torch2.10",
        "rocm6.4-torch2.8",
    ]
    assert [v.id for v in config.select_variants(["cu12*-torch2.8"])] == [
        "cu126-torch2.8",
        "cu128-torch2.8",
    ]
    assert config.variant("rocm6.4-torch2.8").accelerator == "rocm"
    with pytest.raises(ConfigError) as info:
        config.select_variants(["cu999*"])
    assert "'cu999*' matches no variant id" in str(info.value)
    assert "cu126-torch2.8" in info.value.hint


def test_every_problem_is_reported_at_once_with_file_key_and_expectation(tmp_path):
    lines = errors_of(
        tmp_path,
        """\
        version: 1
        colour: blue
        defaults: {python: 3.12}
        variants:
          - {runtime: cu128, torch: 2.8, base_image: x}
          - {runtime: cuda12, torch: "2.8.0", base_image: x, gpus: 2}
          - {runtime: cpu, torch: "2.8.0"}
        scenarios:
          dataloader: {params: {workers: 4, colour: [red]}, timeout_s: -1}
          nope: {}
        runners: {cuda: []}
        """,
    )
    path = str(tmp_path / "matrix.yaml")
    assert all(line.startswith(path + ": ") for line in lines)
    text = "\n".join(lines)
    expected = [
        "colour: unknown key",
        'defaults.python: expected a quoted Python version like "3.12", got 3.12 (a YAML number)',
        'variants[0].torch: expected a quoted version string like "2.8.0", got 2.8 (a YAML number)',
        "variants[1].runtime: expected a runtime tag like cu128, rocm6.4 or cpu, got 'cuda12'",
        "variants[1].gpus: unknown key",
        "variants[2].base_image: expected an image reference",
        "scenarios.dataloader.params.workers: expected a non-empty list of values, got 4 (a YAML number)",
        "scenarios.dataloader.params.colour: expected one of the scenario's axes",
        "scenarios.dataloader.timeout_s: expected a positive number of seconds of at most 86400, got -1",
        "scenarios.nope: expected a built-in scenario",
        "runners.cuda: expected a non-empty list of runner label strings",
    ]
    for fragment in expected:
        assert fragment in text, fragment
    assert len(lines) == len(expected)


def test_duplicate_variant_ids_and_bad_yaml_are_errors(tmp_path):
    lines = errors_of(
        tmp_path,
        """\
        version: 1
        variants:
          - {runtime: cu128, torch: "2.8.0", base_image: a}
          - {runtime: cu128, torch: "2.8.1", base_image: b}
        """,
    )
    assert lines == [
        f"{tmp_path / 'matrix.yaml'}: variants[1].id: expected a unique id ('cu128-torch2.8' is also variants[0]; set `id` to tell them apart)"
    ]
    (tmp_path / "matrix.yaml").write_text("version: 1\nvariants: [\n")
    with pytest.raises(ConfigError, match=r"not valid YAML \(line \d+, column \d+\)"):
        matrix.load(tmp_path / "matrix.yaml")
    with pytest.raises(ConfigError, match="file not found"):
        matrix.load(tmp_path / "missing.yaml")


def test_params_override_axes_and_timeouts_reach_the_cases(tmp_path):
    config = load_text(
        tmp_path,
        """\
        version: 1
        defaults: {timeout_scale: 2}
        scenarios:
          fork_safety: {timeout_s: 7, params: {start_method: [spawn], mode: [lock]}}
          cuda_basic: {enabled: false}
        """,
    )
    cases = config.cases()
    assert [c.case_id for c in cases] == ["fork_safety[start_method=spawn]"]
    assert cases[0].timeout_s == 14


def test_case_selection_by_substring_and_glob_and_no_match_hint(tmp_path):
    config = matrix.load(REPO / "matrix.yaml")
    cases = config.cases()
    assert {c.scenario for c in matrix.select_cases(cases, ["fork_safety"])} == {"fork_safety"}
    picked = matrix.select_cases(cases, ["dataloader[device=cpu,start_method=spawn*"])
    assert picked and all(
        "start_method=spawn" in c.case_id and "device=cpu" in c.case_id for c in picked
    )
    with pytest.raises(ConfigError) as info:
        matrix.select_cases(cases, ["nothing-like-this"])
    assert "--list" in info.value.hint


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("version: 1\nvariants: []\nscenarios: {}\nsurprise: 1\n", "surprise: unknown key"),
        (
            "version: 1\nvariants:\n  - {runtime: cpu, torch: 2.13, base_image: x}\n",
            "variants[0].torch: expected a quoted version string",
        ),
    ],
)
@pytest.mark.slow
def test_cli_reports_a_bad_matrix_in_one_line_with_exit_2_and_no_traceback(project, body, fragment):
    (project / "matrix.yaml").write_text(body)
    for command in (["plan"], ["run", "--list"], ["run"]):
        done = run_cli(*command, cwd=project, timeout=60)
        assert done.returncode == 2, (command, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("repro: error: matrix.yaml: ") and fragment in lines[0]
        assert "Traceback" not in done.stderr


def test_cli_selector_matching_nothing_exits_2_with_a_hint(project):
    write_matrix(project, "fork_safety: {}\n")
    plan = run_cli("plan", "--variant", "cu13*", cwd=project, timeout=60)
    assert plan.returncode == 2
    assert (
        plan.stderr.count("\n") == 1
        and "matches no variant id; ids are <runtime>-torch<major.minor>; known: cpu-torch2.13"
        in plan.stderr
    )
    run = run_cli("run", "-k", "dataloader", cwd=project, timeout=60)
    assert run.returncode == 2 and "case selector 'dataloader' matches no case" in run.stderr
    assert not (project / "results").exists()  # nothing created by a failed start


def test_plan_json_lists_variants_cases_and_effective_settings(project):
    import json

    write_matrix(project, "fork_safety: {timeout_s: 9, params: {mode: [lock]}}\n")
    done = run_cli("plan", "--json", cwd=project, timeout=60)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert [v["id"] for v in plan["variants"]] == ["cpu-torch2.13"]
    assert plan["cases"] == 3
    assert plan["scenarios"][0] == {
        "name": "fork_safety",
        "enabled": True,
        "module": None,
        "cases": 3,
        "timeout_s": 9.0,
        "params": {"mode": ["lock"]},
    }
    assert plan["defaults"]["results_dir"] == "results"


@pytest.mark.parametrize(
    ("torch", "cuda", "hip", "tag"),
    [
        ("2.8.0+cu128", None, None, "cu128"),  # the wheel's local version names its runtime
        ("2.8.0+rocm6.4", None, None, "rocm6.4"),
        ("2.13.0+cpu", None, None, "cpu"),
        ("2.13.0", None, None, "cpu"),  # PyPI's default wheel without a CUDA build
        ("2.8.0", "12.8", None, "cu128"),  # torch.version.cuda, when known, wins
        ("2.8.0+cu126", "13.0", None, "cu130"),
        ("2.8.0", None, "6.4.43482-0f2d60242", "rocm6.4"),
        (None, "12.8", None, "none"),
    ],
)
def test_runtime_tag_from_the_torch_version_string(torch, cuda, hip, tag):
    assert matrix.runtime_tag(torch, cuda, hip) == tag


def test_loading_matrix_yaml_needs_only_pyyaml():
    """The noxfile's PEP 723 environment has nox and pyyaml only: loading matrix.yaml (which
    imports the scenario registry) must not pull in the runner, psutil or torch."""
    code = (
        "import sys; from repro import config; config.load('matrix.yaml'); "
        "heavy = sorted(m for m in ('psutil', 'torch', 'repro.runner', 'junitparser', 'jinja2') "
        "if m in sys.modules); print(heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
