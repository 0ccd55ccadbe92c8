"""Classify the field corpus (tests/fixtures/field-logs/corpus.yaml) and print accuracy per family.

Each entry is a real log from a public issue, with its URL, the family a careful engineer files it
under and the signature repro should name (``clean``: "no failure found"). Classified as
``repro classify`` does with no host facts: the log's own host evidence decides (issue 21).

    python benchmarks/classify_corpus.py [--misses]

Exit status 0; the figures are for the closing note, the pass/fail gate is
tests/test_field_corpus.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "field-logs"
INDEX = CORPUS / "corpus.yaml"
#: ``expect`` of a log with no failure in it.
CLEAN = "clean"


@dataclass(frozen=True)
class Entry:
    """One corpus log: ``file`` (relative to the corpus directory), ``url`` (its public issue),
    ``family``, ``expect`` (a signature name or :data:`CLEAN`), ``message`` (a substring the
    decisive line must contain, or ``""``)."""

    file: str
    url: str
    family: str
    expect: str
    message: str = ""

    @property
    def path(self) -> Path:
        return CORPUS / self.file


def load(index: Path = INDEX) -> list[Entry]:
    """The corpus entries. Raises ValueError naming the entry and field that is missing."""
    data = yaml.safe_load(index.read_text(encoding="utf-8"))
    out = []
    for at, raw in enumerate(data["logs"]):
        for key in ("file", "url", "family", "expect"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise ValueError(f"{index}: logs[{at}].{key}: expected a non-empty string")
        out.append(
            Entry(raw["file"], raw["url"], raw["family"], raw["expect"], raw.get("message", ""))
        )
    return out


def judge(entry: Entry) -> tuple[bool, str]:
    """``(right, what repro said)`` for one entry, classified with no host facts."""
    from repro.signatures import engine

    with open(entry.path, "rb") as handle:
        found = engine.classify_stream(handle)
    said = CLEAN if found.clean else found.name
    right = said == entry.expect and (not entry.message or entry.message in found.message)
    return right, f"{said}: {found.message}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="print every wrong verdict")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    entries = load()
    total, right = Counter(), Counter()
    misses = []
    start = time.perf_counter()
    for entry in entries:
        ok, said = judge(entry)
        total[entry.family] += 1
        right[entry.family] += ok
        if not ok:
            misses.append(f"{entry.file}: expected {entry.expect}, got {said}")
    elapsed = time.perf_counter() - start
    print(f"{'family':<12} {'logs':>5} {'right':>6} {'accuracy':>9}")
    for family in sorted(total):
        share = 100 * right[family] / total[family]
        print(f"{family:<12} {total[family]:>5} {right[family]:>6} {share:>8.1f}%")
    all_right, all_logs = sum(right.values()), sum(total.values())
    print(f"{'all':<12} {all_logs:>5} {all_right:>6} {100 * all_right / all_logs:>8.1f}%")
    print(f"classified in {elapsed:.2f} s")
    if args.misses:
        for line in misses:
            print(f"  miss: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
