"""Read a user's YAML file as untrusted input: bounded, strict, never blocking.

matrix.yaml is user input, so before any validation of its meaning the file itself must be
harmless: only a regular file is opened (a FIFO, a device such as /dev/zero or a directory is
refused after ``stat`` and an ``O_NONBLOCK`` open, so nothing blocks), at most
:data:`MAX_BYTES`; the bytes must be UTF-8 (a UTF-16/32 byte-order mark or latin-1 bytes are a
clear error); YAML duplicate mapping keys are errors (PyYAML keeps the last one silently);
nesting is at most :data:`MAX_DEPTH` deep and aliases may expand the document to at most
:data:`MAX_NODES` nodes (the "billion laughs" alias bomb is refused before anything walks it);
an integer too long for Python's ``int`` conversion is kept as :class:`HugeNumber` so the
validator can name its key. Every failure is a one-line ConfigError naming the file.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

from repro.errors import ConfigError

#: Largest file read (bytes). The shipped matrix.yaml is about 6 KiB.
MAX_BYTES = 1 << 20
#: Deepest nesting of mappings and sequences.
MAX_DEPTH = 64
#: Most nodes the document may have with every alias expanded.
MAX_NODES = 100_000

_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class HugeNumber:
    """An integer literal with more digits than Python converts (``int("9" * 5000)`` raises)."""

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``.

    Raises ConfigError: missing, unreadable, not a regular file (checked before and after the
    non-blocking open), or larger than ``max_bytes``.
    """
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: file not found", hint="run from the project root or pass --config PATH"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(before.st_mode):
        raise ConfigError(f"{path}: expected a regular file, got {_kind(before.st_mode)}")
    if before.st_size > max_bytes:
        raise ConfigError(f"{path}: expected at most {max_bytes} bytes, got {before.st_size} bytes")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):  # swapped for something else between stat and open
            raise ConfigError(f"{path}: expected a regular file, got {_kind(mode)}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ConfigError(f"{path}: expected at most {max_bytes} bytes, got more")
    return data


def decode_utf8(path: Path, data: bytes) -> str:
    """``data`` as text. Raises ConfigError for a UTF-16/32 file or bytes that are not UTF-8,
    naming the line of the first bad byte."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise ConfigError(f"{path}: expected UTF-8 text, got {name} (byte-order mark)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}: line {line}: expected UTF-8 text, got byte 0x{data[exc.start]:02x} "
            "(latin-1 or another encoding? save the file as UTF-8)"
        ) from None


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and bounds depth and alias expansion."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"nesting deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()
        _check_expansion(node)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # unhashable: SafeLoader reports it below
                if first is not None:
                    raise ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (first at line {first.line + 1})",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # past sys.get_int_max_str_digits()
            return HugeNumber(sum(ch.isdigit() for ch in node.value))


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)


def _check_expansion(root: Any) -> None:
    """Raise ComposerError when the node graph, aliases expanded, exceeds MAX_NODES."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        sizes[id(node)] = total = min(total, MAX_NODES + 1)
        return total

    if root is not None and size(root) > MAX_NODES:
        raise ComposerError(
            None, None, f"aliases expand to more than {MAX_NODES} nodes", root.start_mark
        )


def load_yaml(path: str | Path) -> Any:
    """Read ``path`` (see the module docstring) and parse it with :class:`StrictLoader`.

    Raises ConfigError (one line naming the file, and the line where YAML says) for every
    problem: file kind, size, encoding, syntax, duplicate keys, depth, alias expansion.
    """
    path = Path(path)
    text = decode_utf8(path, read_bytes(path))
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nesting deeper than {MAX_DEPTH} levels") from None
