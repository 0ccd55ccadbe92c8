"""A case's log file, with a size cap, fed from the pipe that carries the case's output.

The case never writes the log itself: its stdout and stderr go into a pipe that the runner
drains (:class:`OutputPipe`) into :class:`CaseLog`. When the log would exceed its cap, the
middle of the output is cut: the header and the newest half-cap of bytes are kept, with one
note line saying how many bytes were cut there (issue 9, item 6: a chatty case cannot fill the
disk; the tail is what classification and a reader need). A full disk or a read-only results
directory surfaces here as OSError, in the runner, which stops the run cleanly.

Never imports torch.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import time
from collections.abc import Sequence
from pathlib import Path

#: Default cap of one case log (bytes).
DEFAULT_CAP_BYTES = 64 * 1024 * 1024
#: Smallest accepted cap (bytes): room for the header, a note and a useful tail.
MIN_CAP_BYTES = 64 * 1024
#: Bytes read from the pipe per ``os.read``.
_READ_BYTES = 1024 * 1024
#: Linux F_SETPIPE_SZ (fcntl.h); a larger pipe buffer means fewer wake-ups for chatty cases.
_F_SETPIPE_SZ = 1031


class CaseLog:
    """An append-only log file of at most ``cap_bytes`` bytes (the header included).

    Positions handed out by :meth:`mark` count every byte ever written, cut or not, so text
    written after a mark can be read back after a cut (what survived of it).
    Raises OSError from every method when the file cannot be written or read.
    """

    def __init__(self, path: Path, header: bytes, cap_bytes: int = DEFAULT_CAP_BYTES):
        self.path = path
        self.cap_bytes = max(int(cap_bytes), MIN_CAP_BYTES)
        # O_EXCL | O_NOFOLLOW: never write through a link, never reuse another case's log.
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        self._header_len = len(header)
        self._size = 0  # bytes in the file
        self._written = 0  # bytes ever written (the logical position)
        self._data_start = self._header_len  # where kept output begins in the file
        self.cut_bytes = 0
        self._write_all(header)
        self._written = self._size = len(header)

    def write(self, data: bytes) -> None:
        """Append ``data``; cut the middle of the log when it goes over the cap."""
        if not data:
            return
        self._write_all(data)
        self._size += len(data)
        self._written += len(data)
        if self._size > self.cap_bytes:
            self._cut()

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            done = os.write(self._fd, view)
            view = view[done:]

    def _cut(self) -> None:
        keep = self.cap_bytes // 2
        tail = os.pread(self._fd, keep, self._size - keep)
        self.cut_bytes += self._size - keep - self._data_start
        note = (
            f"\n# repro: {self.cut_bytes} bytes of output cut here "
            f"(log cap {self.cap_bytes} bytes; the last bytes are kept)\n"
        ).encode()
        os.ftruncate(self._fd, self._header_len)
        os.lseek(self._fd, self._header_len, os.SEEK_SET)
        self._write_all(note + tail)
        self._data_start = self._header_len + len(note)
        self._size = self._data_start + len(tail)

    def mark(self) -> int:
        """The current logical position, for :meth:`text_since`."""
        return self._written

    def text_since(self, mark: int, limit: int) -> str:
        """What survives of the text written since ``mark`` (at most ``limit`` bytes)."""
        start = max(self._data_start, self._size - (self._written - mark))
        return os.pread(self._fd, min(limit, self._size - start), start).decode(errors="replace")

    def tail(self, limit: int) -> str:
        """The last ``limit`` bytes of the log as text."""
        start = max(0, self._size - limit)
        return os.pread(self._fd, self._size - start, start).decode(errors="replace")

    def close(self) -> None:
        os.close(self._fd)


class OutputPipe:
    """The read end of the pipe that carries a case's stdout and stderr into a :class:`CaseLog`.

    :meth:`pump` waits at most ``timeout_s`` for output and moves what is there into the log;
    reads are non-blocking, so a grandchild that keeps the pipe open never stalls the runner.
    """

    def __init__(self, log: CaseLog):
        self.log = log
        self.read_fd, self.write_fd = os.pipe()
        # Not Linux, or above /proc/sys/fs/pipe-max-size: the default size will do.
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.write_fd, _F_SETPIPE_SZ, _READ_BYTES)
        os.set_blocking(self.read_fd, False)
        self.eof = False

    def close_write_end(self) -> None:
        """Close the runner's copy of the write end once the child holds it."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def pump(
        self, timeout_s: float, max_bytes: int = 16 * _READ_BYTES, wake_fds: Sequence[int] = ()
    ) -> None:
        """Wait up to ``timeout_s`` seconds for output, then move at most ``max_bytes`` of it.
        A readable descriptor in ``wake_fds`` (a pidfd of the case's harness) ends the wait
        early, so the runner sees a case end at once instead of at its next poll."""
        fds = ([] if self.eof else [self.read_fd]) + [fd for fd in wake_fds if fd >= 0]
        if not fds:
            time.sleep(timeout_s)
            return
        ready, _, _ = select.select(fds, [], [], timeout_s)
        if self.eof or self.read_fd not in ready:
            return
        moved = 0
        while moved < max_bytes:
            try:
                chunk = os.read(self.read_fd, _READ_BYTES)
            except BlockingIOError:
                return
            if not chunk:
                self.eof = True
                return
            self.log.write(chunk)
            moved += len(chunk)

    def drain_for(self, seconds: float) -> None:
        """Keep moving output for ``seconds`` (while stacks are being dumped)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.pump(min(left, 0.05))

    def drain(self, timeout_s: float) -> None:
        """Move what is left until end of file or ``timeout_s`` seconds (a leftover process
        that was not killed may hold the write end open)."""
        deadline = time.monotonic() + timeout_s
        while not self.eof and time.monotonic() < deadline:
            self.pump(0.05)

    def close(self) -> None:
        self.close_write_end()
        os.close(self.read_fd)
