"""The part of a failure's log a person needs first: from the first stack dump, traceback or
signature match on, never just the log's tail.

The runner's log body (``repro.runner.executor``) ends with the watchdog's kernel-log tail for a
hung case; the stack dump the watchdog asked for sits before it, under the headers written by
``repro.runner.executor._dump_and_kill`` ("# repro watchdog: dumping stacks of N process(es)")
and by CPython's ``faulthandler`` ("Thread 0x…", "Current thread 0x…", and "Stack (most recent
call first)" for the main thread of a ``faulthandler.dump_traceback`` in some versions). This
module reads no files.
"""

from __future__ import annotations

import re

from repro.signatures import engine

#: Lines an excerpt may start at, earliest in the text wins. Sources: executor.py's dump header,
#: CPython Python/traceback.c (faulthandler: "Thread 0x%lx", "Current thread 0x%lx",
#: "Stack (most recent call first)"), and the interpreter's traceback and fatal-error headers.
ANCHORS = re.compile(
    r"^(?:\[(?:rank|default)\d+\]: ?)?(?:"
    r"# repro watchdog: dumping stacks"
    r"|Thread 0x[0-9a-fA-F]+"
    r"|Current thread 0x[0-9a-fA-F]+"
    r"|Stack \(most recent call first\)"
    r"|(?:Original )?Traceback \(most recent call last\)"
    r"|Fatal Python error"
    r")",
    re.MULTILINE,
)


def _signature_offset(text: str, signature: str | None) -> int | None:
    """Character offset of the first line the signature table attributes to ``signature``."""
    if not signature or signature == engine.UNKNOWN:
        return None
    found = engine.classify(text)
    for match in found.matches:
        if match.signature.name == signature:
            lines = text.splitlines(keepends=True)
            return sum(len(line) for line in lines[: match.line_no - 1])
    return None


def log_excerpt(text: str, signature: str | None = None, limit: int = 1500) -> str:
    """At most ``limit`` characters of ``text`` (a failure body or log), starting at the first
    stack dump / traceback header or the first line matching ``signature``, whichever comes first.

    With no such line the excerpt is the text's tail (the last lines hold the error). A cut end is
    marked "…" (the last character); a cut start too (the first one).
    """
    text = text.strip("\n")
    anchor = ANCHORS.search(text)
    starts = [anchor.start()] if anchor else []
    # Only the text before the first header can hold an earlier signature line.
    by_signature = _signature_offset(text[: anchor.start()] if anchor else text, signature)
    if by_signature is not None:
        starts.append(by_signature)
    if not starts:
        return text if len(text) <= limit else "…" + text[-(limit - 1) :]
    start = min(starts)
    prefix = "…\n" if start else ""
    body = text[start:]
    if len(body) + len(prefix) > limit:
        body = body[: max(0, limit - len(prefix) - 1)] + "…"
    return prefix + body
