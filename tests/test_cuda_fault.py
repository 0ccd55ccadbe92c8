"""The ``cuda_fault`` scenario's contract, checked on the CPU (issue 10, item 7).

The fault itself needs a GPU (a device-side assert): here we check what the CPU lane can prove:
the module imports without torch, declares its grid and requirement, skips with a reason on the
CPU, its fresh-process probe reports success and failure, and the real runner turns it into a
skipped case with that reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env
from junitparser import JUnitXml, Skipped

from repro import scenarios
from repro.model import Fingerprint
from repro.runner.case_api import CaseSkipped
from repro.scenarios import cuda_fault
from repro.signatures import table

REPO = Path(__file__).resolve().parent.parent


def test_importing_the_scenario_does_not_import_torch():
    code = (
        "import sys\nimport repro.scenarios.cuda_fault as m\n"
        "assert 'torch' not in sys.modules, 'cuda_fault imported torch at module level'\n"
        "print(m.PARAMS, m.TIMEOUT_S)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'device': ['cuda']} 120.0"


def test_grid_is_one_cuda_case_that_needs_an_accelerator():
    assert "cuda_fault" in scenarios.builtin()
    [case] = scenarios.expand("cuda_fault")
    assert case.case_id == "cuda_fault[device=cuda]"
    assert case.requires == ("accelerator",) and case.timeout_s == cuda_fault.TIMEOUT_S
    cpu_host = {"runtime": {"torch": "2.13.0+cpu", "accelerator_count": 0}}
    reason = scenarios.skip_reason(case.requires, Fingerprint.from_json(cpu_host))
    assert reason and "no CUDA/ROCm device" in reason


class _Ctx:
    def skip(self, reason):
        raise CaseSkipped(reason)


def test_a_cpu_device_is_skipped_with_the_reason_before_torch_is_imported():
    with pytest.raises(CaseSkipped, match="IndexError at once and no error is sticky"):
        cuda_fault.run(_Ctx(), {"device": "cpu"})


def test_on_a_torch_without_cuda_the_case_skips_itself():
    code = (
        "from repro.runner.case_api import CaseSkipped\n"
        "from repro.scenarios import cuda_fault\n"
        "class Ctx:\n"
        "    def skip(self, reason): raise CaseSkipped(reason)\n"
        "try:\n    cuda_fault.run(Ctx(), {'device': 'cuda'})\n"
        "except CaseSkipped as exc:\n    print('SKIPPED', exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    if "No module named 'torch'" in done.stderr:
        pytest.skip("torch is not installed here")
    assert done.returncode == 0, done.stderr
    assert "SKIPPED torch" in done.stdout and "sees no CUDA/ROCm device" in done.stdout


def test_the_fresh_process_probe_reports_success_and_failure(monkeypatch):
    monkeypatch.setattr(cuda_fault, "FRESH_PROBE", "print('fresh-process-ok', 12.0)")
    assert cuda_fault._fresh_process()[:2] == (True, "fresh-process-ok 12.0")
    monkeypatch.setattr(cuda_fault, "FRESH_PROBE", "raise SystemExit('CUDA error: no device')")
    worked, line, output = cuda_fault._fresh_process()
    assert not worked and line == "exit status 1: CUDA error: no device"
    assert "CUDA error: no device" in output


def test_the_signature_it_names_has_a_sourced_row():
    row = table.row("cuda_context_poisoned")
    assert "pytorch/pytorch#2300" in row.source and "restart the process" in row.workaround


def test_the_runner_skips_it_on_the_cpu_lane_with_the_reason(tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("version: 1\nscenarios:\n  cuda_fault: {}\n")
    results = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "repro", "run", "--config", str(matrix), "--results-dir",
         str(results), "--no-doctor"],
        cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    junits = list(results.glob("*/junit.xml"))
    assert len(junits) == 1, done.stderr
    fingerprint = json.loads((junits[0].parent / "fingerprint.json").read_text())
    if (fingerprint.get("runtime") or {}).get("accelerator_count"):
        pytest.skip("this machine has a GPU: the case runs for real here")
    cases = [case for suite in JUnitXml.fromfile(str(junits[0])) for case in suite]
    assert [case.name for case in cases] == ["cuda_fault[device=cuda]"]
    [skipped] = cases[0].result
    assert isinstance(skipped, Skipped) and "no CUDA/ROCm device" in skipped.message
