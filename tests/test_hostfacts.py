"""Signatures that depend on the host (issue 10, item 2): the same captured CUDA text names a WSL2
failure on a WSL2 host and Fabric Manager / driver mismatch / compute mode on a native one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.cli.main import main as repro_main
from repro.host import fingerprint
from repro.model import Fingerprint
from repro.outcomes import Outcome
from repro.runner.protocol import Events
from repro.runner.verdict import classify as runner_classify
from repro.signatures import table
from repro.signatures.engine import classify
from repro.signatures.hostfacts import NATIVE, HostFacts

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CAPTURED = FIXTURES / "captured"


def _fingerprint(tree: str) -> Fingerprint:
    """A real ``collect()`` fingerprint of a captured host tree (no torch: the probe's python
    does not exist, so this is fast and never touches a GPU)."""
    return fingerprint.collect(
        python="/nonexistent/python", timeout_s=5, root=str(FIXTURES / "fingerprint" / tree)
    )


WSL2 = HostFacts.from_fingerprint(_fingerprint("wsl2"))
NATIVE_HOST = HostFacts.from_fingerprint(_fingerprint("native"))


def test_fingerprints_of_the_captured_trees_give_the_host_facts():
    assert WSL2.wsl2 is True and NATIVE_HOST.wsl2 is False
    docker = HostFacts.from_fingerprint(_fingerprint("docker"))
    assert docker.container is True and docker.wsl2 is False


@pytest.mark.parametrize(
    ("log", "native"),
    [
        ("cuda-802-fabric-manager.log", "cuda_init_failed"),
        ("cuda-803-mismatch.log", "cuda_init_failed"),
        ("cuda-busy-exclusive-process.log", "cuda_device_busy"),
    ],
)
def test_the_same_log_classifies_by_host(log, native):
    text = (CAPTURED / log).read_text()
    assert classify(text, WSL2).name == "wsl_gpu_unavailable"
    assert classify(text, NATIVE_HOST).name == native
    # No host facts and no evidence in the log: never WSL2 (issue 21, item 5); the error number
    # names its native cause, and a text without one names the alternatives.
    unsure = classify(text)
    assert unsure.name in (native, "cuda_unavailable_host_unknown")
    assert unsure.name != "wsl_gpu_unavailable"


def test_native_verdict_names_the_error_numbers_and_their_fixes():
    found = classify((CAPTURED / "cuda-802-fabric-manager.log").read_text(), NATIVE_HOST)
    assert "Error 802: system not yet initialized" in found.message
    for needle in ("Error 802", "nvidia-fabricmanager", "Error 803", "reboot", "Error 804"):
        assert needle in found.workaround
    busy = classify((CAPTURED / "cuda-busy-exclusive-process.log").read_text(), NATIVE_HOST)
    assert "nvidia-smi -c DEFAULT" in busy.workaround
    assert busy.line_no == 1  # the first line that says it wins, not the re-raise below


def test_samples_error_802_without_the_torch_wording_is_named_on_a_native_host_only():
    text = (CAPTURED / "cuda-802-samples.log").read_text()
    assert classify(text, NATIVE_HOST).name == "cuda_init_failed"
    assert classify(text, WSL2).name == table.UNKNOWN


def test_forward_compat_804_keeps_its_own_more_specific_row_on_a_native_host():
    line = (
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
        "run some cuda functions before calling NumCudaDevices() that might have already set an "
        "error? Error 804: forward compatibility was attempted on non supported HW"
    )
    assert classify(line, NATIVE_HOST).name == "forward_compat_unsupported"


def test_the_runner_classifies_with_the_host_facts_of_its_fingerprint():
    text = (CAPTURED / "cuda-802-fabric-manager.log").read_text() + "Traceback ...\n"
    events = Events(result={"outcome": "error", "message": "no device"})
    _, on_native, _ = runner_classify(1, None, events, text, NATIVE_HOST)
    _, on_wsl2, _ = runner_classify(1, None, events, text, WSL2)
    outcome, no_host, _ = runner_classify(1, None, events, text)
    assert (on_native, on_wsl2, no_host) == (
        "cuda_init_failed",
        "wsl_gpu_unavailable",
        "cuda_init_failed",  # "Error 802" says native unless the host is known to be WSL2
    )
    assert outcome is Outcome.ERROR


def test_repro_classify_reads_the_host_from_a_fingerprint_file(tmp_path, capsys):
    log = CAPTURED / "cuda-803-mismatch.log"
    verdicts = {}
    for tree in ("wsl2", "native"):
        fp_file = tmp_path / f"{tree}.json"
        fp_file.write_text(json.dumps(_fingerprint(tree).to_json()))
        assert repro_main(["classify", "--json", "--fingerprint", str(fp_file), str(log)]) == 0
        verdicts[tree] = json.loads(capsys.readouterr().out)["logs"][0]["signature"]
    assert verdicts == {"wsl2": "wsl_gpu_unavailable", "native": "cuda_init_failed"}
    assert repro_main(["classify", "--json", "--native", str(log)]) == 0
    assert json.loads(capsys.readouterr().out)["logs"][0]["signature"] == "cuda_init_failed"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("{not json", "expected a fingerprint JSON object"),
        ("[1, 2]", "'host' section"),
    ],
)
def test_a_bad_fingerprint_file_is_a_one_line_config_error(tmp_path, capsys, content, expected):
    fp_file = tmp_path / "fp.json"
    if content is not None:
        fp_file.write_text(content)
    code = repro_main(
        ["classify", "--fingerprint", str(fp_file), str(CAPTURED / "docker-no-kfd.txt")]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and f"--fingerprint {fp_file}" in err and expected in err


def test_from_fingerprint_reads_compute_and_mig_modes_and_survives_bad_shapes():
    fp = {
        "host": {"wsl2": False, "container": None},
        "gpus": [
            {"index": 0, "compute_mode": "Default", "mig_mode": "Disabled"},
            {"index": 1, "compute_mode": "Exclusive_Process", "mig_mode": "Enabled"},
        ],
    }
    facts = HostFacts.from_fingerprint(fp)
    assert facts == HostFacts(
        wsl2=False, container=False, compute_mode="Exclusive_Process", mig=True
    )
    assert HostFacts.from_fingerprint({}) == HostFacts()
    assert HostFacts.from_fingerprint({"host": "x", "gpus": [1, None]}) == HostFacts()
    assert HostFacts.from_fingerprint(None) == HostFacts()


def test_unknown_host_condition_is_refused():
    assert HostFacts(wsl2=False).applies(NATIVE) and not HostFacts().applies(NATIVE)
    with pytest.raises(ValueError, match="unknown host condition"):
        HostFacts().applies("mig")


def test_every_host_dependent_row_is_a_sourced_row_above_the_wsl2_row():
    order = [sig.name for sig in table.SIGNATURES]
    host_rows = [s for s in table.SIGNATURES if s.when or any(line.when for line in s.lines)]
    native = [s.name for s in host_rows if s.family != "wsl2" and s.when != "unknown_host"]
    # no_nvidia_driver: nvidia-smi's "couldn't communicate" line is not_wsl2 (inside WSL it is
    # wsl_gpu_unavailable's; issue 30, round thirteen); its other line applies on every host.
    assert native == ["no_nvidia_driver", "cuda_init_failed", "cuda_device_busy"]
    # WSL2-only rows pre-empt the host-neutral row for the same text.
    assert order.index("wsl_libcuda_missing") < order.index("libcuda_not_found")
    for sig in host_rows:
        assert sig.source.strip() and (sig.workaround or sig.name == "wsl_gpu_unavailable")
    for name in native:
        assert order.index(name) < order.index("wsl_gpu_unavailable")
        if name != "no_nvidia_driver":  # a not_wsl2 line, no native-only text
            assert order.index(name) > order.index("forward_compat_unsupported")
