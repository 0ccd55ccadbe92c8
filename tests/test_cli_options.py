"""One vocabulary on the command line: every flag from repro/cli/options.py's table, one metavar
and one help text per name across commands, deprecated spellings still parsed, "did you mean",
completion scripts, and every ``--json`` output valid against its schema in repro/data/schemas/.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO, cli_env, run_cli, write_matrix

from repro.cli import options
from repro.cli.main import build_parser, main, parse

SCHEMAS = REPO / "repro" / "data" / "schemas"
HOST_FIXTURE = str(REPO / "tests" / "fixtures" / "hosts" / "cpu")


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    return dict(parser.subcommands)


def _visible(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        yield action


def test_every_flag_name_has_one_metavar_and_one_help_across_commands():
    seen: dict[str, tuple[str, object, str]] = {}
    clashes = []
    for command, parser in _commands().items():
        for action in _visible(parser):
            names = action.option_strings or [f"<{action.dest}>"]
            for name in names:
                meaning = (action.metavar, action.help)
                if name in seen and seen[name][1:] != meaning:
                    clashes.append(
                        f"{name}: {seen[name][0]} {seen[name][1:]} vs {command} {meaning}"
                    )
                seen.setdefault(name, (command, *meaning))
    assert not clashes, "\n".join(clashes)
    assert "--variant" in seen and seen["--variant"][1] == "GLOB"


def test_every_option_of_every_command_comes_from_the_table():
    declared = {flag for o in options.OPTIONS.values() for flag in o.flags}
    declared |= {f"<{o.dest}>" for o in options.OPTIONS.values() if not o.flags}
    stray = []
    for command, parser in _commands().items():
        for action in _visible(parser):
            for name in action.option_strings or [f"<{action.dest}>"]:
                if name not in declared:
                    stray.append(f"{command}: {name}")
    assert not stray, stray


def test_variant_selectors_are_the_repeatable_glob_everywhere():
    for command, parser in _commands().items():
        for action in _visible(parser):
            if "--variant" in action.option_strings:
                assert isinstance(action, argparse._AppendAction), command
                assert action.metavar == "GLOB", command


def test_k_help_says_it_is_not_a_pytest_expression():
    assert "not a pytest expression" in options.OPTIONS["patterns"].help


@pytest.mark.parametrize(
    ("argv", "dest", "value", "new"),
    [
        (["run", "--results", "r"], "results_dir", "r", "--results-dir"),
        (["run", "--host-fingerprint", "f.json"], "fingerprint", "f.json", "--fingerprint"),
        (["run", "--variant", "cu128-torch2.8"], "as_variant", "cu128-torch2.8", "--as-variant"),
        (["report", "x", "--output", "out"], "output_dir", "out", "-o/--output-dir"),
        (
            ["docker-run", "--variant", "cpu*", "--report", "out"],
            "output_dir",
            "out",
            "--output-dir",
        ),
        (
            ["build", "--variant", "cpu*", "--python", "3.11"],
            "image_python",
            "3.11",
            "--image-python",
        ),
    ],
)
def test_old_spellings_still_parse_with_a_note(capsys, argv, dest, value, new):
    args = parse(argv)
    assert getattr(args, dest) == value
    err = capsys.readouterr().err
    assert "deprecated" in err and new in err


def test_new_spellings_parse_without_a_note(capsys):
    args = parse(
        ["run", "--results-dir", "r", "--fingerprint", "f", "--as-variant", "cpu-torch2.13"]
    )
    assert (args.results_dir, args.fingerprint, args.as_variant) == ("r", "f", "cpu-torch2.13")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["build", "--variant", "cpu*", "--image-python", "/usr/bin/python3"],
            "expected a Python version X.Y",
        ),
        (
            ["build", "--variant", "cpu*", "--python", "/usr/bin/python3"],
            "the interpreter under test is --python PATH",
        ),
        (["run", "--as-variant", "cu12*"], "not a glob"),
        (["run", "--python", "/nonexistent/python"], "no such file"),
        (["run", "--timeout-scale", "0"], "expected a positive number"),
        (["rnu"], "did you mean 'run'"),
        (["run", "--resluts-dir", "x"], "did you mean '--results-dir'"),
        (["run", "--isolation", "zygot"], "did you mean 'zygote'"),
    ],
)
def test_bad_flags_are_usage_errors_with_the_reason(capsys, argv, expected):
    with pytest.raises(SystemExit) as stop:
        parse(argv)
    assert stop.value.code == 2
    assert expected in capsys.readouterr().err


def test_did_you_mean_for_variant_ids_and_scenario_names(capsys):
    assert (
        main(["plan", "--config", str(REPO / "matrix.yaml"), "--variant", "cu128-torch2.88"]) == 2
    )
    assert "did you mean 'cu128-torch2.8'" in capsys.readouterr().err
    assert main(["run", "--config", str(REPO / "matrix.yaml"), "--list", "-k", "dataloder"]) == 2
    assert "did you mean 'dataloader'" in capsys.readouterr().err


def test_did_you_mean_for_matrix_yaml_keys(tmp_path, capsys):
    config = tmp_path / "matrix.yaml"
    text = (REPO / "matrix.yaml").read_text().replace("\nvariants:", "\nvarients:", 1)
    config.write_text(text)
    assert main(["plan", "--config", str(config)]) == 2
    assert "varients: unknown key (did you mean 'variants'?" in capsys.readouterr().err


# ---- completion -------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_generate(capsys, shell):
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert "repro" in script and "_ARGCOMPLETE" in script
    if shell == "bash" and shutil.which("bash"):
        check = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert check.returncode == 0, check.stderr


def _complete(line: str) -> list[str]:
    """What ``repro`` answers the completion scripts for a TAB at the end of ``line``: the
    scripts' protocol (``_ARGCOMPLETE``, ``COMP_LINE``, ``COMP_POINT``, answers on fd 8)."""
    env = dict(cli_env(), _ARGCOMPLETE="1", _ARGCOMPLETE_IFS="\n", COMP_LINE=line)
    env["COMP_POINT"] = str(len(line))
    done = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m repro 8>&1 1>/dev/null 9>/dev/null"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [answer.strip() for answer in done.stdout.split("\n")]


def test_completion_answers_flags_without_deprecated_spellings():
    answers = _complete("repro run --res")
    assert "--results-dir" in answers
    assert "--results" not in answers


def test_completion_answers_variant_ids_from_matrix_yaml():
    answers = _complete("repro plan --variant cpu-")
    assert "cpu-torch2.13" in answers


# ---- --json ------------------------------------------------------------------------------------


def _validate(command: str, text: str) -> dict:
    data = json.loads(text)
    schema = json.loads((SCHEMAS / f"{command}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
    assert data["schema_version"] == options.SCHEMA_VERSION
    return data


def test_every_command_that_takes_json_has_a_schema():
    with_json = {
        name
        for name, p in _commands().items()
        if any("--json" in a.option_strings for a in p._actions)
    }
    assert with_json == {p.stem for p in SCHEMAS.glob("*.json")}


def _write_log(tmp_path: Path) -> Path:
    log = tmp_path / "train.log"
    log.write_text(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    return log


def test_json_outputs_validate_against_their_schemas(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    junit = REPO / "tests" / "fixtures" / "junit"
    runs = [
        ("plan", ["plan", "--json"]),
        ("run", ["run", "--list", "--json", "-k", "shm"]),
        ("host", ["host", "--json", "--fixture", HOST_FIXTURE]),
        ("docker-run", ["docker-run", "--variant", "cpu-torch2.13", "--dry-run", "--json",
                        "--fixture", HOST_FIXTURE, "--results-dir", str(tmp_path / "r")]),
        ("build", ["build", "--variant", "cpu-torch2.13", "--context-dir", str(tmp_path / "ctx"),
                   "--json"]),
        ("report", ["report", str(junit / "pytest.xml"), "-o", str(tmp_path / "a"), "--json"]),
        ("report", ["report", str(junit / "gtest.xml"), "-o", str(tmp_path / "b"), "--json"]),
        ("compare", ["compare", str(tmp_path / "a" / "matrix.json"),
                     str(tmp_path / "b" / "matrix.json"), "--json"]),
    ]  # fmt: skip
    for command, argv in runs:
        assert main(argv) in (0, 1), argv
        _validate(command, capsys.readouterr().out)


def test_classify_json_has_one_shape_for_one_log_or_many(tmp_path, capsys):
    log = _write_log(tmp_path)
    assert main(["classify", str(log), "--json"]) == 0
    one = _validate("classify", capsys.readouterr().out)
    assert main(["classify", str(log), str(log), "--json"]) == 0
    two = _validate("classify", capsys.readouterr().out)
    assert len(one["logs"]) == 1 and len(two["logs"]) == 2
    assert one["logs"][0]["signature"] == two["logs"][1]["signature"] != "unknown"


@pytest.mark.slow
def test_env_doctor_and_check_json_validate(tmp_path, capsys):
    """Slow: env and doctor probe the interpreter's torch in a subprocess."""
    assert main(["env", "--json"]) == 0
    env = capsys.readouterr().out
    _validate("env", env)
    fp = tmp_path / "fingerprint.json"
    fp.write_text(env)
    main(["check", "--torch", "2.8.0", "--runtime", "cu128", "--fingerprint", str(fp), "--json"])
    _validate("check", capsys.readouterr().out)
    main(["doctor", "--json"])
    _validate("doctor", capsys.readouterr().out)


@pytest.mark.slow
def test_run_json_of_a_finished_run_validates_and_names_each_case(project):
    """Slow: two planted cases run in real child processes; stdout is only the JSON object
    (progress goes to stderr), a red case makes the exit 1 and ``red`` true."""
    write_matrix(
        project, "planted: {module: planted, timeout_s: 60, params: {kind: [pass, fail]}}\n"
    )
    done = run_cli("run", "--no-doctor", "--json", "--results-dir", "results", cwd=project)
    assert done.returncode == 1, done.stderr
    data = _validate("run", done.stdout)
    assert data["red"] is True and Path(data["junit"]).is_file()
    outcomes = {c["id"]: (c["scenario"], c["outcome"]) for c in data["cases"]}
    assert outcomes == {
        "planted[kind=pass]": ("planted", "passed"),
        "planted[kind=fail]": ("planted", "failed"),
    }


def test_wheelhouse_shows_its_dir_and_still_parses_the_old_positional_variant():
    new = parse(["wheelhouse", "--variant", "cpu-torch2.13", "wh", "--image-python", "3.11"])
    assert (new.variants, new.old_variant, new.dest) == (["cpu-torch2.13"], None, "wh")
    old = parse(["wheelhouse", "cpu-torch2.13", "wh", "--python", "3.11"])
    assert (old.old_variant, old.dest, old.image_python) == ("cpu-torch2.13", "wh", "3.11")
    assert "DIR" in _commands()["wheelhouse"].format_usage()


def test_wheelhouse_json_stdout_holds_no_pip_output(project):
    """pip prints "Looking in indexes: ..." to its stdout for a non-default index; the command's
    stdout stays for its own JSON (here: nothing, pip fails on an index that does not exist)."""
    done = run_cli(
        "wheelhouse", "--config", str(REPO / "matrix.yaml"), "--variant", "cpu-torch2.13",
        str(project / "wheels"), "--index-url", (project / "no-index").as_uri(), "--json",
        cwd=project, timeout=300,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "pip download failed" in done.stderr
    assert done.stdout == ""


def test_as_variant_is_checked_against_matrix_yaml_before_anything_runs(capsys):
    code = main(["run", "--config", str(REPO / "matrix.yaml"), "--list", "--as-variant",
                 "cpu-torch2.1"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "no variant with id 'cpu-torch2.1' (did you mean 'cpu-torch2.15'" in err
    assert "fingerprinting" not in err


def test_check_json_of_an_install_line_and_of_a_build_validate(tmp_path, capsys):
    """Both answers of ``repro check --json`` (an install line, ``--torch/--runtime``) have the
    one schema; the fingerprint is a file, so no probe of this machine."""
    fp = tmp_path / "fingerprint.json"
    fp.write_text(
        json.dumps(
            {
                "schema": 1,
                "host": {"os": "Ubuntu 24.04", "python": "3.12.3", "wsl2": False},
                "gpus": [],
                "driver": {"nvidia": "570.86.15"},
                "runtime": {"torch": "2.13.0+cu130", "cuda": "13.0", "arch_list": ["sm_90"]},
            }
        )
    )
    main(["check", "pip install torch==2.7.0+cu121", "--fingerprint", str(fp), "--json"])
    line = _validate("check", capsys.readouterr().out)
    assert line["line"] == "pip install torch==2.7.0+cu121"
    main(["check", "--torch", "2.13.0", "--runtime", "cu130", "--fingerprint", str(fp), "--json"])
    _validate("check", capsys.readouterr().out)


def test_classify_json_of_a_clean_log_validates_with_no_signature(tmp_path, capsys):
    clean = tmp_path / "clean.log"
    clean.write_text("epoch 1 loss 0.5\nepoch 2 loss 0.4\n")
    assert main(["classify", str(clean), "--json"]) == 0
    data = _validate("classify", capsys.readouterr().out)
    assert data["logs"][0]["signature"] is None


def test_the_flag_table_refuses_two_entries_with_one_name():
    """A dict keeps the last of two entries silently: `repro run --repeat` once took `repro
    bisect --repeat`'s meaning and default (2 rounds for every run)."""
    from repro.cli import options

    entry = options.OPTIONS["rounds"]
    with pytest.raises(ValueError, match="two entries named 'rounds'"):
        options._by_dest((entry, entry))
    assert options.OPTIONS["rounds"].flags == ("--rounds",)
    assert options.OPTIONS["repeat"].flags == ("--repeat",)
