"""The ground floor's typed model of the host facts and the variant (issue 31, item 1).

:class:`Fingerprint` (with :class:`Machine`, :class:`Gpu`, :class:`Driver`, :class:`Runtime`...)
and :class:`Variant` are made once where their facts are read and passed down typed to where
they are written (``fingerprint.json``, ``run.json``, JUnit properties through
:mod:`repro.properties`). Stdlib and the codecs only: every package may import it, it imports
none of them.
"""

from repro.model.fingerprint import (
    GPU_MODES,
    GPUS_UNKNOWN,
    SCHEMA,
    ContainerFacts,
    Driver,
    Fingerprint,
    Gpu,
    Machine,
    MigDevice,
    Runtime,
    Selection,
    TorchDevice,
    UnreadableItem,
)
from repro.model.host_key import UNLISTED_NVIDIA, host_key
from repro.model.variant import (
    ACCELERATORS,
    CONTAINER,
    FROM_BUILD,
    FROM_MATRIX,
    HOST,
    LANES,
    VENV,
    Variant,
    accelerator_of,
    runtime_tag,
)

__all__ = [
    "ACCELERATORS",
    "CONTAINER",
    "FROM_BUILD",
    "FROM_MATRIX",
    "GPUS_UNKNOWN",
    "GPU_MODES",
    "HOST",
    "LANES",
    "SCHEMA",
    "UNLISTED_NVIDIA",
    "VENV",
    "ContainerFacts",
    "Driver",
    "Fingerprint",
    "Gpu",
    "Machine",
    "MigDevice",
    "Runtime",
    "Selection",
    "TorchDevice",
    "UnreadableItem",
    "Variant",
    "accelerator_of",
    "host_key",
    "runtime_tag",
]
