"""Full-catalogue parity: every case run with ``--isolation fresh`` and with ``--isolation auto``
must end with the same outcome and signature (issue 13, item 3). Prints each difference and the
wall time of both runs; exit status 1 when any case differs.

    python benchmarks/isolation_parity.py [--config matrix.yaml] [-k PATTERN ...] [--keep DIR]

Runs the real CLI (``python -m repro run``) twice, one after the other, so timings are
comparable; ``--keep DIR`` keeps both result trees (else a temporary directory).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def verdicts(junit: Path) -> dict[str, tuple[str, str, str]]:
    """``{case id: (outcome, signature, isolation)}`` of the ``repro`` testsuite(s) of a run."""
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out[case.get("name")] = (
            props.get("repro.outcome", "?"),
            props.get("repro.signature", ""),
            props.get("repro.isolation", "-"),
        )
    return out


def run(isolation: str, results: Path, config: str, patterns: list[str]) -> tuple[float, Path]:
    argv = [sys.executable, "-m", "repro", "run", "--no-doctor", "--config", config]
    argv += ["--isolation", isolation, "--results", str(results)]
    for pattern in patterns:
        argv += ["-k", pattern]
    started = time.monotonic()
    subprocess.run(argv, cwd=REPO, stdin=subprocess.DEVNULL, check=False)
    elapsed = time.monotonic() - started
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    return elapsed, run_dir / "junit.xml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "matrix.yaml"))
    parser.add_argument("-k", dest="patterns", action="append", default=[])
    parser.add_argument("--keep", metavar="DIR", help="keep both result trees under DIR")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repro-parity-") as tmp:
        root = Path(args.keep or tmp)
        timings, runs = {}, {}
        for isolation in ("fresh", "auto"):
            results = root / isolation
            results.mkdir(parents=True, exist_ok=False)
            timings[isolation], junit = run(isolation, results, args.config, args.patterns)
            runs[isolation] = verdicts(junit)
    fresh, auto = runs["fresh"], runs["auto"]
    differences = 0
    for case_id in sorted(set(fresh) | set(auto)):
        a, b = fresh.get(case_id), auto.get(case_id)
        if a is None or b is None or a[:2] != b[:2]:
            differences += 1
            print(f"DIFF {case_id}: fresh={a} auto={b}")
    forked = sum(1 for v in auto.values() if v[2] == "zygote")
    print(
        f"{len(fresh)} cases, {forked} forked from the zygote under auto, {differences} differ; "
        f"wall time fresh {timings['fresh']:.1f} s, auto {timings['auto']:.1f} s"
    )
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
