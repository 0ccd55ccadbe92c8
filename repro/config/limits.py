"""A container's resource limits, resolved once per variant (issue 31, item 3): the one place
their defaults and their one consistency rule are written.

``repro docker-run`` resolves a :class:`ContainerLimits` per variant from the command line
(``--shm-size``, ``--ipc``, ``--user``) over matrix.yaml (``shm_size``, ``mem_limit``,
``pids_limit``) over the defaults here, and passes that object down: the docker run spec, the
``container.*`` properties and the progress line read it, none works a limit out again.
matrix.yaml's own check (``repro.config.load``) applies the same rule
(:func:`shm_leaves_room`).

Why the rule: /dev/shm is a tmpfs whose pages count against the container's memory cgroup
(kernel cgroup-v2 docs, "memory.current" counts shmem), so a memory limit at or below
``shm_size`` leaves the cases nothing to run in.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from repro.config.sizes import SIZE_EXPECTED, size_bytes
from repro.errors import ConfigError
from repro.model import Variant

#: Working memory of a case besides /dev/shm (bytes): the heaviest scenarios (DBNet on CPU,
#: DataLoader workers with 50 MB samples) fit with room.
CASE_MEMORY_BYTES = 8 << 30
#: The floor of the default memory limit (bytes): 16 GiB.
MIN_DEFAULT_MEMORY_BYTES = 16 << 30
#: Share of the host's RAM a container may take by default: the container's own OOM killer
#: fires before the host's, which could pick any process of the machine.
HOST_MEMORY_SHARE = 0.75
#: Processes + threads per container when the variant names no ``pids_limit``: a fork bomb
#: stops here instead of at the host's pid_max; the heaviest case (DataLoader workers x
#: torch's intra-op threads, torchrun ranks) stays far below it.
DEFAULT_PIDS_LIMIT = 4096
#: The default memory limit in matrix.yaml's words (its error texts name it).
DEFAULT_MEMORY_RULE = "shm_size + 8g, at least 16g, at most 3/4 of the host's RAM"


def shm_leaves_room(shm_bytes: int, mem_bytes: int) -> bool:
    """Whether a memory limit of ``mem_bytes`` leaves memory beside a /dev/shm of
    ``shm_bytes`` (both bytes): the one consistency rule of the two limits."""
    return mem_bytes > shm_bytes


def default_mem_limit(shm_bytes: int, host_bytes: int | None) -> str:
    """The memory limit when the variant names none, as a Docker size (``"24g"``): the shm
    (bytes) plus :data:`CASE_MEMORY_BYTES`, at least :data:`MIN_DEFAULT_MEMORY_BYTES`, at most
    :data:`HOST_MEMORY_SHARE` of ``host_bytes`` (the host's RAM; None: unknown)."""
    limit = max(MIN_DEFAULT_MEMORY_BYTES, shm_bytes + CASE_MEMORY_BYTES)
    if host_bytes:
        limit = min(limit, int(host_bytes * HOST_MEMORY_SHARE))
    return f"{max(1, limit >> 20)}m" if limit % (1 << 30) else f"{limit >> 30}g"


@dataclass(frozen=True)
class ContainerLimits:
    """One container's limits: ``shm_size`` a Docker size (None: Docker's 64 MB default),
    ``ipc`` ``host``/``private``/``shareable`` (None: Docker's), ``mem_limit`` a Docker size
    (also the memory+swap limit), ``pids_limit`` processes and threads, ``user`` ``UID:GID``
    (None: the image's)."""

    shm_size: str | None = None
    ipc: str | None = None
    mem_limit: str = default_mem_limit(0, None)
    pids_limit: int = DEFAULT_PIDS_LIMIT
    user: str | None = None

    @property
    def shm_text(self) -> str:
        """/dev/shm in words (the ``container.shm_size`` property, the progress line)."""
        if self.ipc == "host":
            return "host /dev/shm (--ipc host)"
        return self.shm_size or "64m (Docker's default)"


def resolve(
    variant: Variant,
    *,
    shm_size: str | None,
    ipc: str | None,
    user: str,
    host_bytes: int | None,
) -> ContainerLimits:
    """The limits of ``variant``'s container: ``shm_size`` (the command line's, else the
    variant's), ``ipc`` and ``user`` as given, the variant's ``mem_limit``/``pids_limit`` or
    the defaults (:func:`default_mem_limit` of the shm and ``host_bytes``).

    Raises ConfigError naming the variant for a memory limit that is not a size or leaves no
    memory beside /dev/shm (:func:`shm_leaves_room`)."""
    shm = shm_size or variant.shm_size
    shm_bytes = 0
    if shm and ipc != "host":
        with contextlib.suppress(ValueError):  # matrix.yaml validated it; docker says the rest
            shm_bytes = size_bytes(shm)
    pids = int(variant.pids_limit or DEFAULT_PIDS_LIMIT)
    mem = variant.mem_limit
    if not mem:
        mem = default_mem_limit(shm_bytes, host_bytes)
        return ContainerLimits(shm, ipc, mem, pids, user)
    try:
        mem_bytes = size_bytes(mem)
    except ValueError:
        raise ConfigError(
            f"variant {variant.id}: mem_limit: expected {SIZE_EXPECTED}, got {mem!r}"
        ) from None
    if not shm_leaves_room(shm_bytes, mem_bytes):
        raise ConfigError(
            f"variant {variant.id}: mem_limit {mem} leaves no memory beside shm_size {shm} "
            "(/dev/shm pages count against the container's memory limit)"
        )
    return ContainerLimits(shm, ipc, str(mem), pids, user)
