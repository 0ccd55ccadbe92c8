"""One table of CUDA causes (issue 31, item 4): the doctor's ``cuda_init`` check and every
accelerator case of the same run read the same signature-table row for the same CUDA text on the
same host, so they say the same thing: on WSL2 error 46 is the WSL2 GPU bridge (not an
exclusive-process GPU), on native hosts 46 is the compute mode and 802/803 are Fabric Manager and
a driver/library mismatch. The texts are real ones (tests/fixtures/captured, PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro import scenarios
from repro.host import cuda_init, gpu_checks
from repro.host.checks import FAIL
from repro.model import Fingerprint
from repro.outcomes import Outcome
from repro.runner import context, run_all

CAPTURED = Path(__file__).parent / "fixtures" / "captured"


def _text(name: str) -> str:
    return (CAPTURED / name).read_text(encoding="utf-8").strip()


def _host(wsl2: bool, cuda_init_error: str) -> Fingerprint:
    """A host whose NVML counts one GPU while CUDA does not initialise."""
    return Fingerprint.from_json(
        {
            "host": {"os": "Ubuntu 22.04", "kernel": "6.5.0", "wsl2": wsl2, "container": None},
            "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 4090", "compute_mode": "Default"}],
            "driver": {"version": "560.94", "cuda_driver": "12.6"},
            "runtime": {
                "torch": "2.8.0+cu128",
                "cuda": "12.8",
                "accelerator": "cuda",
                "accelerator_available": False,
                "accelerator_count": 1,
                "cuda_init_error": cuda_init_error,
            },
        }
    )


def _cuda_case() -> scenarios.Case:
    [case] = [c for c in scenarios.expand("cuda_basic") if c.param_dict["device"] == "cuda"]
    return case


def _case_result(fp: Fingerprint, tmp_path: Path):
    ctx = context.RunContext(tmp_path / "run", fp, {}, {}, python="/nonexistent/python")
    ctx.run_dir.mkdir()
    [result] = run_all.run_all(ctx, [_cuda_case()])  # never starts a child
    return result


BUSY = (
    "cuda-busy-runtime-error.log"  # RuntimeError: CUDA error: all CUDA-capable devices are busy...
)


@pytest.mark.parametrize(
    ("wsl2", "log", "row", "says", "never"),
    [
        (True, BUSY, "wsl_gpu_unavailable", ("WSL2 GPU bridge", "wsl --update"), ("-c DEFAULT",)),
        (
            True,
            "cuda-busy-exclusive-process.log",
            "wsl_gpu_unavailable",
            ("WSL2 GPU bridge",),
            ("EXCLUSIVE",),
        ),
        (False, BUSY, "cuda_device_busy", ("EXCLUSIVE_PROCESS", "nvidia-smi -c DEFAULT"), ("WSL",)),
        (
            False,
            "cuda-802-runtime-error.log",
            "cuda_init_failed",
            ("CUDA error 802", "nvidia-fabricmanager"),
            ("WSL",),
        ),
        (
            False,
            "cuda-802-samples.log",
            "cuda_init_failed",
            ("CUDA error 802", "nvidia-fabricmanager"),
            ("reboot",),
        ),
        (
            False,
            "cuda-803-mismatch.log",
            "cuda_init_failed",
            ("CUDA error 803", "reboot"),
            ("fabricmanager",),
        ),
    ],
    ids=["wsl2-46", "wsl2-46-thc", "native-46", "native-802", "native-802-samples", "native-803"],
)
def test_doctor_and_case_give_the_same_cause(tmp_path, wsl2, log, row, says, never):
    fp = _host(wsl2, _text(log))
    diagnosis = cuda_init.init_error(fp)
    assert diagnosis is not None and diagnosis.signature == row

    finding = gpu_checks.cuda_init_check(fp)
    result = _case_result(fp, tmp_path)

    assert finding.status == FAIL and finding.predicts == row
    assert (result.outcome, result.signature) == (Outcome.ERROR, "infra.cuda_init")
    # the same words in both: the table row's meaning and fix for this text on this host
    assert diagnosis.summary in finding.detail
    assert result.message == f"not run: {diagnosis.summary}"
    for text in says:
        assert text in finding.detail and text in result.message
    for text in never:
        assert text not in diagnosis.summary


def test_error_46_names_its_number_on_both_hosts():
    for wsl2 in (True, False):
        found = cuda_init.init_error(_host(wsl2, _text(BUSY)))
        assert found is not None and found.code == 46
        assert found.cause is not None and found.cause.name == "cudaErrorDevicesUnavailable"


def test_every_cause_is_a_row_of_the_signature_table():
    """The causes the doctor's warnings and deep checks quote come from the table too."""
    assert "nvidia-fabricmanager" in cuda_init.cause("cuda_init_failed", 802).fix
    assert "reboot" in cuda_init.cause("cuda_init_failed", 803).fix
    assert "cuda-compat" in cuda_init.cause("forward_compat_unsupported", 804).fix
    assert "-c DEFAULT" in cuda_init.cause("cuda_device_busy", 46).fix
    assert "wsl --update" in cuda_init.cause("wsl_gpu_unavailable", 46).fix
    with pytest.raises(KeyError):
        cuda_init.cause("cuda_device_busy", 802)


def test_a_bad_cuda_errors_entry_names_the_row_and_the_field():
    from repro.errors import ConfigError
    from repro.signatures import table

    row = {
        "name": "my_cuda",
        "kind": "environment",
        "family": "driver",
        "lines": ["my cuda text"],
        "sources": ["me"],
        "cuda_errors": [
            {"code": "802", "name": "cudaErrorSystemNotReady", "meaning": "m", "fix": "f"}
        ],
    }
    with pytest.raises(ConfigError, match=r"signatures\[0\] \(my_cuda\)\.cuda_errors\[0\]\.code"):
        table.parse({"version": 1, "signatures": [row]}, "mine.yaml")
    row["cuda_errors"] = [{"code": 802, "name": "cudaErrorSystemNotReady", "meaning": "m"}]
    with pytest.raises(ConfigError, match=r"cuda_errors\[0\]\.message"):
        table.parse({"version": 1, "signatures": [row]}, "mine.yaml")
