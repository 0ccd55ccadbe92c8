"""Published compatibility facts, arch rules and per-cell predictions.

``facts`` loads the shipped facts file with provenance, ``arch`` holds the device-code rule
(:func:`match_arch`), ``results`` what a prediction is, ``predictions`` the per-cell checks, ``forward_compat``
CUDA forward compatibility in images, ``pip_command`` and ``check`` the ``repro check`` answer.
Import the names from here: ``from repro.compat import predict, match_arch``.
"""

from repro.compat.arch import ArchVerdict, gfx_from_override, match_arch, normalise_gfx
from repro.compat.facts import EXTRA_FACTS_FILE, FACTS_FILE, Facts, default_facts, extra_facts
from repro.compat.predictions import Gpu, accelerator, gpus_of, predict, runtime_tag, version
from repro.compat.results import (
    FAIL,
    NOTE,
    OUTCOMES,
    PASS,
    UNKNOWN,
    Prediction,
    Reason,
    combine,
    disagreement,
)

__all__ = [
    "EXTRA_FACTS_FILE",
    "FACTS_FILE",
    "FAIL",
    "NOTE",
    "OUTCOMES",
    "PASS",
    "UNKNOWN",
    "ArchVerdict",
    "Facts",
    "Gpu",
    "Prediction",
    "Reason",
    "accelerator",
    "combine",
    "default_facts",
    "disagreement",
    "extra_facts",
    "gfx_from_override",
    "gpus_of",
    "match_arch",
    "normalise_gfx",
    "predict",
    "runtime_tag",
    "version",
]
