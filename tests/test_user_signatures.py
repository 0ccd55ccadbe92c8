"""A team teaches the matrix its own failure families (issue 21, item 1): rows of the same schema
as repro/data/signatures.yaml, from matrix.yaml ``signatures: FILE`` or ``repro classify
--signatures FILE``, merged after the shipped rows and validated with file, row and field named."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repro.config import load as load_matrix
from repro.errors import ConfigError
from repro.signatures import engine, table

ROOT = Path(__file__).resolve().parent.parent

TEAM_ROWS = """\
version: 1
signatures:
- name: team_feature_store_timeout
  kind: root
  family: library
  lines:
  - 'FeatureStoreTimeout: shard \\d+ did not answer'
  sources:
  - 'team runbook, incident 42'
  workaround: 'Retry with FEATURE_STORE_REPLICA=b.'
"""
LOG = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 9, in <module>\n'
    "    batch = store.fetch(ids)\n"
    "FeatureStoreTimeout: shard 7 did not answer within 30 s\n"
)


def _write(tmp_path: Path, text: str, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_team_row_names_its_own_failure_after_the_shipped_rows(tmp_path):
    rows = table.with_user_rows([_write(tmp_path, TEAM_ROWS)])
    assert rows.rows[: len(table.ROWS) - len(table.NAMED)] == table.SIGNATURES
    found = engine.classify(LOG, table=rows)
    assert (found.name, found.line_no) == ("team_feature_store_timeout", 4)
    assert found.source == "team runbook, incident 42"
    assert engine.classify(LOG).name == engine.UNKNOWN  # the shipped table alone
    # A line a shipped row takes stays the shipped row's.
    shipped = "RuntimeError: CUDA out of memory. FeatureStoreTimeout: shard 1 did not answer\n"
    assert engine.classify(shipped, table=rows).name == "oom"


@pytest.mark.parametrize(
    ("row", "where"),
    [
        ("- {name: x1, kind: root, family: library, lines: ['('], sources: [a]}", ".lines[0]"),
        ("- {name: x2, kind: rooot, family: library, lines: [a], sources: [a]}", ".kind"),
        ("- {name: x3, kind: root, family: gpu, lines: [a], sources: [a]}", ".family"),
        ("- {name: x4, kind: root, family: library, lines: [a]}", ".sources"),
        ("- {name: x5, kind: root, family: library, sources: [a]}", ".lines"),
        (
            "- {name: x6, kind: root, family: library, lines: [a], sources: [a], when: moon}",
            ".when",
        ),
        (
            "- {name: x7, kind: root, family: library, lines: [a], sources: [a], colour: red}",
            ".colour",
        ),
        ("- {name: Bad Name, kind: root, family: library, lines: [a], sources: [a]}", ".name"),
    ],
)
def test_a_bad_row_is_refused_naming_the_file_the_row_and_the_field(tmp_path, row, where):
    path = _write(tmp_path, f"version: 1\nsignatures:\n{row}\n")
    with pytest.raises(ConfigError) as caught:
        table.with_user_rows([path])
    message = str(caught.value)
    assert message.startswith(f"{path}: signatures[0]")
    assert where in message and "expected" in message


def test_a_team_row_may_not_redefine_a_shipped_name(tmp_path):
    path = _write(
        tmp_path,
        "version: 1\nsignatures:\n"
        "- {name: oom, kind: root, family: cuda, lines: ['out of memory'], sources: [mine]}\n",
    )
    with pytest.raises(ConfigError, match=r"team.yaml: signatures \(oom\)\.name: expected a name"):
        table.with_user_rows([path])


def test_matrix_yaml_signatures_are_validated_with_the_matrix(tmp_path):
    team = _write(tmp_path, TEAM_ROWS)
    matrix = tmp_path / "matrix.yaml"
    base = (
        "version: 1\n"
        "variants:\n"
        '  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\n'
    )
    matrix.write_text(base + f"signatures: {team.name}\n")
    assert load_matrix(matrix).signatures == (team,)
    broken = _write(tmp_path, "version: 1\nsignatures:\n- {name: y, kind: root}\n", "broken.yaml")
    matrix.write_text(base + f"signatures: [{team.name}, {broken.name}]\n")
    with pytest.raises(ConfigError) as caught:
        load_matrix(matrix)
    assert f"{matrix}: signatures: {broken}: signatures[0] (y)" in str(caught.value)


def _classify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "repro", "classify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_classify_reads_a_team_file_and_refuses_a_bad_one_with_exit_2(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(LOG)
    team = _write(tmp_path, TEAM_ROWS)
    done = _classify("--json", "--signatures", str(team), str(log))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["logs"][0]["signature"] == "team_feature_store_timeout"
    without = _classify("--json", str(log))
    assert (without.returncode, json.loads(without.stdout)["logs"][0]["verdict"]) == (1, "unknown")
    bad = _write(tmp_path, "version: 2\nsignatures: []\n", "bad.yaml")
    refused = _classify("--signatures", str(bad), str(log))
    assert refused.returncode == 2
    assert f"{bad}: version: expected 1, got 2" in refused.stderr
