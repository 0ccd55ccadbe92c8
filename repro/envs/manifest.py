"""What a finished venv-lane environment holds, recorded when it is complete and checked at use.

Issue 32: an environment whose ``bin/python`` was replaced by a script that exits 0 was
"reused", the planted interpreter ran, and ``repro venv-run`` exited 0 with no results. The
record of a finished environment (``repro-env.json``, ``repro.envs.cache``) now carries a
manifest, computed by this process from the files alone (the environment's own interpreter is
never run to check itself):

- ``interpreter``: where ``bin/python`` really leads (every symlink resolved: a uv environment
  links to its base interpreter) and the SHA-256 of that file;
- ``pyvenv_cfg``: the SHA-256 of ``pyvenv.cfg`` (its ``home`` names the base interpreter);
- ``site_packages``: the purelib directory, relative to the environment;
- ``distributions``: each ``*.dist-info`` directory there (name and version) with the SHA-256 of
  its ``RECORD`` (the per-file hashes of what its installer wrote);
- ``pth``: the SHA-256 of every ``.pth`` file there (they run code at every start, and ours puts
  this checkout on ``sys.path``).

An environment whose manifest differs in any way is not used (:func:`verify` says why). The
files of the distributions themselves are not hashed at every use (torch alone is thousands of
files and about 1 GB): a package replaced behind its installer's back is not detected, one
installed, removed, upgraded or reinstalled is. Never imports torch.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from repro.envs import uv as uv_mod

#: Version of the manifest's shape; an environment recorded with another is made again.
MANIFEST_VERSION = 1
_CHUNK = 1 << 20


def _sha256(path: Path | str) -> str:
    """``sha256:<hex>`` of the regular file ``path`` (symlinks followed), or ``special:...``
    for anything else (a FIFO is never opened for a blocking read), ``missing`` when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable:{exc.strerror or exc}"
    with os.fdopen(fd, "rb", buffering=0) as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return "special:not a regular file"
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def collect(env_dir: Path, site_packages: str) -> dict[str, Any]:
    """The manifest of the environment at ``env_dir`` whose purelib is ``site_packages``
    (relative to ``env_dir``), read from its files (see the module docstring). Never raises for
    a missing or odd file: that shows as a value no finished environment has."""
    python = uv_mod.python_in(str(env_dir))
    site = env_dir / site_packages
    try:
        names = sorted(os.listdir(site))
    except OSError:
        names = []
    distributions = {
        name: _sha256(site / name / "RECORD") for name in names if name.endswith(".dist-info")
    }
    pth = {name: _sha256(site / name) for name in names if name.endswith(".pth")}
    real = os.path.realpath(python)
    return {
        "version": MANIFEST_VERSION,
        "interpreter": {"path": real, "sha256": _sha256(real)},
        "pyvenv_cfg": _sha256(env_dir / "pyvenv.cfg"),
        "site_packages": site_packages,
        "distributions": distributions,
        "pth": pth,
    }


def relative_site_packages(env_dir: Path, purelib: str) -> str:
    """``purelib`` (the environment's ``sysconfig`` purelib) relative to ``env_dir``, POSIX.
    Raises ValueError when it is not inside the environment."""
    return Path(os.path.realpath(purelib)).relative_to(os.path.realpath(env_dir)).as_posix()


def _differences(recorded: dict[str, Any], found: dict[str, Any]) -> str:
    """The first difference between two manifests, in words."""
    was, now = recorded.get("interpreter") or {}, found["interpreter"]
    if was.get("path") != now["path"]:
        return f"its interpreter now leads to {now['path']} (recorded {was.get('path')})"
    if was.get("sha256") != now["sha256"]:
        return f"its interpreter {now['path']} changed (SHA-256 differs from the recorded one)"
    if recorded.get("pyvenv_cfg") != found["pyvenv_cfg"]:
        return "its pyvenv.cfg changed"
    for key, what in (("distributions", "installed distribution"), ("pth", ".pth file")):
        old, new = recorded.get(key) or {}, found[key]
        added, removed = sorted(set(new) - set(old)), sorted(set(old) - set(new))
        changed = sorted(n for n in set(old) & set(new) if old[n] != new[n])
        if added or removed or changed:
            parts = [f"{w} {', '.join(ns[:3])}" for w, ns in
                     (("added", added), ("removed", removed), ("changed", changed)) if ns]  # fmt: skip
            return f"{what}s differ from its manifest ({'; '.join(parts)})"
    return "its manifest differs"


def verify(env_dir: Path, record: dict[str, Any] | None) -> str | None:
    """Why the environment at ``env_dir`` with the record ``record`` must not be used, or None
    when it may: it must have a record with a version-1 manifest (none: it was never finished,
    or was made before manifests), a site-packages inside it, and files that match the
    manifest exactly (:func:`collect`)."""
    if record is None:
        return "it has no readable record (never finished: a crash, a kill, a failed install)"
    recorded = record.get("manifest")
    if not isinstance(recorded, dict) or recorded.get("version") != MANIFEST_VERSION:
        return "its record has no manifest (made before manifests, or not by repro)"
    site = recorded.get("site_packages")
    if (
        not isinstance(site, str)
        or not site
        or ".." in PurePosixPath(site).parts
        or (PurePosixPath(site).is_absolute())
    ):
        return "its manifest names no site-packages inside it"
    found = collect(env_dir, site)
    if found == recorded:
        return None
    return _differences(recorded, found)
