"""Read a ``matrix.json`` as a stream, keeping only what the caller needs (issue 25, item 4).

``json.loads`` of a matrix.json costs 10 to 50 times its size in memory (a 100 MB file of empty
cells took 5.1 GB in ``repro compare``), so the readers that only need part of a matrix
(``repro compare``'s case index, ``repro report --history``'s cell states) parse it with ijson
(yajl, an event parser: ``basic_parse``) through the capped reader (``repro.junit.files.open_capped``) and build
each case as a small dict, one at a time. Between the two, ``repro.report.json_tokens`` cuts any
string over 64 KiB and refuses a number that long, so yajl's lexer, quadratic in the length of
a token split across its reads, stays linear in the file's size (issue 32: one 128 MB string
took 106 s). What a caller keeps is bounded by two caps: at most
:data:`MAX_MATRIX_CASES` cases and :data:`MAX_MATRIX_CELLS` cells per matrix, else one-line
ConfigError. Never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import ijson

from repro.errors import ConfigError
from repro.junit.files import InputRefused, open_capped
from repro.junit.reader import MAX_DEPTH, MAX_TESTCASES_TOTAL
from repro.report.json_tokens import TokenBounds, TokenTooLong
from repro.report.model import READABLE_SCHEMA_VERSIONS

#: Largest matrix.json read (bytes): what ``repro report`` writes for its testcase cap fits.
MAX_MATRIX_BYTES = 512 * 1024 * 1024
#: Most cases of one matrix: what one ``repro report`` can read (``MAX_TESTCASES_TOTAL``).
MAX_MATRIX_CASES = MAX_TESTCASES_TOTAL
#: Most cells of one matrix ((host, variant) pairs; a fleet of 20 hosts x 50 variants has 1,000).
MAX_MATRIX_CELLS = 50_000

_CELL_FIELDS = ("host", "variant", "state", "effective_state")
_TOP_FIELDS = ("generated_at", "schema_version")
_SCALARS = ("string", "number", "null", "boolean")
_OPENING = ("start_map", "start_array")
_CLOSING = ("end_map", "end_array")
#: Container levels: the top object (1), the cells list (2), a cell (3), its cases list (4), a
#: case (5).
_TOP, _CELLS, _ONE_CELL, _CASES, _ONE_CASE = 1, 2, 3, 4, 5


def read_cells(
    path: Path | str,
    on_case: Callable[[Mapping[str, Any], int, int], None] | None,
    on_cell: Callable[[Mapping[str, Any], int], None],
) -> dict[str, Any]:
    """Stream the matrix.json ``path``: ``on_case(case, cell_position, case_position)`` for each
    case (a dict, in file order; None: cases are skipped unbuilt), then ``on_cell(cell,
    position)`` at the end of each cell with its ``host``, ``variant``, ``state`` and
    ``effective_state`` (cases come first in a sorted matrix.json, so a cell's key is known only
    at its end). Returns the top-level ``generated_at`` and ``schema_version``.

    Parsed with ijson's ``basic_parse`` (events without paths: its ``parse`` builds a dotted
    path string per event, quadratic in depth, and a key holding a dot would pass for a path),
    and the structure tracked here by container level.

    Raises ConfigError (one line naming ``path``) for a file the capped reader refuses, text
    that is not JSON, a shape that is not a matrix (not one ``cells`` list, a cell without one
    ``cases`` list, a case that is not an object), nesting deeper than
    ``repro.junit.reader.MAX_DEPTH``, another schema version, or more than
    :data:`MAX_MATRIX_CELLS` cells or (when ``on_case`` is given) :data:`MAX_MATRIX_CASES`
    cases.
    """
    top: dict[str, Any] = {}
    cell: dict[str, Any] = {}
    cells = cases = case_position = depth = 0
    top_key = cell_key = None
    builder: Any = None
    saw_cells = in_cells = in_cell = in_cases = has_cases = False

    def shape(where: str, expected: str) -> ConfigError:
        return ConfigError(f"{path}: {where}expected {expected}")

    try:
        with open_capped(path, MAX_MATRIX_BYTES) as handle:
            for event, value in ijson.basic_parse(TokenBounds(handle), use_float=True):
                if event in _OPENING:
                    if depth >= MAX_DEPTH:
                        raise ConfigError(f"{path}: not a matrix.json (nested deeper than "
                                          f"{MAX_DEPTH})")  # fmt: skip
                elif event in _CLOSING:
                    depth -= 1
                if builder is not None:  # inside a case: build it, nested values included
                    builder.event(event, value)
                    if event in _OPENING:
                        depth += 1
                    elif depth == _CASES:  # the case's own end_map
                        if on_case is not None:
                            on_case(builder.value, cells, case_position)
                        builder, case_position = None, case_position + 1
                    continue
                if event == "map_key":
                    if depth == _TOP:
                        top_key = value
                    elif depth == _ONE_CELL and in_cell:
                        cell_key = value
                    continue
                if event in _CLOSING:
                    if depth == _CELLS - 1 and in_cells:
                        in_cells = False
                    elif depth == _ONE_CELL - 1 and in_cell:
                        if not has_cases:
                            raise shape(f"cells[{cells}]: ", "an object with a 'cases' list")
                        on_cell(cell, cells)
                        cells, in_cell = cells + 1, False
                        if cells > MAX_MATRIX_CELLS:
                            raise ConfigError(
                                f"{path}: over {MAX_MATRIX_CELLS} cells (the cap of one matrix)"
                            )
                    elif depth == _CASES - 1 and in_cases:
                        in_cases = False
                    continue
                # a value (scalar or opening) inside the container at level ``depth``
                if depth == 0:
                    if event != "start_map":
                        raise shape("not a matrix.json (", "an object with a 'cells' list)")
                elif depth == _TOP and top_key == "cells":
                    if event != "start_array" or saw_cells:  # json.loads keeps the last one
                        raise shape("not a matrix.json (", "one 'cells' list at the top)")
                    saw_cells = in_cells = True
                elif depth == _TOP and top_key in _TOP_FIELDS and event in _SCALARS:
                    top[top_key] = value
                elif depth == _CELLS and in_cells:
                    if event != "start_map":
                        raise shape(f"cells[{cells}]: ", "an object with a 'cases' list")
                    cell, cell_key, in_cell, has_cases, case_position = {}, None, True, False, 0
                elif depth == _ONE_CELL and in_cell and cell_key == "cases":
                    if event != "start_array" or has_cases:
                        raise shape(f"cells[{cells}]: ", "an object with one 'cases' list")
                    in_cases = has_cases = True
                elif depth == _ONE_CELL and in_cell and cell_key in _CELL_FIELDS:
                    if event in _SCALARS:
                        cell[cell_key] = value
                elif depth == _CASES and in_cases:
                    if event != "start_map":
                        raise shape(f"cells[{cells}].cases[{case_position}]: ", "an object")
                    cases += 1
                    if on_case is not None and cases > MAX_MATRIX_CASES:
                        raise ConfigError(
                            f"{path}: over {MAX_MATRIX_CASES} cases (the cap of one matrix: "
                            "compare or report on fewer results)"
                        )
                    builder = _Skip() if on_case is None else ijson.ObjectBuilder()
                    builder.event(event, value)
                if event in _OPENING:
                    depth += 1
    except InputRefused as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except TokenTooLong as exc:
        raise ConfigError(f"{path}: not a matrix.json: {exc}") from None
    except ijson.JSONError as exc:
        raise ConfigError(f"{path}: not JSON: {str(exc).splitlines()[0][:200]}") from None
    if not saw_cells:
        raise ConfigError(f"{path}: not a matrix.json (expected an object with a 'cells' list)")
    if top.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
        raise ConfigError(
            f"{path}: matrix.json schema_version {top.get('schema_version')!r} is not supported "
            f"(expected one of {READABLE_SCHEMA_VERSIONS})"
        )
    return top


class _Skip:
    """Stands in for ``ijson.ObjectBuilder`` when the cases are not wanted: builds nothing."""

    value = None

    def event(self, event: str, value: Any) -> None:
        pass


def read_states(path: Path | str) -> dict[str, Any]:
    """A matrix.json reduced to what ``repro report --history`` compares: ``generated_at``,
    ``schema_version`` and each cell's ``host``, ``variant``, ``state`` and ``effective_state``
    (``cells``, cases dropped). Raises ConfigError as :func:`read_cells` does."""
    cells: list[dict[str, Any]] = []
    top = read_cells(path, None, lambda cell, _position: cells.append(dict(cell)))
    return {**top, "cells": cells}
