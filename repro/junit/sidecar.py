"""The ``run.json`` sidecar: written beside ``junit.xml`` by the runner, read back by the report.

The sidecar is the trusted key of a run (../shared/junit-notes.md): ``host_key`` and
``variant.id`` key its cell, ``started`` lets the newest run of a (host, variant) supersede older
ones case by case, ``cases_total``/``cases_done``/``finished``/``interrupted`` tell a complete
run from a partial one (whose cases never hide older results). Shape (schema 1)::

    {"schema": 1, "run_id": str, "host_key": str, "started": "YYYY-MM-DDTHH:MM:SSZ",
     "finished": str | null, "repro_version": str, "cases_total": int, "cases_done": int,
     "interrupted": true (only after Ctrl-C),
     "closes": str (only in a cell that records how another run ended: that run's run_id),
     "variant": {"id": str, "runtime": str, "torch": str, "accelerator": str, "source": str},
     "junit": {"file": "junit.xml", "sha256": str, "bytes": int}}

``closes`` is written by a cell that records how another run of its lane ended (a Slurm
scheduler cell, ``repro.slurm.cells``): ``started`` has one-second resolution, so a task ended
in the second its run started gives both the same stamp, and the report orders a run that
closes another after every run started in the same second (``repro.report.merge``).

``junit`` (issue 32) is the run's result: the file its runner wrote (always ``junit.xml`` in the
run directory), with the SHA-256 (64 lowercase hex digits) and size of the bytes it last wrote,
recorded after every rewrite (each case, the preflight, the end). It is absent until the first
rewrite, and in runs older than it. The report reads only that file as the run's results
(``repro.junit.reader``): any other XML inside a run directory is an input of its own, and a
``junit.xml`` whose bytes no longer hash to ``sha256`` is marked "changed after the run".

Writing is atomic (``repro.junit.writer.write_atomic``). Reading treats the file as untrusted: a
regular file only, at most :data:`MAX_SIDECAR_BYTES`, any JSON depth (a nested bomb is reported,
never a crash), and never through a symlink that leaves the input tree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro.junit.files import InputRefused, is_within, read_capped
from repro.junit.writer import Digest, write_atomic

SIDECAR_NAME = "run.json"
MAX_SIDECAR_BYTES = 1024 * 1024
#: The run's result file in its run directory, and the run.json key recording its digest.
RESULT_NAME = "junit.xml"
RESULT_KEY = "junit"


def result_entry(digest: Digest) -> dict[str, Any]:
    """``run.json``'s ``junit`` value for a result file just written with ``digest``."""
    return {"file": RESULT_NAME, "sha256": digest.sha256, "bytes": digest.size}


def recorded_digest(sidecar: Mapping[str, Any]) -> str | None:
    """The SHA-256 (hex) ``run.json`` recorded for its ``junit.xml``, or None when it recorded
    none (a run older than issue 32, none written yet) or the entry is malformed."""
    entry = sidecar.get(RESULT_KEY)
    if not isinstance(entry, Mapping) or entry.get("file") != RESULT_NAME:
        return None
    digest = entry.get("sha256")
    if isinstance(digest, str) and len(digest) == 64 and all(c in _HEX for c in digest):
        return digest
    return None


_HEX = frozenset("0123456789abcdef")


def write_run_info(run_dir: Path, info: Mapping[str, Any]) -> None:
    """Atomically (re)write ``run_dir/run.json`` with ``info`` (sorted keys, 2-space indent).

    Raises OSError when the directory is not writable; TypeError for a value JSON cannot carry.
    """
    data = json.dumps(info, indent=2, sort_keys=True).encode() + b"\n"
    write_atomic(Path(run_dir) / SIDECAR_NAME, data)


def read_sidecar(
    xml_path: Path, tree_root: Path | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """``run.json`` beside ``xml_path``: ``(data, None)``; ``(None, None)`` when there is none;
    ``(None, why)`` when it is unusable (then the caller keys the file from the XML).

    ``tree_root`` is the input directory being merged: a ``run.json`` that is a symlink leading
    outside it is not followed. Never raises.
    """
    sidecar = Path(xml_path).parent / SIDECAR_NAME
    if not sidecar.is_symlink() and not sidecar.exists():
        return None, None
    if tree_root is not None and not is_within(sidecar, tree_root):
        return None, f"{SIDECAR_NAME} is a symlink leading outside the input tree; not followed"
    try:
        data = read_capped(sidecar, MAX_SIDECAR_BYTES)
        loaded = json.loads(data)
    except InputRefused as exc:
        return None, f"{SIDECAR_NAME}: {exc}; ignored"
    except RecursionError:
        return None, f"{SIDECAR_NAME} is nested too deeply to read; ignored"
    except ValueError as exc:
        return None, f"{SIDECAR_NAME} unreadable ({exc}); ignored"
    if not isinstance(loaded, dict):
        return None, f"{SIDECAR_NAME} is not a JSON object; ignored"
    return loaded, None
