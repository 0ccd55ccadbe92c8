"""The per-GPU testsuite properties, ``host.gpu.<index>.<field>``: the one place their names are
formatted and parsed (issue 20, item 3).

The fingerprint writes them (``repro.host.fingerprint.to_properties``), a container start
failure writes the driver query's subset (``repro.containers.start_failure``), the predictions
read them back (``repro.compat.predictions.gpus_of``) and name them as the input a reason lacked.
Values are text, as in JUnit: ``memory_bytes`` in bytes, ``compute_capability`` as ``"9.0"``,
``gfx_target`` as ``"gfx942"``.

Stdlib only: imported by the report and compat code, which must not pull in the host probes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: The fields the fingerprint records for each GPU the job uses, in writing order.
FIELDS = (
    "name",
    "vendor",
    "compute_capability",
    "gfx_target",
    "memory_bytes",
    "compute_mode",
    "mig_mode",
    "persistence_mode",
    "ecc_mode",
    "fabric_state",
)
#: Fields read where present but not recorded by this version's fingerprint (NVML's brand:
#: ``geforce``, ``nvidia``, ``tesla``...; older results and hand-written inputs carry it).
READ_ONLY_FIELDS = ("brand",)
#: The count of GPUs the job uses (0: none), written beside the per-GPU properties.
COUNT = "host.gpu_count"

_PREFIX = "host.gpu."
_NAME_RE = re.compile(r"^host\.gpu\.(\d{1,4})\.([a-z_]+)$")


def prop_name(index: int, field: str) -> str:
    """``host.gpu.<index>.<field>`` for GPU ``index`` (>= 0). Raises ValueError for a negative
    index or a field outside :data:`FIELDS` and :data:`READ_ONLY_FIELDS` (a typo would write a
    property nobody reads)."""
    if index < 0:
        raise ValueError(f"GPU index must be >= 0, got {index}")
    if field not in FIELDS and field not in READ_ONLY_FIELDS:
        raise ValueError(f"unknown GPU property field {field!r}; expected one of {FIELDS}")
    return f"{_PREFIX}{index}.{field}"


def encode(index: int, values: Mapping[str, object]) -> dict[str, object]:
    """``{host.gpu.<index>.<field>: value}`` for each of ``values`` (field -> value, in
    ``values``' order; the caller turns values into text). Raises ValueError as
    :func:`prop_name`."""
    return {prop_name(index, field): value for field, value in values.items()}


def decode(props: Mapping[str, str]) -> dict[int, dict[str, str]]:
    """The per-GPU properties among ``props``: ``{index: {field: text}}``, indexes ascending.
    Names that only look alike (``host.gpu_count``, an unknown field, a non-numeric index) are
    left out."""
    found: dict[int, dict[str, str]] = {}
    for name, value in props.items():
        if not name.startswith(_PREFIX):
            continue
        match = _NAME_RE.match(name)
        if match is None:
            continue
        field = match.group(2)
        if field in FIELDS or field in READ_ONLY_FIELDS:
            found.setdefault(int(match.group(1)), {})[field] = value
    return dict(sorted(found.items()))
