"""benchmarks/first_sight.py: frozen sets replayed against the engine of their freezing commit."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import classify_corpus, first_sight, install_corpus

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not (ROOT / ".git").exists(), reason="the freezing commits are read from git history"
)


def _set(kind: str, name: str) -> first_sight.FrozenSet:
    return next(s for s in first_sight.frozen_sets() if s.kind == kind and s.name == name)


def test_every_frozen_file_of_both_corpora_is_listed_once():
    sets = first_sight.frozen_sets()
    assert len({s.key for s in sets}) == len(sets)
    assert {s.name for s in sets if s.kind == "logs"} == set(classify_corpus.FROZEN)
    for item in sets:
        assert (ROOT / item.path).is_file(), item


def test_the_freezing_commit_is_the_one_that_added_the_set_and_no_earlier():
    item = _set("logs", "test9")
    commit = first_sight.freezing_commit(item.path)
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    before = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", f"{commit}^"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert item.path in files and item.path not in before


def test_an_uncommitted_set_has_no_freezing_commit():
    with pytest.raises(SystemExit, match="no commit adds this file"):
        first_sight.freezing_commit("tests/fixtures/field-logs-test99/corpus.yaml")


def test_the_child_judges_as_the_benchmark_does_in_process():
    item = _set("logs", "test9")
    figures = first_sight.judge_with(ROOT, [item])[item.key]
    total, _ = classify_corpus.score(classify_corpus.load(ROOT / item.path))
    assert figures == sum(total.values(), Counter())
    assert sum(figures.values()) == len(classify_corpus.load(ROOT / item.path))


def test_the_child_refuses_an_engine_tree_that_is_not_the_one_imported(tmp_path):
    # tmp_path holds no repro package: the child would import today's, which is not a replay.
    with pytest.raises(RuntimeError, match="not the engine under"):
        first_sight.judge_with(tmp_path, [_set("logs", "test9")])


def test_an_old_engine_is_extracted_from_git_and_imported_by_the_child(tmp_path):
    item = _set("install", "test8")
    commit = first_sight.freezing_commit(item.path)
    tree = first_sight.extract_engine(commit, tmp_path / "engine")
    assert (tree / "repro" / "__init__.py").is_file()
    figures = first_sight.judge_with(tree, [item])[item.key]
    assert figures["lines"] == len(install_corpus.load(ROOT / item.path))
    assert 0 <= figures["agree"] <= figures["lines"]


def test_engines_since_a_revision_are_it_then_each_first_parent_change_of_repro():
    base = "9fe9577"  # last stop's main: every later round's engines follow it
    rows = first_sight.engines_since(base)
    assert rows[0][0].startswith(base)
    first_parents = subprocess.run(
        ["git", "-C", str(ROOT), "rev-list", "--first-parent", f"{base}..HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    later = [commit for commit, _ in rows[1:]]
    assert later == [c for c in reversed(first_parents) if c in set(later)]
    for commit in first_parents:
        changed = subprocess.run(
            ["git", "-C", str(ROOT), "diff", "--name-only", f"{commit}^1", commit, "--", "repro"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        assert bool(changed.strip()) == (commit in later), commit
