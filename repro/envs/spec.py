"""What a venv-lane environment holds, and its content key (pure: no processes, no files).

An environment is: a Python (``"3.11"`` or an interpreter path, found or downloaded by uv), the
pinned requirements under test (``torch==2.13.0``, or ``pkg==1.4`` for a bisect of another
package) installed from their own source (the variant's wheel index, a ``--find-links``
directory, or an offline wheelhouse), then this project's own requirements from uv's default
index (or the same wheelhouse), and the checkout's ``repro`` package on ``sys.path`` through a
``.pth`` file (so a code edit needs no rebuild). Two installs, not one, so that the project's
requirements can never replace the pinned build: ``torch==2.13.0`` from the CPU index must not
become PyPI's CUDA ``2.13.0`` because PyPI is searched too (uv gives an extra index priority,
docs.astral.sh/uv/pip/compatibility "Packages that exist on multiple indexes").

The key is a SHA-256 over every field, so the same pin from another index, for another Python
or another project version never reuses an environment made for something else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

#: Bump when the layout of an environment changes, so old ones are not reused.
LAYOUT_VERSION = 1


@dataclass(frozen=True)
class Source:
    """Where pinned wheels come from.

    ``index_url``: a PEP 503/691 index (``https://...`` or ``file:///...``), None for uv's
    default (PyPI, or ``UV_INDEX_URL``). ``extra_index_urls``: more indexes. ``find_links``:
    directories or pages of wheels. ``no_index``: use ``find_links`` only (an offline wheelhouse).
    """

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def describe(self) -> str:
        """One line: ``wheelhouse DIR (offline)`` or ``index URL + find-links DIR``."""
        if self.no_index:
            return f"wheelhouse {', '.join(self.find_links)} (offline: no index)"
        parts = [f"index {self.index_url or 'uv default (PyPI)'}"]
        parts += [f"extra index {url}" for url in self.extra_index_urls]
        parts += [f"find-links {link}" for link in self.find_links]
        return " + ".join(parts)


@dataclass(frozen=True)
class EnvSpec:
    """One environment: ``pinned`` requirements from ``source``, then ``project_requirements``
    (uv's default index plus ``source.find_links``, or only the wheelhouse when
    ``source.no_index``), and ``project_root`` (the directory holding the ``repro`` package) on
    ``sys.path``. ``python``: a version (``"3.12"``) or an interpreter path for ``uv venv``."""

    python: str
    pinned: tuple[str, ...]
    source: Source = Source()
    project_requirements: tuple[str, ...] = ()
    project_root: str = ""
    project_version: str = ""

    def key(self) -> str:
        """20 hex digits of SHA-256 over every field and :data:`LAYOUT_VERSION`."""
        data = dataclasses.asdict(self)
        data["layout"] = LAYOUT_VERSION
        blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:20]

    def to_json(self) -> dict:
        """The fields as a JSON-able dict (written beside the environment as its record)."""
        return dataclasses.asdict(self)

    def describe(self) -> list[tuple[str, str]]:
        """(name, value) lines for the effective settings printout."""
        return [
            ("pinned", " ".join(self.pinned)),
            ("from", self.source.describe()),
            ("python", self.python),
            ("project", f"repro {self.project_version} from {self.project_root}"),
            ("key", self.key()),
        ]

    def with_pinned(self, *pinned: str) -> EnvSpec:
        """The same environment with other pinned requirements (one bisect step)."""
        return dataclasses.replace(self, pinned=tuple(pinned))


def project_spec_fields(source_root: Path) -> dict[str, object]:
    """``project_root``, ``project_version`` and ``project_requirements`` of the checkout at
    ``source_root`` (its ``pyproject.toml`` ``[project].dependencies`` plus ``nvidia-ml-py``,
    which the fingerprint reads GPUs with, as the host lane's ``.[nvidia]``)."""
    from repro.containers.build_settings import project_requirements, source_version

    requirements = [*project_requirements(source_root), "nvidia-ml-py>=12"]
    return {
        "project_root": str(source_root),
        "project_version": source_version(source_root),
        "project_requirements": tuple(requirements),
    }
