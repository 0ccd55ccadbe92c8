"""The variant id ``<runtime>-torch<major.minor>`` (``cu128-torch2.8``, ``rocm6.4-torch2.9``,
``cpu-torch2.13``): the one place it is formatted and parsed (issue 20, item 3: three modules
split ids on ``"-torch"`` themselves).

An id written in matrix.yaml (``id:``) may be anything :data:`repro.config.load.ID_RE` allows;
:meth:`VariantId.parse` returns None for one that is not canonical, and callers fall back to
the variant's properties. Stdlib only: the compat and report code import it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_SEPARATOR = "-torch"
_CANONICAL_RE = re.compile(r"^([a-z0-9][a-z0-9.]*)-torch(\d+\.\d+)(?:[-._+][A-Za-z0-9._+-]*)?$")


def torch_minor(pin: str) -> str:
    """The major.minor of a torch pin as a variant id writes it: ``2.8.0+cu128`` -> ``2.8``."""
    return ".".join(re.split(r"[.+-]", pin)[:2])


class VariantId(NamedTuple):
    """A canonical variant id: ``runtime`` (``cu128``, ``rocm6.4``, ``cpu``) and ``torch``, the
    pin's major.minor (``2.8``). ``str()`` gives the id."""

    runtime: str
    torch: str

    def __str__(self) -> str:
        return f"{self.runtime}{_SEPARATOR}{self.torch}"

    @classmethod
    def of(cls, runtime: str, torch: str) -> VariantId:
        """``cu128`` + ``2.8.0`` (or ``2.8.0+cu128``, ``2.8``) -> ``cu128-torch2.8``."""
        return cls(runtime, torch_minor(torch))

    @classmethod
    def parse(cls, text: str | None) -> VariantId | None:
        """``"cu128-torch2.8"`` -> ``VariantId("cu128", "2.8")``; a suffix after the major.minor
        (``cu128-torch2.8-nightly``) is allowed and dropped. None for an id that is not of that
        form (a user's own ``id:``, a glob, an empty string)."""
        match = _CANONICAL_RE.match(text or "")
        return cls(match.group(1), match.group(2)) if match else None
