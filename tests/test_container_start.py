"""A container that cannot start is a red cell, not a missing one (issue 10, item 3).

Fixture hosts (tests/fixtures/hosts/) through the hidden ``--fixture DIR`` option, daemon errors
from captured texts (tests/fixtures/captured/, sources in its PROVENANCE.md), and a fake Docker
client: no daemon, no image, no GPU.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml

from repro import config as matrix_mod
from repro.cli.main import main as repro_main
from repro.containers import images, job, start_failure
from repro.containers import spec as container_mod
from repro.host import hostkind as host_mod

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOSTS = FIXTURES / "hosts"
CAPTURED = FIXTURES / "captured"
R570 = str(HOSTS / "nvidia-linux-r570-geforce")


def _matrix(directory: Path) -> Path:
    path = directory / "matrix.yaml"
    path.write_text(
        "version: 1\n"
        "defaults: {results_dir: results}\n"
        "variants:\n"
        '  - {runtime: cu128, torch: "2.9.0", base_image: "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"}\n'
        '  - {runtime: cu130, torch: "2.9.0", base_image: "nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04"}\n'
        '  - {runtime: cu126, torch: "2.9.0", base_image: "nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04"}\n'
        "scenarios:\n"
        "  noop: {}\n"
    )
    return path


def _host_fingerprint() -> dict:
    """What ``fingerprint.collect()`` gives on the fixture host (one RTX 4090, R570)."""
    return {
        "schema": 1,
        "host": {"hostname": "box", "os": "Ubuntu 24.04.1 LTS", "wsl2": False, "container": None},
        "gpus": [
            {
                "index": 0,
                "vendor": "nvidia",
                "name": "NVIDIA GeForce RTX 4090",
                "compute_capability": "8.9",
                "source": "nvml",
            }
        ],
        "driver": {"nvidia": "570.133.07", "cuda_driver_api": "12.8"},
        "runtime": {},
        "unreadable": [],
    }


@pytest.fixture
def host_fp(monkeypatch):
    """The host fingerprint docker-run collects (torch probe and NVML) is the fixture host's."""
    from repro.host import fingerprint
    from repro.model import Fingerprint

    monkeypatch.setattr(
        fingerprint, "collect", lambda **_kw: Fingerprint.from_json(_host_fingerprint())
    )


class FakeDocker:
    """Records each container start; raises the daemon's error for the images in ``refuse``."""

    def __init__(self, refuse: dict[str, str] | None = None):
        self.refuse = refuse or {}
        self.started: list[tuple[str, tuple[str, ...]]] = []

    def install(self, monkeypatch) -> None:
        import docker

        monkeypatch.setattr(images, "client", lambda *a, **k: self)

        class Record:
            def __init__(self, tag):
                self.id = f"sha256:{tag}"

        monkeypatch.setattr(
            images, "ensure_image", lambda _client, settings, **_k: Record(settings.tag)
        )

        def run_container(_client, spec, timeout_s, keep=False, out=None):
            image = spec.kwargs["image"]
            command = tuple(spec.kwargs["command"])
            self.started.append((image, command))
            for needle, text in self.refuse.items():
                if needle in image:
                    raise docker.errors.APIError("500 Server Error", explanation=text)
            if out is not None:  # the parity probe's JSON: the same GPU as the host
                out.write(
                    json.dumps(
                        {"cuda_available": True, "devices": [{"name": "NVIDIA GeForce RTX 4090"}]}
                    )
                    + "\n"
                )
            return container_mod.ContainerResult("repro-x", 0, False, True, 0.1)

        monkeypatch.setattr(container_mod, "run_container", run_container)


def _runs(results: Path) -> dict[str, tuple[dict, JUnitXml]]:
    """variant id -> (run.json, junit) for every run directory with a junit.xml."""
    found = {}
    for junit in sorted(results.glob("*/junit.xml")):
        info = json.loads((junit.parent / "run.json").read_text())
        found[info["variant"]["id"]] = (info, JUnitXml.fromfile(str(junit)))
    return found


def _only_case(xml: JUnitXml):
    cases = [case for suite in xml for case in suite]
    assert len(cases) == 1
    return cases[0]


# ---------------------------------------------------------------------------------------------
# before starting: the driver is known and too old


def test_cu130_on_a_570_consumer_gpu_is_one_error_case_naming_580(tmp_path, host_fp, capsys):
    results = tmp_path / "results"
    code = repro_main(
        ["docker-run", "--variant", "cu130-torch2.9", "--config", str(_matrix(tmp_path)),
         "--results-dir", str(results), "--fixture", R570]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1, err
    runs = _runs(results)
    assert list(runs) == ["cu130-torch2.9"]
    info, xml = runs["cu130-torch2.9"]
    case = _only_case(xml)
    [error] = case.result
    assert isinstance(error, Error) and error.type == "driver_too_old"
    assert "cu130 needs driver >= 580, host has 570.133.07" in error.message
    assert "cuda_min_driver.13.0.family_min.linux" in error.text  # the compat fact it rests on
    # Keyed by host and variant like any run.
    assert info["host_key"] == "NVIDIA GeForce RTX 4090 · driver 570.133.07 · Ubuntu 24.04.1 LTS"
    assert (info["cases_total"], info["cases_done"]) == (1, 1) and info["finished"]
    suite = next(iter(xml))
    props = {p.name: p.value for p in suite.properties()}
    assert props["variant.id"] == "cu130-torch2.9" and props["host.driver.nvidia"] == "570.133.07"
    assert "driver_too_old" in err and "cu130 needs driver >= 580" in err


def test_the_report_shows_the_cell_red_not_missing(tmp_path, host_fp, capsys):
    config = _matrix(tmp_path)
    results = tmp_path / "results"
    repro_main(
        ["docker-run", "--variant", "cu130-torch2.9", "--config", str(config), "--results-dir", str(results),
         "--fixture", R570]
    )  # fmt: skip
    out = tmp_path / "report"
    code = repro_main(["report", str(results), "-o", str(out), "--config", str(config)])
    capsys.readouterr()
    assert code == 0
    matrix = json.loads((out / "matrix.json").read_text())
    states = {
        (c["host"], c["variant"]): c.get("effective_state") or c["state"] for c in matrix["cells"]
    }
    host = "NVIDIA GeForce RTX 4090 · driver 570.133.07 · Ubuntu 24.04.1 LTS"
    assert states[(host, "cu130-torch2.9")] == "error"
    [cell] = [c for c in matrix["cells"] if c["variant"] == "cu130-torch2.9"]
    assert [(c["outcome"], c["signature"]) for c in cell["cases"]] == [("error", "driver_too_old")]


def test_a_new_enough_driver_or_an_unknown_one_starts_the_container():
    variant = matrix_mod.Variant(
        "cu128-torch2.9", "cu128", "cuda", "2.9.0", "", "nvidia/cuda:12.8.1", "3.12"
    )
    cu130 = dataclasses.replace(variant, id="cu130-torch2.9", runtime="cu130")
    r570 = host_mod.load_fixture(R570)
    assert start_failure.driver_check(r570, variant) is None  # 12.x needs >= 525.60.13
    assert start_failure.driver_check(r570, cu130).signature == "driver_too_old"
    broken = host_mod.load_fixture(HOSTS / "nvidia-linux-driver-broken")
    assert start_failure.driver_check(broken, cu130) is None  # unknown driver: let the run say
    cpu = dataclasses.replace(variant, id="cpu-torch2.9", runtime="cpu", accelerator="cpu")
    assert start_failure.driver_check(r570, cpu) is None


# ---------------------------------------------------------------------------------------------
# a run over several variants goes on


def test_three_variants_with_the_middle_one_refused_still_run_the_third(
    tmp_path, host_fp, monkeypatch, capsys
):
    docker = FakeDocker()
    docker.install(monkeypatch)
    results = tmp_path / "results"
    code = repro_main(
        ["docker-run", "--variant", "cu1*", "--config", str(_matrix(tmp_path)), "--results-dir", str(results),
         "--fixture", R570]
    )  # fmt: skip
    capsys.readouterr()
    assert code == 1
    run_images = [
        image for image, command in docker.started if "repro.host.torch_probe" not in command
    ]
    assert run_images == [
        "sha256:repro-matrix:cu128-torch2.9",
        "sha256:repro-matrix:cu126-torch2.9",
    ]
    assert list(_runs(results)) == ["cu130-torch2.9"]  # the fake containers write nothing


@pytest.mark.parametrize(
    ("captured", "signature", "needle"),
    [
        (
            "docker-require-cuda-runc.txt",
            "driver_too_old",
            "image requires cuda>=12.8, host driver 570.133.07",
        ),
        ("docker-require-cuda-oci.txt", "driver_too_old", "image requires cuda>=11.0"),
        ("docker-no-gpu-runtime.txt", "container_gpu_setup", 'could not select device driver ""'),
    ],
)
def test_a_parity_probe_docker_refuses_is_a_red_cell_and_the_next_variant_runs(
    tmp_path, host_fp, monkeypatch, capsys, captured, signature, needle
):
    docker = FakeDocker({"cu128": (CAPTURED / captured).read_text()})
    docker.install(monkeypatch)
    results = tmp_path / "results"
    code = repro_main(
        ["docker-run", "--variant", "cu12*", "--config", str(_matrix(tmp_path)), "--results-dir", str(results),
         "--fixture", R570]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1, err
    runs = _runs(results)
    assert list(runs) == ["cu128-torch2.9"]
    error = _only_case(runs["cu128-torch2.9"][1]).result[0]
    assert (error.type, needle in error.message) == (signature, True), error.message
    assert "the parity probe did not start" in error.message or signature == "driver_too_old"
    assert (CAPTURED / captured).read_text().strip() in error.text
    props = {p.name: p.value for p in next(iter(runs["cu128-torch2.9"][1])).properties()}
    assert props["container.passthrough"] == "nvidia"  # the container.* facts of the attempt
    # cu126 (after it) still got its parity probe and its run container.
    assert sum("cu126" in image for image, _ in docker.started) == 2


def test_absent_rocm_device_nodes_name_the_container_gpu_setup():
    host = host_mod.load_fixture(HOSTS / "rocm-linux")
    variant = matrix_mod.Variant(
        "rocm6.4-torch2.9", "rocm6.4", "rocm", "2.9.0", "", "rocm/dev", "3.12"
    )
    failure = start_failure.from_exception(
        RuntimeError((CAPTURED / "docker-no-kfd.txt").read_text()),
        host,
        variant,
        "the run container",
    )
    assert failure.signature == "container_gpu_setup"
    assert '"/dev/kfd": no such file or directory' in failure.message


def test_a_cpu_variant_that_docker_refuses_is_container_start_failed():
    host = host_mod.load_fixture(HOSTS / "cpu")
    variant = matrix_mod.Variant(
        "cpu-torch2.9", "cpu", "cpu", "2.9.0", "", "python:3.12-slim", "3.12"
    )
    failure = start_failure.from_exception(
        RuntimeError("500 Server Error: no space left on device"),
        host,
        variant,
        "the run container",
    )
    assert failure.signature == "container_start_failed"


def test_dry_run_reports_the_driver_verdict_and_writes_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    code = repro_main(
        ["docker-run", "--variant", "cu130-torch2.9", "--config", str(_matrix(tmp_path)), "--results-dir",
         str(results), "--fixture", R570, "--dry-run"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "cu130 needs driver >= 580, host has 570.133.07" in err
    assert not results.exists() or not any(results.iterdir())


def test_job_does_not_restate_the_driver_minimum():
    # job.py must not grow its own copy of the driver rule: the minimum comes from compat.
    source = Path(job.__file__).read_text()
    assert "580" not in source and "family_min" not in source


def test_a_later_run_of_the_container_lane_replaces_the_start_failure_cell(
    tmp_path, host_fp, capsys
):
    """The container that did not start is about how a run ended, not a case: once the same
    variant's container lane runs on the host (the driver upgraded, the runtime configured), the
    red ``container_start`` case is superseded, as the Slurm lane's scheduler cell is
    (``repro.report.merge.RUN_SCOPED_SCENARIOS``). Before, it stayed red beside the passing run."""
    from repro import properties as property_names
    from repro.junit.sidecar import RESULT_KEY, result_entry, write_run_info
    from repro.junit.writer import write_junit
    from repro.outcomes import CaseResult, Outcome
    from repro.report.merge import RUN_SCOPED_SCENARIOS, build_report

    assert start_failure.SCENARIO in RUN_SCOPED_SCENARIOS
    config = _matrix(tmp_path)
    results = tmp_path / "results"
    repro_main(
        ["docker-run", "--variant", "cu130-torch2.9", "--config", str(config), "--results-dir", str(results),
         "--fixture", R570]
    )  # fmt: skip
    capsys.readouterr()
    [refused] = [p.parent for p in results.rglob("run.json")]
    [suite] = list(JUnitXml.fromfile(str(refused / "junit.xml")))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties[property_names.LANE] == "container"
    info = json.loads((refused / "run.json").read_text())
    later = results / "20990101T000000Z-cu130-torch2.9"
    later.mkdir()
    digest = write_junit(
        later / "junit.xml",
        [CaseResult("noop", "noop", Outcome.PASSED, 1.0)],
        {**properties, property_names.RUN_ID: "later"},
        hostname="box",
    )
    write_run_info(
        later,
        {**info, "run_id": "later", "started": "2099-01-01T00:00:00Z",
         "finished": "2099-01-01T00:01:00Z", RESULT_KEY: result_entry(digest)},
    )  # fmt: skip
    [cell] = [c for c in build_report([results]).cells if c.variant == "cu130-torch2.9"]
    assert [(c.scenario, c.outcome.value) for c in cell.cases] == [("noop", "passed")]
