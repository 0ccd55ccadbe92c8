"""Issue 20, item 2: a built-in scenario is its module. ``repro.scenarios.builtin`` discovers
the package's public modules; matrix.yaml's ``"*"`` entry runs every one not opt-in; the
zygote pre-imports them. Adding a scenario is adding one file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from conftest import REPO

from repro import config, scenarios
from repro.errors import ConfigError

NEW_SCENARIO = '''"""A scenario added in a test: one module, nothing else."""

PARAMS = {"cups": [1, 2]}
TIMEOUT_S = 30.0


def run(ctx, params) -> None:
    assert params["cups"] > 0
'''


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(cwd))  # the copied package, not this checkout
    env.pop("REPRO_CASE_TOKEN", None)
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_a_scenario_added_as_one_module_is_listed_planned_and_preimported(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(
        REPO / "repro", checkout / "repro", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "matrix.yaml", checkout / "matrix.yaml")
    (checkout / "repro" / "scenarios" / "tea_break.py").write_text(NEW_SCENARIO)

    listed = _run(["-m", "repro", "run", "--list"], checkout).stdout.splitlines()
    assert "tea_break[cups=1]" in listed and "tea_break[cups=2]" in listed
    plan = json.loads(_run(["-m", "repro", "plan", "--json"], checkout).stdout)
    (entry,) = [s for s in plan["scenarios"] if s["name"] == "tea_break"]
    assert (entry["enabled"], entry["cases"]) == (True, 2)
    probe = (
        "import json, repro; from repro.runner.zygote_pool import zygote_modules;"
        " print(json.dumps([repro.__file__, zygote_modules()]))"
    )
    where, preimported = json.loads(_run(["-c", probe], checkout).stdout)
    assert where.startswith(str(checkout))
    assert "repro.scenarios.tea_break" in preimported
    # Nothing else was touched: the copy differs from this checkout by the one module.
    assert (checkout / "matrix.yaml").read_bytes() == (REPO / "matrix.yaml").read_bytes()


def test_the_catalogue_is_the_package_s_public_modules():
    on_disk = sorted(
        p.stem for p in (REPO / "repro" / "scenarios").glob("*.py") if not p.stem.startswith("_")
    )
    assert list(scenarios.builtin()) == [name for name in on_disk if name != "script"]
    assert set(scenarios.builtin()) - set(scenarios.by_default()) == {"noop", "cuda_fault"}


def test_matrix_yaml_runs_every_default_builtin_once_in_its_order():
    matrix = config.load(REPO / "matrix.yaml")
    names = [s.name for s in matrix.scenarios]
    assert sorted(names) == sorted(scenarios.by_default())
    assert names[0] == "cuda_basic"  # the file's order first, then "*"'s


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ('"*": {timeout_s: 5}', "scenarios.*: expected nothing: it stands for every other"),
        ("'*': [noop]", "scenarios.*: expected nothing"),
    ],
)
def test_a_star_entry_takes_no_settings(tmp_path, yaml_text, expected):
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "version: 1\nvariants:\n  - {runtime: cpu, torch: '2.13.0', base_image: 'python:3.12'}\n"
        f"scenarios:\n  {yaml_text}\n"
    )
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert expected in str(err.value)


def test_a_star_entry_adds_what_is_not_named_and_named_ones_keep_their_settings(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "version: 1\nvariants:\n  - {runtime: cpu, torch: '2.13.0', base_image: 'python:3.12'}\n"
        "scenarios:\n  ddp: {timeout_s: 7}\n  '*':\n  noop: {}\n"
    )
    matrix = config.load(path)
    names = [s.name for s in matrix.scenarios]
    assert names[0] == "ddp" and names[-1] == "noop" and names.count("ddp") == 1
    assert names[1:-1] == [n for n in scenarios.by_default() if n != "ddp"]
    assert matrix.scenarios[0].timeout_s == 7


def test_every_name_of_the_protocol_is_checked_and_no_other():
    # The Protocol is the one list: each optional name given a bad value is named by the checker.
    assert scenarios.REQUIRED == ("PARAMS", "TIMEOUT_S", "run")
    names = scenarios.contract_names()
    assert len(names) == 11 and set(scenarios.REQUIRED) <= set(names)
    noop = scenarios.load("noop")
    for name in names:
        module = types.ModuleType("probe")
        module.__dict__.update({n: getattr(noop, n) for n in scenarios.REQUIRED})
        setattr(module, name, "five")  # neither a grid, a number, a function, a dict nor a bool
        problem = scenarios.contract_problem(module)
        assert problem is not None and problem.startswith(f"{name}:"), (name, problem)
    for name in scenarios.REQUIRED:
        module = types.ModuleType("probe")
        module.__dict__.update({n: getattr(noop, n) for n in scenarios.REQUIRED if n != name})
        assert scenarios.contract_problem(module).startswith(f"{name}:")


def test_the_built_in_expectations_come_from_their_modules():
    matrix = config.load(REPO / "matrix.yaml")
    assert len(matrix.expectations) == 14
    by_source = {}
    for rule in matrix.expectations:
        module, _, position = rule.source.partition(".EXPECT[")
        assert module == f"repro.scenarios.{rule.scenario}" and position.endswith("]")
        assert rule.case.startswith(f"{rule.scenario}[")
        by_source.setdefault(rule.scenario, 0)
        by_source[rule.scenario] += 1
    assert by_source == {"losses": 3, "amp": 1, "fork_safety": 4, "ddp": 6}
    assert sorted(r.index for r in matrix.expectations) == list(range(14))
    rule = next(r for r in matrix.expectations if r.case == "ddp[backend=*,fault=port_in_use]")
    assert rule.label.startswith("repro.scenarios.ddp.EXPECT[1] (case ")


def _matrix(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "version: 1\nvariants:\n  - {runtime: cpu, torch: '2.13.0', base_image: 'python:3.12'}\n"
        + body
    )
    return path


def test_matrix_yaml_s_own_entry_comes_first_and_overrides_the_module_s(tmp_path):
    path = _matrix(
        tmp_path,
        "scenarios:\n  ddp:\nexpect:\n"
        "  - {case: 'ddp[backend=*,fault=port_in_use]', outcome: crashed, reason: ours}\n",
    )
    rules = config.load(path).expectations
    assert [(r.index, r.source, r.reason) for r in rules[:1]] == [(0, None, "ours")]
    assert len(rules) == 7 and all(
        r.source.startswith("repro.scenarios.ddp.EXPECT[") for r in rules[1:]
    )
    first = next(
        r
        for r in rules
        if r.matches(
            scenario="ddp", case="ddp[backend=gloo,fault=port_in_use]", variant="v", host="h"
        )
    )
    assert first.reason == "ours"


def test_a_bad_module_entry_is_named_by_its_module(tmp_path):
    checkout = tmp_path / "pkg"
    checkout.mkdir()
    (checkout / "my_bug.py").write_text(
        NEW_SCENARIO + 'EXPECT = [{"case": "my_bug[cups=1]", "outcome": "broken", "reason": "x"},'
        ' {"scenario": "ddp", "reason": "y"}]\n'
    )
    sys.path.insert(0, str(checkout))
    try:
        path = _matrix(tmp_path, "scenarios:\n  my_bug: {module: my_bug}\n")
        with pytest.raises(ConfigError) as err:
            config.load(path)
    finally:
        sys.path.remove(str(checkout))
        sys.modules.pop("my_bug", None)
    lines = str(err.value).splitlines()
    assert lines == [
        f"{path}: my_bug.EXPECT[0].outcome: expected one of failed, hung, crashed, error, "
        "any-problem, got 'broken'",
        f"{path}: my_bug.EXPECT[1].scenario: expected nothing: an entry of my_bug.EXPECT is "
        "about my_bug",
    ]
