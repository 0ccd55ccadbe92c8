"""The image builder (repro.containers.builder): BuildKit through the Docker CLI with one pip
cache for every variant, the classic builder as the fallback. The choice is made by the real
Docker CLIs of this machine (28.2 without buildx at /usr/local/bin/docker, 20.10 at
/usr/bin/docker) and a buildx plugin that speaks the CLI's plugin protocol; the Dockerfile is
the real docker/Dockerfile."""

from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from repro.containers import builder, images
from repro.errors import ConfigError, FatalError

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = (REPO / "docker" / "Dockerfile").read_text()
CAPTURED = Path(__file__).resolve().parent / "fixtures" / "captured"
CLI_28 = "/usr/local/bin/docker"
CLI_20 = "/usr/bin/docker"


def _cli_version(path: str) -> str:
    if not os.access(path, os.X_OK):
        return ""
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    match = re.search(r"version (\d+\.\d+)", done.stdout)
    return match.group(1) if match else ""


@pytest.fixture
def no_daemon(monkeypatch, tmp_path):
    """No daemon (a socket that does not exist) and an empty CLI config (no plugins)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))
    return tmp_path


# ---- the Dockerfile ---------------------------------------------------------------------------


def test_every_pip_install_in_the_dockerfile_uses_the_shared_cache_mount():
    runs = re.findall(r"^RUN .*?(?<!\\)$", DOCKERFILE, re.MULTILINE | re.DOTALL)
    pip_runs = [run for run in runs if "pip install" in run]
    assert len(pip_runs) == 2
    for run in pip_runs:
        assert run.startswith(f"RUN --mount=type=cache,id={builder.PIP_CACHE_ID},")
        assert f'"${{{builder.PIP_CACHE_ARG}}}" = on' in run  # the cache only when asked
        assert "PIP_NO_CACHE_DIR=1" in run
    assert f"ARG {builder.PIP_CACHE_ARG}=off" in DOCKERFILE
    assert "# syntax=" not in DOCKERFILE  # would pull docker/dockerfile from a registry


def test_the_classic_dockerfile_loses_the_mounts_and_nothing_else():
    classic = builder.classic_dockerfile(DOCKERFILE)
    assert "--mount" not in classic
    mount = f"RUN --mount=type=cache,id={builder.PIP_CACHE_ID},target=/var/cache/repro-pip \\\n    "
    assert DOCKERFILE.count(mount) == 2
    assert classic == DOCKERFILE.replace(mount, "RUN ")
    assert builder.classic_dockerfile(classic) == classic


def test_the_classic_context_carries_the_classic_dockerfile_and_the_same_digest(tmp_path):
    entries = [
        images.Entry("Dockerfile", path=REPO / "docker" / "Dockerfile"),
        images.Entry("src/x.py", data=b"x = 1\n"),
    ]
    classic = images.for_classic_builder(entries)
    assert [e.name for e in classic] == ["Dockerfile", "src/x.py"]
    assert "--mount" not in classic[0].data.decode()
    assert classic[1] is entries[1]


# ---- which builder ----------------------------------------------------------------------------


def test_classic_is_never_probed_and_an_unknown_builder_is_a_config_error():
    def refuse(*_a, **_k):
        raise AssertionError("probed")

    assert builder.choose("classic", run=refuse).kind == builder.CLASSIC
    with pytest.raises(ConfigError, match=r"expected one of auto, buildkit, classic, got 'kaniko'"):
        builder.choose("kaniko", run=refuse)


@pytest.mark.skipif(_cli_version(CLI_28) < "23", reason="needs a Docker CLI >= 23")
def test_a_cli_from_23_on_without_buildx_falls_back_to_classic_and_says_why(no_daemon):
    chosen = builder.choose("auto", docker=CLI_28)
    assert chosen.kind == builder.CLASSIC and chosen.argv == ()
    assert "only through the buildx plugin, which is not installed" in chosen.reason
    with pytest.raises(ConfigError, match="--builder buildkit: the Docker CLI 28") as raised:
        builder.choose("buildkit", docker=CLI_28)
    assert "buildx" in raised.value.hint


@pytest.mark.skipif(_cli_version(CLI_28) < "23", reason="needs a Docker CLI >= 23")
def test_a_buildx_plugin_makes_it_buildx_on_the_engines_own_builder(no_daemon):
    plugins = no_daemon / "docker-config" / "cli-plugins"
    plugins.mkdir(parents=True)
    plugin = plugins / "docker-buildx"
    plugin.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = docker-cli-plugin-metadata ]; then\n'
        '  echo \'{"SchemaVersion":"0.1.0","Vendor":"Docker Inc.","Version":"v0.23.0"}\'\n'
        "  exit 0\n"
        "fi\n"
        'if [ "$1 $2" = "buildx version" ]; then\n'
        "  echo 'github.com/docker/buildx v0.23.0 28c90ea'\n"
        "  exit 0\n"
        "fi\n"
        "exit 3\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    chosen = builder.choose("auto", docker=CLI_28)
    assert chosen.kind == builder.BUILDKIT
    assert chosen.argv == (CLI_28, "buildx", "build", "--builder", "default", "--load")
    assert "github.com/docker/buildx v0.23.0" in chosen.reason


@pytest.mark.skipif(_cli_version(CLI_20) != "20.10", reason="needs the Docker 20.10 CLI")
def test_a_20_10_cli_needs_an_engine_to_say_it_has_buildkit(no_daemon):
    chosen = builder.choose("auto", docker=CLI_20)
    assert chosen.kind == builder.CLASSIC
    assert "reached no Docker Engine: Cannot connect to the Docker daemon" in chosen.reason


def test_a_missing_cli_is_classic_with_the_reason(no_daemon):
    chosen = builder.choose("auto", docker=str(no_daemon / "no-docker"))
    assert chosen.kind == builder.CLASSIC and "no Docker CLI" in chosen.reason


# ---- a BuildKit build's output --------------------------------------------------------------


def test_the_failing_line_is_the_steps_own_error_not_buildkits_summary():
    lines = (CAPTURED / "buildkit-pip-no-match.txt").read_text().splitlines()
    assert builder.failing_line(lines) == (
        "ERROR: No matching distribution found for torch==1.11.0+cpu"
    )
    assert builder.failing_line(lines[-1:]).startswith("ERROR: failed to solve: process")
    assert builder.failing_line([]) is None


def test_a_failed_cli_build_raises_with_that_line_and_passes_the_build_args(tmp_path):
    """``sh`` stands in for the CLI: it records its argv and replays the captured log."""
    log = CAPTURED / "buildkit-pip-no-match.txt"
    argv_file = tmp_path / "argv"
    script = f'printf "%s\\n" "$@" > {argv_file}; cat {log}; exit 1'
    fake = builder.Builder(builder.BUILDKIT, "test", ("sh", "-c", script, "docker"))
    out = io.StringIO()
    with (
        open(tmp_path / "context.tar", "w+b") as context,
        pytest.raises(FatalError, match="No matching distribution found for torch==1.11.0"),
    ):
        builder.build_with_cli(fake, context, {"PIP_CACHE": "on", "A": "b c"}, out, network="none")
    argv = argv_file.read_text().splitlines()
    assert argv[:2] == ["--progress", "plain"] and argv[-1] == "-"
    assert argv[argv.index("PIP_CACHE=on") - 1 :][:2] == ["--build-arg", "PIP_CACHE=on"]
    assert "A=b c" in argv and argv[argv.index("--network") + 1] == "none"
    assert "#18 1.574 ERROR: No matching distribution" in out.getvalue()


def test_a_cli_build_returns_the_id_it_wrote_to_the_iidfile(tmp_path):
    script = (
        'while [ "$1" != --iidfile ]; do shift; done; '
        'printf "sha256:%064d" 7 > "$2"; cat > /dev/null'
    )
    fake = builder.Builder(builder.BUILDKIT, "test", ("sh", "-c", script, "docker"))
    with open(tmp_path / "context.tar", "w+b") as context:
        image_id = builder.build_with_cli(fake, context, {}, io.StringIO())
    assert image_id == "sha256:" + "0" * 63 + "7"


def test_a_bad_repro_builder_is_exit_2_naming_the_variable(tmp_path):
    (tmp_path / "matrix.yaml").write_text(
        "version: 1\n"
        "variants:\n"
        '  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\n'
        "scenarios:\n"
        "  noop: {}\n"
    )
    env = {**cli_env(), builder.ENV_VAR: "kaniko", "DOCKER_HOST": f"unix://{tmp_path}/absent"}
    done = subprocess.run(
        [sys.executable, "-m", "repro", "build", "--variant", "cpu-torch2.13"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "--builder (or $REPRO_BUILDER): expected one of auto, buildkit, classic" in done.stderr
    assert "Traceback" not in done.stderr
