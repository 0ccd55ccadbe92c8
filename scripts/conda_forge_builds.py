"""Generate compat-extra ``conda_forge_builds`` from a conda-forge feedstock's git history.

Input: a clone of https://github.com/conda-forge/pytorch-cpu-feedstock (the feedstock that builds
conda-forge's ``pytorch`` package, CPU and CUDA) or conda-forge/torchvision-feedstock. For every commit on the default branch's
first-parent line (each one a merge to what conda-forge's CI builds and uploads) it reads the
recipe's version (recipe/meta.yaml or recipe/recipe.yaml) and the rendered build matrix
(.ci_support/<platform>_*.yaml: ``cuda_compiler_version``, ``python`` and ``channel_targets`` of
each job) and whether it builds a package named ``pytorch``. From those
snapshots (:func:`snapshots`, also written with ``--record`` as the recorded input of the test) it
derives, per conda platform, each version with the first day the branch built it there, its CUDA
builds and its CPython versions (:func:`table`).

    python scripts/conda_forge_builds.py PYTORCH_FEEDSTOCK > /tmp/pytorch.yaml
    python scripts/conda_forge_builds.py TORCHVISION_FEEDSTOCK --package torchvision
    python scripts/conda_forge_builds.py PYTORCH_FEEDSTOCK --record snapshots.json

The output is one package's block of compat-extra ``conda_forge_builds`` (``  <package>:``).

What the matrix says is what conda-forge's CI built; a job can fail and upload nothing, and some
CUDA builds were uploaded by hand later (the feedstock's README), so a (version, platform) pair
here is a build conda-forge meant to publish from that day. Maintenance branches (vX.Y) are not
read: a version built only there is missing.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

#: .ci_support file name prefix -> the platform names of repro's facts (Host.wheel_platform).
PLATFORMS = {
    "linux_64": "linux",
    "linux_aarch64": "linux-aarch64",
    "linux_ppc64le": "linux-ppc64le",
    "osx_64": "macos",
    "osx_arm64": "macos-arm64",
    "win_64": "windows",
    # conda-smithy's names before 2020 (x86_64 only): linux_python3.6.yaml, osx_..., win_...
    "linux": "linux",
    "osx": "macos",
    "win": "windows",
}
#: The recipe's version: conda-build's meta.yaml (``{% set version = "X" %}``) or rattler-build's
#: recipe.yaml (``context:`` ``version: "X"``).
VERSION = re.compile(r'{%\s*set\s+version\s*=\s*"([^"]+)"\s*%}|^\s+version:\s*"([^"$]+)"', re.M)
RECIPES = ("recipe/meta.yaml", "recipe/recipe.yaml")


def builds_package(meta: str, package: str) -> bool:
    """Whether the recipe text builds a package named ``package`` (pytorch's recipe built
    ``pytorch-cpu`` before 2020-12-17)."""
    name = re.escape(package)
    return bool(re.search(rf"^\s*(?:-\s*)?name:\s*{name}\s*(?:#.*)?$", meta, re.M))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def config(name: str, text: str) -> dict[str, Any] | None:
    """One .ci_support job: ``{"platform", "cuda" (None for CPU), "python": [X.Y, ...], "label"
    (the channel label it uploads to: main is what ``-c conda-forge`` reads)}`` or None
    for a file that is not a job of a known platform. CPython only (PyPy jobs are left out)."""
    prefix = next((p for p in PLATFORMS if name.startswith(p + "_")), None)
    if prefix is None:
        return None
    data = yaml.safe_load(text) or {}
    cuda = [str(c) for c in data.get("cuda_compiler_version") or ["None"]]
    pythons = []
    for value in data.get("python") or ():
        match = re.match(r"(\d+\.\d+)", str(value))
        if match and "pypy" not in str(value):
            pythons.append(match.group(1))
    targets = [str(t) for t in data.get("channel_targets") or ["conda-forge main"]]
    return {
        "platform": PLATFORMS[prefix],
        "cuda": None if cuda[0] in ("None", "") else cuda[0],
        "python": sorted(set(pythons), key=_key),
        "label": targets[0].split()[-1],
    }


def snapshots(repo: Path, branch: str = "HEAD", package: str = "pytorch") -> list[dict[str, Any]]:
    """Each first-parent commit of ``branch`` (oldest first) as ``{"commit", "day", "version",
    "pytorch" (whether the recipe builds ``package``), "configs"}``; blobs are read once per
    content."""
    out, seen = [], {}
    for row in _git(repo, "log", "--first-parent", "--reverse", "--format=%H %ad",
                    "--date=short", branch).splitlines():  # fmt: skip
        commit, day = row.split()
        meta = ""
        for recipe in RECIPES:
            try:
                meta = _git(repo, "show", f"{commit}:{recipe}")
                break
            except subprocess.CalledProcessError:
                continue
        match = VERSION.search(meta)
        if not match:
            continue
        configs = []
        tree = _git(repo, "ls-tree", commit, ".ci_support/").splitlines()
        for line in tree:
            meta_part, path = line.split("\t", 1)
            blob = meta_part.split()[2]
            name = path.rsplit("/", 1)[-1]
            if not name.endswith(".yaml"):
                continue
            if blob not in seen:
                seen[blob] = config(name, _git(repo, "cat-file", "-p", blob))
            if seen[blob] is not None:
                configs.append(seen[blob])
        out.append(
            {
                "commit": commit[:10],
                "day": day,
                "version": match.group(1) or match.group(2),
                "pytorch": builds_package(meta, package),
                "configs": configs,
            }
        )
    return out


def _key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.]", text))


def table(snaps: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """platform -> version -> ``{"day": first day the branch built it there, "cuda": [X.Y, ...]
    (CUDA builds, [] for CPU only), "python": [X.Y, ...]}`` (unions over the commits that built
    that version). Left out: release candidates (``rc``), commits whose recipe builds no
    package named ``pytorch`` and jobs that upload to a label other than main."""
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for snap in snaps:
        version = str(snap["version"])
        if "rc" in version or not snap.get("pytorch"):
            continue
        for job in snap["configs"]:
            if job.get("label", "main") != "main":
                continue
            entry = result.setdefault(job["platform"], {}).setdefault(
                version, {"day": snap["day"], "cuda": [], "python": []}
            )
            if job["cuda"] and job["cuda"] not in entry["cuda"]:
                entry["cuda"] = sorted([*entry["cuda"], job["cuda"]], key=_key)
            entry["python"] = sorted(set(entry["python"]) | set(job["python"]), key=_key)
    return {
        p: dict(sorted(v.items(), key=lambda kv: _key(kv[0]))) for p, v in sorted(result.items())
    }


def render(built: dict[str, dict[str, dict[str, Any]]], package: str = "pytorch") -> str:
    """The table as the compat-extra YAML block under ``conda_forge_builds.<package>`` (flow
    style, one version a line)."""
    lines = [f"  {package}:"]
    for platform, versions in built.items():
        lines.append(f"    {platform}:")
        for version, entry in versions.items():
            cuda = ", ".join(f'"{c}"' for c in entry["cuda"])
            python = ", ".join(f'"{p}"' for p in entry["python"])
            lines.append(
                f'      "{version}": {{day: "{entry["day"]}", cuda: [{cuda}], python: [{python}]}}'
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "feedstock", type=Path, help="a clone (or bare repository) of the feedstock"
    )
    parser.add_argument("--branch", default="HEAD")
    parser.add_argument("--package", default="pytorch", help="the package the feedstock builds")
    parser.add_argument("--record", type=Path, help="write the snapshots as JSON here")
    args = parser.parse_args(argv)
    snaps = snapshots(args.feedstock, args.branch, args.package)
    if args.record:
        args.record.write_text(json.dumps(snaps, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(render(table(snaps), args.package))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
