"""Reading the machine's own files (``/proc``, ``/sys``, ``/etc``) under an injectable root.

Every reader of :mod:`repro.host` goes through :func:`read_text`, so tests point ``root`` at a
captured tree. A file that is absent is simply absent (None); one that exists but cannot be read
is appended to the caller's ``unreadable`` list as ``{"what": "/path", "why": "..."}``. Nothing
here raises for what it finds on disk.
"""

from __future__ import annotations

from pathlib import Path

#: ``[{"what": ..., "why": ...}]``: what exists but could not be read, in reading order.
Unreadable = list[dict[str, str]]


def why(exc: BaseException) -> str:
    """One line saying why something failed: the exception's message, else its type name."""
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def read_text(root: Path, rel: str, unreadable: Unreadable) -> str | None:
    """Text of ``root/rel`` (UTF-8, undecodable bytes replaced); None if absent.

    Present but unreadable (a directory, no permission, an I/O error) is recorded as
    ``{"what": "/rel", "why": ...}`` in ``unreadable``, then None."""
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        unreadable.append({"what": "/" + rel, "why": why(exc)})
        return None


def first_line(root: Path, rel: str, unreadable: Unreadable) -> str | None:
    """The first line of ``root/rel``, stripped; None when absent or empty."""
    text = read_text(root, rel, unreadable)
    return text.strip().splitlines()[0].strip() if text and text.strip() else None


def key_values(text: str, sep: str | None = None) -> dict[str, str]:
    """Parse ``key<sep>value`` lines (``sep=None``: first whitespace) into a dict, first wins."""
    result: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(sep) if sep else line.strip().partition(" ")
        key = key.strip()
        if key and key not in result:
            result[key] = value.strip()
    return result
