"""Measure ``repro report`` at fleet scale: merge time, output sizes and peak memory.

Generates FILES JUnit files of CASES cases each with our writer (``repro.junit.writer.write_junit``)
spread over HOSTS x VARIANTS cells, then times ``build_report`` (with predictions and three
``expect:`` entries) and ``write_outputs`` in a fresh child process, so its peak RSS is the
merge's own. With a ``run.json`` sidecar the newest result of each (host, variant, case id)
supersedes older ones, so only the first file of each cell gets a sidecar; the others are keyed
from their ``host.key``/``variant.id`` properties (like files from another tool) and add up.
``--scaling`` repeats the merge on 1/4 and 1/2 of the files: time per case must stay flat.

    python benchmarks/merge_report.py [--files 2000] [--cases 50] [--hosts 20] [--variants 50]
                                      [--scaling] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro import gpu_properties  # noqa: E402
from repro import properties as property_names  # noqa: E402
from repro.junit.writer import write_junit  # noqa: E402
from repro.outcomes import CaseResult, Outcome  # noqa: E402
from repro.variant_id import VariantId  # noqa: E402

RUNTIMES = ("cu126", "cu128", "cu129", "cu130", "cu132", "rocm6.4", "rocm7.1", "cpu")
TORCH = ("2.8.0", "2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0")
GPUS = (
    ("NVIDIA H100 80GB HBM3", "9.0"),
    ("NVIDIA GeForce RTX 5090", "12.0"),
    ("NVIDIA A100", "8.0"),
    ("Tesla V100", "7.0"),
)
DRIVERS = ("535.104.05", "570.86.15", "580.65.06", "590.44.01")
METHODS = ("fork", "spawn", "forkserver")


def variant_of(index: int) -> tuple[str, str, str]:
    runtime = RUNTIMES[index % len(RUNTIMES)]
    torch = TORCH[(index // len(RUNTIMES)) % len(TORCH)]
    suffix = f"-b{index}" if index >= len(RUNTIMES) * len(TORCH) else ""
    return f"{VariantId.of(runtime, torch)}{suffix}", runtime, torch


def host_of(index: int) -> tuple[str, dict[str, str]]:
    name, capability = GPUS[index % len(GPUS)]
    driver = DRIVERS[(index // len(GPUS)) % len(DRIVERS)]
    wsl = index % 5 == 4
    key = f"{name} · driver {driver} · Ubuntu 24.04 LTS{' · WSL2' if wsl else ''} · node{index}"
    props = {
        property_names.HOST_KEY: key,
        property_names.HOST_OS: "Ubuntu 24.04 LTS",
        property_names.WSL2: "true" if wsl else "false",
        gpu_properties.COUNT: "1",
        **gpu_properties.encode(
            0, {"name": name, "vendor": "nvidia", "compute_capability": capability}
        ),
        property_names.DRIVER_NVIDIA: driver,
    }
    return key, props


def results(rng: random.Random, cases: int, shard: int) -> list[CaseResult]:
    out = []
    for i in range(cases):
        scenario = ("dataloader", "cuda_basic", "fork_safety", "ddp")[i % 4]
        if scenario == "dataloader":
            case_id = f"dataloader[device=cpu,start_method={METHODS[i % 3]},workers={i % 5},shard={shard}]"
        else:
            case_id = f"{scenario}[n={i},shard={shard}]"
        roll = rng.random()
        if scenario == "fork_safety" and i % 8 == 2:
            outcome, sig = Outcome.HUNG, "hang_timeout"
        elif roll < 0.08:
            outcome, sig = (
                Outcome.FAILED,
                rng.choice(("no_kernel_image", "driver_too_old", "nccl_error")),
            )
        elif roll < 0.10:
            outcome, sig = Outcome.SKIPPED, ""
        else:
            outcome, sig = Outcome.PASSED, ""
        detail = (
            (
                "Traceback (most recent call last):\n"
                + '  File "x.py", line 1, in f\n' * 20
                + f"RuntimeError: {sig}"
            )
            if sig
            else ""
        )
        metrics = (
            {"it_per_s": rng.uniform(20, 60), "first_batch_s": rng.uniform(0.1, 2)}
            if scenario == "dataloader"
            else {}
        )
        out.append(
            CaseResult(
                scenario,
                case_id,
                outcome,
                rng.uniform(0.1, 5),
                f"{sig}: something went wrong"
                if sig
                else ("needs 2 GPUs" if outcome is Outcome.SKIPPED else ""),
                sig,
                detail,
                metrics=metrics,
                log_path=f"logs/{i}.log",
            )
        )
    return out


def generate(root: Path, files: int, cases: int, hosts: int, variants: int) -> None:
    rng = random.Random(1)
    for n in range(files):
        h, v, shard = n % hosts, (n // hosts) % variants, n // (hosts * variants)
        host_key, host_props = host_of(h)
        variant_id, runtime, torch = variant_of(v)
        run_dir = root / f"h{h:03d}" / f"{variant_id}-{shard}"
        run_dir.mkdir(parents=True)
        props = dict(host_props)
        props.update(
            {
                property_names.VARIANT_ID: variant_id,
                property_names.VARIANT_RUNTIME: runtime,
                property_names.VARIANT_TORCH: torch,
                property_names.VARIANT_ACCELERATOR: "cpu"
                if runtime == "cpu"
                else ("rocm" if runtime.startswith("rocm") else "cuda"),
                property_names.RUNTIME_TORCH: f"{torch}+{runtime}",
            }
        )
        write_junit(run_dir / "junit.xml", results(rng, cases, shard), props)
        if shard == 0:
            run = {"schema": 1, "run_id": run_dir.name, "host_key": host_key, "started": "2026-11-21T10:00:00Z", "finished": "2026-11-21T10:10:00Z",
                   "variant": {"id": variant_id, "runtime": runtime, "torch": torch, "source": "matrix"}, "cases_total": cases, "cases_done": cases}  # fmt: skip
            (run_dir / "run.json").write_text(json.dumps(run))


def merge(inputs: Path, out: Path) -> None:
    """The measured part (runs in a child process): build_report + write_outputs."""
    from repro.config import Expectation
    from repro.report.merge import build_report
    from repro.report.outputs import write_outputs

    expectations = (
        Expectation(0, "fork with a held lock", "hung", case="fork_safety[*"),
        Expectation(1, "planted fault", "failed", case="ddp[n=3,*"),
        Expectation(2, "never matches", case="nothing"),
    )
    t0 = time.perf_counter()
    report = build_report([inputs], expectations=expectations)
    t1 = time.perf_counter()
    written = write_outputs(report, out)
    t2 = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sizes = {p.name: p.stat().st_size for p in written}
    print(json.dumps({"build_s": t1 - t0, "write_s": t2 - t1, "peak_rss_kib": peak_kib, "tests": report.totals["tests"],
                      "cells": len(report.cells), "inputs": len(report.inputs), "sizes": sizes}))  # fmt: skip


def run_child(inputs: Path, out: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--merge-only", str(inputs), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"merge failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--variants", type=int, default=50)
    parser.add_argument(
        "--scaling", action="store_true", help="also merge 1/4 and 1/2 of the files"
    )
    parser.add_argument(
        "--keep", type=Path, help="generate into DIR and keep it (default: a temp dir)"
    )
    parser.add_argument(
        "--merge-only", nargs=2, type=Path, metavar=("INPUTS", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.merge_only:
        merge(*args.merge_only)
        return 0

    base = args.keep or Path(tempfile.mkdtemp(prefix="repro-bench-"))
    try:
        inputs = base / "results"
        if inputs.exists():
            shutil.rmtree(inputs)
        start = time.perf_counter()
        generate(inputs, args.files, args.cases, args.hosts, args.variants)
        print(
            f"generated {args.files} files x {args.cases} cases ({args.hosts} hosts x {args.variants} variants) in {time.perf_counter() - start:.1f} s"
        )
        sizes = [args.files]
        if args.scaling:
            sizes = sorted({max(1, args.files // 4), max(1, args.files // 2), args.files})
        for n in sizes:
            subset = inputs
            if n != args.files:  # the first n files, by generation order
                subset = base / f"subset-{n}"
                if subset.exists():
                    shutil.rmtree(subset)
                for i in range(n):
                    h, v, shard = (
                        i % args.hosts,
                        (i // args.hosts) % args.variants,
                        i // (args.hosts * args.variants),
                    )
                    name = f"{variant_of(v)[0]}-{shard}"
                    shutil.copytree(inputs / f"h{h:03d}" / name, subset / f"h{h:03d}" / name)
            r = run_child(subset, base / f"out-{n}")
            per_case = (r["build_s"] + r["write_s"]) / max(r["tests"], 1) * 1e6
            print(
                f"{n} files, {r['tests']} cases, {r['cells']} cells: build_report {r['build_s']:.2f} s, "
                f"write_outputs {r['write_s']:.2f} s ({per_case:.1f} µs/case), process wall {r['wall_s']:.2f} s, "
                f"peak RSS {r['peak_rss_kib'] / 1024:.0f} MiB; "
                + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(r["sizes"].items()))
            )
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
