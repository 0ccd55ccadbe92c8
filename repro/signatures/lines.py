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
#: A line longer than this (characters) is not text (a binary blob, base64, ``/dev/zero``): it
#: is skipped past its first :data:`MAX_LINE_CHARS` with a note of its own, and reading goes on
#: (issue 32: the read used to stop there, and an OOM after a 100 MB line was never seen).
MAX_LINE_SKIP_CHARS = 64 * 1024 * 1024
#: Skipped lines noted one by one; past this many, one note counts the rest.
MAX_SKIP_NOTES = 5
#: Bytes read from a stream at a time.
CHUNK_BYTES = 1 << 20


class LineReader:
    """Text pieces in, blocks of whole lines out: ``on_block(block)``.

    Each block is whole lines, each ending in ``"\n"`` (the last block of a text without a final
    line break excepted). ``\r\n`` and bare ``\r`` (progress bars) become line breaks, also
    when a piece ends between the two; lines are cut to :data:`MAX_LINE_CHARS`; a line longer
    than :data:`MAX_LINE_SKIP_CHARS` is skipped past that with a note, and what follows it is
    read as any other text. :attr:`notes` says what was cut or skipped, one sentence each.
    """

    def __init__(self, on_block: Callable[[str], None]) -> None:
        self.on_block = on_block
        self.notes: list[str] = []
        self.lines = 0  # line breaks passed on
        self._head = ""  # the unfinished last line, at most MAX_LINE_CHARS
        self._dropped = 0  # characters cut from that line
        self._cut_lines = 0
        self._skipped: list[tuple[int, int]] = []  # (line number, length) of skipped lines
        self._skipped_more = 0
        self._cr = False  # the previous piece ended in "\r" (maybe the first half of "\r\n")

    def feed_stream(self, stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> None:
        """Feed a byte stream ``chunk_bytes`` at a time, decoded as UTF-8 (invalid bytes become
        U+FFFD), until its end. Raises OSError if it cannot be read."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            chunk = stream.read(chunk_bytes)
            if not chunk:
                self.feed(decoder.decode(b"", final=True))
                return
            self.feed(decoder.decode(chunk))

    def feed(self, piece: str) -> None:
        """Feed the next piece of text (any size, split anywhere)."""
        if not piece:
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
        last = piece.rfind("\n")
        head = self._take_head()
        self._emit(self._cut(head + piece[first : last + 1]))
        self._extend(piece[last + 1 :])

    def close(self) -> None:
        """Pass on the last unfinished line and note how many lines were cut or skipped."""
        if self._cr:
            self._cr = False
            self._emit(self._take_head() + "\n")
        if self._head or self._dropped:
            self._emit(self._take_head())
        if self._cut_lines:
            self.notes.append(
                f"{self._cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut"
            )
        for line_no, length in self._skipped:
            self.notes.append(
                f"line {line_no} skipped: {length} characters, over {MAX_LINE_SKIP_CHARS} (not "
                f"text): only its first {MAX_LINE_CHARS} were matched; reading went on after it"
            )
        if self._skipped_more:
            self.notes.append(
                f"{self._skipped_more} more line(s) over {MAX_LINE_SKIP_CHARS} characters skipped"
            )

    def _extend(self, text: str) -> None:
        if not self._dropped:
            room = MAX_LINE_CHARS - len(self._head)
            if len(text) <= room:
                self._head += text
                return
            self._head += text[:room]
            self._dropped = len(text) - room
            return
        self._dropped += len(text)

    def _emit(self, block: str) -> None:
        self.lines += block.count("\n")
        self.on_block(block)

    def _take_head(self) -> str:
        head = self._head
        if self._dropped > MAX_LINE_SKIP_CHARS - MAX_LINE_CHARS:
            if len(self._skipped) < MAX_SKIP_NOTES:
                self._skipped.append((self.lines + 1, len(head) + self._dropped))
            else:
                self._skipped_more += 1
        elif self._dropped:
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
