"""The layers of DESIGN.md as import-linter contracts ([tool.importlinter] in pyproject.toml;
``nox -s lint`` runs them): they hold on this tree, and a planted cycle breaks them (issue 31)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # --no-cache: nothing written into the tree; the cwd is the root grimp reads repro from
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold_on_this_tree():
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert " 0 broken" in done.stdout


def test_a_planted_cycle_breaks_the_contracts(tmp_path):
    """The cycle issue 31 found, planted back: config/select.py importing the flag table of cli."""
    shutil.copytree(
        REPO / "repro", tmp_path / "repro", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    select = tmp_path / "repro" / "config" / "select.py"
    select.write_text(select.read_text() + "\nfrom repro.cli import options  # planted\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "No import cycle between repro's packages and top-level modules BROKEN" in done.stdout
    assert "- .config -> .cli (1 import)" in done.stdout
    assert "repro.config.select -> repro.cli.options" in done.stdout
