"""Replay every frozen set against the engine as it was when the set was frozen (issue 30).

A frozen set's score counts as held out only on an engine nobody changed after reading it. The
record of that is git: the commit that first added a set's file (its *freezing commit*) holds the
engine the set was first judged by. This benchmark checks out ``repro/`` of each freezing commit
(``git archive``, into a temporary directory), judges the set with it in a child interpreter
whose ``repro`` is that tree, and prints it beside the same set judged by today's tree, with
today's labels for both. It prints figures only (right / named wrong / unnamed for logs; agree,
wrong "pass" and unknown for install lines), never a text or a miss, so it may be run on sets
nobody has studied.

    python benchmarks/first_sight.py [--logs | --install] [--set NAME ...] [--engine REV]
    python benchmarks/first_sight.py --since REV [--logs | --install] [--set NAME ...]

``--engine REV`` judges every set with the engine of one revision instead of each set's own
freezing commit (for example the commit a round started from). ``--since REV`` prints one row
per engine along main's first-parent history from REV to HEAD (REV itself, then each commit or
merge that changed ``repro/``), so the effect of each merge on the sets nobody studied can be
read off one table. Raises SystemExit naming the set
whose file git does not know (a set not committed has no freezing commit). Exit status 0.

The figures are the ones the closing notes call "first sight": last stop's test8 (logs, b0025de)
68 right / 27 wrong / 13 unnamed, install test-half-8 (1360d93) 29 of 43.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class FrozenSet:
    """One frozen file of a corpus: ``kind`` ``logs`` or ``install``, ``name`` (the benchmark's
    split, with the file for an install half of several files), ``path`` (the labels, relative to
    the repository root)."""

    kind: str
    name: str
    path: str

    @property
    def key(self) -> str:
        """``kind/name``: unique across both corpora (each has a ``test8``)."""
        return f"{self.kind}/{self.name}"


def frozen_sets() -> list[FrozenSet]:
    """Every frozen file of the two corpora, in the benchmarks' order (their ``FROZEN`` tables)."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import classify_corpus, install_corpus

    sets = [
        FrozenSet(
            "logs", name, str((classify_corpus.SPLITS[name] / "corpus.yaml").relative_to(ROOT))
        )
        for name in sorted(classify_corpus.FROZEN, key=_order)
    ]
    for name in sorted(install_corpus.FROZEN, key=_order):
        files = install_corpus.HALVES[name]
        for path in files:
            label = name if len(files) == 1 else f"{name}:{path.name}"
            sets.append(FrozenSet("install", label, str(path.relative_to(ROOT))))
    return sets


def _order(name: str) -> int:
    digits = name.removeprefix("test")
    return int(digits) if digits else 1


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def freezing_commit(path: str) -> str:
    """The full hash of the commit that first added ``path`` (relative to the repository root).
    Raises SystemExit when git knows no such commit."""
    found = _git("log", "--diff-filter=A", "--format=%H", "--", path).splitlines()
    if not found:
        raise SystemExit(f"{path}: no commit adds this file: a set not committed is not frozen")
    return found[-1]


def extract_engine(rev: str, into: Path) -> Path:
    """``repro/`` of revision ``rev``, written under ``into``; returns ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "repro"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # git's own archive of a commit of this repository; the "data" filter where this Python
        # has it (3.11.4+, PEP 706)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(into, **safe)
    return into


def judge_with(engine_root: Path, sets: list[FrozenSet]) -> dict[str, Counter]:
    """Each set's figures (a Counter, by :attr:`FrozenSet.key`) judged by the ``repro`` package
    under ``engine_root``, in a child interpreter so that no module of another engine is loaded.
    Raises RuntimeError with the child's stderr when it fails."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(engine_root), str(ROOT)])}
    spec = json.dumps([{"kind": s.kind, "name": s.name, "path": s.path} for s in sets])
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(engine_root)],
        input=spec,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"judging with {engine_root} failed:\n{done.stderr[-3000:]}")
    return {name: Counter(row) for name, row in json.loads(done.stdout).items()}


def _child(engine_root: str) -> int:
    """In the child: judge the sets read from stdin; print their figures as one JSON object."""
    import repro

    where = Path(repro.__file__).resolve()
    if not where.is_relative_to(Path(engine_root).resolve()):
        raise SystemExit(f"repro resolved to {where}, not the engine under {engine_root}")
    sets = [FrozenSet(**raw) for raw in json.loads(sys.stdin.read())]
    out = {}
    for item in sets:
        out[item.key] = _logs(item) if item.kind == "logs" else _install(item)
    print(json.dumps(out))
    return 0


def _logs(item: FrozenSet) -> Counter:
    from benchmarks import classify_corpus

    counts: Counter = Counter()
    for entry in classify_corpus.load(ROOT / item.path):
        right, said = classify_corpus.judge(entry)
        counts[classify_corpus.outcome(entry, right, said)] += 1
    return counts


#: Host fields of an install entry and the ``repro.properties`` name that carries each; an
#: engine older than the name could not read the field, so the replay leaves it out.
_HOST_FIELDS = {
    "arch": "HOST_ARCH",
    "glibc": "HOST_GLIBC",
    "wsl2": "WSL2",
    "driver": "DRIVER_NVIDIA",
}


def _install(item: FrozenSet) -> Counter:
    from datetime import date

    from benchmarks import install_corpus
    from repro import properties
    from repro.compat import install_line
    from repro.compat.install_check import check_line
    from repro.errors import ConfigError

    accepted = inspect.signature(check_line).parameters
    counts: Counter = Counter()
    for entry in install_corpus.load(ROOT / item.path):
        host = {
            key: value
            for key, value in entry["host"].items()
            if key not in _HOST_FIELDS or hasattr(properties, _HOST_FIELDS[key])
        }
        optional = {
            "machine": host.get("arch"),
            "as_of": date.fromisoformat(str(entry["date"])),
            "bits": int(host.get("bits") or 64),
            "libc": host.get("libc"),
            "implementation": host.get("implementation"),
            "macos": host.get("macos"),
        }
        try:
            result = check_line(
                install_line.parse(entry["line"]),
                install_corpus.host_properties(host),
                str(host["python"]),
                host["platform"],
                **{key: value for key, value in optional.items() if key in accepted},
            )
            said = result.outcome
        except ConfigError:
            said = "refused"
        counts["lines"] += 1
        counts["agree"] += said == entry["outcome"]
        counts["wrong_pass"] += said == "pass" and entry["outcome"] == "fail"
        counts["unknown"] += said in ("unknown", "refused")
    return counts


def _row(kind: str, figures: Counter) -> str:
    if kind == "logs":
        total = sum(figures.values())
        return (
            f"{figures['right']:>3}/{figures['wrong']:>2}/{figures['unnamed']:>2}"
            f" {100 * figures['right'] / total:5.1f}% {100 * figures['wrong'] / total:5.1f}%w"
        )
    lines = figures["lines"]
    return (
        f"{figures['agree']:>3}/{lines:<3} {100 * figures['agree'] / lines:5.1f}%"
        f" pass-wrong {figures['wrong_pass']:>2} unknown {figures['unknown']:>2}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--logs", action="store_true", help="only the log corpora")
    which.add_argument("--install", action="store_true", help="only the install-line corpora")
    parser.add_argument(
        "--set", action="append", help="only this set (a split name; repeat for several)"
    )
    parser.add_argument(
        "--engine", help="judge every set with this revision's engine, not its freezing commit's"
    )
    parser.add_argument(
        "--since",
        metavar="REV",
        help="one row per engine on the first-parent history from REV to HEAD that changed repro/",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child)
    sets = [
        s
        for s in frozen_sets()
        if not (args.logs and s.kind != "logs")
        and not (args.install and s.kind != "install")
        and (not args.set or s.name.split(":")[0] in args.set)
    ]
    if not sets:
        parser.error("no frozen set matches")
    if args.since:
        return _history(args.since, sets)
    by_engine: dict[str, list[FrozenSet]] = {}
    for item in sets:
        rev = _git("rev-parse", args.engine) if args.engine else freezing_commit(item.path)
        by_engine.setdefault(rev, []).append(item)
    then: dict[str, Counter] = {}
    with tempfile.TemporaryDirectory(prefix="first-sight-") as tmp:
        for rev, items in by_engine.items():
            then.update(judge_with(extract_engine(rev, Path(tmp) / rev), items))
    now = judge_with(ROOT, sets)
    label = "engine " + args.engine if args.engine else "first sight"
    print(f"{'set':<24} {'kind':<8} {'engine':<10} {label:<40} today's tree")
    for item in sets:
        rev = next(r for r, items in by_engine.items() if item in items)
        print(
            f"{item.name:<24} {item.kind:<8} {rev[:9]:<10}"
            f" {_row(item.kind, then[item.key]):<40} {_row(item.kind, now[item.key])}"
        )
    return 0


def engines_since(rev: str) -> list[tuple[str, str]]:
    """``(full hash, subject)`` of ``rev``, then of each first-parent commit after it up to HEAD
    that changed ``repro/``, oldest first. Raises subprocess.CalledProcessError for an unknown
    revision."""
    first = _git("rev-parse", rev)
    rows = [(first, _git("log", "-1", "--format=%s", first))]
    listed = _git(
        "log", "--first-parent", "--reverse", "--format=%H %s", f"{first}..HEAD", "--", "repro"
    )
    for line in listed.splitlines():
        commit, _, subject = line.partition(" ")
        rows.append((commit, subject))
    return rows


def _history(rev: str, sets: list[FrozenSet]) -> int:
    """Print the figures of ``sets`` for each engine of :func:`engines_since`."""
    print(f"{'engine':<10} {'subject':<44} " + " ".join(f"{s.key:<24}" for s in sets))
    with tempfile.TemporaryDirectory(prefix="first-sight-") as tmp:
        for commit, subject in engines_since(rev):
            figures = judge_with(extract_engine(commit, Path(tmp) / commit), sets)
            cells = " ".join(f"{_cell(s.kind, figures[s.key]):<24}" for s in sets)
            print(f"{commit[:9]:<10} {subject[:44]:<44} {cells}")
    return 0


def _cell(kind: str, figures: Counter) -> str:
    if kind == "logs":
        return f"{figures['right']}/{figures['wrong']}/{figures['unnamed']}"
    return f"{figures['agree']}/{figures['lines']} pw{figures['wrong_pass']}"


if __name__ == "__main__":
    raise SystemExit(main())
