"""The variant as one typed object, from where it is made to where it is written (issue 31).

A :class:`Variant` is a column of the matrix: torch pin x accelerator runtime x base image x
Python, and the **lane** its cases ran in (``host``: the interpreter under test, ``venv``: a uv
environment with the pin, ``container``: its image). matrix.yaml makes one
(``repro.config.load``), a host-lane run derives one from the interpreter's torch build
(:meth:`Variant.of_build`), the JUnit reader reads one back from the ``variant.*`` properties
(``repro.properties``). Whoever needs a variant's accelerator asks :func:`accelerator_of`, the one
rule (``cu*`` -> cuda, ``rocm*`` -> rocm, else cpu); whoever needs a build's runtime tag asks
:func:`runtime_tag`.

Ground floor: stdlib and ``repro.variant_id`` only; nothing above it is imported.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from repro.variant_id import VariantId

#: The lanes (DESIGN.md "lane"): where a variant's cases run.
HOST, VENV, CONTAINER = "host", "venv", "container"
LANES = (HOST, VENV, CONTAINER)
#: The accelerators a variant may name (matrix.yaml ``accelerator``).
ACCELERATORS = ("cuda", "rocm", "cpu")
#: Where a variant came from: matrix.yaml, or the interpreter's own torch build (host lane).
FROM_MATRIX, FROM_BUILD = "matrix", "host"

#: The local-version suffix of a torch wheel: ``2.8.0+cu128``, ``2.8.0+rocm6.4``, ``2.13.0+cpu``.
_LOCAL_TAG_RE = re.compile(r"\+(cu\d{3}|rocm\d+(?:\.\d+){1,2}|cpu)\b")


def accelerator_of(runtime: str | None) -> str:
    """The one accelerator rule: ``cu128`` -> cuda, ``rocm6.4`` -> rocm, anything else
    (``cpu``, ``xpu``, empty) -> cpu."""
    runtime = runtime or ""
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


@dataclass(frozen=True)
class Variant:
    """One column of the matrix: torch pin x runtime x base image x Python, and its lane.

    ``runtime`` is the wheel flavour (``cu128``, ``rocm6.4``, ``cpu``), ``accelerator`` cuda |
    rocm | cpu (:func:`accelerator_of` of the runtime unless matrix.yaml named it), ``torch``
    the pin (``2.8.0``). The image fields (``index_url``, ``base_image``, ``python``,
    ``extra_packages``, ``env``) and the container limits (``shm_size``/``mem_limit`` Docker
    sizes such as ``"8g"``, ``pids_limit`` a process count; None: the defaults of
    ``repro.config.limits``) are matrix.yaml's; ``env`` never holds a name of the
    deny-list (``LD_PRELOAD``, ``LD_LIBRARY_PATH``, ``PYTHON*``, ``REPRO_*``, ``HOME``).
    ``source``: :data:`FROM_MATRIX` or :data:`FROM_BUILD` (derived from the interpreter's
    torch); ``lane``: one of :data:`LANES`.
    """

    id: str
    runtime: str
    accelerator: str
    torch: str
    index_url: str = ""
    base_image: str = ""
    python: str = ""
    extra_packages: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    shm_size: str | None = None
    mem_limit: str | None = None
    pids_limit: int | None = None
    source: str = FROM_MATRIX
    lane: str = HOST
    #: The image carries CUDA's forward-compatibility package (``True``/``False``, a result's
    #: ``variant.cuda_compat``); None: judged from ``base_image`` (repro.compat.forward_compat).
    cuda_compat: bool | None = None

    @classmethod
    def of_build(cls, torch: str, runtime: str) -> Variant:
        """The variant a host-lane run belongs to: its interpreter's torch build (``torch``
        ``2.13.0+cpu``, runtime tag ``cpu``), id ``cpu-torch2.13``."""
        return cls(
            id=str(VariantId.of(runtime, torch)),
            runtime=runtime,
            accelerator=accelerator_of(runtime),
            torch=torch,
            source=FROM_BUILD,
        )

    @property
    def on_accelerator(self) -> bool:
        """Whether the variant's build uses a GPU (cuda or rocm)."""
        return self.accelerator != "cpu"

    def in_lane(self, lane: str) -> Variant:
        """This variant run in ``lane`` (one of :data:`LANES`). Raises ValueError otherwise."""
        if lane not in LANES:
            raise ValueError(f"unknown lane {lane!r}; expected one of {', '.join(LANES)}")
        return dataclasses.replace(self, lane=lane)

    def as_dict(self) -> dict[str, Any]:
        """matrix.yaml's fields, JSON-ready (``extra_packages`` a list, ``env`` a dict); the
        lane, source and ``cuda_compat`` are a run's, not the file's, and are left out."""
        out = dataclasses.asdict(self)
        del out["source"], out["lane"], out["cuda_compat"]
        out["extra_packages"] = list(self.extra_packages)
        out["env"] = dict(self.env)
        return out

    def key(self) -> dict[str, str]:
        """``run.json``'s ``variant`` object: id, runtime, torch, accelerator and source; an
        empty field is left out."""
        values = {
            "id": self.id,
            "runtime": self.runtime,
            "torch": self.torch,
            "accelerator": self.accelerator,
            "source": self.source,
        }
        return {name: value for name, value in values.items() if value}

    @classmethod
    def from_key(cls, data: Any) -> Variant | None:
        """The variant of a ``run.json``'s ``variant`` object (:meth:`key`); None when it is
        not an object with a text ``id``. Missing fields read as ""."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return None
        fields = {k: str(data.get(k) or "") for k in ("runtime", "torch", "accelerator", "source")}
        return cls(id=data["id"], **fields)
