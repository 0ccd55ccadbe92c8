"""Bytes or text in, blocks of whole, bounded lines out: the reading side of the engine.

Why a module of its own: ``repro classify`` must read a log of any size (a 1 GB training log,
stdin, ``/dev/zero``) in bounded memory (issue 9), so the engine never sees more than a chunk of
text, and never a line longer than :data:`MAX_LINE_CHARS`.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import BinaryIO

#: Lines longer than this (characters) are cut to it before matching.
MAX_LINE_CHARS = 64 * 1024
#: A line longer than this (characters) is not text: reading stops there (``/dev/zero``).
MAX_LINE_SKIP_CHARS = 64 * 1024 * 1024
#: Bytes read from a stream at a time.
CHUNK_BYTES = 1 << 20


class LineReader:
    """Text pieces in, blocks of whole lines out: ``on_block(block)``.

    Each block is whole lines, each ending in ``"\\n"`` (the last block of a text without a final
    line break excepted). ``\\r\\n`` and bare ``\\r`` (progress bars) become line breaks, also
    when a piece ends between the two; lines are cut to :data:`MAX_LINE_CHARS`; a line longer
    than :data:`MAX_LINE_SKIP_CHARS` sets :attr:`stopped` and ends the read. :attr:`notes` says
    what was cut or not read, one sentence each.
    """

    def __init__(self, on_block: Callable[[str], None]) -> None:
        self.on_block = on_block
        self.notes: list[str] = []
        self.stopped = False
        self.lines = 0  # line breaks passed on
        self._head = ""  # the unfinished last line, at most MAX_LINE_CHARS
        self._dropped = 0  # characters cut from that line
        self._cut_lines = 0
        self._cr = False  # the previous piece ended in "\r" (maybe the first half of "\r\n")

    def feed_stream(self, stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> None:
        """Feed a byte stream ``chunk_bytes`` at a time, decoded as UTF-8 (invalid bytes become
        U+FFFD), until its end or :attr:`stopped`. Raises OSError if it cannot be read."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while not self.stopped:
            chunk = stream.read(chunk_bytes)
            if not chunk:
                self.feed(decoder.decode(b"", final=True))
                return
            self.feed(decoder.decode(chunk))

    def feed(self, piece: str) -> None:
        """Feed the next piece of text (any size, split anywhere)."""
        if self.stopped or not piece:
            return
        if self._cr:
            piece, self._cr = "\r" + piece, False
        if piece.endswith("\r"):
            piece, self._cr = piece[:-1], True
        if "\r" in piece:
            piece = piece.replace("\r\n", "\n").replace("\r", "\n")
        first = piece.find("\n")
        if first < 0:
            self._extend(piece)
            return
        self._extend(piece[:first])
        if self.stopped:
            return
        last = piece.rfind("\n")
        head = self._take_head()
        self._emit(self._cut(head + piece[first : last + 1]))
        self._extend(piece[last + 1 :])

    def close(self) -> None:
        """Pass on the last unfinished line and note how many lines were cut."""
        if not self.stopped:
            if self._cr:
                self._cr = False
                self._emit(self._take_head() + "\n")
            if self._head or self._dropped:
                self._emit(self._take_head())
        if self._cut_lines:
            self.notes.append(
                f"{self._cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut"
            )

    def _extend(self, text: str) -> None:
        if not self._dropped:
            room = MAX_LINE_CHARS - len(self._head)
            self._head += text[:room]
            text = text[room:]
        self._dropped += len(text)
        if self._dropped > MAX_LINE_SKIP_CHARS:
            line_no = self.lines + 1
            self._emit(self._take_head())
            self.stopped = True
            self.notes.append(
                f"read stopped at line {line_no}: a line longer than {MAX_LINE_SKIP_CHARS} "
                "characters (not a text log)"
            )

    def _emit(self, block: str) -> None:
        self.lines += block.count("\n")
        self.on_block(block)

    def _take_head(self) -> str:
        head = self._head
        if self._dropped:
            self._cut_lines += 1
        self._head, self._dropped = "", 0
        return head

    def _cut(self, block: str) -> str:
        if len(block) <= MAX_LINE_CHARS:
            return block
        lines = block.split("\n")
        if max(map(len, lines)) <= MAX_LINE_CHARS:
            return block
        self._cut_lines += sum(len(line) > MAX_LINE_CHARS for line in lines)
        return "\n".join(line[:MAX_LINE_CHARS] for line in lines)
