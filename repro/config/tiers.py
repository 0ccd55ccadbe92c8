"""matrix.yaml's ``tiers:``: which variants and scenarios each CI tier runs.

``repro plan --github --tier NAME`` builds its job matrix from one tier (``pr`` for pull
requests in minutes, ``nightly``, ``full``). A tier names variant id globs (``*``/``?``,
brackets literal, as everywhere) and, optionally, the scenarios it runs (all enabled ones when
absent). An unknown tier is an error that lists the known ones. A tier name starts with a letter or
digit: it becomes a command-line value (``--tier NAME``) and a workflow's job name, where a name
like ``--privileged`` would read as an option (issue 32).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_GLOBS = 100


@dataclass(frozen=True)
class Tier:
    """One CI tier: ``variants`` are variant id globs; ``scenarios`` the scenario names it runs
    (empty tuple: every enabled scenario)."""

    name: str
    variants: tuple[str, ...]
    scenarios: tuple[str, ...] = ()


def parse_tiers(raw: Any, scenario_names: set[str], problems: Any) -> dict[str, Tier]:
    """Validate ``tiers:`` into ``{name: Tier}``; every problem goes to ``problems.add(key,
    expected, got)`` (the loader's collector). ``scenario_names`` are the enabled scenarios."""
    if not isinstance(raw, Mapping):
        problems.add("tiers", "a mapping of tier name to {variants: [...], scenarios: [...]}", raw)
        return {}
    tiers = {}
    for name, body in raw.items():
        key = f"tiers.{name}"
        if (
            not isinstance(name, str)
            or not name
            or not set(name) <= NAME_CHARS
            or not name[0].isalnum()
        ):
            problems.add(
                "tiers",
                "tier names of lowercase letters, digits, - and _, starting with a letter or digit",
                name,
            )
            continue
        if not isinstance(body, Mapping):
            problems.add(key, "a mapping with variants (and optional scenarios)", body)
            continue
        unknown = set(body) - {"variants", "scenarios"}
        if unknown:
            problems.add(key, "only the keys variants and scenarios", sorted(map(str, unknown)))
        globs = body.get("variants")
        if not _string_list(globs):
            problems.add(
                f"{key}.variants",
                f"a non-empty list of at most {MAX_GLOBS} variant id globs",
                globs,
            )
            continue
        chosen = body.get("scenarios", [])
        if not isinstance(chosen, list) or not all(isinstance(s, str) for s in chosen):
            problems.add(f"{key}.scenarios", "a list of scenario names", chosen)
            continue
        for scenario in chosen:
            if scenario not in scenario_names:
                problems.add(
                    f"{key}.scenarios",
                    f"enabled scenarios of this file ({', '.join(sorted(scenario_names))})",
                    scenario,
                )
        tiers[name] = Tier(name, tuple(globs), tuple(chosen))
    return tiers


def _string_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and 0 < len(value) <= MAX_GLOBS
        and all(isinstance(v, str) and 0 < len(v) <= 200 for v in value)
    )
