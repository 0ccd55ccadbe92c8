"""The shipped compatibility facts, loaded once, with the provenance of every value.

The facts are ``repro/data/compat-facts.yaml`` (``repro.data.COMPAT_FACTS``), a copy of
../shared/compat/compat-facts.yaml with its comments, merged with
``repro/data/compat-facts-history.yaml`` (torch 1.0-2.3, CUDA 8-11.7, the conda channel, PyPI's
Python and platforms per release), which only adds keys. A value whose line carries ``# unverified``
(or ``# windows unverified``, ``# nccl unverified`` ...: only that field) is loaded as
*unverified*, and every reason that rests on it says so. Never imports torch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from repro import data as shipped_data

FACTS_FILE = shipped_data.COMPAT_FACTS
#: Older releases and conda/PyPI facts, merged into FACTS_FILE's (adds keys, never changes one).
HISTORY_FACTS_FILE = shipped_data.COMPAT_HISTORY
#: Facts the shared file lacks (published patch releases, forward compatibility in images).
EXTRA_FACTS_FILE = shipped_data.COMPAT_EXTRA

#: Words that, written before "unverified" in a comment, limit the mark to that field.
_FIELD_WORDS = frozenset(
    {"windows", "linux", "nccl", "cudnn", "gfx", "arch", "ptx", "python", "runtime", "cuda"}
)


# --------------------------------------------------------------------------------------------
# Facts with their provenance


Path_ = tuple[Any, ...]


class Facts:
    """The loaded YAML plus, for every value, whether its line is marked unverified.

    ``get(*path)`` reads a value (None where absent); ``unverified(*path)`` tells whether that
    value is marked; ``name(*path)`` is the dotted name used in reasons
    (``cuda_min_driver.13.0.family_min.linux``).
    """

    def __init__(self, data: Any, lines: dict[Path_, int], marks: dict[int, frozenset[str] | None]):
        self.data = data
        self._lines = lines
        self._marks = marks

    @classmethod
    def load(cls, path: str | Path | None = None) -> Facts:
        """Read a facts file (default: the one shipped in the package)."""
        text = Path(path or FACTS_FILE).read_text(encoding="utf-8")
        return cls.from_text(text)

    @classmethod
    def load_merged(cls, *paths: str | Path) -> Facts:
        """Read several facts files into one: each later file may add keys at any depth, never
        change a value of an earlier one (the provenance of every value stays its own line).

        Raises:
            ValueError: a later file gives a value an earlier file already has (naming both).
        """
        texts = [Path(p).read_text(encoding="utf-8") for p in paths]
        return cls.from_text(*texts, names=[str(p) for p in paths])

    @classmethod
    def from_text(cls, *texts: str, names: list[str] | None = None) -> Facts:
        """Facts from YAML text(s); several are merged as :meth:`load_merged` does. Line numbers
        of the second text continue after the first's, so each value keeps its own mark."""
        data: Any = {}
        lines: dict[Path_, int] = {}
        marks: dict[int, frozenset[str] | None] = {}
        offset = 0
        for number, text in enumerate(texts):
            loader = yaml.SafeLoader(text)
            try:
                node = loader.get_single_node()
                part = loader.construct_document(node) if node is not None else {}
            finally:
                loader.dispose()
            own: dict[Path_, int] = {}
            if node is not None:
                _record_lines(node, (), own)
            where = (names or [])[number] if names and number < len(names) else f"text {number}"
            data = part if number == 0 else _merge(data, part, (), where)
            for path, line in own.items():
                lines.setdefault(path, line + offset)
            marks.update({line + offset: scope for line, scope in _unverified_marks(text).items()})
            offset += text.count("\n") + 1
        return cls(data, lines, marks)

    def get(self, *path: Any) -> Any:
        value = self.data
        for key in path:
            if isinstance(value, Mapping):
                value = value.get(key)
            elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
                value = value[key]
            else:
                return None
            if value is None:
                return None
        return value

    def unverified(self, *path: Any) -> bool:
        line = self._lines.get(tuple(path))
        if line is None or line not in self._marks:
            return False
        scope = self._marks[line]
        if scope is None:
            return True
        last = next((key for key in reversed(path) if isinstance(key, str)), "")
        words = set(re.split(r"[^a-z]+", last.lower()))
        if words & scope:
            return True
        value = self.get(*path)
        return "ptx" in scope and isinstance(value, str) and value.startswith("compute_")

    def replaced(self, key: str, value: Any) -> Facts:
        """A copy whose top-level ``key`` is ``value`` (a view: the provenance of every other
        value, and of ``key``'s values that remain, is kept). Used for the facts as of a day."""
        return Facts({**self.data, key: value}, self._lines, self._marks)

    @staticmethod
    def name(*path: Any) -> str:
        out = ""
        for key in path:
            out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
        return out


def _merge(base: Any, extra: Any, path: Path_, where: str) -> Any:
    """``base`` with the keys of ``extra`` added (mappings merge recursively)."""
    if isinstance(base, Mapping) and isinstance(extra, Mapping):
        out = dict(base)
        for key, value in extra.items():
            out[key] = _merge(base[key], value, (*path, key), where) if key in base else value
        return out
    if base == extra:
        return base
    raise ValueError(f"{where}: {Facts.name(*path)} changes a value of compat-facts.yaml")


def _record_lines(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    """Line (0-based) of every value node, by path; iterative so depth is no concern."""
    stack: list[tuple[yaml.Node, Path_]] = [(node, path)]
    while stack:
        current, where = stack.pop()
        lines[where] = current.start_mark.line
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode):
                    stack.append((value_node, (*where, key_node.value)))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                stack.append((item, (*where, index)))


def _comment(line: str) -> str | None:
    """The comment text of one YAML line (after a ``#`` outside quotes), or None."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[index + 1 :].strip()
    return None


def _unverified_marks(text: str) -> dict[int, frozenset[str] | None]:
    """0-based line -> fields the ``unverified`` mark covers (None: the whole line)."""
    marks: dict[int, frozenset[str] | None] = {}
    for number, line in enumerate(text.splitlines()):
        comment = _comment(line)
        if comment is None or "unverified" not in comment.lower():
            continue
        segment = next(s for s in comment.lower().split(";") if "unverified" in s)
        prefix = segment.split("unverified", 1)[0]
        scope = frozenset(re.findall(r"[a-z]+", prefix)) & _FIELD_WORDS
        marks[number] = scope or None
    return marks


@functools.lru_cache(maxsize=1)
def default_facts() -> Facts:
    """The facts shipped with the package: compat-facts.yaml merged with
    compat-facts-history.yaml (loaded once)."""
    return Facts.load_merged(FACTS_FILE, HISTORY_FACTS_FILE)


@functools.lru_cache(maxsize=1)
def extra_facts() -> Facts:
    """``repro/data/compat-extra.yaml``: the facts the shared file lacks (loaded once), with the
    same ``# unverified`` convention. Reasons name its values ``compat-extra:<path>``."""
    return Facts.load(EXTRA_FACTS_FILE)
