"""Docker size strings (``shm_size``, ``mem_limit``, ``repro docker-run --shm-size``): the one
parser, shared by matrix.yaml's checks and the container limits (issue 20, item 4: the two
parsers disagreed, matrix.yaml refused ``"1.5g"`` that the container code took).

What is accepted is what the Docker SDK passes on (docker-py ``docker.utils.utils.parse_bytes``,
7.1: a decimal number, then ``b``, ``k``, ``m`` or ``g`` with an optional trailing ``b``, binary
units; no ``t``) and what the ``docker`` CLI reads (go-units ``RAMInBytes``): ``"8g"``,
``"512m"``, ``"1.5g"``, ``"8gb"``, ``"1048576"``. Exponents (``"1e3m"``, which docker-py's
``float()`` takes) are refused: nobody writes them and the CLI does not read them.
"""

from __future__ import annotations

import re
from typing import Any

#: Digits (at most 7, then at most 3 decimals), an optional space, a unit, an optional ``b``.
SIZE_RE = re.compile(r"^(\d{1,7}(?:\.\d{1,3})?) ?([bkmg]?)b?$", re.IGNORECASE)
#: Binary units, as Docker reads them.
UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
#: The sizes repro accepts for a container (bytes): 6 MiB, Docker's minimum memory limit, up
#: to 4 TiB.
SIZE_RANGE = (6 << 20, 4 << 40)
#: What a Docker size must be (the error text of :func:`size_ok`'s refusals).
SIZE_EXPECTED = 'a Docker size like "8g" or "1.5g" (between 6m and 4096g)'


def size_bytes(text: str) -> int:
    """Bytes in a Docker size string (``"16g"`` -> 17179869184, ``"1.5g"`` -> 1610612736,
    ``"512M"``, ``"8gb"``, ``"100"``). Raises ValueError for anything else."""
    match = SIZE_RE.match(str(text))
    if not match:
        raise ValueError(f"not a Docker size: {text!r}")
    return int(float(match.group(1)) * UNITS[match.group(2).lower()])


def size_ok(value: Any) -> bool:
    """Whether ``value`` is a Docker size string within :data:`SIZE_RANGE`."""
    try:
        return isinstance(value, str) and SIZE_RANGE[0] <= size_bytes(value) <= SIZE_RANGE[1]
    except ValueError:
        return False
