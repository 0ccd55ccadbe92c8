"""Issue 10 fixture hosts: each broken or narrowed GPU host gives the right doctor finding, host
key and case outcome. NVML is faked from ``tests/fixtures/gpuhosts/*.json`` (modes included), the
torch probe's reply is the captured one (its error lines copied from the public issues named in
each file and in tests/fixtures/captured/PROVENANCE.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest

from repro import scenarios
from repro.host import cuda_init, doctor, fingerprint, gpu_checks, selection
from repro.model import Fingerprint
from repro.outcomes import Outcome
from repro.runner import context, run_all
from repro.signatures import engine as signatures
from repro.signatures.hostfacts import HostFacts

FIXTURES = Path(__file__).parent / "fixtures"
HOSTS = sorted((FIXTURES / "gpuhosts").glob("*.json"))
ROOTS = FIXTURES / "fingerprint"


#: The binding's own exceptions (``NVMLError(value)`` is the subclass for that return code).
NOT_SUPPORTED = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


class FixtureNVML:
    """pynvml answering from a fixture's ``nvml`` section. A device key set to None (or
    absent, for ECC on GeForce) answers "Not Supported", as NVML does on WSL2 and consumer GPUs."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.devices = spec.get("devices", [])
        self.shutdowns = 0

    def nvmlInit(self):
        if self.spec.get("init_error"):  # e.g. 18: LIB_RM_VERSION_MISMATCH, driver upgraded
            raise pynvml.NVMLError(self.spec["init_error"])

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        return self.spec["driver"]

    def nvmlSystemGetCudaDriverVersion(self):
        if self.spec["cuda"] is None:
            raise NOT_SUPPORTED
        return self.spec["cuda"]

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index):
        return self.devices[index]

    def _field(self, handle, key, default=None):
        value = handle.get(key, default)
        if value is None:
            raise NOT_SUPPORTED
        return value

    def nvmlDeviceGetName(self, handle):
        return handle["name"]

    def nvmlDeviceGetUUID(self, handle):
        return handle["uuid"]

    def nvmlDeviceGetMemoryInfo(self, handle):
        return type("Memory", (), {"total": handle["memory"]})()

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return tuple(self._field(handle, "cc"))

    def nvmlDeviceGetPciInfo(self, handle):
        return type("Pci", (), {"busId": self._field(handle, "bus").encode()})()

    def nvmlDeviceGetComputeMode(self, handle):
        return self._field(handle, "compute", 0)

    def nvmlDeviceGetMigMode(self, handle):
        return [self._field(handle, "mig", 0), self._field(handle, "mig", 0)]

    def nvmlDeviceGetPersistenceMode(self, handle):
        return self._field(handle, "persistence", 1)

    def nvmlDeviceGetEccMode(self, handle):
        return [self._field(handle, "ecc", 1), self._field(handle, "ecc", 1)]

    # The binding's own structs; the query fills the one passed by reference, as in pynvml.py.
    c_nvmlGpuFabricInfoV_t = pynvml.c_nvmlGpuFabricInfoV_t

    def nvmlDeviceGetGpuFabricInfoV(self, device, gpuFabricInfo):
        gpuFabricInfo._obj.state = self._field(device, "fabric")
        return pynvml.NVML_SUCCESS

    def nvmlDeviceGetMaxMigDeviceCount(self, handle):
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle, slot):
        migs = handle.get("migs") or []
        if slot >= len(migs):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return migs[slot]


def BIG_SHM(path):
    return type("Stat", (), {"f_frsize": 4096, "f_blocks": 1 << 22, "f_bavail": 1 << 22})()


def no_tools(argv, **kwargs):
    raise FileNotFoundError(2, "No such file or directory", argv[0])


def tools(host: dict):
    """The SMI tool runner of a fixture host: nvidia-smi answers with the fixture's captured
    ``smi`` reply (status, stdout, stderr) where it has one; no other tool is installed."""
    reply = host.get("smi")

    def run(argv, **kwargs):
        if reply is None or not argv[0].endswith("nvidia-smi"):
            return no_tools(argv)
        return subprocess.CompletedProcess(
            argv, reply["returncode"], reply["stdout"], reply["stderr"]
        )

    return run


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def host_root(host: dict, tmp_path: Path) -> Path:
    """The fixture's captured tree; the ROCm one with its GPU node repeated ``gpu_nodes`` times."""
    root = ROOTS / host["root"]
    if not host.get("gpu_nodes"):
        return root
    copy = tmp_path / "root"
    if copy.exists():  # collected already in this test
        return copy
    shutil.copytree(root, copy)
    nodes = copy / "sys/class/kfd/kfd/topology/nodes"
    for extra in range(2, host["gpu_nodes"] + 1):
        shutil.copytree(nodes / "1", nodes / str(extra))
    return copy


def collect(host: dict, tmp_path: Path, monkeypatch) -> Fingerprint:
    """``fingerprint.collect`` on the fixture: its tree, NVML, environment and probe reply."""
    monkeypatch.setattr(fingerprint, "_run_probe", lambda python, timeout_s: (host["probe"], None))
    nvml = (
        FixtureNVML(host["nvml"]) if host["nvml"] else type("NoNVML", (), {"nvmlInit": _no_nvml})()
    )
    return fingerprint.collect(
        "/fixture/python",
        5.0,
        host_root(host, tmp_path),
        environ=host["environ"],
        nvml=nvml,
        run=tools(host),
    )


def _no_nvml():
    raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)


def cuda_case() -> scenarios.Case:
    [case] = [c for c in scenarios.expand("cuda_basic") if c.param_dict["device"] == "cuda"]
    return case


@pytest.fixture(params=HOSTS, ids=[p.stem for p in HOSTS])
def host(request):
    return load(request.param) | {"file": request.param.name}


def test_every_fixture_host_names_its_public_source(host):
    assert host["source"].strip()
    provenance = (FIXTURES / "captured/PROVENANCE.md").read_text(encoding="utf-8")
    assert f"`gpuhosts/{host['file']}`" in provenance
    error = host["probe"]["cuda_init_error"]
    if error:  # the error line is a captured text, verbatim
        captured = "".join(p.read_text() for p in (FIXTURES / "captured").glob("*.log"))
        assert error.removeprefix("RuntimeError: ").split(" (Triggered")[0] in captured


def test_host_key_is_the_gpus_the_job_uses(host, tmp_path, monkeypatch):
    fp = collect(host, tmp_path, monkeypatch)
    assert fingerprint.host_key(fp) == host["expect"]["host_key"]
    # fingerprint.json round-trips the selection, modes and CUDA's error
    again = Fingerprint.from_json(json.loads(json.dumps(fp.to_json())))
    assert fingerprint.host_key(again) == host["expect"]["host_key"]
    assert again.runtime.cuda_init_error == host["probe"]["cuda_init_error"]


def test_doctor_finding(host, tmp_path, monkeypatch):
    fp = collect(host, tmp_path, monkeypatch)
    expect = host["expect"]
    count, count_status = expect["gpu_count"]
    findings = {
        f.check: f
        for f in doctor.run_checks(
            fp,
            root=host_root(host, tmp_path),
            run=tools(host),
            statvfs=BIG_SHM,
            environ={},
            expected_gpus=count,
        )
    }
    for check in (doctor.NVIDIA_SMI, doctor.NVML):
        if check in expect:  # what the driver tools say on this host
            status, text = expect[check]
            assert findings[check].status == status, findings[check].detail
            assert text in findings[check].detail
    found = findings[doctor.CUDA_INIT]
    assert found.status == expect["cuda_init"], found.detail
    for text in expect["detail_has"]:
        assert text in found.detail
    assert found.predicts == expect.get("predicts", "")
    assert findings[doctor.GPU_COUNT].status == count_status, findings[doctor.GPU_COUNT].detail
    results = {r.case_id: r for r in doctor.to_results(list(findings.values()))}
    cuda_result = results[doctor.case_id(doctor.CUDA_INIT)]
    if expect["cuda_init"] == "fail":
        assert (cuda_result.outcome, cuda_result.signature) == (Outcome.ERROR, "infra.cuda_init")
    else:
        assert cuda_result.outcome == Outcome.PASSED


def test_case_outcome(host, tmp_path, monkeypatch):
    fp = collect(host, tmp_path, monkeypatch).to_json()
    case = cuda_case()
    assert (
        scenarios.skip_reason(case.requires, Fingerprint.from_json(fp)) is None
    )  # never skipped on a GPU host
    broken = cuda_init.case_error(case, Fingerprint.from_json(fp))
    if host["expect"]["case"] == "runs":
        assert broken is None
        return
    ctx = context.RunContext(
        tmp_path / "run", Fingerprint.from_json(fp), {}, {}, python="/nonexistent/python"
    )
    ctx.run_dir.mkdir()
    [result] = run_all.run_all(ctx, [case])  # never starts a child: the python does not exist
    assert (result.outcome, result.signature) == (Outcome.ERROR, "infra.cuda_init")
    said = " ".join(host["probe"]["cuda_init_error"].split())  # the property is one line
    assert said in result.properties["repro.cuda_init_error"]
    # The same line, classified with the host's facts, names the host-specific cause.
    classified = signatures.classify(
        host["probe"]["cuda_init_error"], HostFacts.from_fingerprint(fp)
    )
    assert classified.name == host["expect"]["predicts"]


def test_container_gets_the_runners_selection(host):
    accelerator = "rocm" if host["probe"]["hip"] else "cuda"
    expected = host["expect"].get("container_gpus", "all")
    assert selection.container_gpus(host["environ"], accelerator) == expected
    env = dict(selection.container_env(host["environ"], accelerator))
    assert env == host["expect"].get("container_env", {})


def test_nccl_environment_is_fingerprinted(tmp_path, monkeypatch):
    fp = collect(load(FIXTURES / "gpuhosts/hgx-802-no-fabric-manager.json"), tmp_path, monkeypatch)
    assert dict(fp.environment) == {"NCCL_DEBUG": "INFO", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    props = fingerprint.to_properties(fp)
    assert props["host.env.NCCL_DEBUG"] == "INFO"
    assert props["host.gpu.0.fabric_state"] == "Not Started"
    assert props["host.gpu.0.compute_mode"] == "Default"
    assert props["runtime.cuda_init_error"].endswith("Error 802: system not yet initialized")


def test_two_of_eight_predictions_see_two_gpus(tmp_path, monkeypatch):
    fp = collect(load(FIXTURES / "gpuhosts/two-of-eight.json"), tmp_path, monkeypatch)
    props = fingerprint.to_properties(fp)
    assert props["host.gpu_count"] == "2"
    assert props["host.gpu_total"] == "8"
    assert {k.split(".")[2] for k in props if k.startswith("host.gpu.")} == {"2", "3"}
    assert props["host.gpu_selection"] == "CUDA_VISIBLE_DEVICES=2,3, CUDA_DEVICE_ORDER=PCI_BUS_ID"
    assert [g.uuid for g in fp.used_gpus] == [fp.gpus[2].uuid, fp.gpus[3].uuid]


def test_mig_gpu_selected_whole_shows_its_first_instance(tmp_path, monkeypatch):
    host = load(FIXTURES / "gpuhosts/mig-instance-selected.json")
    host["environ"] = {}
    fp = collect(host, tmp_path, monkeypatch)
    assert fp.gpus[0].mig_mode == "Enabled"
    assert [m.name for m in fp.gpus[0].mig_devices] == [
        "NVIDIA A100-SXM4-80GB MIG 1g.10gb",
        "NVIDIA A100-SXM4-80GB MIG 3g.40gb",
    ]
    assert [g.name for g in fp.used_gpus] == ["NVIDIA A100-SXM4-80GB MIG 1g.10gb"]
    assert "CUDA sees only its first MIG instance" in fp.selection.notes[0]
    assert HostFacts.from_fingerprint(fp).mig is True


def test_gpu_count_check_counts_what_the_job_uses():
    fp = Fingerprint.from_json(
        {"gpus": [{"index": i, "vendor": "nvidia", "name": "H100"} for i in range(8)]}
    )
    assert gpu_checks.gpu_count_check(fp, 8).status == "ok"
    assert gpu_checks.gpu_count_check(fp, 4).status == "warn"
    assert gpu_checks.gpu_count_check(fp, None).status == "n/a"


def fake_cuda_torch(warning: str | None, count: int = 0):
    """A cu124 torch whose ``is_available()`` warns ``warning`` (as c10's TORCH_WARN reaches
    Python: a UserWarning) and returns False, and which counts ``count`` devices."""
    import warnings
    from types import SimpleNamespace

    def is_available():
        if warning:
            warnings.warn(warning, UserWarning, stacklevel=1)
        return False

    cuda = SimpleNamespace(
        is_available=is_available,
        device_count=lambda: count,
        get_arch_list=lambda: ["sm_80", "sm_90"],
        nccl=SimpleNamespace(version=lambda: (2, 21, 5)),
    )
    return SimpleNamespace(
        __version__="2.6.0+cu124",
        version=SimpleNamespace(cuda="12.4", hip=None),
        backends=SimpleNamespace(cudnn=SimpleNamespace(version=lambda: 90100)),
        cuda=cuda,
    )


def test_probe_records_803_when_nvml_fails_and_no_device_is_counted(monkeypatch):
    from repro.host import torch_probe

    said = (FIXTURES / "captured/cuda-803-nvml-mismatch.log").read_text().splitlines()[0]
    warning = said.removeprefix("UserWarning: ")
    monkeypatch.setitem(sys.modules, "torch", fake_cuda_torch(warning))
    facts = torch_probe._torch_facts([])
    assert facts["accelerator_count"] == 0
    assert facts["cuda_init_error"] == warning
    assert cuda_init.diagnose(facts["cuda_init_error"]).code == 803


@pytest.mark.parametrize(
    "warning",
    [
        None,  # no driver or no device: torch is silent (c10/cuda/CUDAFunctions.cpp)
        "CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). "
        "Please update your GPU driver",  # driver_too_old, judged by driver_vs_runtime
    ],
)
def test_probe_does_not_call_a_gpu_less_or_old_driver_host_broken(monkeypatch, warning):
    from repro.host import torch_probe

    monkeypatch.setitem(sys.modules, "torch", fake_cuda_torch(warning))
    assert torch_probe._torch_facts([])["cuda_init_error"] is None
