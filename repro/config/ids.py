"""Canonical identifiers: variant ids, accelerators and runtime tags.

A variant id is ``<runtime>-torch<major.minor>`` (``cu128-torch2.8``); a runtime tag names the
wheel flavour of a torch build (``cu128``, ``rocm6.4``, ``cpu``), the same word the nox sessions
(``repro-cu128``) and the matrix columns use. Pure string functions: never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from repro.variant_id import VariantId

#: The local-version suffix of a torch wheel: ``2.8.0+cu128``, ``2.8.0+rocm6.4``, ``2.13.0+cpu``.
_LOCAL_TAG_RE = re.compile(r"\+(cu\d{3}|rocm\d+(?:\.\d+){1,2}|cpu)\b")


def canonical_id(runtime: str, torch: str) -> str:
    """``cu128`` + ``2.8.0`` -> ``cu128-torch2.8`` (the pin's local version is ignored;
    :class:`repro.variant_id.VariantId`)."""
    return str(VariantId.of(runtime, torch))


def accelerator_of(runtime: str) -> str:
    """``cu128`` -> cuda, ``rocm6.4`` -> rocm, anything else (``cpu``) -> cpu."""
    if runtime.startswith("cu"):
        return "cuda"
    if runtime.startswith("rocm"):
        return "rocm"
    return "cpu"


def runtime_tag(torch: str | None, cuda: str | None = None, hip: str | None = None) -> str:
    """The wheel flavour of a torch build: ``cu128``, ``cu130``, ``rocm6.4``, ``cpu``; ``none``
    without torch.

    ``cuda``/``hip`` are ``torch.version.cuda``/``torch.version.hip`` ("12.8", "6.4.43482"), which
    win when known; otherwise the version string's local part (``2.8.0+cu128``) decides, and a
    build with neither is ``cpu``.
    """
    if not torch:
        return "none"
    if cuda:
        major, minor = (str(cuda).split(".") + ["0"])[:2]
        return f"cu{major}{minor}"
    if hip:
        major, minor = (str(hip).split(".") + ["0"])[:2]
        return f"rocm{major}.{minor}"
    match = _LOCAL_TAG_RE.search(str(torch))
    return match.group(1) if match else "cpu"


def runtime_tag_of(runtime: Mapping[str, Any] | None) -> str:
    """:func:`runtime_tag` of a fingerprint's ``runtime`` section or a torch probe's JSON
    (keys ``torch``, ``cuda``, ``hip``); ``none`` when it is empty."""
    runtime = runtime or {}
    return runtime_tag(runtime.get("torch"), runtime.get("cuda"), runtime.get("hip"))


def variant_mismatch(torch_pin: str, runtime: str, build: Mapping[str, Any] | None) -> str | None:
    """Why the interpreter's torch build is not a variant's, or None when it is.

    ``torch_pin``/``runtime``: the variant's ``torch`` and ``runtime`` (matrix.yaml);
    ``build``: a fingerprint's ``runtime`` section (``torch``, ``cuda``, ``hip``, from
    ``repro.host.torch_probe``). The public versions must be equal (PEP 440: ``2.8`` is
    ``2.8.0``; a local part such as ``+cu128`` is the runtime's business) and the runtime tags
    (:func:`runtime_tag_of`) too. Results recorded under the wrong pin would put one torch
    build's verdicts in another's column.
    """
    from packaging.version import InvalidVersion, Version

    have = (build or {}).get("torch")
    if not have:
        return f"it pins torch {torch_pin} ({runtime}) but the interpreter has no torch"
    have_tag = runtime_tag_of(build)
    try:
        same = Version(Version(str(have)).public) == Version(Version(torch_pin).public)
    except InvalidVersion:
        same = str(have).split("+")[0] == torch_pin.split("+")[0]
    if same and have_tag == runtime:
        return None
    return (
        f"it pins torch {torch_pin} ({runtime}) but the interpreter has torch {have} ({have_tag})"
    )
