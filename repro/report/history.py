"""Earlier reports: read a matrix.json, keep the previous one in a history directory, load them.

``repro report --history DIR`` keeps the ``matrix.json`` about to be replaced as
``DIR/matrix-<UTC stamp>.json`` and compares the new cells with the newest :data:`HISTORY_LIMIT`
kept ones (``repro.report.merge``: newly red, newly green, red streaks), each read as a stream
and reduced to its cells' states (``repro.report.stream``). Every file here is untrusted:
regular files only (a FIFO or device never blocks), a byte cap, a cell cap, and JSON of any depth
is an error, never a crash.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from repro.errors import ConfigError, FatalError
from repro.junit.files import InputRefused, open_capped
from repro.junit.writer import sweep_stale_temps, write_temp
from repro.report.stream import MAX_MATRIX_BYTES, read_states

#: How many of the newest earlier matrices a ``--history`` directory contributes.
HISTORY_LIMIT = 20
HISTORY_PREFIX = "matrix-"


def _stamp(generated_at: str) -> str:
    """``2025-06-01T12:00:00+00:00`` -> ``20250601T120000Z`` (file-name safe, sorts by time)."""
    try:
        moment = datetime.fromisoformat(generated_at)
    except (TypeError, ValueError):
        return re.sub(r"[^0-9A-Za-z]", "", str(generated_at))[:32] or "unknown"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


_HISTORY_NAME_RE = re.compile(r"^matrix-(\d{8}T\d{6}Z)(?:-(\d+))?\.json$")


def _history_order(name: str) -> tuple[str, int, str]:
    """Chronological: by stamp, then by the ``-N`` of reports generated in the same second."""
    match = _HISTORY_NAME_RE.match(name)
    if not match:
        return (name, 0, name)
    return (match.group(1), int(match.group(2) or 0), name)


def load_history(
    history_dir: Path, limit: int = HISTORY_LIMIT
) -> tuple[list[dict[str, Any]], list[str]]:
    """Earlier matrices kept in ``history_dir`` (``matrix-<UTC stamp>.json``), oldest first, at
    most the newest ``limit``, each reduced to its cells' states (``repro.report.stream.
    read_states``: bounded memory whatever their size); plus one warning per file that could
    not be read. Raises ConfigError when ``history_dir`` exists but is not a directory."""
    history_dir = Path(history_dir)
    if not os.path.lexists(history_dir):
        return [], []
    if not history_dir.is_dir():
        raise ConfigError(f"--history {history_dir}: expected a directory")
    names = sorted(
        (
            p.name
            for p in history_dir.iterdir()
            if p.name.startswith(HISTORY_PREFIX) and p.name.endswith(".json")
        ),
        key=_history_order,
    )
    entries, warnings = [], []
    for name in names[-limit:] if limit > 0 else []:
        try:
            entries.append(read_states(history_dir / name))
        except ConfigError as exc:
            warnings.append(f"history: {exc}; skipped")
    return entries, warnings


_CHUNK = 1 << 20


def _copy(source: Path, out: IO[bytes]) -> None:
    """Copy ``source`` (a matrix.json, through the capped reader) to ``out`` chunk by chunk: a
    matrix.json of hundreds of MB is never held in memory. Raises ConfigError for a file the
    reader refuses."""
    try:
        with open_capped(source, MAX_MATRIX_BYTES) as handle:
            shutil.copyfileobj(handle, out, _CHUNK)
    except InputRefused as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _same_bytes(source: Path, kept: Path) -> bool:
    """Whether ``kept`` holds exactly the bytes of ``source`` (compared chunk by chunk; a
    ``kept`` that the capped reader refuses, a FIFO for one, is not the same)."""
    try:
        size = os.stat(source).st_size
        with open_capped(kept, size) as theirs, open_capped(source, MAX_MATRIX_BYTES) as ours:
            while True:
                mine = ours.read(_CHUNK)
                if mine != theirs.read(_CHUNK):
                    return False
                if not mine:
                    return True
    except (InputRefused, OSError):
        return False


def archive_previous(
    out_dir: Path, history_dir: Path, previous: Mapping[str, Any] | None = None
) -> Path | None:
    """Copy ``out_dir/matrix.json`` (about to be replaced) into ``history_dir`` as
    ``matrix-<its generated_at>.json`` (``-N`` added for reports of the same second); None when
    there is none or an identical copy is already kept.
    ``previous`` is its already-parsed content, if the caller has it."""
    source = Path(out_dir) / "matrix.json"
    if not source.is_file():
        return None
    if previous is None:
        previous = read_states(source)
    history_dir = Path(history_dir)
    history_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{HISTORY_PREFIX}{_stamp(str(previous.get('generated_at')))}"
    for number in range(10_000):
        target = history_dir / (f"{stem}.json" if number == 0 else f"{stem}-{number}.json")
        if not os.path.lexists(target):
            sweep_stale_temps(target)  # a killed report's copy
            tmp = write_temp(target, lambda out: _copy(source, out))
            os.replace(tmp, target)
            return target
        if _same_bytes(source, target):
            return None  # already kept
        # not a copy of ours (a FIFO, other bytes): try the next name
    raise FatalError(f"{history_dir}: too many reports generated at {previous.get('generated_at')}")
