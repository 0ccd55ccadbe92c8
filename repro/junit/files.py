"""Open untrusted input files safely: regular files only, never blocking, never past a byte cap.

A FIFO, a device (``/dev/zero``), a socket or a directory given where a file was expected must
not block the reader or exhaust memory (issue 9): the file is opened with ``O_NONBLOCK`` (opening
a FIFO that way returns at once), checked with ``fstat`` to be a regular file *after* opening (no
race between a check and the open), and read to at most ``limit + 1`` bytes.
Used by the JUnit reader, the ``run.json`` sidecar reader, the report's history reader,
``repro compare`` (streamed: :func:`open_capped`) and every ``--fingerprint`` option.
"""

from __future__ import annotations

import io
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


def _open_regular(path: Path | str, limit: int) -> int:
    """A descriptor of the regular file ``path`` of at most ``limit`` bytes (InputRefused else)."""
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
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_capped(path: Path | str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them.

    Raises InputRefused when the path cannot be opened (missing, symlink loop, permission), is
    not a regular file, or holds more than ``limit`` bytes (the file is refused, never cut).
    """
    fd = _open_regular(path, limit)
    try:
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


class _CappedStream(io.RawIOBase):
    """A raw binary stream over ``fd`` that raises InputRefused past ``limit`` bytes."""

    def __init__(self, fd: int, limit: int):
        self._fd, self._left = fd, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        try:
            count = os.readv(self._fd, [buffer])
        except OSError as exc:
            raise InputRefused(f"cannot read: {exc.strerror or exc}") from None
        self._left -= count
        if self._left < 0:  # grew after fstat
            raise InputRefused("over size cap (the file grew while read)")
        return count

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def open_capped(path: Path | str, limit: int) -> io.BufferedReader:
    """:func:`read_capped`'s checks, for a file read as a stream (a parser that keeps only what
    it needs): a buffered binary reader of the regular file ``path``, which must hold at most
    ``limit`` bytes. Raises InputRefused as :func:`read_capped` does, on opening or (a file that
    grows) while read. Close it (``with``)."""
    return io.BufferedReader(_CappedStream(_open_regular(path, limit), limit), 1 << 20)


def is_within(path: Path | str, root: Path | str) -> bool:
    """True when ``path``, every symlink resolved, lies inside ``root`` (also resolved).

    Never raises: a symlink loop resolves to some path and fails later, when it is opened.
    """
    return is_under(os.path.realpath(path), os.path.realpath(root))


def is_under(real: str, top: str) -> bool:
    """True when the already resolved path ``real`` is ``top`` or lies inside it (no I/O)."""
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)
