"""Wheel availability on PyPI per release x platform x CPython, read from PyPI's JSON API, and
the check that the facts repro check uses agree with it (issue 30, round ten).

Inputs: ``https://pypi.org/pypi/<name>/json`` for torch, torchvision and torchaudio (every file
of every release with its ``filename``, ``upload_time``, ``yanked``, ``requires_python`` and
``packagetype``), saved as ``DIR/<name>.json``:

    curl -sS -o DIR/torch.json https://pypi.org/pypi/torch/json      # likewise torchvision, torchaudio
    python scripts/pypi_wheels.py check DIR        # the facts against PyPI; exit 1 on a difference
    python scripts/pypi_wheels.py companions DIR   # compat-extra companion_pypi_wheels as YAML

What it derives (the facts it checks, all in repro/data):

- ``pypi_python`` (compat-facts-history.yaml): per torch release, the wheel platform -> the
  CPython versions PyPI has a wheel of it for (``linux`` manylinux/linux x86_64, ``linux-aarch64``,
  ``macos`` x86_64, ``macos-arm64``, ``windows`` win_amd64, ``windows-arm64``);
- ``pypi_wheels_later`` (compat-extra): torch wheels uploaded after the release's first file
  ('platform python' -> that day);
- ``companion_pypi_wheels`` (compat-extra): the same per torchvision/torchaudio release, with the
  release's first upload ``day`` and ``yanked`` when every file is.

CPython versions of a file: its ``cpXY`` tags; an ``abi3`` wheel from its floor up; a pure
``py2``/``py3`` wheel every Python of :data:`PYTHONS` of that major, each cut to the file's
Requires-Python (a ``cpXY`` wheel is not cut: pip checks Requires-Python, but a release's
``cpXY`` wheels agree with it). Free-threaded ``cpXYt`` wheels, 32-bit Windows and other machines are left out
(no host of the corpus runs them). The JSON API shows today's files: files deleted from PyPI
(every torch before 1.0.0) are invisible, so a release missing here is not checked.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

#: Every CPython a pure or abi3 wheel stands for (the versions the corpus' hosts run).
PYTHONS = ("2.7", *(f"3.{minor}" for minor in range(5, 16)))
#: Platform tag (after the manylinux/macosx version) -> the facts' wheel platform.
_PLATFORMS = (
    (re.compile(r"^(many)?linux.*_x86_64$"), "linux"),
    (re.compile(r"^(many)?linux.*_aarch64$"), "linux-aarch64"),
    (re.compile(r"^macosx_.*_x86_64$"), "macos"),
    (re.compile(r"^macosx_.*_arm64$"), "macos-arm64"),
    (re.compile(r"^win_amd64$"), "windows"),
    (re.compile(r"^win_arm64$"), "windows-arm64"),
)
ALL_PLATFORMS = ("linux", "linux-aarch64", "macos", "macos-arm64", "windows", "windows-arm64")


def platforms_of(tag: str) -> tuple[str, ...]:
    """The facts' wheel platforms a wheel platform tag serves: ``any`` -> every one,
    ``macosx_10_9_universal2`` -> both macOS machines, others by :data:`_PLATFORMS`; () for a
    machine no fact covers (``win32``, ``linux_i686``, ``linux_ppc64le``)."""
    if tag == "any":
        return ALL_PLATFORMS
    if tag.startswith("macosx_") and tag.endswith(("_universal2", "_universal")):
        return ("macos", "macos-arm64")
    return tuple(name for pattern, name in _PLATFORMS if pattern.match(tag))


def pythons_of(filename: str, requires_python: str | None) -> tuple[tuple[str, str], ...]:
    """(platform, CPython "X.Y") pairs one wheel file serves (() for an sdist, a free-threaded
    ``cpXYt`` wheel or a machine no fact covers). Raises ValueError for a malformed wheel name."""
    if not filename.endswith(".whl"):
        return ()
    try:
        _name, _version, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise ValueError(f"{filename}: not a wheel file name ({exc})") from exc
    try:
        allowed = SpecifierSet(requires_python or "")
    except InvalidSpecifier:
        allowed = SpecifierSet()
    out: set[tuple[str, str]] = set()
    for tag in tags:
        if re.fullmatch(r"cp\d+t", tag.abi):  # free-threaded
            continue
        platforms = platforms_of(tag.platform)
        found = re.fullmatch(r"(cp|py)(\d)(\d*)", tag.interpreter)
        if not platforms or not found:
            continue
        kind, major, minor = found.groups()
        if kind == "cp" and tag.abi != "abi3":
            pythons = [f"{major}.{minor}"]
        elif kind == "cp":  # abi3: this CPython and every later one
            pythons = [p for p in PYTHONS if p.startswith(major + ".") and _ge(p, major, minor)]
        else:  # pure: every Python of the major (py3), or from pyXY up
            pythons = [
                p
                for p in PYTHONS
                if p.startswith(major + ".") and (not minor or _ge(p, major, minor))
            ]
        for python in pythons:
            if (kind == "cp" and tag.abi != "abi3") or _admits(allowed, python):
                out.update((platform, python) for platform in platforms)
    return tuple(sorted(out))


def _admits(allowed: SpecifierSet, python: str) -> bool:
    """Whether Requires-Python admits some release of CPython ``python`` (X.Y.0 or a late
    patch: ``>=3.6.1`` admits 3.6)."""
    return not str(allowed) or any(
        allowed.contains(f"{python}.{patch}", prereleases=True) for patch in (0, 99)
    )


def _ge(python: str, major: str, minor: str) -> bool:
    return Version(python) >= Version(f"{major}.{minor or 0}")


def release_table(files: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One release's files -> ``{"day", "wheels": {platform: [X.Y, ...]}, "later": {"platform
    X.Y": day}, "yanked"}`` (later: a (platform, Python) whose first wheel came after the
    release's first upload day; yanked: every file is); None for a release with no file."""
    files = list(files)
    if not files:
        return None
    day = min(str(f["upload_time"])[:10] for f in files)
    first: dict[tuple[str, str], str] = {}
    for f in files:
        when = str(f["upload_time"])[:10]
        for pair in pythons_of(str(f["filename"]), f.get("requires_python")):
            first[pair] = min(first.get(pair, when), when)
    wheels: dict[str, list[str]] = {}
    for platform, python in sorted(first, key=lambda p: (p[0], Version(p[1]))):
        wheels.setdefault(platform, []).append(python)
    later = {f"{p} {py}": d for (p, py), d in sorted(first.items()) if d > day}
    return {
        "day": day,
        "wheels": wheels,
        "later": later,
        "yanked": all(bool(f.get("yanked")) for f in files),
    }


def tables(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A package's PyPI JSON -> release -> :func:`release_table` (releases with files only)."""
    out = {}
    for release, files in (data.get("releases") or {}).items():
        table = release_table(files)
        if table is not None:
            out[str(release)] = table
    return out


def load(directory: Path, name: str) -> dict[str, dict[str, Any]]:
    path = directory / f"{name}.json"
    try:
        return tables(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: expected PyPI's JSON for {name} ({exc})") from exc


def check_torch(read: Mapping[str, Mapping[str, Any]], facts: Any, extra: Any) -> list[str]:
    """Differences between PyPI's torch files and ``pypi_python`` / ``pypi_wheels_later``."""
    problems = []
    for release, table in sorted(read.items(), key=lambda item: Version(item[0])):
        known = facts.get("pypi_python", release)
        if not isinstance(known, Mapping):
            problems.append(f"torch {release}: on PyPI, not in pypi_python")
            continue
        for platform in ALL_PLATFORMS:
            have = [str(p) for p in known.get(platform) or ()]
            pypi = table["wheels"].get(platform, [])
            if sorted(have, key=Version) != pypi:
                problems.append(f"torch {release} {platform}: pypi_python {have}, PyPI {pypi}")
        later = {str(k): str(v) for k, v in (extra.get("pypi_wheels_later", release) or {}).items()}
        if later != table["later"]:
            problems.append(f"torch {release}: pypi_wheels_later {later}, PyPI {table['later']}")
    return problems


def check_companion(name: str, read: Mapping[str, Mapping[str, Any]], extra: Any) -> list[str]:
    """Differences between PyPI's files of a companion and ``companion_pypi_wheels.<name>``."""
    problems = []
    known = extra.get("companion_pypi_wheels", name) or {}
    for release, table in sorted(read.items(), key=lambda item: Version(item[0])):
        entry = known.get(release)
        if not isinstance(entry, Mapping):
            problems.append(f"{name} {release}: on PyPI, not in companion_pypi_wheels")
            continue
        wheels = {str(p): str(v).split() for p, v in (entry.get("wheels") or {}).items()}
        later = {str(k): str(v) for k, v in (entry.get("later") or {}).items()}
        if str(entry.get("day")) != table["day"]:
            problems.append(f"{name} {release}: day {entry.get('day')}, PyPI {table['day']}")
        if wheels != table["wheels"]:
            problems.append(f"{name} {release}: wheels {wheels}, PyPI {table['wheels']}")
        if later != table["later"]:
            problems.append(f"{name} {release}: later {later}, PyPI {table['later']}")
        if bool(entry.get("yanked")) != table["yanked"]:
            problems.append(
                f"{name} {release}: yanked {entry.get('yanked')}, PyPI {table['yanked']}"
            )
    problems += [
        f"{name} {r}: in companion_pypi_wheels, not on PyPI" for r in known if r not in read
    ]
    return problems


def companion_yaml(name: str, read: Mapping[str, Mapping[str, Any]]) -> str:
    """``companion_pypi_wheels.<name>`` as the YAML lines of compat-extra.yaml."""
    lines = [f"  {name}:"]
    for release, table in sorted(read.items(), key=lambda item: Version(item[0])):
        wheels = ", ".join(f'{p}: "{" ".join(v)}"' for p, v in sorted(table["wheels"].items()))
        parts = [f'day: "{table["day"]}"', f"wheels: {{{wheels}}}"]
        if table["later"]:
            parts.append(
                "later: {" + ", ".join(f'"{k}": "{v}"' for k, v in table["later"].items()) + "}"
            )
        if table["yanked"]:
            parts.append("yanked: true")
        lines.append(f'    "{release}": {{{", ".join(parts)}}}')
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("check", "companions"))
    parser.add_argument("directory", type=Path, help="where <name>.json of PyPI's JSON API lie")
    args = parser.parse_args(argv)
    if args.what == "companions":
        for name in ("torchvision", "torchaudio"):
            print(companion_yaml(name, load(args.directory, name)))
        return 0
    from repro.compat.facts import default_facts, extra_facts

    facts, extra = default_facts(), extra_facts()
    problems = check_torch(load(args.directory, "torch"), facts, extra)
    for name in ("torchvision", "torchaudio"):
        problems += check_companion(name, load(args.directory, name), extra)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} differences between the facts and PyPI's JSON in {args.directory}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
