"""Failure evidence in the output of a case that passed (issue 21, item 4): :func:`findings`
(re-exported by :mod:`repro.signatures.engine`)."""

from __future__ import annotations

import re

from repro.signatures.grammar import _clip, _line_bounds
from repro.signatures.hostfacts import HostFacts
from repro.signatures.scanner import _feed, _for_host, _HostNeutral
from repro.signatures.table import Table

#: Most findings :func:`findings` returns.
MAX_FINDINGS = 5
#: A printed tensor holding NaN or Inf (``tensor(nan)``, ``tensor([1., inf])``).
_PRINTED_NONFINITE = re.compile(r"tensor\([^\n]*?(?<![\w.])(?:nan|-?inf)(?![\w.])")


def findings(
    text: str, host: HostFacts | None = None, table: Table | None = None, limit: int = MAX_FINDINGS
) -> tuple[str, ...]:
    """Failure evidence in the output of a case that passed (issue 21, item 4): lines a row
    names, the exception of every traceback (a child process's, a worker's), printed tensors
    holding NaN/Inf; each line once, in log order, stripped and cut like a message, at most
    ``limit``. ``()`` when the output is clean. ``host`` and ``table`` as for :func:`classify`.
    """
    scanner = _for_host(host, table)
    _feed(scanner, text)
    inner = scanner.chosen() if isinstance(scanner, _HostNeutral) else scanner
    inner._finish()
    found: dict[str, int] = {}
    for match in inner._kept:
        found.setdefault(_clip(match.line), match.line_no)
    for line_no, exception in inner._exceptions:
        found.setdefault(_clip(exception), line_no)
    if "tensor(" in text:
        for hit in _PRINTED_NONFINITE.finditer(text):
            start, end = _line_bounds(text, hit.start())
            found.setdefault(_clip(text[start:end]), text.count("\n", 0, start) + 1)
    return tuple(line for line, _ in sorted(found.items(), key=lambda item: item[1])[:limit])
