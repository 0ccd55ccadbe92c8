"""Issue 31, item 3: each command's options are resolved once, in ``repro.cli.resolve``, into one
typed object that is passed down whole (``ResolvedRun`` for ``repro run``, ``ResolvedDockerRun``
for ``repro docker-run``); the hand-mapping layers (``RunOptions``, ``JobOptions``,
``options_from``) are gone. Precedence through the real parser: flag > ``REPRO_*`` >
matrix.yaml > default."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from repro import config as matrix_mod
from repro.cli import main as cli_main
from repro.cli import resolve
from repro.containers.options import ResolvedDockerRun
from repro.runner import job as run_job
from repro.runner.job import ResolvedRun

REPRO = Path(__file__).resolve().parent.parent / "repro"

MATRIX = (
    "version: 1\n"
    "defaults: {results_dir: from-matrix, timeout_scale: 3}\n"
    "variants:\n"
    "  - {id: cpu-torch2.13, torch: '2.13.0', runtime: cpu, base_image: 'python:3.12-matrix',"
    " shm_size: '2g'}\n"
)


def _modules():
    for path in sorted(REPRO.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def test_the_hand_mapping_layers_are_gone():
    """No module defines or names ``RunOptions``/``JobOptions``/``options_from``."""
    gone = {"RunOptions", "JobOptions", "options_from"}
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            name = (
                node.name
                if isinstance(node, ast.ClassDef | ast.FunctionDef)
                else node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else None
            )
            if name in gone:
                found.append(f"{path.relative_to(REPRO.parent)}:{node.lineno} {name}")
    assert found == []


def test_the_options_objects_are_made_in_the_resolve_step_only():
    """``ResolvedRun``/``ResolvedDockerRun`` are built only in ``repro/cli/resolve.py`` (below,
    they are only read, or copied with ``dataclasses.replace``)."""
    made = []
    for path, tree in _modules():
        if path.name == "resolve.py" and path.parent.name == "cli":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name in ("ResolvedRun", "ResolvedDockerRun"):
                    made.append(f"{path.relative_to(REPRO.parent)}:{node.lineno}")
    assert made == []


def test_every_field_is_a_flag_of_its_command_or_derived(tmp_path):
    """The resolve step reads fields by the flag table's ``dest`` names: each field of an options
    object is a ``dest`` of its command's parse result, or one the step derives."""
    config = tmp_path / "matrix.yaml"
    config.write_text(MATRIX)
    parser = cli_main.build_parser()
    run_args = vars(parser.parse_args(["run", "--config", str(config)]))
    docker_args = vars(
        parser.parse_args(["docker-run", "--variant", "cpu*", "--config", str(config)])
    )
    run_derived = {"doctor", "log_cap_bytes"}
    docker_derived = {"scale", "variants"}
    assert {f.name for f in dataclasses.fields(ResolvedRun)} - run_derived <= set(run_args)
    assert {f.name for f in dataclasses.fields(ResolvedDockerRun)} - docker_derived <= set(
        docker_args
    )


def _docker_run(argv: list[str], config: Path) -> ResolvedDockerRun:
    args = cli_main.build_parser().parse_args(
        ["docker-run", "--variant", "cpu*", "--config", str(config), *argv]
    )
    matrix = matrix_mod.load(config)
    return resolve.docker_run(args, matrix, matrix.select_variants(args.variants))


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        (None, None, "python:3.12-matrix"),
        (None, "python:3.12-env", "python:3.12-env"),
        ("python:3.12-flag", "python:3.12-env", "python:3.12-flag"),
    ],
)
def test_docker_run_base_image_flag_over_env_over_matrix(
    tmp_path, monkeypatch, flag, env, expected
):
    config = tmp_path / "matrix.yaml"
    config.write_text(MATRIX)
    monkeypatch.chdir(tmp_path)
    if env is None:
        monkeypatch.delenv("REPRO_BASE_IMAGE", raising=False)
    else:
        monkeypatch.setenv("REPRO_BASE_IMAGE", env)
    resolved = _docker_run(["--base-image", flag] if flag else [], config)
    (part,) = resolved.variants
    assert part.variant.base_image == expected == part.settings.variant.base_image


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [(None, None, "auto"), (None, "classic", "classic"), ("buildkit", "classic", "buildkit")],
)
def test_docker_run_builder_flag_over_env_over_default(tmp_path, monkeypatch, flag, env, expected):
    config = tmp_path / "matrix.yaml"
    config.write_text(MATRIX)
    monkeypatch.chdir(tmp_path)
    if env is None:
        monkeypatch.delenv("REPRO_BUILDER", raising=False)
    else:
        monkeypatch.setenv("REPRO_BUILDER", env)
    assert _docker_run(["--builder", flag] if flag else [], config).builder == expected


def test_docker_run_matrix_yaml_values_under_the_flags(tmp_path, monkeypatch):
    """results_dir, the timeout scale and the container's /dev/shm: matrix.yaml's unless the
    flag is given; the limits are one per variant, inside the one object."""
    config = tmp_path / "matrix.yaml"
    config.write_text(MATRIX)
    monkeypatch.chdir(tmp_path)
    plain = _docker_run([], config)
    assert plain.results_dir == (tmp_path / "from-matrix").resolve()
    assert (plain.timeout_scale, plain.scale) == (None, 3)
    assert plain.variants[0].limits.shm_size == "2g"
    flags = _docker_run(
        ["--results-dir", "from-flag", "--timeout-scale", "2", "--shm-size", "4g"], config
    )
    assert flags.results_dir == (tmp_path / "from-flag").resolve()
    assert (flags.timeout_scale, flags.scale) == (2, 2)
    assert flags.variants[0].limits.shm_size == "4g"


def test_run_results_dir_flag_over_matrix_yaml(tmp_path, monkeypatch):
    """``repro run`` has no ``REPRO_*`` layer; its results root is ``--results-dir``, else
    matrix.yaml's ``defaults.results_dir`` (applied where the job loads the file)."""
    config = tmp_path / "matrix.yaml"
    config.write_text(MATRIX)
    monkeypatch.chdir(tmp_path)
    variant = matrix_mod.load(config).variants[0]
    matrix = matrix_mod.load(config)
    for argv, root in (([], "from-matrix"), (["--results-dir", "from-flag"], "from-flag")):
        args = cli_main.build_parser().parse_args(["run", "--config", str(config), *argv])
        _run_id, run_dir = run_job.make_run_dir(matrix, resolve.run(args), variant)
        assert run_dir.parent == Path(root)


def test_run_derives_the_doctor_and_the_log_cap_from_their_flags():
    parser = cli_main.build_parser()
    plain = resolve.run(parser.parse_args(["run"]))
    assert plain.doctor is True and plain.as_variant is None
    resolved = resolve.run(
        parser.parse_args(["run", "--no-doctor", "--log-cap-mib", "4", "--as-variant", "x"])
    )
    assert resolved.doctor is False
    assert resolved.log_cap_bytes == 4 * 1024 * 1024
    assert resolved.as_variant == "x"
