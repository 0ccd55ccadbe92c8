"""Canonical variant ids, and whether the interpreter's torch build is a variant's.

A variant id is ``<runtime>-torch<major.minor>`` (``cu128-torch2.8``); the runtime tag
(``cu128``, ``rocm6.4``, ``cpu``: the wheel flavour, the word the nox sessions ``repro-cu128``
and the matrix columns use) and the accelerator rule are the model's
(:func:`repro.model.runtime_tag`, :func:`repro.model.accelerator_of`). Never imports torch.
"""

from __future__ import annotations

from repro.model.fingerprint import Runtime
from repro.variant_id import VariantId


def canonical_id(runtime: str, torch: str) -> str:
    """``cu128`` + ``2.8.0`` -> ``cu128-torch2.8`` (the pin's local version is ignored;
    :class:`repro.variant_id.VariantId`)."""
    return str(VariantId.of(runtime, torch))


def variant_mismatch(torch_pin: str, runtime: str, build: Runtime) -> str | None:
    """Why the interpreter's torch build is not a variant's, or None when it is.

    ``torch_pin``/``runtime``: the variant's ``torch`` and ``runtime`` (matrix.yaml);
    ``build``: the fingerprint's :class:`repro.model.Runtime` (from ``repro.host.torch_probe``).
    The public versions must be equal (PEP 440: ``2.8`` is ``2.8.0``; a local part such as
    ``+cu128`` is the runtime's business) and the runtime tags (:attr:`Runtime.tag`) too.
    Results recorded under the wrong pin would put one torch build's verdicts in another's
    column.
    """
    from packaging.version import InvalidVersion, Version

    have = build.torch
    if not have:
        return f"it pins torch {torch_pin} ({runtime}) but the interpreter has no torch"
    have_tag = build.tag
    try:
        same = Version(Version(str(have)).public) == Version(Version(torch_pin).public)
    except InvalidVersion:
        same = str(have).split("+")[0] == torch_pin.split("+")[0]
    if same and have_tag == runtime:
        return None
    return (
        f"it pins torch {torch_pin} ({runtime}) but the interpreter has torch {have} ({have_tag})"
    )
