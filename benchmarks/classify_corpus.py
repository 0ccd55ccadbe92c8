"""Classify the field corpus and print its score per family.

Each entry is a real log from a public issue, with its URL, the family a careful engineer files it
under and the signature repro should name (``clean``: "no failure found"). Classified as
``repro classify`` does with no host facts: the log's own host evidence decides (issue 21).

Three corpora (issue 30): ``seen`` (tests/fixtures/field-logs/, the logs issue 21's rows were
written against), ``train`` (tests/fixtures/field-logs-train/, the half of issue 30's logs rows may
be written from) and ``test`` (tests/fixtures/field-logs-test/, the frozen half, run only to
measure). Per family: named right, named wrong (a failure signature other than the expected one,
or a failure called clean) and unnamed (no row matched where one was expected).

    python benchmarks/classify_corpus.py [--split seen|train|test] [--misses]

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
#: The corpora ``--split`` names: their directories, each with its own corpus.yaml.
SPLITS = {
    "seen": CORPUS,
    "train": ROOT / "tests" / "fixtures" / "field-logs-train",
    "test": ROOT / "tests" / "fixtures" / "field-logs-test",
}
#: What repro says of a log no row matched.
UNKNOWN = "unknown"
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
    root: Path = CORPUS

    @property
    def path(self) -> Path:
        return self.root / self.file


def load(index: Path = INDEX) -> list[Entry]:
    """The corpus entries. Raises ValueError naming the entry and field that is missing."""
    data = yaml.safe_load(index.read_text(encoding="utf-8"))
    out = []
    for at, raw in enumerate(data["logs"]):
        for key in ("file", "url", "family", "expect"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise ValueError(f"{index}: logs[{at}].{key}: expected a non-empty string")
        out.append(
            Entry(
                raw["file"],
                raw["url"],
                raw["family"],
                raw["expect"],
                raw.get("message", ""),
                index.parent,
            )
        )
    return out


def load_split(split: str) -> list[Entry]:
    """The entries of one corpus of :data:`SPLITS`."""
    return load(SPLITS[split] / "corpus.yaml")


def judge(entry: Entry) -> tuple[bool, str]:
    """``(right, what repro said)`` for one entry, classified with no host facts."""
    from repro.signatures import engine

    with open(entry.path, "rb") as handle:
        found = engine.classify_stream(handle)
    said = CLEAN if found.clean else found.name
    right = said == entry.expect and (not entry.message or entry.message in found.message)
    return right, f"{said}: {found.message}"


def outcome(entry: Entry, right: bool, said: str) -> str:
    """``right``, ``wrong`` (another name, or clean for a failure) or ``unnamed`` (no row matched
    where one was expected)."""
    if right:
        return "right"
    return "unnamed" if said.split(":", 1)[0] == UNKNOWN else "wrong"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="seen", help="which corpus")
    parser.add_argument("--misses", action="store_true", help="print every wrong verdict")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    entries = load_split(args.split)
    total: dict[str, Counter] = {}
    misses = []
    start = time.perf_counter()
    for entry in entries:
        ok, said = judge(entry)
        total.setdefault(entry.family, Counter())[outcome(entry, ok, said)] += 1
        if not ok:
            misses.append(f"{entry.file}: expected {entry.expect}, got {said}")
    elapsed = time.perf_counter() - start
    print(f"corpus: {args.split} ({SPLITS[args.split].relative_to(ROOT)})")
    head = f"{'family':<12} {'logs':>5} {'right':>6} {'wrong':>6} {'unnamed':>8} {'right %':>8}"
    print(head)
    whole: Counter = Counter()
    for family in sorted(total):
        row = total[family]
        whole.update(row)
        logs = sum(row.values())
        print(
            f"{family:<12} {logs:>5} {row['right']:>6} {row['wrong']:>6} {row['unnamed']:>8}"
            f" {100 * row['right'] / logs:>7.1f}%"
        )
    logs = sum(whole.values())
    print(
        f"{'all':<12} {logs:>5} {whole['right']:>6} {whole['wrong']:>6} {whole['unnamed']:>8}"
        f" {100 * whole['right'] / logs:>7.1f}%"
    )
    print(f"named wrong: {100 * whole['wrong'] / logs:.1f}% of {logs}")
    print(f"classified in {elapsed:.2f} s")
    if args.misses:
        for line in misses:
            print(f"  miss: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
