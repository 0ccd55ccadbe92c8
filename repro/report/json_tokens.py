"""A byte filter in front of ijson that keeps parsing a matrix.json linear in its size.

Why (issue 32): ``repro compare`` of a matrix.json holding one 128 MB string took 106 s, and
one 32 MB string 10 s: quadratic in the string's length. ijson's yajl backend is fed the file
``buf_size`` bytes at a time (64 KiB by default), and yajl's lexer keeps a token that crosses
the end of a buffer and lexes it again *from its start* when the next buffer comes
(``yajl_lex.c``: ``readChar`` re-reads the buffered prefix), so a token of n bytes costs about
n² / (2 · buf_size) byte reads: 32 MB -> 8 GB. Measured here: ``ijson.basic_parse`` of a
matrix.json with one 32 MB string, 11.7 s with the default buffer, 0.33 s with a 16 MiB one.

So no token reaches yajl longer than :data:`MAX_STRING_BYTES`: a longer JSON string is cut
to its first :data:`MAX_STRING_BYTES` bytes (never inside an escape or a UTF-8 sequence; the
rest of it is read and dropped, and :attr:`TokenBounds.strings_cut` counts it), and a number
or literal longer than :data:`MAX_BARE_BYTES` is refused (:class:`TokenTooLong`: no JSON
writer makes one). repro itself writes no string near the cap (its longest, a case's excerpt,
is ``repro.report.model.MAX_EXCERPT_CHARS`` characters), so its own files pass through
unchanged, byte for byte.

The filter splits each chunk at its ``"`` bytes (``bytes.split``, in C) and follows string
state with escape parity piece by piece: a Python step per string, on the order of the step
ijson's own event loop takes per string. A chunk with no string over the cap is handed on as
it is. Never imports torch.
"""

from __future__ import annotations

import io
import re
import sys
from dataclasses import dataclass, replace
from typing import BinaryIO

#: Longest JSON string handed to the parser (bytes, as written: escapes count in full).
MAX_STRING_BYTES = 64 * 1024
#: Longest number or literal (``true``, ``1e5``) accepted (bytes).
MAX_BARE_BYTES = 64 * 1024
#: Bytes read from the source at a time.
CHUNK_BYTES = 1 << 20

_QUOTE, _QUOTE_BYTE, _BACKSLASH = b'"', 0x22, 0x5C
#: The rest of a JSON string's body from inside it: runs without quote or backslash, and
#: escapes (a backslash and the byte after it). It stops before the closing quote, or before a
#: lone backslash at the end of the data. Possessive where Python has it (3.11): no
#: backtracking state is kept per escape.
_BODY = re.compile(
    rb'[^"\\]*+(?:\\.[^"\\]*+)*+' if sys.version_info >= (3, 11) else rb'[^"\\]*(?:\\.[^"\\]*)*',
    re.DOTALL,
)
#: What ends a number or literal outside strings: JSON's structural characters and whitespace.
_SEPARATOR = re.compile(rb"[\s,:\[\]{}]")
_SEPARATORS = (b" ", b"\t", b"\n", b"\r", b",", b":", b"[", b"]", b"{", b"}")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")


class TokenTooLong(ValueError):
    """A number or literal longer than :data:`MAX_BARE_BYTES`; ``str(error)`` gives its byte
    offset in the file."""


@dataclass
class _State:
    in_string: bool = False
    length: int = 0  # bytes of the current string's content read so far
    cutting: bool = False  # the current string passed the cap: its content is dropped
    bare: int = 0  # length of the number/literal the previous chunk ended in
    offset: int = 0  # bytes of the source before the current chunk
    cut: int = 0  # strings cut so far


def _trailing_backslashes(data: bytes) -> int:
    if not data or data[-1] != _BACKSLASH:
        return 0
    return len(data) - len(data.rstrip(b"\\"))


def _incomplete_escape(piece: bytes) -> int:
    r"""How many bytes at the end of ``piece`` (string content that starts at a complete-escape
    boundary) are a character not yet complete: a UTF-8 sequence cut short, a lone backslash, ``\u`` with fewer than 4 hex
    digits, or the high half of a surrogate pair (``\ud83d`` of ``\ud83d\ude00``). 0 when it
    ends between characters."""
    for back in range(1, min(4, len(piece)) + 1):  # a UTF-8 sequence cut short
        byte = piece[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # its lead byte: 110xxxxx, 1110xxxx, 11110xxx
            size = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back if back < size else 0
    if _trailing_backslashes(piece) % 2:
        return 1
    if _HIGH_SURROGATE.search(piece[-6:]) and _trailing_backslashes(piece[:-5]) % 2:
        return 6
    tail = piece[-5:]
    at = tail.rfind(b"\\u")
    if at < 0 or not all(c in _HEX for c in tail[at + 2 :]):
        return 0
    start = len(piece) - len(tail) + at
    if _trailing_backslashes(piece[: start + 1]) % 2 == 0:  # an escaped backslash, then "u"
        return 0
    return len(piece) - start


def _safe_cut(unit: bytes, room: int) -> int:
    """The largest ``k <= room`` such that ``unit[:k]`` ends neither inside a UTF-8 sequence nor
    inside an escape or a surrogate pair (``unit`` starts at a character boundary)."""
    k = max(0, min(room, len(unit)))
    while 0 < k < len(unit) and 0x80 <= unit[k] < 0xC0:
        k -= 1
    return k - _unfinished(unit[:k])


def _unfinished(piece: bytes) -> int:
    """Bytes at the end of ``piece`` that do not make a whole character yet: repeated
    :func:`_incomplete_escape` (``\\ud83d\\ude`` is a partial escape after a lone high half)."""
    total = 0
    while drop := _incomplete_escape(piece[: len(piece) - total]):
        total += drop
    return total


def _bare_runs(piece: bytes) -> tuple[int, int, int]:
    """(leading, longest, trailing) lengths of the runs of number/literal bytes in ``piece``
    (text outside strings); a piece without a separator is one run."""
    runs = [len(run) for run in _SEPARATOR.split(piece)]
    return runs[0], max(runs), runs[-1]


class TokenBounds(io.RawIOBase):
    """A readable raw stream: the bytes of ``source`` with every JSON string cut to
    :data:`MAX_STRING_BYTES` (see the module docstring). Reading raises :class:`TokenTooLong`
    for a number or literal over :data:`MAX_BARE_BYTES`, and whatever ``source.read`` raises.
    Text that is not JSON passes through for the parser to refuse."""

    def __init__(self, source: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._source, self._chunk_bytes = source, chunk_bytes
        self._state = _State()
        self._held = b""  # an escape not yet complete at the end of the last chunk
        self._out = b""
        self._pos = 0
        self._eof = False

    @property
    def strings_cut(self) -> int:
        """Strings cut to the cap so far."""
        return self._state.cut

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        while self._pos >= len(self._out) and not self._eof:
            data = self._source.read(self._chunk_bytes)
            if not data:
                self._eof = True
                self._out, self._pos = self._held, 0
                self._held = b""
                break
            self._out, self._pos = self._filter(self._held + data), 0
        view = memoryview(buffer)
        count = min(len(view), len(self._out) - self._pos)
        view[:count] = self._out[self._pos : self._pos + count]
        self._pos += count
        return count

    def _filter(self, chunk: bytes) -> bytes:
        """``chunk`` (the held bytes, then new ones) as the parser gets it, the state advanced.
        A first pass only follows the state; a chunk that must change is done again, building
        its output."""
        pieces = chunk.split(_QUOTE)
        held = self._fast(chunk, pieces)
        if held is not None:
            out = chunk[: len(chunk) - held] if held else chunk
            self._state.offset += len(chunk) - held
            self._held = chunk[len(chunk) - held :] if held else b""
            return out
        trial = replace(self._state)
        held = self._scan(chunk, trial, None)
        if trial.cut == self._state.cut and not (trial.cutting or self._state.cutting):
            out = chunk[: len(chunk) - held] if held else chunk
            self._state = trial
        else:
            parts: list[bytes] = []
            held = self._scan(chunk, self._state, parts)
            out = b"".join(parts)
        self._state.offset += len(chunk) - held
        self._held = chunk[len(chunk) - held :] if held else b""
        return out

    def _fast(self, chunk: bytes, pieces: list[bytes]) -> int | None:
        """The common chunk in C-speed steps, or None when it needs :meth:`_scan`: no quote in
        it is escaped (no ``\\"`` at all), so the quotes alternate between opening and closing
        strings, and no stretch between two quotes is over the caps, so no string or number in
        it is. Then only the pieces at its two ends, which continue the previous chunk's token
        or start the next's, need a look. Returns the bytes held back, the state advanced."""
        st = self._state
        first, last = pieces[0], pieces[-1]
        carried = st.length if st.in_string else st.bare
        if (
            st.cutting
            or carried + len(first) > min(MAX_STRING_BYTES, MAX_BARE_BYTES)
            or b'\\"' in chunk
            or max(map(len, pieces)) > min(MAX_STRING_BYTES, MAX_BARE_BYTES)
        ):
            return None
        in_string = st.in_string ^ ((len(pieces) - 1) % 2 == 1)
        held = 0
        if in_string:
            held = _unfinished(last)
            st.length = (carried if len(pieces) == 1 else 0) + len(last) - held
            st.bare = 0
        else:
            st.bare = _trailing_bare(last, carried if len(pieces) == 1 else 0)
            st.length = 0
        st.in_string = in_string
        return held

    def _scan(self, chunk: bytes, st: _State, out: list[bytes] | None) -> int:
        """Follow ``chunk`` from state ``st``: outside strings to the next quote
        (``bytes.find``), inside one to its end (:data:`_BODY`, in C, escapes and all); append
        what the parser gets to ``out`` when given. Returns how many bytes at the chunk's end
        are held back (a character not yet complete). One Python step per string."""
        size, pos = len(chunk), 0
        while pos < size:
            if not st.in_string:
                quote = chunk.find(_QUOTE, pos)
                stop = size if quote < 0 else quote
                piece = chunk[pos:stop]
                if st.bare + len(piece) > MAX_BARE_BYTES:
                    lead, longest, trail = _bare_runs(piece)
                    if max(st.bare + lead, longest) > MAX_BARE_BYTES:
                        raise TokenTooLong(
                            f"a number or literal of over {MAX_BARE_BYTES} bytes near byte "
                            f"{st.offset + pos}"
                        )
                    st.bare = (st.bare if lead == len(piece) else 0) + trail
                elif quote < 0:
                    st.bare = _trailing_bare(piece, st.bare)
                if out is not None:
                    out.append(chunk[pos : stop + 1])
                if quote < 0:
                    return 0
                st.in_string, st.length, st.cutting, st.bare = True, 0, False, 0
                pos = quote + 1
                continue
            quote = chunk.find(_QUOTE, pos)
            stop = size if quote < 0 else quote
            # no escape before the next quote (the usual string): memchr speed, else the regex
            escapes = chunk.find(b"\\", pos, stop) >= 0
            end = _BODY.match(chunk, pos).end() if escapes else stop  # type: ignore[union-attr]
            closed = end < size and chunk[end] == _QUOTE_BYTE
            held = 0
            if not closed:  # the string goes on in the next chunk
                end = size
                held = _unfinished(chunk[pos:end])
                end -= held
            if not st.cutting and st.length + end - pos > MAX_STRING_BYTES:
                st.cutting, st.cut = True, st.cut + 1
                if out is not None:
                    body = chunk[pos:end]
                    out.append(body[: _safe_cut(body, MAX_STRING_BYTES - st.length)])
            elif not st.cutting and out is not None:
                out.append(chunk[pos:end])
            st.length += end - pos
            if not closed:
                return held
            if out is not None:
                out.append(_QUOTE)
            st.in_string, st.length, st.cutting = False, 0, False
            pos = end + 1
        return 0


def _trailing_bare(piece: bytes, carried: int) -> int:
    """Length of the number/literal run ``piece`` (text outside strings) ends in, counting
    ``carried`` when the whole piece is one run."""
    cut = max(piece.rfind(sep) for sep in _SEPARATORS)
    return len(piece) - cut - 1 if cut >= 0 else carried + len(piece)
