"""Open untrusted input files safely: regular files only, never blocking, never past a byte cap.

A FIFO, a device (``/dev/zero``), a socket or a directory given where a file was expected must
not block the reader or exhaust memory (issue 9): the file is opened with ``O_NONBLOCK`` (opening
a FIFO that way returns at once), checked with ``fstat`` to be a regular file *after* opening (no
race between a check and the open), and read to at most ``limit + 1`` bytes.
Used by the JUnit reader, the ``run.json`` sidecar reader and the report's history reader.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class InputRefused(Exception):
    """The path is not a readable regular file within the cap; ``str(err)`` says why in a few words
    (e.g. ``"not a regular file (FIFO)"``, ``"cannot read: Too many levels of symbolic links"``)."""


_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISDIR, "directory"),
)


def file_kind(mode: int) -> str:
    """A short name for a non-regular ``st_mode`` ("FIFO", "character device", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "special file")


def read_capped(path: Path | str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them.

    Raises InputRefused when the path cannot be opened (missing, symlink loop, permission), is
    not a regular file, or holds more than ``limit`` bytes (the file is refused, never cut).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputRefused(f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputRefused(f"not a regular file ({file_kind(info.st_mode)})")
        if info.st_size > limit:
            raise InputRefused(f"over size cap ({info.st_size} bytes > {limit})")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise InputRefused(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # grew after fstat
        raise InputRefused(f"over size cap (> {limit} bytes)")
    return data


def is_within(path: Path | str, root: Path | str) -> bool:
    """True when ``path``, every symlink resolved, lies inside ``root`` (also resolved).

    Never raises: a symlink loop resolves to some path and fails later, when it is opened.
    """
    return is_under(os.path.realpath(path), os.path.realpath(root))


def is_under(real: str, top: str) -> bool:
    """True when the already resolved path ``real`` is ``top`` or lies inside it (no I/O)."""
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)
