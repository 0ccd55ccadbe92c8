"""Make a venv-lane environment, or reuse the one already made for the same content key.

Layout: ``<root>/<key>/`` is the virtual environment; ``<root>/<key>/repro-env.json`` (written
last, atomically) records the spec, the installed versions of the pinned packages, for torch
``torch.version.git_version``, and the environment's manifest (``repro.envs.manifest``: the
interpreter's real path and SHA-256, the installed distributions, the ``.pth`` files). At every
use the manifest is checked against the files before anything in the environment runs; an
environment that fails the check (changed since it was made, or never finished: a crash, a
kill, Ctrl-C) is moved aside to ``<root>/<key>.moved-<time>-<pid>`` (kept, never deleted: the
message names it) and made again, never run (issue 32). ``<root>/<key>.lock`` serialises two
processes making the same environment; it is opened without following links
(``repro.locks``). A ``<root>/<key>`` that is a symlink is refused, naming it. uv runs tied to
this process (``repro.proctree.tied``): killed with it, even by SIGKILL, so no installer keeps
writing an environment the next run makes again. The root is ``$REPRO_ENV_CACHE``, else
``$XDG_CACHE_HOME/repro-matrix/envs``, else ``~/.cache/repro-matrix/envs``: never inside the
user's own interpreter, which the venv lane exists not to touch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import locks, proctree
from repro.envs import manifest
from repro.envs import uv as uv_mod
from repro.envs.spec import EnvSpec
from repro.errors import FatalError
from repro.junit.files import InputRefused, read_capped

RECORD = "repro-env.json"
PTH_NAME = "zz_repro_matrix.pth"
#: Run inside a new environment: where its site-packages is, and what the pins installed.
#: torch's git commit is read from ``torch/version.py`` as text (importing torch costs seconds).
_PROBE = r"""
import importlib.metadata as md, json, re, sys, sysconfig
names = sys.argv[1:]
out = {"purelib": sysconfig.get_paths()["purelib"], "python": sys.version.split()[0],
       "versions": {}, "git_versions": {}}
for name in names:
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    out["versions"][name] = dist.version
    if name == "torch":
        try:
            text = open(dist.locate_file("torch/version.py")).read()
            found = re.search(r"git_version\s*=\s*['\"]([0-9a-f]+)['\"]", text)
            if found:
                out["git_versions"][name] = found.group(1)
        except OSError:
            pass
print(json.dumps(out))
"""

Say = Callable[[str], None]


@dataclass
class Env:
    """A ready environment: its directory, interpreter, key, whether it was reused, the seconds
    :func:`ensure_env` took, and its record (``versions``: name -> version of each pin;
    ``git_versions``: name -> commit, for torch)."""

    path: Path
    python: str
    key: str
    reused: bool
    seconds: float
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def versions(self) -> dict[str, str]:
        return dict(self.record.get("versions") or {})

    @property
    def git_versions(self) -> dict[str, str]:
        return dict(self.record.get("git_versions") or {})


def env_root() -> Path:
    """Where environments are kept (see the module docstring)."""
    explicit = os.environ.get("REPRO_ENV_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(cache) / "repro-matrix" / "envs"


def requirement_name(requirement: str) -> str:
    """``torch==2.13.0`` -> ``torch`` (PEP 508 name, normalised)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(requirement).name)


#: Largest record read (bytes): a manifest of a few thousand distributions fits well under it.
MAX_RECORD_BYTES = 16 * 1024 * 1024
#: Seconds the new environment's interpreter may take to report its site-packages and pins.
PROBE_TIMEOUT_S = 300.0


def read_record(env_dir: Path) -> dict[str, Any] | None:
    """The record of a finished environment, or None (none, unreadable, not a regular file
    within :data:`MAX_RECORD_BYTES`, not a JSON object)."""
    try:
        record = json.loads(read_capped(env_dir / RECORD, MAX_RECORD_BYTES))
    except (InputRefused, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _refuse_link(env_dir: Path) -> None:
    """Raise FatalError naming ``env_dir`` when it is a symbolic link: the cache never runs,
    fills or removes an environment through a link (issue 32: "Cannot call rmtree on a
    symbolic link", no path named)."""
    if env_dir.is_symlink():
        raise FatalError(
            f"environment cache entry {env_dir} is a symbolic link (to {os.readlink(env_dir)}): "
            "refused; remove the link or choose another --env-cache"
        )


def _usable(env_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, None)`` when the environment at ``env_dir`` may be used, ``(None, why)``
    when something is there that must not be (``repro.envs.manifest.verify``), ``(None, None)``
    when nothing is. Raises FatalError for a symlink (:func:`_refuse_link`)."""
    if not os.path.lexists(env_dir):
        return None, None
    _refuse_link(env_dir)
    if not env_dir.is_dir():
        return None, "it is not a directory"
    record = read_record(env_dir)
    why = manifest.verify(env_dir, record)
    return (record, None) if why is None else (None, why)


def _move_aside(env_dir: Path, root: Path, key: str) -> Path:
    """Rename the environment ``env_dir`` to ``<root>/<key>.moved-<UTC time>-<pid>`` (never
    deleted: the user may want to see what changed) and return the new path. FatalError when
    it cannot be renamed."""
    moved = root / f"{key}.moved-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"
    try:
        os.replace(env_dir, moved)
    except OSError as exc:
        raise FatalError(
            f"environment {env_dir} cannot be used and cannot be moved aside: {locks.os_cause(exc)}"
        ) from None
    return moved


def _run(command: list[str], what: str) -> None:
    """Run a uv command tied to this process (it dies with it); InstallFailed when it fails."""
    done = proctree.run_bounded(command, timeout_s=None, tie=True)
    if done.returncode != 0:
        output = (done.stderr or "") + (done.stdout or "")
        tail = "\n".join(output.strip().splitlines()[-12:])
        reason = uv_mod.classify_failure(output)
        said = " ".join(
            line.strip() for line in output.splitlines() if not line.startswith("Using Python")
        )
        raise uv_mod.InstallFailed(
            f"{what} failed ({reason}, uv exit status {done.returncode}): {said[:600] or 'no output'}",
            reason,
            tail,
        )


def _project_dir(spec: EnvSpec, root: Path) -> str:
    """The directory to put on the environment's ``sys.path``: the checkout itself, or for an
    installed repro (no pyproject.toml beside it) a directory holding only a link to it, so
    the host's other site-packages never leak into the environment."""
    project = Path(spec.project_root)
    if (project / "pyproject.toml").is_file() or not (project / "repro").is_dir():
        return str(project)
    shim = root / "project" / spec.project_version
    shim.mkdir(parents=True, exist_ok=True)
    link = shim / "repro"
    if not link.exists():
        link.symlink_to(project / "repro", target_is_directory=True)
    return str(shim)


def ensure_env(
    spec: EnvSpec, root: Path | None = None, say: Say | None = None, uv: str | None = None
) -> Env:
    """The environment for ``spec``: reused when ``<root>/<key>`` has its record, else made
    with uv (the venv, the pinned requirements, the project's requirements, the ``.pth``).

    Raises :class:`repro.envs.uv.InstallFailed` (with an ``infra.*`` reason) when uv fails, and
    FatalError when there is no uv, the root is not writable, ``<root>/<key>`` is a symlink or
    its lock cannot be used. An environment this call fails to make is removed (it holds
    nothing else); one found changed or unfinished is moved aside (:func:`_move_aside`) and made
    again, never run.
    """
    say = say or (lambda line: None)
    started = time.monotonic()
    root = Path(root or env_root())
    key = spec.key()
    env_dir = root / key
    record, _why = _usable(env_dir)
    if record is not None:
        return Env(
            env_dir, uv_mod.python_in(str(env_dir)), key, True, time.monotonic() - started, record
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FatalError(f"cannot create the environment cache {root}: {exc.strerror}") from None
    with locks.exclusive(root / f"{key}.lock", FatalError, "environment cache lock"):
        record, why = _usable(env_dir)  # made by another process while this one waited
        if record is not None:
            return Env(
                env_dir,
                uv_mod.python_in(str(env_dir)),
                key,
                True,
                time.monotonic() - started,
                record,
            )
        if why is not None:
            moved = _move_aside(env_dir, root, key)
            say(
                f"environment {key} not used: {why}; moved aside to {moved} (kept: remove it "
                "when you no longer need it), making it again"
            )
        binary = uv or uv_mod.find_uv()
        cmds = uv_mod.commands(
            binary,
            spec.python,
            str(env_dir),
            list(spec.pinned),
            spec.source,
            list(spec.project_requirements),
        )
        say(f"making environment {key}: {' '.join(spec.pinned)}, Python {spec.python}")
        try:
            _run(cmds.venv, f"uv venv --python {spec.python}")
            _run(cmds.pinned, f"installing {' '.join(spec.pinned)}")
            if cmds.project:
                _run(cmds.project, "installing repro-matrix's requirements")
            record = _finish(spec, env_dir, root)
        except BaseException:
            shutil.rmtree(env_dir, ignore_errors=True)
            raise
    return Env(
        env_dir, uv_mod.python_in(str(env_dir)), key, False, time.monotonic() - started, record
    )


def _finish(spec: EnvSpec, env_dir: Path, root: Path) -> dict[str, Any]:
    python = uv_mod.python_in(str(env_dir))
    names = [requirement_name(r) for r in spec.pinned]
    try:
        probe = proctree.run_bounded(
            [python, "-c", _PROBE, *names], timeout_s=PROBE_TIMEOUT_S, tie=True
        )
    except subprocess.TimeoutExpired:
        raise uv_mod.InstallFailed(
            f"the new environment's Python did not answer within {PROBE_TIMEOUT_S:g} s",
            uv_mod.INSTALL_FAILED,
        ) from None
    if probe.returncode != 0:
        raise uv_mod.InstallFailed(
            f"the new environment's Python does not run: {probe.stderr.strip()[-300:]}",
            uv_mod.INSTALL_FAILED,
        )
    facts = json.loads(probe.stdout)
    Path(facts["purelib"], PTH_NAME).write_text(_project_dir(spec, root) + "\n")
    try:
        site_packages = manifest.relative_site_packages(env_dir, facts["purelib"])
    except ValueError:
        raise uv_mod.InstallFailed(
            f"the new environment's site-packages {facts['purelib']} is outside it",
            uv_mod.INSTALL_FAILED,
        ) from None
    record = {
        "schema": 1,
        "key": spec.key(),
        "spec": spec.to_json(),
        "python": facts["python"],
        "versions": facts["versions"],
        "git_versions": facts["git_versions"],
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # last: what the files hold once everything above is installed and written
        "manifest": manifest.collect(env_dir, site_packages),
    }
    tmp = env_dir / f".{RECORD}.tmp"
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, env_dir / RECORD)
    return record
