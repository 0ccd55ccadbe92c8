"""Judge the install-line corpus halves and print how often ``repro check`` agrees with what happened.

The corpus of issue 30 (tests/fixtures/install-lines/train-half.yaml and test-half.yaml) holds
install lines people typed in public issues, each with its URL, the person's host (platform,
Python, CPU architecture, GPU and driver where stated), the day it happened and what happened
(``kind``: installed and ran, installed a CPU-only build, no matching distribution, resolver
conflict, ...; ``outcome``: pass or fail; ``because``: the check a failure comes from). The lines
were labelled first, then split by issue URL (:func:`split_of`: a hash, so every line of one
issue lands in the same half), and the test half was committed before any change to the facts or
rules; rules are written from the train half only.

    python benchmarks/install_corpus.py --split train [--misses]
    python benchmarks/install_corpus.py --split test
    python benchmarks/install_corpus.py split LABELLED.yaml   # write the two halves

A verdict agrees when its outcome (pass/fail) is the labelled one; ``unknown`` never agrees.
``--misses`` prints each disagreeing line of the train half; for the test half only the figures
are printed (its misses are not for writing rules). Exit status 0; the gate on the train half is
tests/test_install_corpus.py.
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

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "install-lines"
HALVES = {"train": CORPUS / "train-half.yaml", "test": CORPUS / "test-half.yaml"}
#: What each entry must carry (``because`` too when ``outcome`` is fail).
FIELDS = ("id", "url", "date", "line", "form", "host", "happened", "kind", "outcome")
OUTCOMES = ("pass", "fail")


def split_of(url: str) -> str:
    """``"test"`` or ``"train"`` for an issue URL: the low bit of the first byte of its SHA-256,
    so the split is fixed by the URL alone and every line of one issue lands in one half."""
    return "test" if hashlib.sha256(url.encode("utf-8")).digest()[0] % 2 == 0 else "train"


def load(path: Path) -> list[dict[str, Any]]:
    """The entries of one half. Raises ValueError naming the file, entry and field that is
    missing or malformed."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of entries")
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
    """Fingerprint properties (``host.*``) for the machine an entry describes: Python, CPU
    architecture, one GPU (NVIDIA unless ``gpu_vendor: amd``) with its capability or gfx target
    and the NVIDIA driver, each where the issue states or implies it."""
    from repro import gpu_properties

    props = {"host.python": str(host["python"])}
    if host.get("arch"):
        props["host.arch"] = str(host["arch"])
    if host.get("gpu"):
        gpu = {"name": host["gpu"], "vendor": host.get("gpu_vendor") or "nvidia"}
        if host.get("capability"):
            gpu["compute_capability"] = host["capability"]
        if host.get("gfx"):
            gpu["gfx_target"] = host["gfx"]
        props.update({k: str(v) for k, v in gpu_properties.encode(0, gpu).items()})
        if host.get("driver"):
            props["host.driver.nvidia"] = str(host["driver"])
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
    )


HEADER = """\
# The {name} half of the install-line corpus of issue 30: lines people typed in public issues,
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
}


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (requirements lines) as literal blocks."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def _split(labelled: Path) -> int:
    entries = yaml.safe_load(labelled.read_text(encoding="utf-8"))
    halves: dict[str, list] = {"train": [], "test": []}
    for entry in entries:
        halves[split_of(entry["url"])].append(entry)
    for name, path in HALVES.items():
        body = yaml.dump(
            halves[name], Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
        )
        header = HEADER.format(name=name, rule=RULES[name])
        path.write_text(header + "\n" + body, encoding="utf-8")
        urls = {e["url"] for e in halves[name]}
        print(f"{name}: {len(halves[name])} lines from {len(urls)} issues -> {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=("judge", "split"), default="judge")
    parser.add_argument("labelled", nargs="?", type=Path, help="split: the labelled corpus")
    parser.add_argument("--split", choices=tuple(HALVES), default="train")
    parser.add_argument("--misses", action="store_true", help="train half: print each miss")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from repro.errors import ConfigError

    if args.action == "split":
        if args.labelled is None:
            parser.error("split needs the labelled corpus file")
        return _split(args.labelled)
    entries = load(HALVES[args.split])
    by_kind, right_kind = Counter(), Counter()
    said, because_right, fails = Counter(), 0, 0
    misses = []
    start = time.perf_counter()
    for entry in entries:
        try:
            result = judge(entry)
        except ConfigError as exc:  # refused as no install line: no verdict
            result, outcome, summary = None, "refused", str(exc)
        else:
            outcome, summary = result.outcome, result.summary
        ok = outcome == entry["outcome"]
        by_kind[entry["kind"]] += 1
        right_kind[entry["kind"]] += ok
        said[outcome] += 1
        if result is not None and entry["outcome"] == "fail" and outcome == "fail":
            fails += 1
            because_right += entry["because"] in {r.check for r in result.prediction.deciding}
        if not ok:
            misses.append(f"{entry['id']}: happened {entry['outcome']}, said {summary}")
    elapsed = time.perf_counter() - start
    print(f"{args.split} half: {len(entries)} lines, {len({e['url'] for e in entries})} issues")
    print(f"{'what happened':<28} {'lines':>5} {'agree':>6}")
    for kind in sorted(by_kind):
        print(f"{kind:<28} {by_kind[kind]:>5} {right_kind[kind]:>6}")
    agree = sum(right_kind.values())
    print(f"{'all':<28} {len(entries):>5} {agree:>6}  {100 * agree / len(entries):.1f}% agree")
    print(f"verdicts: {dict(sorted(said.items()))}")
    if fails:
        print(f"failing verdicts naming the labelled cause: {because_right} of {fails}")
    print(f"judged in {elapsed:.2f} s")
    if args.misses and args.split == "train":
        for line in misses:
            print(f"  miss: {line}")
    elif args.misses:
        print("(the test half's misses are not printed: its lines are not for writing rules)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
