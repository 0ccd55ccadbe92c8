"""The noxfile on a fresh machine: `pip install nox && nox -l` lists every generated session.

nox (2025.02+) reads the noxfile's PEP 723 block, builds `.nox/_nox_script_mode` with what the
noxfile imports (pyyaml) and runs itself from there; the interpreter that has nox stays as it was.
Needs the package index (as CI has): a few seconds for the venv, ~20 s for the installs.
"""

from __future__ import annotations

import subprocess
import sys
import venv

import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def bare_nox(tmp_path_factory):
    """A fresh venv with nothing but nox in it (what `pip install nox` gives a user)."""
    root = tmp_path_factory.mktemp("bare")
    venv.create(root / "venv", with_pip=True, clear=True)
    python = root / "venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "nox>=2025.2.9"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return root, python


def _site_packages(python) -> set[str]:
    out = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout
    return {line.split("==")[0].lower() for line in out.splitlines()}


@pytest.mark.slow
def test_bare_nox_lists_the_generated_sessions_without_touching_its_interpreter(bare_nox):
    root, python = bare_nox
    before = _site_packages(python)
    done = subprocess.run(
        [str(python), "-m", "nox", "-l", "-f", str(REPO / "noxfile.py"),
         "--envdir", str(root / "envs")],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    listed = done.stdout + done.stderr
    for session in (
        "repro-host",
        "tests",
        "repro-cu128",
        "build-cu128",
        "repro-cpu",
        "repro-rocm7.2",
    ):
        assert f"- {session}" in listed or f"* {session}" in listed, (session, listed[-2000:])
    assert "no build-/repro- sessions" not in listed
    assert (root / "envs" / "_nox_script_mode").is_dir()  # nox built the noxfile's environment
    assert _site_packages(python) == before  # ... and installed nothing into its own interpreter
    assert "pyyaml" not in before


@pytest.mark.slow
def test_bare_nox_lists_json_with_pip_quiet(bare_nox):
    """nox's script mode runs pip before listing and pip prints to stdout: the README's
    ``PIP_QUIET=1 nox -l --json`` is only JSON."""
    import json
    import os

    root, python = bare_nox
    done = subprocess.run(
        [str(python), "-m", "nox", "-l", "--json", "-f", str(REPO / "noxfile.py"),
         "--envdir", str(root / "envs")],
        capture_output=True, text=True, timeout=600, cwd=REPO,
        env=dict(os.environ, PIP_QUIET="1"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    sessions = {s["session"] for s in json.loads(done.stdout)}
    assert {"tests", "lint"} <= sessions


@pytest.fixture(scope="module")
def noxfile():
    """``(module, {session name: func})``: the noxfile executed once with nox's registry emptied
    and restored afterwards (``nox.registry.get()`` is a copy, so the dict itself is patched)."""
    import importlib.util
    from unittest import mock

    import nox.registry

    sys.path.insert(0, str(REPO))
    try:
        with mock.patch.dict(nox.registry._REGISTRY, clear=True):
            spec = importlib.util.spec_from_file_location("noxfile_under_test", REPO / "noxfile.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            yield module, nox.registry.get()
    finally:
        sys.path.remove(str(REPO))


def test_repro_slurm_hands_the_nodes_its_python_unless_one_is_named(noxfile, tmp_path):
    module, sessions = noxfile
    assert "repro-slurm" in sessions
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        "version: 1\nvariants:\n  - {runtime: cpu, torch: '2.13.0', base_image: 'python:3.12'}\n"
    )
    named = tmp_path / "named.yaml"
    named.write_text(plain.read_text() + "slurm: {python: /shared/venv/bin/python}\n")
    assert module.slurm_node_python([], str(plain))
    assert not module.slurm_node_python(["--node-python", "/x/python"], str(plain))
    assert not module.slurm_node_python(["--node-python=/x/python"], str(plain))
    assert not module.slurm_node_python([], str(named))


def test_no_session_runs_on_the_interpreter_running_nox(noxfile):
    _module, sessions = noxfile
    assert "repro-host" in sessions and any(name.startswith("repro-cu") for name in sessions)
    backends = {name: func.venv_backend for name, func in sessions.items()}
    assert not [name for name, backend in backends.items() if backend == "none"], backends


def test_lanes_and_lint_are_tagged_and_ruff_is_pinned_in_one_version(noxfile):
    import tomllib

    module, sessions = noxfile
    tags = {name: set(func.tags) for name, func in sessions.items()}
    assert {n for n, t in tags.items() if "lint" in t} == {"lint", "lint-workflows"}
    assert {n for n, t in tags.items() if "tests" in t} == {"tests", "tests-fast", "tests-lowest"}
    assert sessions["tests-lowest"].venv_backend == "uv"
    dev = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert module.RUFF in dev["optional-dependencies"]["dev"]
    assert module.RUFF.startswith("ruff==")
    assert module.prints_only(["-k", "shm", "--help"]) and module.prints_only(["--list"])
    assert not module.prints_only(["-k", "help"])


def test_the_venv_lane_has_one_uv_session_per_runtime_parametrised_by_pin(noxfile):
    _module, sessions = noxfile
    assert sessions["venv-cpu"].venv_backend == "uv|virtualenv"
    assert [str(pin) for pin in sessions["venv-cpu"].parametrize] == ["2.13.0", "2.15.0"]


def _project_copy(root):
    """The checkout's package, noxfile and project files in ``root`` (what a clone has)."""
    import shutil

    for name in ("repro", "noxfile.py", "pyproject.toml", "README.md"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, root / name)
    return root


@pytest.mark.slow
def test_repro_host_builds_the_matrix_then_fails_only_on_an_unexpected_red(bare_nox, tmp_path):
    """Issue 29 acceptance: `nox -s repro-host` ends with the report's totals line and exits 0
    when every red is an expected reproduction; with a `script:` that raises it exits 1, after
    matrix.json is written. Real nox, real venv, real `repro run` (~1-2 min: pip installs)."""
    import json
    import os

    root, python = bare_nox
    project = _project_copy(tmp_path / "clone")
    matrix = (
        "version: 1\n"
        "defaults: {results_dir: results}\n"
        "variants:\n"
        '  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\n'
        "scenarios:\n"
        "  losses: {params: {device: [cpu], case: [empty_mask], eps: [0]}}\n"
        "  ok: {script: ok.py}\n"
    )
    (project / "matrix.yaml").write_text(matrix)
    (project / "ok.py").write_text("print('fine')\n")
    env = dict(os.environ, REPRO_HOST_PYTHON=sys.executable, PIP_QUIET="1")
    env.pop("PYTHONPATH", None)

    def nox_repro_host():
        return subprocess.run(
            [str(python), "-m", "nox", "-s", "repro-host", "-f", str(project / "noxfile.py"),
             "--envdir", str(root / "host-envs"), "--reuse-existing-virtualenvs",
             "--", "--no-doctor"],
            capture_output=True, text=True, timeout=900, cwd=project, env=env,
        )  # fmt: skip

    done = nox_repro_host()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "problems: 0 · expected reproductions: 1 · passed: 1 · skipped: 0" in done.stdout
    assert (project / "results" / "matrix.json").is_file()

    (project / "matrix.yaml").write_text(matrix + "  boom: {script: boom.py}\n")
    (project / "boom.py").write_text("raise RuntimeError('planted: unexpected failure')\n")
    done = nox_repro_host()
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    assert "problems: 1 (1 failed) · expected reproductions: 1 · passed: 1" in done.stdout
    data = json.loads((project / "results" / "matrix.json").read_text())
    cases = {c["case"]: c["outcome"] for cell in data["cells"] for c in cell["cases"]}
    assert cases["boom"] == "failed"  # the matrix was built before the session failed
    assert "unexpected red cases (exit 1)" in out
