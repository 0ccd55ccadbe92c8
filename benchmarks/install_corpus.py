"""Judge the install-line corpus halves and print how often ``repro check`` agrees with what happened.

The corpus of issue 30 (tests/fixtures/install-lines/train-half.yaml, test-half.yaml and
test-half-2.yaml) holds
install lines people typed in public issues, each with its URL, the person's host (platform,
Python, CPU architecture, GPU and driver where stated), the day it happened and what happened
(``kind``: installed and ran, installed a CPU-only build, no matching distribution, resolver
conflict, ...; ``outcome``: pass or fail; ``because``: the check a failure comes from). The lines
were labelled first, then split by issue URL (:func:`split_of`: a hash, so every line of one
issue lands in the same half), and the test half was committed before any change to the facts or
rules; rules are written from the train half only. A later round of lines (``add``) is labelled
and split the same way: its test lines go to a new frozen file (test-half-2.yaml, committed on
its own before any further change to the rules), its train lines to the end of train-half.yaml.
Round three's lines are all test lines (test-half-3.yaml, the ``test3`` half, frozen whole before
round three's rule changes): the held-out score once the first two test files were studied.
Round four's likewise (test-half-4.yaml, the ``test4`` half), frozen before round four's changes,
which were written from the studied files (``test``, ``test3``; :data:`STUDIED`). Round five's
likewise (test-half-5.yaml, the ``test5`` half), frozen before round five's changes, which were
written from the studied files (now also ``test4``). Round six's likewise (test-half-6.yaml, the
``test6`` half), frozen before round six's changes, written from the studied files (now also
``test5``). Round seven's likewise (test-half-7.yaml, the ``test7`` half), collected and frozen by
a helper who writes no rules, before round seven's changes, which are written from the studied
files (now also ``test6``). Round eight's likewise (test-half-8.yaml, the ``test8`` half), collected
and frozen by a helper who writes no rules, before round eight's changes, written from the studied
files (now also ``test7``). Round nine's likewise (test-half-9.yaml, the ``test9`` half), collected
and frozen by a helper who writes no rules, before round nine's changes, written from the studied
files (now also ``test8``). Round ten's likewise (test-half-10.yaml, the ``test10`` half), collected
and frozen by a helper who writes no rules, before round ten's changes; round ten studies no new
file (``test9`` stays held out beside ``test10``), so its changes are written from the same studied
files as round nine's. Round eleven's likewise (test-half-11.yaml, the ``test11`` half), collected
and frozen by a helper who writes no rules, before round eleven's changes; round eleven studies no
new file either (``test9`` and ``test10`` stay held out beside ``test11``). Round twelve's likewise
(test-half-12.yaml, the ``test12`` half), collected and frozen by a helper who writes no rules; it
measures the engine as it stands at the end of round eleven. Round thirteen studies ``test9`` and
``test10``; ``test11`` and ``test12`` stay held out. Round thirteen's own file (test-half-13.yaml,
the ``test13`` half), collected and frozen by a helper who writes no rules, measures the engine as
it stands at the end of round twelve; it stays held out beside ``test11`` and ``test12``. Round
fourteen studies ``test11``; ``test12`` and ``test13`` stay held out. Round fourteen's own file
(test-half-14.yaml, the ``test14`` half), collected and frozen by a helper who writes no rules,
measures the engine as it stands at the end of round thirteen; it stays held out beside ``test12``
and ``test13``. Round fifteen studies ``test12``; ``test13`` and ``test14`` stay held out. Round
fifteen's own file (test-half-15.yaml, the ``test15`` half), collected and frozen by a helper who
writes no rules, measures the engine as it stands at the end of round fourteen; it stays held out
beside ``test13`` and ``test14``.

    python benchmarks/install_corpus.py --split train [--misses]
    python benchmarks/install_corpus.py --split test     # each test file, then all together
    python benchmarks/install_corpus.py --split test3    # round three's frozen file
    python benchmarks/install_corpus.py --split test4    # round four's frozen file
    python benchmarks/install_corpus.py --split test5    # round five's frozen file
    python benchmarks/install_corpus.py --split test6    # round six's frozen file
    python benchmarks/install_corpus.py --split test7    # round seven's frozen file
    python benchmarks/install_corpus.py --split test8    # round eight's frozen file
    python benchmarks/install_corpus.py --split test9    # round nine's frozen file
    python benchmarks/install_corpus.py --split test10   # round ten's frozen file
    python benchmarks/install_corpus.py --split test11   # round eleven's frozen file
    python benchmarks/install_corpus.py --split test12   # round twelve's frozen file
    python benchmarks/install_corpus.py --split test13   # round thirteen's frozen file
    python benchmarks/install_corpus.py --split test14   # round fourteen's frozen file
    python benchmarks/install_corpus.py --split test15   # round fifteen's frozen file
    python benchmarks/install_corpus.py --split test3 --misses --studied  # a studied file's misses
    python benchmarks/install_corpus.py split LABELLED.yaml   # round one: write the two halves
    python benchmarks/install_corpus.py add LABELLED.yaml test-half-2.yaml  # a later round

A verdict agrees when its outcome (pass/fail) is the labelled one; ``unknown`` never agrees.
``--misses`` prints each disagreeing line of the train half; for a frozen half only the figures
are printed (its misses are not for writing rules), unless ``--studied`` is given and the half
is one a later round has studied (:data:`STUDIED`; never the three newest, held out). Exit status 0;
the gate on the train half is tests/test_install_corpus.py.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from repro import properties as property_names

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "install-lines"
#: The files of each half: the test half's second file holds round two's test lines (issue 30).
HALVES = {
    "train": (CORPUS / "train-half.yaml",),
    "test": (CORPUS / "test-half.yaml", CORPUS / "test-half-2.yaml"),
    # Round three (issue 30): a set frozen whole, not split by URL; it is the held-out score
    # once rounds one and two's test files were studied to write rules.
    "test3": (CORPUS / "test-half-3.yaml",),
    # Round four (issue 30): frozen whole like round three's, before round four's changes.
    "test4": (CORPUS / "test-half-4.yaml",),
    # Round five (issue 30): frozen whole like rounds three and four's, before round five's changes.
    "test5": (CORPUS / "test-half-5.yaml",),
    # Round six (issue 30): frozen whole, before round six's changes.
    "test6": (CORPUS / "test-half-6.yaml",),
    # Round seven (issue 30): frozen whole, collected by a helper who writes no rules, before round
    # seven's changes.
    "test7": (CORPUS / "test-half-7.yaml",),
    # Round eight (issue 30): frozen whole, collected by a helper who writes no rules, before round
    # eight's changes.
    "test8": (CORPUS / "test-half-8.yaml",),
    # Round nine (issue 30): frozen whole, collected by a helper who writes no rules, before round
    # nine's changes.
    "test9": (CORPUS / "test-half-9.yaml",),
    # Round ten (issue 30): frozen whole, collected by a helper who writes no rules, before round
    # ten's changes.
    "test10": (CORPUS / "test-half-10.yaml",),
    # Round eleven (issue 30): frozen whole, collected by a helper who writes no rules, before round
    # eleven's changes.
    "test11": (CORPUS / "test-half-11.yaml",),
    # Round twelve (issue 30): frozen whole, collected by a helper who writes no rules; measures the
    # engine as it stands at the end of round eleven.
    "test12": (CORPUS / "test-half-12.yaml",),
    # Round thirteen (issue 30): frozen whole, collected by a helper who writes no rules; measures
    # the engine as it stands at the end of round twelve.
    "test13": (CORPUS / "test-half-13.yaml",),
    # Round fourteen (issue 30): frozen whole, collected by a helper who writes no rules; measures
    # the engine as it stands at the end of round thirteen.
    "test14": (CORPUS / "test-half-14.yaml",),
    # Round fifteen (issue 30): frozen whole, collected by a helper who writes no rules; measures
    # the engine as it stands at the end of round fourteen.
    "test15": (CORPUS / "test-half-15.yaml",),
}
#: The halves whose misses are never printed (measured only).
FROZEN = frozenset(HALVES) - {"train"}
#: Frozen halves a later round has studied (issue 30, rounds four to nine: rules were written from
#: their misses, so their figures are training figures now): ``--studied`` lets ``--misses`` print
#: them (round thirteen: also ``test9`` and ``test10``; round fourteen: ``test11``; round fifteen:
#: ``test12``). Never the held-out files (``test13``, ``test14`` and ``test15``).
STUDIED = frozenset({"test", *(f"test{n}" for n in range(3, 13))})
#: Host facts an earlier file states in a host_note its host mapping could not hold when it was
#: written (round five: the interpreter's bitness); merged into those entries by :func:`load`.
HOST_FACTS = CORPUS / "host-facts.yaml"
#: What each entry must carry (``because`` too when ``outcome`` is fail).
FIELDS = ("id", "url", "date", "line", "form", "host", "happened", "kind", "outcome")
OUTCOMES = ("pass", "fail")


def split_of(url: str) -> str:
    """``"test"`` or ``"train"`` for an issue URL: the low bit of the first byte of its SHA-256,
    so the split is fixed by the URL alone and every line of one issue lands in one half."""
    return "test" if hashlib.sha256(url.encode("utf-8")).digest()[0] % 2 == 0 else "train"


def host_facts() -> dict[str, dict[str, Any]]:
    """Entry id -> the host facts :data:`HOST_FACTS` adds to it."""
    if not HOST_FACTS.exists():
        return {}
    data = yaml.safe_load(HOST_FACTS.read_text(encoding="utf-8")) or []
    return {str(item["id"]): dict(item["host"]) for item in data}


def load(path: Path) -> list[dict[str, Any]]:
    """The entries of one half, each host with the :data:`HOST_FACTS` stated for it. Raises
    ValueError naming the file, entry and field that is missing or malformed."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of entries")
    added = host_facts()
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") in added:
            entry["host"] = {**entry["host"], **added[entry["id"]]}
    for at, entry in enumerate(data):
        for key in FIELDS:
            if not entry.get(key):
                raise ValueError(f"{path}: [{at}] {entry.get('id')}: {key}: expected a value")
        if entry["outcome"] not in OUTCOMES:
            raise ValueError(f"{path}: [{at}] {entry['id']}: outcome: expected pass or fail")
        if (entry["outcome"] == "fail") != bool(entry.get("because")):
            raise ValueError(f"{path}: [{at}] {entry['id']}: because: given for fail lines only")
    return data


def host_properties(host: dict[str, Any]) -> dict[str, str]:
    """Fingerprint properties (``host.*``) for the machine an entry describes (its ``bits``,
    ``libc``, ``implementation`` and ``macos`` go to :func:`judge` as ``check_line``'s arguments of those names): Python, CPU architecture, glibc, WSL2, one GPU (NVIDIA unless ``gpu_vendor: amd``) with its capability or gfx target
    and the NVIDIA driver, each where the issue states or implies it."""
    from repro import gpu_properties

    props = {property_names.HOST_PYTHON: str(host["python"])}
    if host.get("arch"):
        props[property_names.HOST_ARCH] = str(host["arch"])
    if host.get("glibc"):
        props[property_names.HOST_GLIBC] = str(host["glibc"])
    if str(host.get("wsl2", "")).lower() == "true":
        props[property_names.WSL2] = "true"
    if host.get("gpu"):
        gpu = {"name": host["gpu"], "vendor": host.get("gpu_vendor") or "nvidia"}
        if host.get("capability"):
            gpu["compute_capability"] = host["capability"]
        if host.get("gfx"):
            gpu["gfx_target"] = host["gfx"]
        props.update({k: str(v) for k, v in gpu_properties.encode(0, gpu).items()})
        if host.get("driver"):
            props[property_names.DRIVER_NVIDIA] = str(host["driver"])
    return props


def judge(entry: dict[str, Any]):
    """``repro check``'s answer (a LineResult) for one entry, on the host and day it describes."""
    from repro.compat import install_line
    from repro.compat.install_check import check_line

    host = entry["host"]
    line = install_line.parse(entry["line"])
    return check_line(
        line,
        host_properties(host),
        str(host["python"]),
        host["platform"],
        machine=host.get("arch"),
        as_of=date.fromisoformat(str(entry["date"])),
        bits=int(host.get("bits") or 64),
        libc=host.get("libc"),
        implementation=host.get("implementation"),
        macos=host.get("macos"),
    )


HEADER = """\
# The {name} of the install-line corpus of issue 30: lines people typed in public issues,
# labelled with what happened before the corpus was split by issue URL
# (benchmarks/install_corpus.py split_of).
# {rule}
#
# Fields: id; url (the issue or pull request); date (the day the line was run, as the thread
# dates it: an unpinned line resolves to what the indexes served then); line (as typed: pip, uv,
# conda, a wheel URL or file name, requirements lines; line_note says what was reconstructed);
# form; host (python X.Y, platform linux/windows/macos, arch x86_64/aarch64/arm64 when not
# x86_64, gpu and its capability or gfx target, gpu_vendor amd for AMD, driver; host_note says
# what was stated and what inferred); happened (quoted or summarised); kind (what happened, one
# word: installed-ran, installed-cpu-only, installed-driver-too-old, installed-no-kernel-image,
# installed-import-fails, installed-older-release, no-matching-distribution, not-supported-wheel,
# resolver-conflict, packages-not-found, lock-no-wheel-here, installer-rejected, build-failed);
# outcome (pass: installed and ran; fail otherwise); because (for fail: the check it comes from:
# install, python, platform, companion, accelerator, driver, kernel_image).
#
# Included: a line whose outcome the thread states or shows (a log, "that worked") and whose
# cause lies in the line, the host or the indexes; left out: outcomes with no stated cause.
"""
RULES = {
    "test": "Frozen: committed before any change to repro/compat or repro/data, never edited.",
    "train": "Rules and facts are written from this half (and public documentation) only.",
    "test-2": "Frozen: round two's test lines, committed on their own after the facts were sourced\n"
    "# and before any further change to repro/compat or repro/data; never edited.",
}


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (requirements lines) as literal blocks."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def _dump(entries: list) -> str:
    return yaml.dump(entries, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _by_half(labelled: Path) -> dict[str, list]:
    entries = yaml.safe_load(labelled.read_text(encoding="utf-8"))
    halves: dict[str, list] = {"train": [], "test": []}
    for entry in entries:
        halves[split_of(entry["url"])].append(entry)
    return halves


def _report(name: str, entries: list, path: Path) -> None:
    urls = {e["url"] for e in entries}
    print(f"{name}: {len(entries)} lines from {len(urls)} issues -> {path}")


def _split(labelled: Path) -> int:
    """Round one: write the train half and the (first) test half."""
    halves = _by_half(labelled)
    for name in ("train", "test"):
        path = HALVES[name][0]
        header = HEADER.format(name=f"{name} half", rule=RULES[name])
        path.write_text(header + "\n" + _dump(halves[name]), encoding="utf-8")
        _report(name, halves[name], path)
    return 0


def _add(labelled: Path, test_file: Path) -> int:
    """A later round: its test lines to a new file (never an existing one), its train lines to
    the end of the train half."""
    test_file = test_file if test_file.is_absolute() else CORPUS / test_file
    if test_file.exists():
        raise SystemExit(f"{test_file} exists: a frozen test file is written once")
    halves = _by_half(labelled)
    header = HEADER.format(name="test half (second file)", rule=RULES["test-2"])
    test_file.write_text(header + "\n" + _dump(halves["test"]), encoding="utf-8")
    _report("test", halves["test"], test_file)
    train = HALVES["train"][0]
    text = train.read_text(encoding="utf-8")
    train.write_text(text.rstrip("\n") + "\n" + _dump(halves["train"]), encoding="utf-8")
    _report("train (added)", halves["train"], train)
    return 0


def load_half(name: str) -> dict[Path, list[dict[str, Any]]]:
    """The entries of each file of one half (a file not yet written is left out)."""
    return {path: load(path) for path in HALVES[name] if path.exists()}


def _judge_all(entries: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any, str, str]]:
    """Each entry with its result (None when refused), the outcome said and its summary."""
    from repro.errors import ConfigError

    judged = []
    for entry in entries:
        try:
            result = judge(entry)
        except ConfigError as exc:  # refused as no install line: no verdict
            judged.append((entry, None, "refused", str(exc)))
        else:
            judged.append((entry, result, result.outcome, result.summary))
    return judged


def _print_figures(title: str, judged: list) -> list[str]:
    """Print the figures of some judged entries; return their misses (not printed here)."""
    by_kind, right_kind = Counter(), Counter()
    said, because_right, fails = Counter(), 0, 0
    misses = []
    for entry, result, outcome, summary in judged:
        ok = outcome == entry["outcome"]
        by_kind[entry["kind"]] += 1
        right_kind[entry["kind"]] += ok
        said[outcome] += 1
        if result is not None and entry["outcome"] == "fail" and outcome == "fail":
            fails += 1
            because_right += entry["because"] in {r.check for r in result.prediction.deciding}
        if not ok:
            misses.append(f"{entry['id']}: happened {entry['outcome']}, said {summary}")
    entries = [item[0] for item in judged]
    print(f"{title}: {len(entries)} lines, {len({e['url'] for e in entries})} issues")
    print(f"{'what happened':<28} {'lines':>5} {'agree':>6}")
    for kind in sorted(by_kind):
        print(f"{kind:<28} {by_kind[kind]:>5} {right_kind[kind]:>6}")
    agree = sum(right_kind.values())
    share = 100 * agree / len(entries) if entries else 0.0
    print(f"{'all':<28} {len(entries):>5} {agree:>6}  {share:.1f}% agree")
    print(f"verdicts: {dict(sorted(said.items()))}")
    if fails:
        print(f"failing verdicts naming the labelled cause: {because_right} of {fails}")
    return misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=("judge", "split", "add"), default="judge")
    parser.add_argument("labelled", nargs="?", type=Path, help="split, add: the labelled lines")
    parser.add_argument("test_file", nargs="?", type=Path, help="add: the new test file")
    parser.add_argument("--split", choices=tuple(HALVES), default="train")
    parser.add_argument("--misses", action="store_true", help="train half: print each miss")
    parser.add_argument(
        "--studied",
        action="store_true",
        help=f"with --misses: also print the misses of a studied frozen half ({', '.join(sorted(STUDIED))})",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    if args.action in ("split", "add"):
        if args.labelled is None:
            parser.error(f"{args.action} needs the labelled lines")
        if args.action == "split":
            return _split(args.labelled)
        if args.test_file is None:
            parser.error("add needs the new test file's name")
        return _add(args.labelled, args.test_file)
    files = load_half(args.split)
    start = time.perf_counter()
    judged = {path: _judge_all(entries) for path, entries in files.items()}
    elapsed = time.perf_counter() - start
    misses = []
    if len(judged) > 1:
        for path, items in judged.items():
            _print_figures(f"{args.split} half, {path.name}", items)
            print()
    every = [item for items in judged.values() for item in items]
    misses = _print_figures(
        f"{args.split} half" + (", all files" if len(judged) > 1 else ""), every
    )
    print(f"judged in {elapsed:.2f} s")
    readable = args.split not in FROZEN or (args.studied and args.split in STUDIED)
    if args.misses and readable:
        for line in misses:
            print(f"  miss: {line}")
    elif args.misses:
        print("(the test half's misses are not printed: its lines are not for writing rules)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
