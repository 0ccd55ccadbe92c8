"""CUDA forward compatibility in predictions (issue 10 item 5): a CUDA 13 image on an R570 driver
fails on consumer GPUs and passes via forward compatibility on data-centre GPUs when the image
carries the cuda-compat package."""

from __future__ import annotations

import pytest

from repro.compat import FAIL, PASS, UNKNOWN, predict
from repro.compat.facts import extra_facts
from repro.compat.forward_compat import gpu_brand, image_carries_compat

CUDA13_IMAGE = "nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04"


def host(name: str, driver: str = "570.86.15", capability: str = "9.0", **extra: str):
    props = {
        "host.driver.nvidia": driver,
        "host.gpu_count": "1",
        "host.gpu.0.vendor": "nvidia",
        "host.gpu.0.name": name,
        "host.gpu.0.compute_capability": capability,
        "host.wsl2": "false",
    }
    props.update(extra)
    return props


def cu130(base_image: str | None = CUDA13_IMAGE, **more: str) -> dict[str, str]:
    props = {"variant.runtime": "cu130", "variant.torch": "2.13.0"}
    if base_image:
        props["variant.base_image"] = base_image
    props.update(more)
    return props


def driver_reason(prediction):
    return next(r for r in prediction.reasons if r.check == "driver")


def test_cuda13_image_on_r570_passes_via_forward_compat_on_a_data_centre_gpu():
    prediction = predict(host("NVIDIA H100 80GB HBM3"), cu130())
    assert prediction.outcome == PASS, [r.line() for r in prediction.reasons]
    reason = driver_reason(prediction)
    assert reason.text.startswith("pass via forward compatibility: driver 570.86.15")
    assert "older than 580" in reason.text and "branch 570" in reason.text
    assert "nvidia_container.forward_compat_brands" in reason.fact
    # The 13.0 image's branch list is a third-party copy: the pass says it is unverified.
    assert reason.unverified and prediction.unverified


def test_cuda13_image_on_r570_fails_on_a_consumer_gpu_naming_580():
    prediction = predict(host("NVIDIA GeForce RTX 4090", capability="8.9"), cu130())
    assert prediction.outcome == FAIL
    reason = driver_reason(prediction)
    assert "older than 580, the minimum for CUDA 13.x" in reason.text
    assert "geforce card" in reason.text and "Error 804" in reason.text
    assert not reason.unverified  # the family minimum is verified


def test_a_recorded_nvml_brand_beats_the_name():
    tesla = host("Some Renamed Board", **{"host.gpu.0.brand": "Tesla"})
    assert predict(tesla, cu130()).outcome == PASS
    titan = host("NVIDIA H100", **{"host.gpu.0.brand": "titan"})
    assert predict(titan, cu130()).outcome == FAIL


@pytest.mark.parametrize(
    "variant, why",
    [
        (cu130(base_image=None), "host run: no image, the host driver decides"),
        (cu130("python:3.12-slim"), "image without cuda-compat"),
        (cu130(CUDA13_IMAGE, **{"variant.cuda_compat": "false"}), "recorded: no compat"),
        (cu130("nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04"), "compat package too old"),
    ],
)
def test_no_forward_compat_without_a_fitting_compat_package(variant, why):
    prediction = predict(host("NVIDIA H100"), variant)
    assert prediction.outcome == FAIL, why
    assert "older than 580, the minimum" in driver_reason(prediction).text


def test_a_branch_the_image_does_not_accept_fails_and_wsl2_never_forward_compats():
    old_branch = predict(host("NVIDIA H100", driver="560.35.03"), cu130())
    assert old_branch.outcome == FAIL
    assert "branch 560 is not one the CUDA 13.0 image accepts" in driver_reason(old_branch).text
    wsl = predict(host("NVIDIA RTX A6000", **{"host.wsl2": "true"}, driver="572.16"), cu130())
    assert wsl.outcome == FAIL and "not WSL2" in driver_reason(wsl).text


def test_unknown_image_or_brand_leaves_the_cell_unknown():
    assert predict(host("NVIDIA H100"), cu130("registry.example/custom:1")).outcome == UNKNOWN
    no_name = host("x")
    del no_name["host.gpu.0.name"]
    assert predict(no_name, cu130()).outcome == UNKNOWN


def test_a_driver_at_the_minimum_needs_no_forward_compat():
    reason = driver_reason(predict(host("NVIDIA GeForce RTX 4090", driver="580.65.06"), cu130()))
    assert reason.verdict == PASS and "forward" not in reason.text


def test_the_variant_fact_image_carries_compat():
    extra = extra_facts()
    assert image_carries_compat({"variant.base_image": CUDA13_IMAGE}, extra)[0] is True
    assert image_carries_compat({"variant.base_image": "python:3.14-slim"}, extra)[0] is False
    assert image_carries_compat({}, extra)[0] is None
    assert gpu_brand("NVIDIA GeForce RTX 5090", None, extra) == ("geforce", True)
    assert gpu_brand("NVIDIA A100-SXM4-80GB", None, extra) == ("nvidia", True)
    assert gpu_brand(None, None, extra) == (None, True)
