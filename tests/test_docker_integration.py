"""The container lane for real: docker.io + dockerd, a debootstrap base image, the CPU variant
built offline from a wheelhouse, scenarios run inside it, results read on the host.

The session fixture installs ``docker.io`` and ``debootstrap`` when missing, starts ``dockerd``
when no daemon answers (and stops it afterwards), imports a Debian bookworm base image made with
``debootstrap --variant=minbase`` and fills a wheelhouse with ``pip download`` (torch 2.13.0
CPU for the base's Python 3.11 plus the project's dependencies). It needs root and apt-get;
without them (or with ``REPRO_SKIP_DOCKER_TESTS=1``) the module is skipped with the reason.
Everything here is one build (about a minute) plus a few container runs of a few seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import run_cli

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
BASE_IMAGE = "repro-matrix-test-base:bookworm"
IMAGE_REPO = "repro-matrix-test"
VARIANT = "cpu-torch2.13"
CUDA_VARIANT = "cu128-torch2.13"
DOCKERD_FLAGS = (
    [],
    ["--iptables=false", "--ip6tables=false", "--bridge=none", "--storage-driver=vfs"],
)
TIMINGS: dict[str, float] = {}

MATRIX = f"""\
version: 1
defaults: {{results_dir: results, shm_size: "8g"}}
variants:
  - {{runtime: cpu, torch: "2.13.0", base_image: "{BASE_IMAGE}", python: "3.11"}}
  - {{runtime: cu128, torch: "2.13.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04", python: "3.12"}}
scenarios:
  noop: {{}}
  shm:
    module: repro.scenarios.shm
  fork_safety:
    timeout_s: 120
    params: {{start_method: [fork]}}
"""


def _skip_reason() -> str | None:
    if os.environ.get("REPRO_SKIP_DOCKER_TESTS"):
        return "REPRO_SKIP_DOCKER_TESTS is set"
    if sys.platform != "linux":
        return "the docker tests need Linux"
    if os.geteuid() != 0:
        return "the docker tests install docker.io and start dockerd: they need root"
    if shutil.which("apt-get") is None and (
        shutil.which("dockerd") is None or shutil.which("debootstrap") is None
    ):
        return "no apt-get to install docker.io and debootstrap"
    return None


def _run(command, timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, timeout=timeout, stdin=subprocess.DEVNULL, text=True, capture_output=True, **kwargs
    )


def _apt_install() -> None:
    missing = [
        pkg
        for pkg, tool in (("docker.io", "dockerd"), ("debootstrap", "debootstrap"))
        if shutil.which(tool) is None
    ]
    if not missing:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = _run(["apt-get", "update", "-qq"], env=env)
    done = _run(["apt-get", "install", "-y", "-qq", *missing], env=env)
    if done.returncode != 0:
        pytest.skip(
            f"apt-get install {' '.join(missing)} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        )


def _ping(client_factory) -> bool:
    try:
        client = client_factory()
        client.ping()
        client.close()
        return True
    except Exception:
        return False


@contextlib.contextmanager
def _dockerd(log_dir: Path):
    """Yield a docker client; start dockerd (default flags, then a no-iptables/vfs fallback)
    when none answers, and stop the one started here at the end."""
    import docker

    def factory():
        return docker.from_env(timeout=3600)

    if _ping(factory):
        yield factory()
        return
    started = None
    for attempt, flags in enumerate(DOCKERD_FLAGS):
        log = open(log_dir / f"dockerd-{attempt}.log", "w")  # noqa: SIM115 - lives as long as dockerd
        proc = subprocess.Popen(
            ["dockerd", *flags],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not _ping(factory):
            time.sleep(0.5)
        if proc.poll() is None and _ping(factory):
            started = proc
            break
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
    if started is None:
        tail = (log_dir / f"dockerd-{len(DOCKERD_FLAGS) - 1}.log").read_text()[-2000:]
        pytest.fail(f"dockerd did not start with any of {DOCKERD_FLAGS}:\n{tail}")
    try:
        yield factory()
    finally:
        started.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.wait(timeout=60)


def _base_image(client, work: Path) -> None:
    import docker

    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.get(BASE_IMAGE)
        return
    rootfs = work / "rootfs"
    mirror = os.environ.get("REPRO_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    done = _run(
        [
            "debootstrap",
            "--variant=minbase",
            "--include=python3,python3-venv,ca-certificates",
            "bookworm",
            str(rootfs),
            mirror,
        ],
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    client.api.import_image_from_stream(
        tar.stdout, repository=BASE_IMAGE.split(":")[0], tag=BASE_IMAGE.split(":")[1]
    )
    assert tar.wait() == 0
    shutil.rmtree(rootfs, ignore_errors=True)
    client.images.get(BASE_IMAGE)


def _snapshot(dest: Path) -> Path:
    """A copy of the checkout's files that go into an image."""
    shutil.copytree(REPO / "repro", dest / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "docker", dest / "docker")
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _cli(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="session")
def lane(tmp_path_factory):
    """(docker client, project dir with matrix.yaml, wheelhouse dir, image id)."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("docker-lane")
    started = time.monotonic()
    _apt_install()
    TIMINGS["apt"] = time.monotonic() - started
    with _dockerd(work) as client:
        TIMINGS["dockerd"] = time.monotonic() - started - TIMINGS["apt"]
        mark = time.monotonic()
        _base_image(client, work)
        TIMINGS["base_image"] = time.monotonic() - mark
        # The image is built from a snapshot of the checkout, so edits made while the suite runs
        # do not make later builds differ from the first.
        source = _snapshot(work / "source")
        project = work / "project"
        project.mkdir()
        (project / "matrix.yaml").write_text(MATRIX)
        wheelhouse = work / "wheelhouse"
        mark = time.monotonic()
        done = _cli(
            "wheelhouse",
            "--variant",
            VARIANT,
            str(wheelhouse),
            "--index-url",
            os.environ.get("REPRO_TEST_INDEX_URL", "https://pypi.org/simple"),
            cwd=project,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        TIMINGS["wheelhouse"] = time.monotonic() - mark
        mark = time.monotonic()
        done = _cli(
            "build",
            "--variant",
            VARIANT,
            "--wheelhouse",
            str(wheelhouse),
            "--source",
            str(source),
            "--image-repo",
            IMAGE_REPO,
            "--json",
            cwd=project,
            timeout=1800,
        )
        assert done.returncode == 0, done.stderr[-5000:]
        TIMINGS["build"] = time.monotonic() - mark
        record = json.loads(done.stdout)["images"][0]
        yield {
            "client": client,
            "project": project,
            "source": source,
            "wheelhouse": wheelhouse,
            "record": record,
            "build_log": done.stderr,
        }
        print(
            "\ndocker lane timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items()),
            file=sys.stderr,
        )


def _docker_run(
    lane, *args: str, results: Path, timeout: float = 900
) -> subprocess.CompletedProcess:
    return _cli(
        "docker-run",
        "--variant",
        VARIANT,
        "--wheelhouse",
        str(lane["wheelhouse"]),
        "--source",
        str(lane["source"]),
        "--image-repo",
        IMAGE_REPO,
        "--results-dir",
        str(results),
        *args,
        cwd=lane["project"],
        timeout=timeout,
    )


def _suite(
    results: Path,
) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, ET.Element]]:
    """(suite properties, {case: properties}, {case: testcase element}) of the only run."""
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    root = ET.parse(runs[0] / "junit.xml").getroot()
    suite_props: dict[str, str] = {}
    cases, elements = {}, {}
    for suite in root.iter("testsuite"):
        props = suite.find("properties")
        suite_props.update(
            {p.get("name"): p.get("value") for p in props} if props is not None else {}
        )
        for case in suite.iter("testcase"):
            case_props = case.find("properties")
            cases[case.get("name")] = (
                {p.get("name"): p.get("value") for p in case_props}
                if case_props is not None
                else {}
            )
            elements[case.get("name")] = case
    return suite_props, cases, elements


def _our_containers(client) -> list:
    return client.containers.list(all=True, filters={"label": "io.repro-matrix.run=1"})


def test_image_is_built_offline_labelled_and_records_the_installed_build(lane):
    record = lane["record"]
    assert record["tag"] == f"{IMAGE_REPO}:{VARIANT}"
    labels = record["labels"]
    assert labels["io.repro-matrix.variant.id"] == VARIANT
    assert labels["io.repro-matrix.variant.torch"] == "2.13.0"
    assert labels["io.repro-matrix.variant.runtime"] == "cpu"
    assert labels["io.repro-matrix.variant.base_image"] == BASE_IMAGE
    assert labels["io.repro-matrix.variant.torch_source"] == "wheelhouse"
    assert labels["org.opencontainers.image.version"] == labels["io.repro-matrix.version"]
    assert labels["io.repro-matrix.installed.torch"] == "2.13.0+cpu"
    assert labels["io.repro-matrix.installed.runtime"] == "cpu"
    assert labels["io.repro-matrix.installed.python"].startswith("3.11.")
    image = lane["client"].images.get(record["id"])
    assert image.attrs["Config"]["User"] == "10001:10001"  # non-root by default


def test_second_build_reuses_the_image_without_building(lane):
    done = _cli(
        "build",
        "--variant",
        VARIANT,
        "--wheelhouse",
        str(lane["wheelhouse"]),
        "--source",
        str(lane["source"]),
        "--image-repo",
        IMAGE_REPO,
        "--json",
        cwd=lane["project"],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)["images"][0]
    assert record["built"] is False and record["id"] == lane["record"]["id"]
    assert "is up to date" in done.stderr and "Step 1/" not in done.stderr


def test_shm_fails_under_dockers_default_64m_and_passes_with_1g(lane, tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    done = _docker_run(lane, "-k", "shm[workers=2", "--shm-size", "64m", results=small)
    assert done.returncode == 1, done.stderr[-4000:]
    suite, cases, elements = _suite(small)
    failure = elements["shm[workers=2,sample_mb=50]"].find("failure")
    assert failure is not None and failure.get("type") == "dataloader_shm_exhausted", done.stderr[
        -3000:
    ]
    assert "unable to allocate shared memory(shm)" in failure.get(
        "message"
    ) or "Bus error" in failure.get("message")
    assert int(cases["shm[workers=2,sample_mb=50]"]["shm.dev_shm_bytes"]) == 64 * 2**20
    assert suite["container.shm_size"] == "64m"

    done = _docker_run(lane, "-k", "shm[workers=2", "--shm-size", "1g", results=large)
    assert done.returncode == 0, done.stderr[-4000:]
    _suite_props, cases, _elements = _suite(large)
    props = cases["shm[workers=2,sample_mb=50]"]
    assert props["repro.outcome"] == "passed" and int(props["shm.dev_shm_bytes"]) == 2**30


def test_results_on_the_host_carry_variant_host_and_image_properties(lane, tmp_path):
    results = tmp_path / "results"
    done = _docker_run(lane, "-k", "noop", results=results)
    assert done.returncode == 0, done.stderr[-4000:]
    suite, cases, _ = _suite(results)
    assert cases["noop[torch=0]"]["repro.outcome"] == "passed"
    assert suite["variant.id"] == VARIANT and suite["variant.source"] == "matrix"
    assert suite["variant.image"] == lane["record"]["id"]
    assert suite["variant.image_tag"] == f"{IMAGE_REPO}:{VARIANT}"
    assert suite["variant.base_image"] == BASE_IMAGE and suite["variant.python"] == "3.11"
    assert suite["runtime.torch"] == "2.13.0+cpu"
    # host.* is the host's fingerprint (mounted read-only), not the image's OS
    from repro.containers import job
    from repro.host import fingerprint

    host_fp = fingerprint.collect(python=sys.executable)
    assert suite["host.hostname"] == host_fp.host.hostname
    assert suite["host.python"] == host_fp.host.python
    assert suite["host.key"] == fingerprint.host_key(host_fp)
    assert (
        suite["container.python"].startswith("3.11.") and suite["container.container"] == "docker"
    )
    assert suite["container.host_kind"] == "cpu" and suite["container.network"] == "none"
    assert suite["container.gpu_parity"].startswith("n/a")
    run_dir = next(p for p in results.iterdir() if p.is_dir())
    # Written as the container's user: the caller's own uid, or the image's unprivileged user
    # when the caller is root (never 0:0 inside the container).
    expected_uid = int(job.container_user(os.getuid(), os.getgid()).split(":")[0])
    for path in [run_dir, *run_dir.rglob("*")]:
        assert path.stat().st_uid == expected_uid
    assert "docker run --rm --init" in done.stderr  # the equivalent command is printed
    assert not _our_containers(lane["client"])


def test_container_killed_by_its_timeout_keeps_finished_cases_and_is_removed(lane, tmp_path):
    results = tmp_path / "results"
    started = time.monotonic()
    # --timeout-scale 20: fork_safety's deadlocks outlast the 25 s container timeout instead of
    # being caught by their 8 s phase budget
    done = _docker_run(
        lane, "-k", "noop", "-k", "fork_safety", "--timeout", "25", "--timeout-scale", "20",
        results=results,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 3, done.stderr[-4000:]
    assert "killed after its 25 s timeout" in done.stderr
    assert elapsed < 120
    _suite_props, cases, _ = _suite(results)
    # the finished case, written before the kill (after the doctor's pre-flight findings)
    assert [c for c in cases if not c.startswith("doctor[")] == ["noop[torch=0]"]
    assert "doctor[check=dev_shm]" in cases
    run_info = json.loads(
        next(p for p in results.iterdir() if p.is_dir()).joinpath("run.json").read_text()
    )
    assert run_info["cases_done"] == 1 and run_info["finished"] is None
    assert not _our_containers(lane["client"])


def test_gpu_variant_stops_in_preflight_before_building_or_writing(lane, tmp_path):
    from repro.host import hostkind as host_mod

    host = host_mod.detect()
    if host.has_nvidia and host.nvidia_container_runtime:
        pytest.skip("this host can run NVIDIA containers")
    results = tmp_path / "results"
    results.mkdir()
    (results / "earlier").mkdir()
    done = _cli(
        "docker-run",
        "--variant",
        CUDA_VARIANT,
        "--results-dir",
        str(results),
        "--output-dir",
        str(results),
        cwd=lane["project"],
    )
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"repro: error: cannot run {CUDA_VARIANT} on this host"
    )
    assert [p.name for p in results.iterdir()] == ["earlier"]


def test_touching_repro_rebuilds_only_the_top_layers_in_seconds(lane, tmp_path):
    from repro.containers import build_settings, images

    source = tmp_path / "checkout"
    shutil.copytree(lane["source"], source)
    client = lane["client"]
    from repro.config import Overrides, load

    variant = load(lane["project"] / "matrix.yaml").variant(VARIANT)
    overrides = Overrides({"wheelhouse": str(lane["wheelhouse"])}, {"wheelhouse": "--wheelhouse"})
    settings = build_settings.settings_for(
        variant, overrides, repo=f"{IMAGE_REPO}-rebuild", source_root=source
    )
    log = tmp_path / "build.log"
    with open(log, "w") as out:
        first = images.ensure_image(client, settings, out=out)
        noop = source / "repro" / "scenarios" / "noop.py"
        noop.write_text(
            noop.read_text()
            + "# touched by test_touching_repro_rebuilds_only_the_top_layers_in_seconds\n"
        )
        started = time.monotonic()
        second = images.ensure_image(client, settings, out=out)
        TIMINGS["rebuild_after_touch"] = time.monotonic() - started
    assert second.built and second.id != first.id
    assert TIMINGS["rebuild_after_touch"] < 30, log.read_text()[-3000:]
    old_layers = client.images.get(lane["record"]["id"]).attrs["RootFS"]["Layers"]
    new_layers = client.images.get(second.id).attrs["RootFS"]["Layers"]
    assert len(new_layers) == len(old_layers)
    assert new_layers[:-1] == old_layers[:-1]  # base, Python, torch, deps, venv: all reused
    output = client.containers.run(
        second.id,
        ["tail", "-n", "1", "/opt/repro-matrix/repro/scenarios/noop.py"],
        remove=True,
        network_mode="none",
    )
    assert b"touched by test_touching" in output
    with contextlib.suppress(Exception):
        client.images.remove(settings.tag)
