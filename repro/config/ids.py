"""Canonical identifiers: variant ids, accelerators and runtime tags.

A variant id is ``<runtime>-torch<major.minor>`` (``cu128-torch2.8``); a runtime tag names the
wheel flavour of a torch build (``cu128``, ``rocm6.4``, ``cpu``), the same word the nox sessions
(``repro-cu128``) and the matrix columns use. Pure string functions: never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from repro.model.fingerprint import Runtime
from repro.model.variant import runtime_tag
from repro.variant_id import VariantId


def canonical_id(runtime: str, torch: str) -> str:
    """``cu128`` + ``2.8.0`` -> ``cu128-torch2.8`` (the pin's local version is ignored;
    :class:`repro.variant_id.VariantId`)."""
    return str(VariantId.of(runtime, torch))


def runtime_tag_of(runtime: Mapping[str, Any] | None) -> str:
    """:func:`runtime_tag` of a fingerprint's ``runtime`` section or a torch probe's JSON
    (keys ``torch``, ``cuda``, ``hip``); ``none`` when it is empty."""
    runtime = runtime or {}
    return runtime_tag(runtime.get("torch"), runtime.get("cuda"), runtime.get("hip"))


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
