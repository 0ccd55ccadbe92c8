"""The literal prefilter of the signature table's regular expressions (issue 20, item 4: apart
from the engine that applies the rows).

A row's pattern is only run on a block of a log that contains one of its *needles*: literals of
which every match holds at least one (the literal prefix of each top-level alternative).
``needle in text`` runs at memory speed, so a multi-MB log skips most rows' expressions.
Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_REGEX_META = frozenset(".^$*+?{}[]()|\\")
_QUANTIFIERS = frozenset("?*+{")
_MIN_NEEDLE = 3


def split_alternatives(pattern: str) -> list[str]:
    """The top-level ``|`` alternatives of a pattern (groups and classes left whole)."""
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    parts.append(pattern[start:])
    return parts


def literal_prefix(alternative: str) -> str:
    """The text every match of ``alternative`` starts with (``""`` when there is none)."""
    out: list[str] = []
    i = 0
    while i < len(alternative):
        c = alternative[i]
        if c == "\\":
            if i + 1 >= len(alternative) or alternative[i + 1].isalnum():
                break  # \d, \w, \b, ... are classes or assertions, not literals
            char, width = alternative[i + 1], 2
        elif c in _REGEX_META:
            break
        else:
            char, width = c, 1
        if alternative[i + width : i + width + 1] in _QUANTIFIERS:
            break  # "x?" / "x*" / "x{2}": that character may be absent or repeated
        out.append(char)
        i += width
    return "".join(out)


def needles(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literals of which every match contains at least one, or ``None`` if some branch has none.

    ``needle in text`` runs at memory speed, so ``repro.signatures.engine.classify`` skips a row's regular expression
    on a multi-MB log that contains none of its needles (most rows, for most logs).
    """
    if pattern.flags & re.IGNORECASE:
        return None
    needles = tuple(literal_prefix(alt) for alt in split_alternatives(pattern.pattern))
    if any(len(needle) < _MIN_NEEDLE for needle in needles):
        return None
    return needles


def present(cache: dict[object, Any], block: str, needles: Iterable[str]) -> bool:
    """Whether ``block`` contains one of ``needles``, each looked up once per ``cache``."""
    for needle in needles:
        found = cache.get(needle)
        if found is None:
            found = cache[needle] = needle in block
        if found:
            return True
    return False
