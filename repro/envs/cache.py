"""Make a venv-lane environment, or reuse the one already made for the same content key.

Layout: ``<root>/<key>/`` is the virtual environment; ``<root>/<key>/repro-env.json`` (written
last, atomically) records the spec, the installed versions of the pinned packages and, for
torch, ``torch.version.git_version``. An environment without that record is unfinished (a
crash, Ctrl-C, a failed install) and is made again. ``<root>/<key>.lock`` serialises two
processes making the same environment. The root is ``$REPRO_ENV_CACHE``, else
``$XDG_CACHE_HOME/repro-matrix/envs``, else ``~/.cache/repro-matrix/envs``: never inside the
user's own interpreter, which the venv lane exists not to touch.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.envs import uv as uv_mod
from repro.envs.spec import EnvSpec
from repro.errors import FatalError

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


def read_record(env_dir: Path) -> dict[str, Any] | None:
    """The record of a finished environment, or None (none, unreadable, or interpreter gone)."""
    try:
        record = json.loads((env_dir / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not os.path.exists(uv_mod.python_in(str(env_dir))):
        return None
    return record


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace"
    )
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
    FatalError when there is no uv or the root is not writable; an unfinished environment is
    removed, so the next call starts clean.
    """
    say = say or (lambda line: None)
    started = time.monotonic()
    root = Path(root or env_root())
    key = spec.key()
    env_dir = root / key
    record = read_record(env_dir)
    if record is not None:
        return Env(
            env_dir, uv_mod.python_in(str(env_dir)), key, True, time.monotonic() - started, record
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FatalError(f"cannot create the environment cache {root}: {exc.strerror}") from None
    with _locked(root / f"{key}.lock"):
        record = read_record(env_dir)  # made by another process while this one waited
        if record is not None:
            return Env(
                env_dir,
                uv_mod.python_in(str(env_dir)),
                key,
                True,
                time.monotonic() - started,
                record,
            )
        if env_dir.exists():
            shutil.rmtree(env_dir)
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
    probe = subprocess.run(
        [python, "-c", _PROBE, *names], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if probe.returncode != 0:
        raise uv_mod.InstallFailed(
            f"the new environment's Python does not run: {probe.stderr.strip()[-300:]}",
            uv_mod.INSTALL_FAILED,
        )
    facts = json.loads(probe.stdout)
    Path(facts["purelib"], PTH_NAME).write_text(_project_dir(spec, root) + "\n")
    record = {
        "schema": 1,
        "key": spec.key(),
        "spec": spec.to_json(),
        "python": facts["python"],
        "versions": facts["versions"],
        "git_versions": facts["git_versions"],
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp = env_dir / f".{RECORD}.tmp"
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, env_dir / RECORD)
    return record
