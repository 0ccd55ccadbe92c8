"""The one validator of an ``expect:`` entry, wherever it is written: matrix.yaml's ``expect:``
list and a scenario module's ``EXPECT`` (``repro.config.load``), and a ``script:`` entry's own
``expect:`` mapping (``repro.config.scripts``). The matching of entries against results is
``repro.config.expect``.

One set of limits for all three (issue 31: the list and the script entry were validated by two
functions whose limits differed): globs and signatures at most :data:`MAX_GLOB_CHARS`
characters, a reason at most :data:`MAX_REASON_CHARS`, a link at most :data:`MAX_LINK_CHARS`.
Problems go to the caller's collector (``problems.add(key, expected, got)``,
``problems.unknown_keys(where, mapping, allowed)``), never raised here. Never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from repro.config.model import EXPECT_OUTCOMES, STRICT_EXPECTED, Expectation

#: Keys of an entry of the ``expect:`` list (and of a module's ``EXPECT``).
EXPECT_KEYS = frozenset(
    {"case", "scenario", "variant", "host", "outcome", "signature", "reason", "link", "strict"}
)
#: Keys of a ``script:`` entry's ``expect:`` mapping: the case is the entry's own.
INLINE_EXPECT_KEYS = frozenset({"outcome", "signature", "reason", "link", "strict"})
#: The globs an entry may carry (``signature`` is a glob on the signature name).
GLOB_KEYS = ("case", "scenario", "variant", "host", "signature")

#: Longest glob (characters).
MAX_GLOB_CHARS = 400
#: Longest reason (characters).
MAX_REASON_CHARS = 2000
#: Longest link (characters).
MAX_LINK_CHARS = 1000

_URL = re.compile(r"^https?://\S+$")


def _text(value: Any, limit: int) -> bool:
    """A printable, non-blank string of at most ``limit`` characters."""
    return isinstance(value, str) and value.isprintable() and 0 < len(value.strip()) <= limit


def parse_entry(
    item: dict[str, Any],
    where: str,
    index: int,
    problems: Any,
    *,
    keys: Iterable[str] = EXPECT_KEYS,
    reason_says: str = "why the case fails (the known incompatibility)",
    defaults: dict[str, str] | None = None,
    source: str | None = None,
) -> Expectation | None:
    """One entry (already known to be a mapping) as an :class:`Expectation`, or None after
    adding every problem it has to ``problems``.

    ``where``: its key path for messages (``expect[2]``, ``scenarios.my_bug.expect``); ``index``:
    its number among all entries; ``keys``: the keys it may have (:data:`EXPECT_KEYS` or
    :data:`INLINE_EXPECT_KEYS`); ``reason_says``: what a reason is, for the message when it is
    missing; ``defaults``: values of keys the entry may leave out (``case``/``scenario`` of a
    script entry, its default ``reason``); ``source``: recorded as :attr:`Expectation.source`.
    An entry of :data:`EXPECT_KEYS` must name a ``case`` or a ``scenario`` glob unless
    ``defaults`` gives one."""
    keys = frozenset(keys)
    defaults = defaults or {}
    problems.unknown_keys(where, item, keys)
    ok = True
    globs: dict[str, str] = {}
    for key in GLOB_KEYS:
        if key not in item or key not in keys:
            continue
        value = item[key]
        if not _text(value, MAX_GLOB_CHARS):
            problems.add(
                f"{where}.{key}",
                "a non-empty glob string (* and ? are wildcards, brackets are literal)",
                value,
            )
            ok = False
        else:
            globs[key] = value.strip()
    if not ({"case", "scenario"} & (set(item) | set(defaults))):
        problems.add(
            where, 'a `case` glob (e.g. "ddp[backend=*,fault=rank_raises]") or a `scenario` glob'
        )
        ok = False
    outcome = item.get("outcome", "any-problem")
    if outcome not in EXPECT_OUTCOMES:
        problems.add(f"{where}.outcome", f"one of {', '.join(EXPECT_OUTCOMES)}", outcome)
        ok = False
    reason = item.get("reason", defaults.get("reason"))
    if not _text(reason, MAX_REASON_CHARS):
        problems.add(f"{where}.reason", f"a non-empty string saying {reason_says}", reason)
        ok = False
    link = item.get("link")
    if link is not None and not (_text(link, MAX_LINK_CHARS) and _URL.match(link.strip())):
        problems.add(
            f"{where}.link", "an http(s) URL of the issue or document behind the reason", link
        )
        ok = False
    strict = item.get("strict", False)
    if not isinstance(strict, bool):
        problems.add(f"{where}.strict", STRICT_EXPECTED, strict)
        ok = False
    if not ok:
        return None
    return Expectation(
        index=index,
        reason=str(reason).strip(),
        outcome=str(outcome),
        case=globs.get("case", defaults.get("case", "*")),
        scenario=globs.get("scenario", defaults.get("scenario", "*")),
        variant=globs.get("variant", "*"),
        host=globs.get("host", "*"),
        signature=globs.get("signature"),
        link=link.strip() if isinstance(link, str) else None,
        source=source,
        strict=strict,
    )


def parse_list(
    raw: Any,
    problems: Any,
    name: str = "expect",
    first_index: int = 0,
    scenario: str | None = None,
) -> list[Expectation]:
    """``expect:``: a list of {case|scenario, variant?, host?, outcome?, signature?, reason, link?}.

    Also a scenario module's ``EXPECT`` (``name`` its dotted path, ``scenario`` its name): the
    same entries, numbered from ``first_index``, each about that scenario (a ``scenario`` key
    is refused) and labelled by ``name[i]`` in messages and reports."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(
            name,
            "a list of entries like {case: GLOB, outcome: failed, reason: TEXT, link: URL}",
            raw,
        )
        return []
    out: list[Expectation] = []
    for position, item in enumerate(raw):
        index = first_index + position
        where = f"{name}[{position}]"
        if scenario is not None and isinstance(item, dict):
            if "scenario" in item:
                problems.add(
                    f"{where}.scenario", f"nothing: an entry of {name} is about {scenario}"
                )
                continue
            item = {**item, "scenario": scenario}
        if not isinstance(item, dict):
            problems.add(where, "a mapping with case (or scenario), outcome, reason and link", item)
            continue
        rule = parse_entry(
            item, where, index, problems, source=where if scenario is not None else None
        )
        if rule is not None:
            out.append(rule)
    return out
