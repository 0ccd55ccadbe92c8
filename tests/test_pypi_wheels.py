"""scripts/pypi_wheels.py over a recorded input: PyPI's JSON for a few releases of torch,
torchvision and torchaudio (tests/fixtures/pypi-json/, read 2026-11-27 from
https://pypi.org/pypi/<name>/json and trimmed), and the facts repro check uses agree with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.compat.facts import Facts, default_facts, extra_facts
from scripts import pypi_wheels

RECORDED = Path(__file__).parent / "fixtures" / "pypi-json"


def recorded(name: str) -> dict:
    return pypi_wheels.tables(json.loads((RECORDED / f"{name}.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    "filename, requires, pairs",
    [
        # cp36m on manylinux1 x86_64; Requires-Python does not cut a cpXY wheel
        ("torch-1.7.0-cp36-cp36m-manylinux1_x86_64.whl", ">=3.6.2", {("linux", "3.6")}),
        ("torch-2.5.1-cp312-none-macosx_11_0_arm64.whl", None, {("macos-arm64", "3.12")}),
        ("torch-2.5.1-cp39-cp39-manylinux2014_aarch64.whl", None, {("linux-aarch64", "3.9")}),
        ("torch-2.10.0-3-cp313-cp313t-manylinux_2_28_x86_64.whl", None, set()),  # free-threaded
        ("torch-1.0.0-cp37-cp37m-win32.whl", None, set()),  # 32-bit Windows: no fact covers it
        ("x-1.0-cp39-abi3-win_amd64.whl", None, {("windows", f"3.{m}") for m in range(9, 16)}),
        (
            "x-1.0-cp310-cp310-macosx_10_9_universal2.whl",
            None,
            {("macos", "3.10"), ("macos-arm64", "3.10")},
        ),
        ("torchvision-0.1.6.tar.gz", None, set()),
    ],
)
def test_the_pythons_a_wheel_file_serves(filename, requires, pairs):
    assert set(pypi_wheels.pythons_of(filename, requires)) == pairs


def test_a_pure_wheel_serves_every_python_its_requires_python_admits():
    pairs = pypi_wheels.pythons_of("torchvision-0.2.2-py2.py3-none-any.whl", ">=3.6.1")
    assert {p for _platform, p in pairs} == {f"3.{m}" for m in range(6, 16)}
    assert {platform for platform, _p in pairs} == set(pypi_wheels.ALL_PLATFORMS)


def test_torch_1_7_0_s_windows_wheels_came_38_days_after_the_release():
    table = recorded("torch")["1.7.0"]
    assert table["day"] == "2020-10-27"
    assert table["later"] == {f"windows 3.{m}": "2020-12-04" for m in (6, 7, 8)}
    assert table["wheels"]["windows"] == ["3.6", "3.7", "3.8"]
    assert "linux-aarch64" not in table["wheels"]


def test_torch_2_5_1_has_no_intel_mac_and_no_python_3_8_wheel():
    wheels = recorded("torch")["2.5.1"]["wheels"]
    assert "macos" not in wheels
    assert wheels["linux"] == ["3.9", "3.10", "3.11", "3.12", "3.13"]
    assert wheels["linux-aarch64"] == ["3.9", "3.10", "3.11", "3.12"]  # no cp313 aarch64 wheel
    assert all("3.8" not in pythons for pythons in wheels.values())


def test_the_shipped_facts_agree_with_the_recorded_files():
    facts, extra = default_facts(), extra_facts()
    assert pypi_wheels.check_torch(recorded("torch"), facts, extra) == []
    for name in ("torchvision", "torchaudio"):
        problems = pypi_wheels.check_companion(name, recorded(name), extra)
        # The recorded input holds a few releases only: the rest are "not on PyPI" here.
        assert [p for p in problems if "not on PyPI" not in p] == [], problems


def test_a_fact_that_disagrees_with_pypi_is_reported():
    wrong = Facts.from_text(
        'pypi_python:\n  "2.5.1": {linux: ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]}\n'
    )
    problems = pypi_wheels.check_torch({"2.5.1": recorded("torch")["2.5.1"]}, wrong, extra_facts())
    assert any("2.5.1 linux:" in p and "'3.8'" in p for p in problems), problems
    assert any("2.5.1 macos-arm64" in p for p in problems), problems


def test_the_generated_yaml_is_the_committed_table():
    committed = Path(pypi_wheels.__file__).parent.parent / "repro" / "data" / "compat-extra.yaml"
    text = committed.read_text(encoding="utf-8")
    for name in ("torchvision", "torchaudio"):
        for line in pypi_wheels.companion_yaml(name, recorded(name)).splitlines()[1:]:
            assert line in text, line
