"""matrix.yaml as hostile input (issue 9): every malformed file is refused by the real CLI with
exit 2, one line naming the file and the key (or line), no traceback, within 5 s.

The files are generated here: wrong encodings, numbers that are not finite or not bounded,
duplicate keys, deep nesting, an alias bomb, oversized files, things that are not regular files
(a FIFO, /dev/zero, a directory), control characters and surrogates in a case id, and planted
scenario modules that break the scenario contract.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import cli_env

from repro import config, scenarios
from repro.errors import ConfigError

HEAD = textwrap.dedent(
    """\
    version: 1
    variants:
      - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}
    """
)
LIMIT_S = 5.0


def plan(path: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m repro plan --config PATH`` with ``cwd`` importable (planted modules)."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "repro", "plan", "--config", str(path)],
        cwd=cwd,
        env=cli_env(extra_path=cwd),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    return proc, time.monotonic() - start


def planted(directory: Path, name: str, body: str) -> None:
    (directory / f"{name}.py").write_text(textwrap.dedent(body))


def scenario(name: str, module: str) -> str:
    return HEAD + f"scenarios:\n  {name}: {{module: {module}}}\n"


# name -> (writer(dir) -> path, fragment the one error line must hold besides the file name)
def _text(body: str | bytes, name: str = "matrix.yaml"):
    def write(directory: Path) -> Path:
        path = directory / name
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8", errors="surrogatepass")
        return path

    return write


def _fifo(directory: Path) -> Path:
    path = directory / "matrix.yaml"
    os.mkfifo(path)
    return path


def _big(directory: Path) -> Path:
    path = directory / "matrix.yaml"
    with open(path, "wb") as handle:
        handle.write(HEAD.encode())
        handle.truncate(50 * 1024 * 1024)
    return path


def _dir(directory: Path) -> Path:
    (directory / "matrix.yaml").mkdir()
    return directory / "matrix.yaml"


def _module(name: str, body: str):
    def write(directory: Path) -> Path:
        planted(directory, name, body)
        path = directory / "matrix.yaml"
        path.write_text(scenario(name, name))
        return path

    return write


BOMB = (
    "version: 1\n"
    + "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9))
)
NESTED = HEAD + "scenarios:\n  noop: {params: " + "[" * 50_000 + "]" * 50_000 + "}\n"

CASES = {
    "latin-1": (_text(HEAD.encode() + b"# caf\xe9\n"), "line 4: expected UTF-8"),
    "utf-16": (_text(HEAD.encode("utf-16")), "expected UTF-8 text, got UTF-16"),
    "huge integer": (
        _text(HEAD + "defaults: {timeout_scale: " + "9" * 5000 + "}\n"),
        "defaults.timeout_scale",
    ),
    "huge timeout": (
        _text(HEAD + "scenarios:\n  noop: {timeout_s: 1e300}\n"),
        "scenarios.noop.timeout_s",
    ),
    "negative timeout": (
        _text(HEAD + "scenarios:\n  noop: {timeout_s: -5}\n"),
        "scenarios.noop.timeout_s",
    ),
    "nan timeout": (
        _text(HEAD + "scenarios:\n  noop: {timeout_s: .nan}\n"),
        "scenarios.noop.timeout_s",
    ),
    "inf timeout": (
        _text(HEAD + "scenarios:\n  noop: {timeout_s: .inf}\n"),
        "scenarios.noop.timeout_s",
    ),
    "nan scale": (_text(HEAD + "defaults: {timeout_scale: .nan}\n"), "defaults.timeout_scale"),
    "deep nesting": (_text(NESTED), "nesting deeper than 64"),
    "alias bomb": (_text(BOMB), "aliases expand to more than"),
    "duplicate keys": (
        _text(HEAD + "scenarios:\n  noop: {}\n  noop: {timeout_s: 5}\n"),
        "duplicate key 'noop' (first at line 5)",
    ),
    "version true": (_text(HEAD.replace("version: 1", "version: true")), "version: expected 1"),
    "duplicate case ids": (
        _text(
            HEAD + "scenarios:\n  planted:\n    module: planted\n    params: {kind: [pass, pass]}\n"
        ),
        "scenarios.planted.params: expected unique case ids",
    ),
    "control char in a param": (
        _text(
            HEAD + 'scenarios:\n  planted:\n    module: planted\n    params: {kind: ["ok\\x01"]}\n'
        ),
        "scenarios.planted.params.kind[0]",
    ),
    "surrogate in a param": (
        _text(
            HEAD + 'scenarios:\n  planted:\n    module: planted\n    params: {kind: ["\\ud800"]}\n'
        ),
        "scenarios.planted.params.kind[0]",
    ),
    "denied env": (
        _text(
            HEAD.replace(
                'base_image: "python:3.12-slim"', "base_image: b, env: {LD_PRELOAD: /x.so}"
            )
        ),
        "variants[0].env.LD_PRELOAD",
    ),
    "shell in base_image": (
        _text(HEAD.replace('"python:3.12-slim"', '"python:3.12-slim; id"')),
        "variants[0].base_image: expected an image reference",
    ),
    "bad pids_limit": (
        _text(HEAD.replace('base_image: "python:3.12-slim"', "base_image: b, pids_limit: .inf")),
        "variants[0].pids_limit",
    ),
    "module TIMEOUT_S = -1": (
        _module("neg_timeout", "PARAMS = {'x': [1]}\nTIMEOUT_S = -1\ndef run(ctx, params): pass\n"),
        "scenario module neg_timeout: TIMEOUT_S",
    ),
    "module empty axis": (
        _module("empty_axis", "PARAMS = {'x': []}\nTIMEOUT_S = 5\ndef run(ctx, params): pass\n"),
        "scenario module empty_axis: PARAMS['x']",
    ),
    "module failing import": (
        _module("fails_import", "raise RuntimeError('planted import failure')\n"),
        "scenario module fails_import: raised RuntimeError on import",
    ),
    "module without run": (
        _module("no_run", "PARAMS = {'x': [1]}\nTIMEOUT_S = 5\n"),
        "scenario module no_run: run",
    ),
    "50 MB file": (_big, "expected at most 1048576 bytes"),
    "FIFO": (_fifo, "expected a regular file, got a FIFO"),
    "directory": (_dir, "expected a regular file, got a directory"),
    "/dev/zero": (lambda _d: Path("/dev/zero"), "expected a regular file, got a character device"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_matrix_is_one_line_exit_2_naming_file_and_key(tmp_path, name):
    write, fragment = CASES[name]
    path = write(tmp_path)
    proc, elapsed = plan(path, tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"repro: error: {path}: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert elapsed < LIMIT_S, f"{name} took {elapsed:.1f} s"


def test_scenario_contract_is_a_protocol_and_the_case_api_is_importable_from_scenarios():
    from repro.runner import case_api

    assert scenarios.Context is case_api.Context
    assert (
        scenarios.CaseFailed is case_api.CaseFailed
        and scenarios.CaseSkipped is case_api.CaseSkipped
    )
    module = scenarios.load("noop")
    assert scenarios.contract_problem(module) is None
    with pytest.raises(ConfigError, match="scenario module repro.scenarios.absent: cannot import"):
        scenarios.load("absent")


def test_mem_and_pids_limits_are_optional_and_must_leave_room_for_shm(tmp_path):
    path = tmp_path / "matrix.yaml"
    path.write_text(
        HEAD
        + '  - {runtime: cu128, torch: "2.8.0", base_image: b, mem_limit: "8g", pids_limit: 64}\n'
    )
    variants = config.load(path).variants
    assert (variants[0].mem_limit, variants[0].pids_limit) == (None, None)  # containers' defaults
    assert (variants[1].mem_limit, variants[1].pids_limit) == ("8g", 64)
    path.write_text(
        HEAD.replace(
            'base_image: "python:3.12-slim"', 'base_image: b, shm_size: "16g", mem_limit: "16g"'
        )
    )
    with pytest.raises(
        ConfigError, match=r"variants\[0\]\.mem_limit: expected a size above shm_size 16g"
    ):
        config.load(path)


def test_a_module_that_starts_a_thread_at_import_does_not_hold_the_command(tmp_path):
    """Issue 25: a non-daemon thread started by a scenario module's import made ``repro plan``
    wait for it (40 s) at exit; now the command ends when its work is done, with a note."""
    planted(
        tmp_path,
        "threaded",
        """\
        import threading, time
        threading.Thread(target=time.sleep, args=(120,), name="planted-sleeper").start()
        PARAMS = {"x": [1]}
        TIMEOUT_S = 5
        def run(ctx, params):
            pass
        """,
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(scenario("threaded", "threaded"))
    proc, elapsed = plan(path, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "threaded       1 cases" in proc.stdout
    assert "not waiting for 1 thread(s) an imported module started (planted-sleeper)" in (
        proc.stderr
    )
    assert elapsed < 60, f"plan took {elapsed:.1f} s"
