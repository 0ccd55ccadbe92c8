""" "Did you mean" for every name a user types: commands, flags, variant ids, scenario names and
matrix.yaml keys. One function, difflib's ratio (the same measure argparse uses from Python 3.14
on for ``suggest_on_error``). Never imports torch.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: difflib ratio below which a known name is not offered (0.6 is difflib's own default).
CUTOFF = 0.6


def close_matches(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` names of ``known`` closest to ``word`` (best first), none when nothing is
    close; a glob's wildcards (``*``, ``?``) are ignored for the comparison."""
    names = sorted(set(known))
    probe = word.replace("*", "").replace("?", "")
    return difflib.get_close_matches(probe, names, n=n, cutoff=CUTOFF) if probe else []


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` (or ``'x' or 'y'``) for the closest known names, else ``""``."""
    matches = close_matches(word, known)
    if not matches:
        return ""
    return "did you mean " + " or ".join(repr(m) for m in matches) + "?"
