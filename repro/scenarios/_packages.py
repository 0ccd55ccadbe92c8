"""Pinned extra packages for a scenario (``wandb==0.27.2``), installed once into a cache.

A scenario that needs a library at a version the interpreter does not have (issue 14: real wandb
at an affected release and at the current one, side by side) asks :func:`ensure` for a directory
holding it, then runs that part of the case in a fresh child interpreter with the directory
first on ``PYTHONPATH`` (:func:`child_env`). Two versions of one package can never live in one
interpreter, and pip cannot resolve two pins of one package in one command, so every requirement
set gets its own directory, keyed by the requirements, the interpreter (``cp311``, machine) and
the package source.

Source: ``$REPRO_WHEELHOUSE`` when set (``pip install --no-index --find-links``: offline),
otherwise the package index pip is configured with. Cache: ``$REPRO_CACHE`` when set, otherwise
``~/.cache/repro-matrix/packages``. A directory is published by an atomic rename only after pip
succeeded, so a killed install leaves no half-filled cache entry behind.

Trust (issue 25: a planted entry under a release's key was used and its code ran): the cache
directory and each entry must be owned by the calling user and writable by nobody else, or the
cache is refused (:class:`CacheRefused`, the case is skipped with the reason). An entry is
published with a manifest (``repro-packages.json``) of the SHA-256 of every file and the target
of every symlink; at use every file is hashed again and an entry that differs in any way (a
file added, removed or changed, no manifest) is moved aside and installed afresh, its code never
imported. Lock files are opened with ``O_NOFOLLOW`` and must be regular files owned by the
user; a planted symlink is removed, never followed (``repro.locks``, shared with the venv lane).
``.partial-<pid>`` directories whose installer is gone (its key's lock is free) are removed by
the next :func:`ensure`. pip runs in its own session under ``PR_SET_PDEATHSIG`` (SIGKILL), so
it dies with the case that started it (``repro.proctree.tied``, shared with the venv lane).

Never imports torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro import locks, proctree
from repro.junit.files import InputRefused, file_kind, read_capped

CACHE_VAR = "REPRO_CACHE"
WHEELHOUSE_VAR = "REPRO_WHEELHOUSE"
#: Seconds one ``pip install`` may take before it counts as failed.
INSTALL_TIMEOUT_S = 300.0
#: Per-request network timeout (seconds) and retries handed to pip, so an unreachable index fails
#: within seconds and the case is skipped instead of hitting its own timeout.
PIP_NETWORK_TIMEOUT_S = 10
_COMPLETE = "repro-packages.json"
#: Version of the manifest format in ``repro-packages.json``; an entry with another is reinstalled.
MANIFEST_VERSION = 2
#: Largest manifest read (bytes): a few thousand files' hashes fit in well under this.
_MANIFEST_CAP = 16 * 1024 * 1024
#: Mode bits that must be clear on the cache directory and its entries (group/other write).
_FOREIGN_WRITE = stat.S_IWGRP | stat.S_IWOTH
_HASH_CHUNK = 1024 * 1024


class PackageInstallError(RuntimeError):
    """pip could not install the requirements; ``str(error)`` is pip's first error line."""


class CacheRefused(PackageInstallError):
    """The package cache cannot be used: not owned by the user, writable by others, read-only,
    full, or a lock that is not a regular file of the user's. ``str(error)`` names the path and
    the real cause (the OS's errno text)."""


@dataclass(frozen=True)
class Installed:
    """A cache directory holding ``requirements``.

    ``path`` goes first on ``PYTHONPATH``; ``install_s`` is the seconds spent in pip during
    this call (0.0 on a cache hit); ``cached`` tells a hit from a fresh install.
    """

    path: Path
    requirements: tuple[str, ...]
    install_s: float
    cached: bool


def cache_root() -> Path:
    """``$REPRO_CACHE`` or ``~/.cache/repro-matrix/packages``."""
    configured = os.environ.get(CACHE_VAR)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "repro-matrix" / "packages"


def wheelhouse() -> str | None:
    """``$REPRO_WHEELHOUSE`` when set and non-empty, else None (use the package index)."""
    return os.environ.get(WHEELHOUSE_VAR) or None


def cache_key(requirements: Sequence[str], source: str | None = None) -> str:
    """Directory name for ``requirements``: readable prefix plus a hash of everything that
    changes what pip would install (requirements, interpreter tag, machine, source).

    >>> cache_key(["wandb==0.27.2"], None).startswith("wandb-0.27.2-cp")
    True
    """
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    identity = json.dumps(
        {
            "requirements": sorted(requirements),
            "python": tag,
            "machine": platform.machine(),
            "source": source or "index",
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9.]+", "-", "_".join(sorted(requirements))).strip("-")[:60]
    return f"{readable}-{tag}-{digest}"


def first_error_line(output: str) -> str:
    """pip's first ``ERROR:`` line, else its last non-empty line (pip prints many warnings).

    pip reports an unexpected exception as a bare ``ERROR: Exception:`` followed by a traceback
    whose last line holds the cause (``OSError: [Errno 28] No space left on device`` on a full
    disk); that cause is appended so the message says what happened.
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if line.startswith("ERROR:"):
            if line.rstrip(":") in ("ERROR: Exception", "ERROR"):
                cause = [
                    x for x in lines[index + 1 :] if re.match(r"^[\w.]+(Error|Exception)\b", x)
                ]
                if cause:
                    return f"{line} {cause[-1]}"
            return line
    return lines[-1] if lines else "pip failed without output"


_os_cause = locks.os_cause


def _check_owned(path: Path, what: str, st: os.stat_result | None = None) -> None:
    """Raise :class:`CacheRefused` unless ``path`` (stat'ed through symlinks) is a directory
    owned by the effective user and not writable by group or others."""
    try:
        st = st or path.stat()
    except OSError as exc:
        raise CacheRefused(f"{what} {path}: {_os_cause(exc)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CacheRefused(f"{what} {path} is not a directory: refused")
    if st.st_uid != os.geteuid():
        raise CacheRefused(
            f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}): "
            "refused; set REPRO_CACHE to a directory of your own"
        )
    if st.st_mode & _FOREIGN_WRITE:
        raise CacheRefused(
            f"{what} {path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
            "refused; chmod go-w it or set REPRO_CACHE to a directory of your own"
        )


def trusted_root() -> Path:
    """:func:`cache_root`, created (mode 0700) when missing and checked: owned by the user, not
    writable by others, and writable by the user. Raises :class:`CacheRefused` with the cause."""
    root = cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise CacheRefused(f"package cache {root}: {_os_cause(exc)}") from None
    _check_owned(root, "package cache")
    return root


def _locked(root: Path, name: str) -> contextlib.AbstractContextManager[None]:
    """Hold an exclusive flock on ``root/<name>.lock``, opened without following symlinks
    (``repro.locks.exclusive``: a planted symlink is removed, never followed; anything else that
    is not a regular file of the user's raises :class:`CacheRefused`)."""
    return locks.exclusive(root / f"{name}.lock", CacheRefused, "package cache lock")


def _lock_is_free(root: Path, name: str) -> bool:
    """True when nobody holds ``root/<name>.lock`` (so its partial directories are orphans)."""
    return locks.is_free(root / f"{name}.lock")


def sweep_stale(root: Path, holding: str | None = None) -> list[str]:
    """Remove ``<key>.partial-<pid>`` and ``<key>.refused-<pid>`` directories whose key's lock is
    free (their installer died) or is ``holding`` (the key whose lock the caller holds: nobody
    else can be filling it). Judged by the lock, not by pid, so an installer in another pid
    namespace sharing the cache is never taken for dead. Returns the names removed."""
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        match = re.fullmatch(r"(.+)\.(?:partial|refused)-\d+", name)
        if not match:
            continue
        key = match.group(1)
        if key == holding or _lock_is_free(root, key):
            shutil.rmtree(root / name, ignore_errors=True)
            removed.append(name)
    return removed


def _sha256(path: Path) -> str:
    """``sha256:<hex>`` of the regular file ``path``, or ``special:<kind>`` when it is not one
    (a FIFO or device planted in an entry is never opened for a blocking read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"special:{file_kind(mode)}"
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def manifest(entry: Path) -> dict[str, str]:
    """``{relative path: "sha256:<hex>" or "link:<target>"}`` for every file and symlink under
    ``entry`` except the manifest itself (directories are implied by their files); anything else
    (a FIFO, a device, a socket) is ``special:<kind>``, which no published manifest holds."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(entry):
        base = Path(folder)
        for name in dirs + files:
            path = base / name
            rel = path.relative_to(entry).as_posix()
            if path.is_symlink():
                out[rel] = f"link:{os.readlink(path)}"
            elif name in files and rel != _COMPLETE:
                out[rel] = _sha256(path)
    return out


def verify(entry: Path, requirements: Sequence[str], source: str | None) -> str | None:
    """Why the published entry ``entry`` must not be used, or None when it may.

    It must be a directory owned by the user and not writable by others, hold a manifest for
    ``requirements`` and ``source``, and every file's hash and every symlink's target must match
    the manifest (no file added or missing).
    """
    try:
        st = entry.lstat()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return _os_cause(exc)
    if stat.S_ISLNK(st.st_mode):
        return "the entry is a symlink"
    try:
        _check_owned(entry, "entry", st)
    except CacheRefused as exc:
        return str(exc)
    marker = entry / _COMPLETE
    try:
        if marker.is_symlink():
            return "its manifest is a symlink"
        recorded = json.loads(read_capped(marker, _MANIFEST_CAP))
    except InputRefused as exc:
        return f"no readable manifest ({exc})"
    except (OSError, ValueError, RecursionError) as exc:
        return f"no readable manifest ({exc.__class__.__name__})"
    if not isinstance(recorded, dict) or recorded.get("version") != MANIFEST_VERSION:
        return "its manifest is not a version-2 manifest"
    if recorded.get("requirements") != list(requirements):
        return "its manifest names other requirements"
    if recorded.get("source") != (source or "index"):
        return "its manifest names another package source"
    try:
        found = manifest(entry)
    except OSError as exc:
        return f"cannot be read: {_os_cause(exc)}"
    if found != recorded.get("files"):
        expected = recorded.get("files") if isinstance(recorded.get("files"), dict) else {}
        differing = sorted(set(found.items()) ^ set(expected.items()))
        first = differing[0][0] if differing else "?"
        return f"{len(differing)} file(s) differ from its manifest (first: {first})"
    return None


def pip_command(target: Path, requirements: Sequence[str], source: str | None) -> list[str]:
    """The ``pip install --target`` command line (dependencies included); :func:`_run_pip` runs
    it tied to the calling process (``repro.proctree.tied``)."""
    command = [
        sys.executable, "-m", "pip",
        "install", "--quiet", "--no-input",
        "--disable-pip-version-check", "--no-warn-script-location",
        "--retries", "0", "--timeout", str(PIP_NETWORK_TIMEOUT_S),
        "--target", str(target),
    ]  # fmt: skip
    if source:
        command += ["--no-index", "--find-links", source]
    return command + list(requirements)


def _run_pip(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Run pip in its own session under ``PR_SET_PDEATHSIG`` (it dies with the case that
    started it); its whole process group is SIGKILLed on timeout and on any exception in the
    caller (KeyboardInterrupt included), so no installer outlives the call
    (``repro.proctree.run_bounded`` with ``tie``)."""
    return proctree.run_bounded(argv, timeout_s=timeout_s, tie=True)


def ensure(requirements: Sequence[str], timeout_s: float = INSTALL_TIMEOUT_S) -> Installed:
    """Return a verified cache directory holding ``requirements``, installing them on a miss.

    Concurrent callers for the same key wait on a lock file, so pip runs once. An entry that
    fails :func:`verify` is moved aside (removed once its lock is free) and installed afresh.
    Raises :class:`PackageInstallError` (pip's first error line) when pip fails or runs past
    ``timeout_s`` seconds, and :class:`CacheRefused` (its subclass) when the cache cannot be
    trusted or written (path and errno text).
    """
    requirements = tuple(requirements)
    source = wheelhouse()
    root = trusted_root()
    final = root / cache_key(requirements, source)
    with _locked(root, final.name):
        sweep_stale(root, holding=final.name)
        if os.path.lexists(final):
            reason = verify(final, requirements, source)
            if reason is None:
                return Installed(final, requirements, 0.0, cached=True)
            print(f"repro: package cache entry {final} refused: {reason}; reinstalling",
                  file=sys.stderr)  # fmt: skip
            try:
                os.replace(final, root / f"{final.name}.refused-{os.getpid()}")
            except OSError as exc:
                raise CacheRefused(f"package cache entry {final}: {_os_cause(exc)}") from None
            sweep_stale(root, holding=final.name)
        staging = root / f"{final.name}.partial-{os.getpid()}"
        started = time.monotonic()
        try:
            done = _run_pip(pip_command(staging, requirements, source), timeout_s)
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise PackageInstallError(
                f"pip install {' '.join(requirements)} ran past {timeout_s:g} s"
            ) from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        elapsed = time.monotonic() - started
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            message = first_error_line(done.stderr + "\n" + done.stdout)
            if re.search(r"\[Errno (28|30|13|122)\]", message):  # ENOSPC, EROFS, EACCES, EDQUOT
                raise CacheRefused(f"package cache {root}: {message}")
            raise PackageInstallError(message)
        try:
            files = manifest(staging)
            (staging / _COMPLETE).write_text(
                json.dumps(
                    {
                        "version": MANIFEST_VERSION,
                        "requirements": list(requirements),
                        "source": source or "index",
                        "files": files,
                    }
                )
            )
            os.chmod(staging, 0o755)
            os.replace(staging, final)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise CacheRefused(f"package cache {root}: {_os_cause(exc)}") from None
        return Installed(final, requirements, elapsed, cached=False)


def child_env(installed: Installed, env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default: ``os.environ``) with ``installed.path`` first on PYTHONPATH."""
    out = dict(os.environ if env is None else env)
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(installed.path), rest) if p)
    return out


def size_bytes(path: Path) -> int:
    """Total bytes of the regular files under ``path`` (what a cache entry costs on disk)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
