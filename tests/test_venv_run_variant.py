"""``repro venv-run`` takes its variant as ``--variant`` like every other command (issue 31,
item 7); the old positional spelling still parses, with the deprecation note the others print."""

from __future__ import annotations

import pytest
from conftest import REPO, run_cli

CONFIG = str(REPO / "matrix.yaml")


def _dry_run(*args: str):
    return run_cli("venv-run", "--config", CONFIG, "--dry-run", *args, cwd=REPO, timeout=120)


@pytest.mark.slow
def test_the_flag_and_the_old_positional_give_the_same_command():
    flag = _dry_run("--variant", "cpu-torch2.13", "-k", "losses", "--", "-j", "1")
    old = run_cli(
        "venv-run", "cpu-torch2.13", "--config", CONFIG, "--dry-run", "-k", "losses", "--", "-j", "1",
        cwd=REPO, timeout=120,
    )  # fmt: skip
    assert flag.returncode == old.returncode == 0, flag.stderr + old.stderr
    assert flag.stdout == old.stdout
    assert "--as-variant cpu-torch2.13" in flag.stdout and flag.stdout.rstrip().endswith("-j 1")
    assert "deprecated" not in flag.stderr
    assert "repro: note: a positional cpu-torch2.13 is deprecated; use --variant ID" in old.stderr


@pytest.mark.slow
def test_a_glob_must_select_one_variant_and_none_is_a_usage_error():
    many = _dry_run("--variant", "cpu-*")
    assert many.returncode == 2
    assert (
        "--variant must select exactly one variant (2 matched: cpu-torch2.13, cpu-torch2.15)"
        in many.stderr
    )
    none = _dry_run()
    assert none.returncode == 2 and "name the variant with --variant ID" in none.stderr
    one = _dry_run("--variant", "rocm6.4-*")
    assert one.returncode == 0, one.stderr
    assert "--as-variant rocm6.4-torch2.8" in one.stdout
