"""Issue 19 item 5: every number in matrix.yaml and on the command line is range-checked by one
codec (``repro.bounds``) before use: exit 2, one line naming the file (or option), the key and
the expectation, never a traceback or an OverflowError (a 401-digit ``timeout_s`` used to end in
"unexpected OverflowError", exit 3).

Every numeric key of matrix.yaml is walked with every kind of bad value, through the real
command line (``repro plan --config``, its one error boundary).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from repro import bounds
from repro.cli.main import main
from repro.errors import ConfigError

#: A valid matrix.yaml holding every numeric key once; ``{key}`` marks where the bad value goes.
TEMPLATE = textwrap.dedent(
    """\
    version: {version}
    defaults: {{timeout_scale: {timeout_scale}, pids_limit: {default_pids}, shm_size: {shm}}}
    variants:
      - runtime: cpu
        torch: "2.13.0"
        base_image: "python:3.12-slim"
        pids_limit: {pids}
        mem_limit: {mem}
        env: {{N_THREADS: {env}}}
    scenarios:
      numbered: {{module: numbered, timeout_s: {timeout_s}, params: {{n: [{param}]}}}}
      mine: {{script: repro.py, timeout_s: {script_timeout}}}
    runners:
      cuda: {{labels: [gpu], gpus: {gpus}}}
    """
)
GOOD = {
    "version": "1",
    "timeout_scale": "1.5",
    "default_pids": "4096",
    "pids": "2048",
    "env": "4",
    "timeout_s": "30",
    "param": "3",
    "script_timeout": "60",
    "gpus": "8",
    "shm": '"2g"',
    "mem": '"16g"',
}
#: Placeholder -> the key path the error must name.
KEYS = {
    "version": "version",
    "timeout_scale": "defaults.timeout_scale",
    "default_pids": "defaults.pids_limit",
    "pids": "variants[0].pids_limit",
    "env": "variants[0].env.N_THREADS",
    "timeout_s": "scenarios.numbered.timeout_s",
    "param": "scenarios.numbered.params.n[0]",
    "script_timeout": "scenarios.mine.timeout_s",
    "gpus": "runners.cuda.gpus",
    "shm": "defaults.shm_size",
    "mem": "variants[0].mem_limit",
}
BAD = {
    "401-digit integer": "1" + "0" * 400,
    "5000-digit integer": "9" * 5000,
    "1.0e+400 (a YAML float: inf)": "1.0e+400",
    "nan": ".nan",
    "inf": ".inf",
    "-inf": "-.inf",
    "negative": "-1",
    "zero": "0",
    "boolean": "true",
    "string": '"5"',
    "2**63": str(2**63),
    "a 30-digit size": '"' + "9" * 30 + 'g"',
}
#: Values that are fine where any number (or a string) is: a parameter, an env value.
FREE_FORM = {
    "param": {"negative", "zero", "boolean", "string", "a 30-digit size"},
    "env": {"negative", "zero", "string", "a 30-digit size"},
}


def _write(tmp_path: Path, **values: str) -> Path:
    (tmp_path / "numbered.py").write_text(
        "PARAMS = {'n': [1]}\nTIMEOUT_S = 5\ndef run(ctx, params): pass\n"
    )
    (tmp_path / "repro.py").write_text("print('hello')\n")
    path = tmp_path / "matrix.yaml"
    path.write_text(TEMPLATE.format(**{**GOOD, **values}))
    return path


def _plan(path: Path, capsys) -> tuple[int, list[str]]:
    code = main(["plan", "--config", str(path)])
    return code, capsys.readouterr().err.splitlines()


@pytest.fixture
def tmp_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))  # the planted module "numbered"
    return tmp_path


def test_the_template_is_valid(tmp_dir, capsys):
    code, err = _plan(_write(tmp_dir), capsys)
    assert code == 0, err


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("placeholder", list(KEYS))
def test_every_malformed_number_is_exit_2_one_line_naming_file_and_key(
    tmp_dir, capsys, placeholder, bad
):
    path = _write(tmp_dir, **{placeholder: BAD[bad]})
    code, err = _plan(path, capsys)
    if bad in FREE_FORM.get(placeholder, ()):
        assert code == 0, err
        return
    assert code == 2, err
    assert len(err) == 1, err
    assert err[0].startswith(f"repro: error: {path}: {KEYS[placeholder]}: expected "), err[0]
    assert "Traceback" not in err[0] and "Overflow" not in err[0]
    assert len(err[0]) < 400  # a 5000-digit value is named by its length, not printed


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["run", "--list", "--timeout-scale", "1e400"], "--timeout-scale"),
        (["run", "--list", "--timeout-scale", "nan"], "--timeout-scale"),
        (["run", "--list", "--timeout-scale", "1e300"], "--timeout-scale"),
        (["run", "--list", "--timeout-scale", "0"], "--timeout-scale"),
        (["run", "--list", "--log-cap-mib", "inf"], "--log-cap-mib"),
        (["run", "--list", "--log-cap-mib", "-1"], "--log-cap-mib"),
        (["run", "--list", "-j", "1" + "0" * 400], "-j/--jobs"),
        (["run", "--list", "-j", "0"], "-j/--jobs"),
        (["run", "--list", "--rerun-failures", "-1"], "--rerun-failures"),
        (["run", "--list", "--rerun-failures", "1" + "0" * 400], "--rerun-failures"),
        (["run", "--list", "--rounds", "1" + "0" * 400], "--rounds"),
        (["docker-run", "--variant", "cpu-*", "--timeout", "nan"], "--timeout"),
        (["docker-run", "--variant", "cpu-*", "--timeout", "1e400"], "--timeout"),
        (["docker-run", "--variant", "cpu-*", "--timeout", "-5"], "--timeout"),
        (["docker-run", "--variant", "cpu-*", "--timeout-scale", "-1"], "--timeout-scale"),
        (["docker-run", "--variant", "cpu-*", "--shm-size", "0"], "--shm-size"),
        (["docker-run", "--variant", "cpu-*", "--shm-size", "9" * 30 + "g"], "--shm-size"),
        (["docker-run", "--variant", "cpu-*", "--gpus", "0,1024"], "--gpus"),
        (["docker-run", "--variant", "cpu-*", "--gpus", "9" * 5000], "--gpus"),
        (["docker-run", "--variant", "cpu-*", "--gpus", "0:" + "1" * 400], "--gpus"),
        (["docker-run", "--variant", "cpu-*", "--user", "1" + "0" * 400 + ":0"], "--user"),
        (["docker-run", "--variant", "cpu-*", "--user", "1000:4294967295"], "--user"),
        (["compare", "a", "b", "--threshold", "nan"], "--threshold"),
        (["compare", "a", "b", "--threshold", "100"], "--threshold"),
    ],
)
def test_every_bad_command_line_number_is_exit_2_one_line(tmp_dir, capsys, argv, option):
    path = _write(tmp_dir)
    argv = [*argv[:1], "--config", str(path), *argv[1:]] if argv[0] != "compare" else argv
    try:  # checked where it is parsed (argparse, repro.cli.options) or by its command
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err.splitlines()
    assert code == 2, err
    assert len(err) == 1 and option in err[0] and "Traceback" not in err[0], err


@pytest.mark.parametrize(
    "args",
    [
        ["--shm-size", "2g"],
        ["--gpus", "0,1023"],
        ["--gpus", "0:1,GPU-3f2c,nvidia.com/gpu=0"],  # a MIG device, a UUID, a CDI name
        ["--user", "1000:1000"],
        ["--user", "builder"],  # a name goes to Docker as it is
    ],
)
def test_good_docker_run_numbers_pass_the_checks(tmp_dir, capsys, args):
    path = _write(tmp_dir)
    code = main(["docker-run", "--config", str(path), "--variant", "cpu-*", *args, "--dry-run"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "expected" not in err


def test_argparse_rejects_a_5000_digit_int_with_exit_2(tmp_dir, capsys):
    # argparse's own type=int refuses it before any handler: SystemExit(2), one line.
    path = _write(tmp_dir)
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--config", str(path), "--list", "-j", "9" * 5000])
    assert stopped.value.code == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize(
    ("bound", "good", "bad"),
    [
        (bounds.CASE_SECONDS, [0.001, 1, 86400], [0, -1, 86400.5, 10**400, math.nan, math.inf]),
        (bounds.TIMEOUT_SCALE, [0.5, 100], [0, 100.01, True, "2", None]),
        (bounds.PIDS_LIMIT, [16, 1_000_000], [15, 1_000_001, 64.0, 10**400]),
        (bounds.RUNNER_GPUS, [1, 1024], [0, True, 1025, 2.0]),
        (bounds.JOBS, [1, 256], [0, 257]),
        (bounds.RERUNS, [0, 10], [-1, 11]),
        (bounds.THRESHOLD_PCT, [0.5, 99.9], [0, 100, math.nan]),
        (bounds.PARAM_NUMBER, [-1, 0, 2**63 - 1, 1e18], [2**63, -(2**63), math.inf, 10**400]),
        (bounds.GPU_INDEX, [0, 1023], [-1, 1024, 0.0]),
        (bounds.USER_ID, [0, 2**32 - 2], [-1, 2**32 - 1]),
    ],
)
def test_bounds_accept_their_range_exactly(bound, good, bad):
    assert [v for v in good if not bound.ok(v)] == []
    assert [v for v in bad if bound.ok(v)] == []
    with pytest.raises(ConfigError, match=rf"^--x: expected {bound.expected.replace('*', '.')}"):
        bound.check(bad[0], "--x")


@pytest.mark.parametrize("columns", ["9" * 5000, "0", "-3", "１２", "abc"])
def test_a_columns_variable_out_of_range_is_ignored(monkeypatch, columns):
    import io

    from repro.runner.progress import terminal_width

    monkeypatch.setenv("COLUMNS", columns)
    width = terminal_width(io.StringIO())  # no terminal: shutil's fallback, never an exception
    assert 0 < width < 100_000
    monkeypatch.setenv("COLUMNS", "120")
    assert terminal_width(io.StringIO()) == 120
