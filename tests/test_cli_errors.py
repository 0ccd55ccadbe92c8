"""Every command ends through the one error boundary: bad input exits 2, "cannot go on" exits 3,
each with one line on stderr and never a traceback (the real CLI in a subprocess)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli_env

from repro.cli import main as cli_main
from repro.errors import EXIT_CODES, EXIT_CONFIG, EXIT_FATAL, EXIT_INTERRUPTED, FatalError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MATRIX = (
    "version: 1\n"
    "defaults: {results_dir: results}\n"
    "variants:\n"
    '  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\n'
    "scenarios:\n"
    "  noop: {}\n"
)
#: A full disk: writing standard output fails with ENOSPC.
FULL = "/dev/full"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    (tmp_path / "a-file").write_text("not a directory\n")
    junit = tmp_path / "junit"
    junit.mkdir()
    shutil.copy(FIXTURES / "junit" / "pytest.xml", junit / "junit.xml")
    return tmp_path


def _no_docker_sdk(directory: Path) -> Path:
    """A PYTHONPATH entry whose ``docker`` package fails to import, as where the SDK is absent."""
    (directory / "docker").mkdir(parents=True)
    (directory / "docker" / "__init__.py").write_text("raise ImportError('no docker SDK here')\n")
    return directory


def repro(*args: str, cwd: Path, stdout: str | None = None, no_sdk: bool = False):
    """``python -m repro ARGS`` with no Docker daemon reachable; ``stdout``: a file to write to."""
    env = cli_env()
    env["DOCKER_HOST"] = f"unix://{cwd}/no-docker.sock"
    env.pop("REPRO_DEBUG", None)
    if no_sdk:
        blocker = _no_docker_sdk(cwd / "no-sdk")
        env["PYTHONPATH"] = os.pathsep.join([str(blocker), env["PYTHONPATH"]])
    with open(stdout or os.devnull, "w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "repro", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE if stdout is None else out,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=120,
        )
    return done


def _one_error_line(stderr: str) -> str:
    """The single ``repro...: error: ...`` line; progress lines before it are allowed."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, stderr
    assert errors[0].startswith("repro") and stderr.rstrip().endswith(errors[0]), stderr
    return errors[0]


BAD_INPUT = [
    ("plan", ("plan", "--config", "nope.yaml"), "nope.yaml: file not found"),
    ("env", ("env", "--jsn"), "unrecognized arguments: --jsn"),
    (
        "doctor",
        ("doctor", "--python", "/no/such/python"),
        "--python: /no/such/python: no such file",
    ),
    ("run", ("run", "-k", "no_such_case"), "'no_such_case' matches no case"),
    (
        "run-option",
        ("run", "--timeout-scale", "fast"),
        "--timeout-scale: expected a positive number",
    ),
    ("report", ("report", "no-such-dir", "-o", "out"), "no-such-dir"),
    ("compare", ("compare", "junit", "junit", "--threshold", "0"), "--threshold"),
    ("classify", ("classify", "no-such.log"), "no-such.log: cannot read"),
    ("build", ("build", "--variant", "cu999-*"), "'cu999-*' matches no variant"),
    ("host", ("host", "--config", "nope.yaml", "--variant", "x"), "nope.yaml: file not found"),
    ("docker-run", ("docker-run", "--variant", "cu999-torch9.9"), "matches no variant"),
    (
        "wheelhouse",
        ("wheelhouse", "--variant", "cu999-torch9.9", "wheels"),
        "matches no variant id",
    ),
]


@pytest.mark.parametrize(("name", "args", "expected"), BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
@pytest.mark.slow
def test_bad_input_exits_2_with_one_line(project, name, args, expected):
    done = repro(*args, cwd=project)
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert expected in _one_error_line(done.stderr)


CANNOT_GO_ON = [
    # standard output on a full disk (ENOSPC) reaches the boundary as an OSError
    ("plan", ("plan",), FULL, "No space left on device"),
    ("env", ("env", "--json"), FULL, "No space left on device"),
    ("doctor", ("doctor", "--json"), FULL, "No space left on device"),
    ("classify", ("classify", "junit/junit.xml"), FULL, "No space left on device"),
    ("compare", ("compare", "junit", "junit"), FULL, "No space left on device"),
    ("host", ("host", "--json"), FULL, "No space left on device"),
    ("run", ("run", "-k", "noop", "--results-dir", "a-file/results"), None, "cannot create a run"),
    ("report", ("report", "junit", "-o", "a-file/out"), None, "a-file"),
    ("build", ("build", "--variant", "cpu-*"), None, "docker daemon unreachable"),
    ("docker-run", ("docker-run", "--variant", "cpu-torch2.13"), None, "docker daemon unreachable"),
    (
        "wheelhouse",
        ("wheelhouse", "--variant", "cpu-torch2.13", "a-file"),
        None,
        "a-file: File exists",
    ),
]


@pytest.mark.parametrize(
    ("name", "args", "stdout", "expected"), CANNOT_GO_ON, ids=[c[0] for c in CANNOT_GO_ON]
)
@pytest.mark.slow
def test_cannot_go_on_exits_3_with_one_line(project, name, args, stdout, expected):
    if stdout == FULL and not Path(FULL).exists():
        pytest.skip("no /dev/full on this system")
    done = repro(*args, cwd=project, stdout=stdout)
    assert done.returncode == EXIT_FATAL, done.stderr
    assert expected in _one_error_line(done.stderr)


def test_without_the_docker_sdk_build_says_so_in_one_line(project):
    done = repro("build", "--variant", "cpu-*", cwd=project, no_sdk=True)
    assert done.returncode == EXIT_FATAL
    assert "docker Python SDK is not installed" in _one_error_line(done.stderr)


def test_docker_run_dry_run_prints_the_spec_without_sdk_or_daemon(project):
    done = repro(
        "docker-run",
        "--variant",
        "cpu-torch2.13",
        "--dry-run",
        "-k",
        "noop",
        cwd=project,
        no_sdk=True,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    command = next(ln.strip() for ln in done.stderr.splitlines() if "docker run " in ln)
    assert "--pids-limit 4096" in command and "--network none" in command
    assert "--user 0:0" not in command and "--privileged" not in command
    results = project / "results"
    assert f"{results}/<run-id>:/results/<run-id>:rw" in command
    assert not results.exists()  # a dry run writes nothing


def _parser_with(handler):
    """A parser with one command whose handler is ``handler``: drives main()'s one boundary."""
    parser = argparse.ArgumentParser(prog="repro")
    parser.add_subparsers(dest="command", required=True).add_parser("boom").set_defaults(
        handler=handler
    )
    return parser


def test_unexpected_oserror_is_one_line_unless_repro_debug(monkeypatch, capsys):
    def handler(_args):
        raise OSError(30, "Read-only file system", "results/x/junit.xml")

    monkeypatch.setattr(cli_main, "build_parser", lambda: _parser_with(handler))
    monkeypatch.delenv("REPRO_DEBUG", raising=False)
    assert cli_main.main(["boom"]) == EXIT_FATAL
    err = capsys.readouterr().err
    assert err == "repro: error: results/x/junit.xml: Read-only file system (EROFS)\n"
    monkeypatch.setenv("REPRO_DEBUG", "1")
    with pytest.raises(OSError):
        cli_main.main(["boom"])


def test_ctrl_c_exits_130(monkeypatch, capsys):
    def handler(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main, "build_parser", lambda: _parser_with(handler))
    assert cli_main.main(["boom"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "repro: interrupted\n"


def test_error_hint_follows_the_message_on_the_same_line(monkeypatch, capsys):
    def handler(_args):
        raise FatalError("no torch here", hint="pip install torch")

    monkeypatch.setattr(cli_main, "build_parser", lambda: _parser_with(handler))
    assert cli_main.main(["boom"]) == EXIT_FATAL
    assert capsys.readouterr().err == "repro: error: no torch here; pip install torch\n"


def test_help_lists_every_exit_code(project):
    done = repro("--help", cwd=project)
    assert done.returncode == 0
    assert "exit status:" in done.stdout
    for code, meaning in EXIT_CODES:
        assert f"  {code:<4} {meaning}" in done.stdout
    assert [code for code, _ in EXIT_CODES] == [0, 1, 2, 3, 130]


def test_the_readme_exit_status_table_is_the_help_table():
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Exit status", 1)[1]
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", section, flags=re.M)
    assert [(int(code), meaning) for code, meaning in rows] == list(EXIT_CODES)


def test_every_command_sets_a_handler():
    parser = cli_main.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    expected = {"plan", "check", "env", "doctor", "run", "report", "compare", "classify"}
    expected |= {"build", "host", "docker-run", "wheelhouse", "venv-run", "bisect", "completion"}
    expected |= {"slurm", "slurm-status", "slurm-collect"}
    assert set(sub.choices) == expected
    for name, command in sub.choices.items():
        assert callable(command.get_default("handler")), name


def test_the_standalone_docker_entry_point_is_gone():
    assert not (Path(cli_main.__file__).parent / "docker_commands.py").exists()
    done = subprocess.run(
        [sys.executable, "-m", "repro.cli.docker_commands", "host"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "No module named repro.cli.docker_commands" in done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # 20 arguments of 50,000 characters: 1 MB on the command line (each under 128 KiB)
        (("check", "pip install torch==2.8.0", *["x" * 50_000] * 20), "unrecognized arguments"),
        (("check", "pip install " + "y" * 120_000), "installs no torch"),
        (("check", "--torch", "2." + "9" * 5000), "is not a version like 2.7.0"),
        (("check", "--torch", "2.8.0", "--runtime", "z" * 120_000), "is not a runtime tag"),
    ],
    ids=["1 MB of arguments", "120 kB command", "5,000-digit version", "120 kB runtime"],
)
@pytest.mark.slow
def test_a_huge_argument_is_exit_2_with_a_short_line(project, args, expected):
    """Issue 25: a 5,000-digit torch version gave exit 3 (int()'s digit limit), and a 1 MB
    command line was echoed whole in the error."""
    done = repro(*args, cwd=project)
    assert done.returncode == EXIT_CONFIG, done.stderr[:500]
    line = _one_error_line(done.stderr)
    assert expected in line and len(line) <= cli_main.MAX_ERROR_LINE_CHARS + 200, len(line)
