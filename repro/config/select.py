"""Selection: the one glob semantics and the case / variant selectors built on it.

Case ids contain brackets (``ddp[backend=gloo,fault=none]``), so brackets are literal here, for
``-k``, ``--variant`` and ``expect:`` alike; ``*`` (any run of characters) and ``?`` (one
character) are the only wildcards. A ``-k`` pattern without a wildcard matches as a substring.
A selector that matches nothing is a ConfigError with a hint. Never imports torch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from repro.errors import ConfigError
from repro.suggest import did_you_mean

DEFAULT_FILE = "matrix.yaml"
WILDCARDS = "*?"


@functools.lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z",
        re.DOTALL,
    )


def glob_match(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` whole: ``*`` and ``?`` are wildcards, every other
    character (``[``, ``]`` included) stands for itself. Case-sensitive."""
    return _glob_regex(pattern).match(text) is not None


class _HasCaseId(Protocol):
    @property
    def case_id(self) -> str: ...


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


C = TypeVar("C", bound=_HasCaseId)
V = TypeVar("V", bound=_HasId)


def case_matches(pattern: str, case_id: str) -> bool:
    """A ``-k`` pattern: a glob when it holds ``*`` or ``?``, else a substring of the id."""
    if any(ch in pattern for ch in WILDCARDS):
        return glob_match(pattern, case_id)
    return pattern in case_id


def select_cases(cases: Sequence[C], patterns: Sequence[str] | None) -> list[C]:
    """Cases whose id matches any pattern (see :func:`case_matches`), in their order; all when
    ``patterns`` is empty. Raises ConfigError naming each pattern that matches nothing."""
    if not patterns:
        return list(cases)
    unmatched = [p for p in patterns if not any(case_matches(p, c.case_id) for c in cases)]
    if unmatched:
        # "did you mean" against the scenario names (``-k dataloder``), then whole case ids
        names = {c.case_id.split("[", 1)[0] for c in cases} | {c.case_id for c in cases}
        hints = [h for h in (did_you_mean(p, names) for p in unmatched) if h]
        raise ConfigError(
            f"case selector {', '.join(repr(p) for p in unmatched)} matches no case"
            + "".join(f"; {h}" for h in hints),
            hint="`repro run --list` shows the case ids; globs use * and ?, brackets are literal (quote them for the shell)",
        )
    return [c for c in cases if any(case_matches(p, c.case_id) for p in patterns)]


def select_variants(
    variants: Sequence[V], selectors: Sequence[str] | None, where: str = DEFAULT_FILE
) -> list[V]:
    """Variants whose id matches any glob in ``selectors`` (all when empty), in file order.

    Raises ConfigError (prefixed with ``where``, the matrix file) naming each selector that
    matches nothing, with the known ids as hint.
    """
    if not selectors:
        return list(variants)
    unmatched = [s for s in selectors if not any(glob_match(s, v.id) for v in variants)]
    if unmatched:
        ids = [v.id for v in variants]
        known = ", ".join(ids)
        hints = [h for h in (did_you_mean(s, ids) for s in unmatched) if h]
        raise ConfigError(
            f"{where}: variant selector {', '.join(repr(s) for s in unmatched)} matches no variant id"
            + "".join(f"; {h}" for h in hints),
            hint=f"ids are <runtime>-torch<major.minor>; known: {known} (globs use * and ?, brackets are literal)",
        )
    return [v for v in variants if any(glob_match(s, v.id) for s in selectors)]
