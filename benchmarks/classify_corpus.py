"""Classify the field corpus and print its score per family.

Each entry is a real log from a public issue, with its URL, the family a careful engineer files it
under and the signature repro should name (``clean``: "no failure found"). Classified as
``repro classify`` does with no host facts: the log's own host evidence decides (issue 21).

Seventeen corpora (issue 30): ``seen`` (tests/fixtures/field-logs/, the logs issue 21's rows were
written against), ``train`` (tests/fixtures/field-logs-train/, the logs rows may be written from:
round one's half and round two's, ``batch: 2``), and the fifteen frozen sets: ``test``
(tests/fixtures/field-logs-test/, round one), ``test2`` (tests/fixtures/field-logs-test2/, round
two), ``test3`` (tests/fixtures/field-logs-test3/, round three, frozen whole), ``test4``
(tests/fixtures/field-logs-test4/, round four, frozen whole), ``test5``
(tests/fixtures/field-logs-test5/, round five, frozen whole), ``test6``
(tests/fixtures/field-logs-test6/, round six, frozen whole), ``test7``
(tests/fixtures/field-logs-test7/, round seven, frozen whole by a collector who writes no rows),
``test8`` (tests/fixtures/field-logs-test8/, round eight, frozen whole by a collector who writes no
rows), ``test9`` (tests/fixtures/field-logs-test9/, round nine, frozen whole by a collector who
writes no rows), ``test10`` (tests/fixtures/field-logs-test10/, round ten, frozen whole by a
collector who writes no rows), ``test11`` (tests/fixtures/field-logs-test11/, round eleven,
frozen whole by a collector who writes no rows), ``test12`` (tests/fixtures/field-logs-test12/,
round twelve, frozen whole by a collector who writes no rows), ``test13``
(tests/fixtures/field-logs-test13/, round thirteen, frozen whole by a collector who writes no
rows), ``test14`` (tests/fixtures/field-logs-test14/, round fourteen, frozen whole by a
collector who writes no rows) and ``test15`` (tests/fixtures/field-logs-test15/, round fifteen,
frozen whole by a collector who writes no rows). Round fifteen studies test, test2, test3, test4, test5, test6,
test7, test8, test9, test10, test11 and test12 (rounds nine to twelve studied up to test8, round
thirteen up to test10, round fourteen up to test11); test13, test14 and test15 are held out, their
scores the held-out figures. Per
family: named
right, named wrong (a failure signature other than the expected one, a failure called clean, or a
name where ``unknown`` was expected) and unnamed (no row matched where one was expected). Several
``--split`` options print each corpus, then the corpora combined. ``--misses`` lists each wrong
verdict and refuses the frozen sets: rows are not written from their misses. A frozen set a later
round has studied (:data:`STUDIED`) lists its misses with ``--misses --studied``, which says that
its score is a training figure from then on; the sets not studied (``test13``, ``test14`` and
``test15``)
are never listed. ``--reasons`` prints, per log, why the engine said what it said (the winning row, its
kind and rule, the decisive line, the other rows that matched: :func:`reasons`), under the same
refusal: the records abstention rules are fitted on.

    python benchmarks/classify_corpus.py
        [--split seen|train|test|test2|test3|test4|test5|test6|test7|test8|test9|test10|test11|test12|test13|test14|test15 ...]
        [--misses] [--reasons] [--studied]

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
    "test2": ROOT / "tests" / "fixtures" / "field-logs-test2",
    "test3": ROOT / "tests" / "fixtures" / "field-logs-test3",
    "test4": ROOT / "tests" / "fixtures" / "field-logs-test4",
    "test5": ROOT / "tests" / "fixtures" / "field-logs-test5",
    "test6": ROOT / "tests" / "fixtures" / "field-logs-test6",
    "test7": ROOT / "tests" / "fixtures" / "field-logs-test7",
    "test8": ROOT / "tests" / "fixtures" / "field-logs-test8",
    "test9": ROOT / "tests" / "fixtures" / "field-logs-test9",
    "test10": ROOT / "tests" / "fixtures" / "field-logs-test10",
    "test11": ROOT / "tests" / "fixtures" / "field-logs-test11",
    "test12": ROOT / "tests" / "fixtures" / "field-logs-test12",
    "test13": ROOT / "tests" / "fixtures" / "field-logs-test13",
    "test14": ROOT / "tests" / "fixtures" / "field-logs-test14",
    "test15": ROOT / "tests" / "fixtures" / "field-logs-test15",
}
#: The frozen sets: measured only, never mined for misses (issue 30).
FROZEN = frozenset(SPLITS) - {"seen", "train"}
#: Frozen sets a later round has studied (round fifteen studies test, test2 ... test12; test13,
#: test14 and test15 stay held out): their misses are listed
#: with ``--misses --studied``, and their scores are training figures from then on.
STUDIED = frozenset({"test", "test2", *(f"test{n}" for n in range(3, 13))})
#: What repro says of a log no row matched.
UNKNOWN = "unknown"
#: ``expect`` of a log with no failure in it.
CLEAN = "clean"


@dataclass(frozen=True)
class Entry:
    """One corpus log: ``file`` (relative to the corpus directory), ``url`` (its public issue),
    ``family``, ``expect`` (a signature name or :data:`CLEAN`), ``message`` (a substring the
    decisive line must contain, or ``""``), ``batch`` (the collection round the split dealt it
    in: 1, or 2 for issue 30's round two), ``dealt_as`` (the label the split dealt it under when
    a train label was corrected later, else ``""``)."""

    file: str
    url: str
    family: str
    expect: str
    message: str = ""
    root: Path = CORPUS
    batch: int = 1
    dealt_as: str = ""

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
                int(raw.get("batch", 1)),
                raw.get("dealt_as", ""),
            )
        )
    return out


def load_split(split: str) -> list[Entry]:
    """The entries of one corpus of :data:`SPLITS`."""
    return load(SPLITS[split] / "corpus.yaml")


def classified(entry: Entry):
    """The engine's :class:`~repro.signatures.classification.Classification` of one entry, with
    no host facts."""
    from repro.signatures import engine

    with open(entry.path, "rb") as handle:
        return engine.classify_stream(handle)


def judge(entry: Entry) -> tuple[bool, str]:
    """``(right, what repro said)`` for one entry, classified with no host facts."""
    found = classified(entry)
    said = CLEAN if found.clean else found.name
    right = said == entry.expect and (not entry.message or entry.message in found.message)
    return right, f"{said}: {found.message}"


#: The engine rule (repro.signatures.engine's docstring) a winning row of each kind decides by.
_RULE_BY_KIND = {
    "environment": "1 environment",
    "root": "2 earliest root",
    "secondary": "2 secondary",
    "wrapper": "3 wrapper",
    "warning": "4 warning",
    "evidence": "4 evidence",
}


def reasons(entry: Entry) -> str:
    """Why the engine said what it said of one entry (issue 30, round six), one line: the row
    that won, its kind and the rule it decided by, the decisive line (number and text), the
    other rows that matched (name, kind, family, first line) and, for an unknown failure, its
    coarse family. For the studied sets' records; users' output stays the verdict."""
    found = classified(entry)
    said = CLEAN if found.clean else found.name
    first: dict[str, tuple[int, str, str]] = {}
    for match in found.matches:
        sig = match.signature
        first.setdefault(sig.name, (match.line_no, sig.kind, sig.family))
    won = first.get(found.name)
    if said == CLEAN:
        rule = "no row, no failure line"
    elif found.name == UNKNOWN:
        if "in the person's words" in found.coarse:
            rule = "7 described"
        elif not found.run_evidence:
            rule = "8 no failure line, no run"
        else:
            rule = "no row decided"
    elif won is None:
        rule = "5/6 pasted or described hang"
    else:
        rule = _RULE_BY_KIND.get(won[1], won[1])
    others = ", ".join(
        f"{name}({kind},{family},L{line_no})"
        for name, (line_no, kind, family) in sorted(first.items(), key=lambda item: item[1][0])
        if name != found.name
    )
    line = f"L{found.line_no}" if found.line_no is not None else "L-"
    coarse = f" coarse={found.coarse!r}" if found.coarse else ""
    return (
        f"{entry.file}: expected {entry.expect}, said {said} [rule {rule}] {line}"
        f" {found.message[:160]!r}; others: {others or '-'}{coarse}"
    )


def outcome(entry: Entry, right: bool, said: str) -> str:
    """``right``, ``wrong`` (another name, or clean for a failure) or ``unnamed`` (no row matched
    where one was expected)."""
    if right:
        return "right"
    return "unnamed" if said.split(":", 1)[0] == UNKNOWN else "wrong"


def score(entries: list[Entry]) -> tuple[dict[str, Counter], list[str]]:
    """Per family, a Counter of :func:`outcome` values; and one line per wrong verdict."""
    total: dict[str, Counter] = {}
    misses = []
    for entry in entries:
        ok, said = judge(entry)
        total.setdefault(entry.family, Counter())[outcome(entry, ok, said)] += 1
        if not ok:
            misses.append(f"{entry.file}: expected {entry.expect}, got {said}")
    return total, misses


def table(title: str, total: dict[str, Counter]) -> list[str]:
    """The printed score of one corpus (or several combined): a row per family, then all."""
    lines = [
        f"corpus: {title}",
        f"{'family':<12} {'logs':>5} {'right':>6} {'wrong':>6} {'unnamed':>8} {'right %':>8}",
    ]
    whole: Counter = Counter()
    for family in sorted(total):
        row = total[family]
        whole.update(row)
        logs = sum(row.values())
        lines.append(
            f"{family:<12} {logs:>5} {row['right']:>6} {row['wrong']:>6} {row['unnamed']:>8}"
            f" {100 * row['right'] / logs:>7.1f}%"
        )
    logs = sum(whole.values())
    lines.append(
        f"{'all':<12} {logs:>5} {whole['right']:>6} {whole['wrong']:>6} {whole['unnamed']:>8}"
        f" {100 * whole['right'] / logs:>7.1f}%"
    )
    lines.append(f"named wrong: {100 * whole['wrong'] / logs:.1f}% of {logs}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--split",
        action="append",
        choices=sorted(SPLITS),
        help="which corpus (repeat for several, then their combined score; default: seen)",
    )
    parser.add_argument(
        "--misses",
        action="store_true",
        help="print every wrong verdict (not for a frozen set; see --studied)",
    )
    parser.add_argument(
        "--reasons",
        action="store_true",
        help="print why each verdict was said: the winning row, its kind and rule, the decisive"
        " line, the other rows that matched (not for a frozen set; see --studied)",
    )
    parser.add_argument(
        "--studied",
        action="store_true",
        help="with --misses or --reasons, also open the studied sets"
        f" ({', '.join(sorted(STUDIED))})",
    )
    args = parser.parse_args(argv)
    splits = list(dict.fromkeys(args.split or ["seen"]))
    frozen = sorted(FROZEN.intersection(splits) - (STUDIED if args.studied else frozenset()))
    for flag, wanted in (("--misses", args.misses), ("--reasons", args.reasons)):
        if wanted and frozen:
            parser.error(
                f"{flag} refuses the frozen set(s) {', '.join(frozen)}: they are measured only"
            )
    sys.path.insert(0, str(ROOT))
    combined: dict[str, Counter] = {}
    for split in splits:
        start = time.perf_counter()
        total, misses = score(load_split(split))
        elapsed = time.perf_counter() - start
        print("\n".join(table(f"{split} ({SPLITS[split].relative_to(ROOT)})", total)))
        print(f"classified in {elapsed:.2f} s")
        if args.misses:
            for line in misses:
                print(f"  miss: {line}")
        if args.reasons:
            for entry in load_split(split):
                print(f"  why: {reasons(entry)}")
        for family, row in total.items():
            combined.setdefault(family, Counter()).update(row)
    if len(splits) > 1:
        print("\n".join(table(" + ".join(splits), combined)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
