"""Which files are inputs, and where each comes from (issue 32): :func:`find_files` expands the
paths ``repro report`` and ``repro compare`` are given into :class:`InputFile` records, each with
its origin (a run's ``junit.xml``, a stray XML file inside a run directory, or foreign JUnit).
Read by :mod:`repro.junit.reader`, which re-exports these names. Reads directory entries only,
never a file's content.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from repro.errors import ConfigError
from repro.junit.files import is_within
from repro.junit.sidecar import RESULT_NAME, SIDECAR_NAME

#: Where an input file comes from (issue 32). ``run``: the ``junit.xml`` a runner wrote in its run
#: directory (keyed by that directory's ``run.json``, checked against the digest it recorded);
#: ``stray``: any other XML file inside a run directory (a case can write there), an input of its
#: own that never counts as that run's results; ``foreign``: JUnit given on purpose (a file
#: named on the command line, or found in a directory that is no run directory).
ORIGIN_RUN, ORIGIN_STRAY, ORIGIN_FOREIGN = "run", "stray", "foreign"
#: The variant a stray file's cases are shown under: its own column, never the run's.
STRAY_VARIANT = "stray: {path}"


@dataclass(frozen=True)
class InputFile:
    """One file to read: its path, the input tree it was found in (``root``), when it must not
    be read why (a symlink out of the tree), its ``origin`` (:data:`ORIGIN_RUN`...; None: decide
    as for a file named on the command line, :func:`origin_of_file`) and, for a run's result or
    a stray file, the ``run_dir`` it is inside."""

    path: Path
    root: Path
    refused: str | None = None
    origin: str | None = None
    run_dir: Path | None = None

    def resolved(self) -> tuple[str, Path | None]:
        """``(origin, run_dir)``, deciding an unset origin with :func:`origin_of_file`."""
        if self.origin is not None:
            return self.origin, self.run_dir
        return origin_of_file(self.path)


def _holds_sidecar(directory: Path | str) -> bool:
    return os.path.lexists(os.path.join(directory, SIDECAR_NAME))


def origin_of_file(path: Path) -> tuple[str, Path | None]:
    """A file named on its own: a run's result when it is ``junit.xml`` beside a ``run.json``,
    else foreign JUnit given on purpose (keyed from its own content, never by a ``run.json``
    that describes another file)."""
    if path.name == RESULT_NAME and _holds_sidecar(path.parent):
        return ORIGIN_RUN, path.parent
    return ORIGIN_FOREIGN, None


def display(path: Path) -> str:
    """How a path is shown in outputs (POSIX separators, as given)."""
    return path.as_posix()


def find_files(inputs: list[Path]) -> list[InputFile]:
    """Expand inputs into files: directories recursively (``*.xml``, hidden entries skipped,
    symlinked directories not entered); files as given. Sorted by displayed path.

    A symlink inside a directory input that leads outside it is listed with ``refused`` set.
    Each file gets its origin: inside a directory input, a run directory is the outermost
    directory (the input itself included) holding ``run.json``; its ``junit.xml`` is the run's
    result and every other XML file below it is stray. A file given by name is decided by
    :func:`origin_of_file`. Raises ConfigError when an input path does not exist at all.
    """
    for item in inputs:
        if not os.path.lexists(item):
            raise ConfigError(f"{item}: no such file or directory")
    found: list[InputFile] = []
    seen: set[str] = set()
    for item in inputs:
        item = Path(item)
        candidates: list[InputFile]
        if item.is_dir():
            candidates = []
            run_dirs: dict[str, str | None] = {}  # directory -> the run directory it is in
            for top, dirs, files in os.walk(item, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                run_dir = run_dirs.get(os.path.dirname(top)) if top != str(item) else None
                if run_dir is None and SIDECAR_NAME in files:
                    run_dir = top
                run_dirs[top] = run_dir
                for name in sorted(files):
                    if not name.endswith(".xml") or name.startswith("."):
                        continue
                    path = Path(top) / name
                    refused = None
                    if path.is_symlink() and not is_within(path, item):
                        refused = "symlink leading outside the input tree; not followed"
                    if run_dir is None:
                        origin = ORIGIN_FOREIGN
                    elif top == run_dir and name == RESULT_NAME:
                        origin = ORIGIN_RUN
                    else:
                        origin = ORIGIN_STRAY
                    where = Path(run_dir) if run_dir is not None else None
                    candidates.append(InputFile(path, item, refused, origin, where))
        else:
            candidates = [InputFile(item, item.parent)]
        for candidate in candidates:
            key = os.path.realpath(candidate.path)  # never raises, even on a symlink loop
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return sorted(found, key=lambda f: display(f.path))
