"""The bisect search, pure: versions are indices ``0..n-1`` ordered from the good end (0) to the
bad end (n-1); a verdict per tested index; which index next, and what the verdicts say.

Only ``good`` and ``bad`` move the bounds. ``skipped`` (infrastructure: install failure, no
wheel for this Python, an ``infra.*`` signature), ``flaky`` (repeats disagree) and ``other``
(a failure that is not the bad end's signature) are undecided: the next step is the untested
index nearest the middle of the remaining range, as ``git bisect skip`` does, so a skip costs
one step and never a wrong verdict (ROCm/aiter#5536 and esbmc/esbmc#7477 blamed a version for
an infrastructure failure). Without undecided steps the search takes at most
ceil(log2(n - 1)) steps between the two checked ends.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field


class Verdict(str, enum.Enum):
    """What one step (all its repeats) says about a version."""

    GOOD = "good"
    BAD = "bad"
    SKIPPED = "skipped"
    FLAKY = "flaky"
    OTHER = "other"

    @property
    def decided(self) -> bool:
        return self in (Verdict.GOOD, Verdict.BAD)


def bounds(n: int, verdicts: Mapping[int, Verdict]) -> tuple[int, int]:
    """``(lo, hi)``: the highest good index, and the lowest bad index above it (the ends when
    nothing else is known). Raises ValueError for ``n < 2``."""
    if n < 2:
        raise ValueError(f"a bisect needs at least 2 versions, got {n}")
    lo = max((i for i, v in verdicts.items() if v is Verdict.GOOD), default=0)
    hi = min((i for i, v in verdicts.items() if v is Verdict.BAD and i > lo), default=n - 1)
    return lo, hi


def next_step(n: int, verdicts: Mapping[int, Verdict]) -> int | None:
    """The index to test next, or None when the search is over: the untested index between the
    bounds nearest their middle (the lower one on a tie)."""
    lo, hi = bounds(n, verdicts)
    untested = [i for i in range(lo + 1, hi) if i not in verdicts]
    if not untested:
        return None
    middle = (lo + hi) / 2
    return min(untested, key=lambda i: (abs(i - middle), i))


def max_steps(n: int) -> int:
    """Steps between the two ends when no step is undecided: ceil(log2(n - 1)) for n >= 2."""
    return math.ceil(math.log2(n - 1)) if n > 2 else 0


@dataclass(frozen=True)
class Outcome:
    """What the verdicts say. ``last_good``/``first_bad``: indices (bounds); ``found``: they are
    adjacent, so the first bad version is known. Otherwise ``suspects`` lists the undecided
    indices between them: the first bad is one of those or ``first_bad``. ``conflicts`` names
    good indices above a bad one (a regression that comes and goes: no single first bad)."""

    last_good: int
    first_bad: int
    found: bool
    suspects: tuple[int, ...] = ()
    conflicts: tuple[tuple[int, int], ...] = field(default=())


def outcome(n: int, verdicts: Mapping[int, Verdict]) -> Outcome:
    """The state of the search for ``verdicts`` (complete or not)."""
    lo, hi = bounds(n, verdicts)
    suspects = tuple(i for i in range(lo + 1, hi) if i in verdicts)
    conflicts = tuple(
        (bad, lo) for bad, v in sorted(verdicts.items()) if v is Verdict.BAD and bad < lo
    )
    return Outcome(lo, hi, hi == lo + 1, suspects, conflicts)
