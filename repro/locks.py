"""Lock files of the caches (the scenarios' package cache, the venv lane's environments), opened
so that nothing planted at their path is followed.

A cache lock is ``<cache>/<key>.lock``, an ``flock`` held while an entry is checked and made.
Opening it with a plain ``open(path, "a")`` follows a symlink planted there: a dangling link to
``/home/you/.bashrc`` made the venv lane create that file (issue 32), a link to an existing
file had it opened for writing. Here a lock is opened with ``O_NOFOLLOW``; a symlink at its
path is removed (the directory is the cache's own) and a fresh file created with ``O_EXCL``;
anything else that is not a regular file of the user's is refused. Issue 25 wrote this for the
package cache (``repro.scenarios._packages``); the venv lane (``repro.envs.cache``) uses the
same code. Never imports torch.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def os_cause(exc: OSError) -> str:
    """``Read-only file system (EROFS)``-style text of an OSError, without the path."""
    name = errno.errorcode.get(exc.errno or 0, "")
    return f"{exc.strerror or exc} ({name})" if name else str(exc.strerror or exc)


@contextlib.contextmanager
def exclusive(path: Path, refused: Callable[[str], Exception], what: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the lock file ``path`` (created, mode 0600, when missing),
    opened without following symlinks: a symlink at ``path`` is removed, never followed or
    written through, and a new file is created in its place.

    ``refused(message)`` makes the exception raised when the lock cannot be used (``what`` and
    ``path`` start its message): it cannot be opened or created (the errno text), or it is not
    a regular file owned by the effective user (a directory, a FIFO, another user's file).
    """
    try:
        try:
            fd = os.open(path, _FLAGS, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            os.unlink(path)  # a symlink: never followed, never written through
            fd = os.open(path, _FLAGS | os.O_EXCL, 0o600)
    except OSError as exc:
        raise refused(f"{what} {path}: {os_cause(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise refused(f"{what} {path} is not a regular file of yours: refused")
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def is_free(path: Path) -> bool:
    """True when nobody holds the lock file ``path`` (missing counts as free; a symlink or a
    file that cannot be opened counts as held, so nothing is judged abandoned by mistake)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the probe's lock
