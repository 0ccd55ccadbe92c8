"""Issue 20, item 3: the ``host.gpu.<index>.<field>`` properties have one codec
(``repro.gpu_properties``); the fingerprint's writer and the predictions' reader go through it,
and no other module of the package (or benchmark) spells a property name itself."""

from __future__ import annotations

import pytest
from conftest import REPO, spelled_outside
from test_fingerprint import H100_FP

from repro import gpu_properties
from repro.compat import predictions
from repro.host import fingerprint
from repro.model import Fingerprint


def test_the_fingerprint_writes_what_the_predictions_read_back():
    props = fingerprint.to_properties(Fingerprint.from_json(H100_FP))
    decoded = gpu_properties.decode(props)
    assert sorted(decoded) == [0, 1]
    assert decoded[1]["name"] == "NVIDIA H100 80GB HBM3"
    assert decoded[0]["memory_bytes"] == "85520809984"
    assert props[gpu_properties.COUNT] == "2"
    gpus = predictions.gpus_of(props)
    assert [(g.index, g.vendor, g.capability) for g in gpus] == [
        (0, "nvidia", "9.0"),
        (1, "nvidia", "9.0"),
    ]


def test_names_that_only_look_alike_are_not_gpu_properties():
    props = {
        "host.gpu_count": "1",
        "host.gpu.x.name": "?",
        "host.gpu.0.colour": "green",
        "host.gpu.0.vendor": "amd",
        "host.gpu.12.gfx_target": "gfx942",
        "host.gpu.0.brand": "geforce",
    }
    assert gpu_properties.decode(props) == {
        0: {"vendor": "amd", "brand": "geforce"},
        12: {"gfx_target": "gfx942"},
    }


@pytest.mark.parametrize(("index", "field"), [(-1, "name"), (0, "colour"), (0, "gpu_count")])
def test_a_name_nobody_reads_is_refused(index, field):
    with pytest.raises(ValueError):
        gpu_properties.prop_name(index, field)


def test_no_module_outside_the_codec_spells_a_gpu_property_name():
    # Quoted names or f-strings ("host.gpu.0.vendor", f"host.gpu.{i}.name") outside the codec;
    # docstrings that describe the shape (``host.gpu.N.*``) are prose, not quoted.
    assert spelled_outside(r"""["']host\.gpu\.""", REPO / "repro" / "gpu_properties.py") == []
