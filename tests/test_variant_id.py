"""Issue 20, item 3: the variant id ``<runtime>-torch<major.minor>`` has one codec
(``repro.variant_id.VariantId``); no other module formats or splits it."""

from __future__ import annotations

import pytest
from conftest import REPO, spelled_outside

from repro import config
from repro.compat import predictions
from repro.variant_id import VariantId


@pytest.mark.parametrize(
    ("runtime", "torch", "text"),
    [
        ("cu128", "2.8.0", "cu128-torch2.8"),
        ("cu128", "2.8.0+cu128", "cu128-torch2.8"),
        ("rocm6.4", "2.9.1", "rocm6.4-torch2.9"),
        ("cpu", "2.13.0", "cpu-torch2.13"),
        ("cu130", "2.15.0.dev20260301", "cu130-torch2.15"),
    ],
)
def test_an_id_formats_and_parses_back(runtime, torch, text):
    vid = VariantId.of(runtime, torch)
    assert str(vid) == text == config.canonical_id(runtime, torch)
    assert VariantId.parse(text) == vid


@pytest.mark.parametrize("text", ["", "gpu-box", "cu128-torch", "cu128-torch2", "*-torch2.8", None])
def test_an_id_that_is_not_canonical_parses_to_none(text):
    assert VariantId.parse(text) is None


def test_a_suffixed_id_still_names_its_runtime_and_torch():
    assert VariantId.parse("cu128-torch2.8-nightly") == VariantId("cu128", "2.8")
    # The predictions fall back to the id where a result has no variant.* properties.
    assert predictions.runtime_tag({}, "rocm6.4-torch2.9-b7") == "rocm6.4"
    assert predictions.runtime_tag({}, "my-box") is None


def test_no_module_outside_the_codec_formats_or_splits_a_variant_id():
    pattern = r"""["']-torch["']|-torch\{|split\(["']-torch"""
    assert spelled_outside(pattern, REPO / "repro" / "variant_id.py") == []
