"""``repro compare BASE CAND``: what changed between a baseline matrix and a candidate.

The "validate a driver or torch downgrade" workflow: run the matrix before and after, compare.
Cells are matched by (host key, variant id) and cases inside them by (scenario, case id).
Reported: **regressions** (a case that passed now ends any other way), **flaky** cases (red
at first in the candidate, passed on a rerun: ``repro run --rerun-failures``; never a
regression, a case red on every rerun still is), **fixes** (a failed,
errored, crashed or hung case now passes), **signature changes** (a non-pass whose signature or
outcome changed) and signatures never seen in the baseline, cases and cells that **appeared** or
**vanished**, and **throughput drops**: a rate metric (``metric.*_per_s``, e.g.
``steady_it_per_s``) whose candidate median is below the baseline's by more than the threshold
(default 20%) *and* by more than the runs' own spread (half of each side's interquartile range
added, ``repro.measurement``); a wall-clock rate with a CPU-time twin (``steady_it_per_s`` and
``steady_it_per_cpu_s``) counts only when the twin dropped too, else the run just got less CPU
on a busy host; and no drop counts for a case that measured while other processes took more
than a quarter of the host (its ``host_busy``, ``repro.measurement.BUSY_LIMIT``): there even
the CPU twin moved 23-26 % between runs of one build. Each drop says how it was judged; what is past the threshold but not counted is
listed apart (``throughput_noise``); a rate measured once has no spread, and its drop says it was
judged on the threshold alone (issue 29: two runs of one build on a 2-core host flagged -49 % and
-39 % on the old single figures).

BASE and CAND are matrix.json files or results directories (merged in memory with
``repro.report.merge.build_report``); ``--base-run``/``--cand-run`` pool more runs of the same
build into a side (``repro.report.sides.pool``: worst outcome per case, every run's rates, so the spread between
runs is weighed: on the quiet 2-core VM one run per side flagged false drops in 27 of 45 pairs
of one build, two runs per side in 2 of 10, benchmarks/metric_stability.py); ``repro run --rounds
3`` measures each rate in three processes within one run (``repro.runner.repeat``): one such run
per side, 0 false drops in 10 pairs and the planted 2x slowdown in 175 of 175 case-pairs, against
14 false drops and 158 with one round, back to back on the same quiet host. On a GPU the same
holds: on one H100 (torch 2.11+cu130, device run of 2026-11-27) two one-round runs of the cuda
dataloader cases with 2 workers, one build, flagged 3 of 11 cases past 20 % and the windows'
spread (-23 % to -39 %, wall and per-CPU rates alike): gate on ``--rounds 3`` or pooled runs,
never on one round per side. A matrix.json is read as a stream
(``repro.report.stream``) straight into the compact index compare works on (``repro.report.sides.Side``),
never as a whole dict: memory grows with the cases kept (about 0.5 KB each, at most
``repro.report.stream.MAX_MATRIX_CASES`` per side, else one-line ConfigError), not with the
file's text. :func:`exit_code`: 1 when there is a regression (a
regression the candidate's ``expect:`` entries mark as expected does not count; neither do
throughput drops unless asked), 0 otherwise. :func:`compare` is pure: two matrix.json dicts (or
:class:`Side` indexes) in, one JSON-able dict out. The command line is ``repro.cli.report``.

This module never imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from repro.errors import EXIT_CASES_FAILED, EXIT_OK
from repro.outcomes import PROBLEM_VALUES
from repro.report import drops as drops_mod
from repro.report.drops import (  # noqa: F401 (the basis texts, part of compare's API)
    BUSY_HOST,
    LESS_CPU,
    PAST_BOTH,
    THRESHOLD_ONLY,
    WITHIN_SPREAD,
)
from repro.report.markdown import md_escape
from repro.report.sides import Index, Side, side_of

DEFAULT_THRESHOLD = 0.20
MD_MAX_ROWS = 200
PROBLEM_OUTCOMES = PROBLEM_VALUES


def _pair_lone_variants(
    base_index: Index,
    base_states: dict[tuple[str, str], str],
    cand_index: Index,
    cand_states: dict[tuple[str, str], str],
) -> list[dict[str, str]]:
    """Pair a host's only baseline variant with its only candidate variant when they differ
    (a torch upgrade or downgrade: ``cpu-torch2.13`` before, ``cpu-torch2.12`` after), so their
    cases are compared instead of one cell "vanishing" and another "appearing" with no
    regression counted. Both cells are re-keyed in place to ``BASE → CAND``; returns
    ``[{"host", "base", "cand"}]``."""

    def variants(index: Index) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for host, variant in index:
            out.setdefault(host, []).append(variant)
        return out

    before, after = variants(base_index), variants(cand_index)
    paired = []
    for host in sorted(set(before) & set(after)):
        if len(before[host]) == 1 and len(after[host]) == 1 and before[host] != after[host]:
            old, new = (host, before[host][0]), (host, after[host][0])
            key = (host, f"{old[1]} → {new[1]}")
            base_index[key], base_states[key] = base_index.pop(old), base_states.pop(old)
            cand_index[key], cand_states[key] = cand_index.pop(new), cand_states.pop(new)
            paired.append({"host": host, "base": old[1], "cand": new[1]})
    return paired


# --------------------------------------------------------------------------------------------
# The comparison


def compare(
    base: Mapping[str, Any] | Side,
    cand: Mapping[str, Any] | Side,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    base_name: str = "BASE",
    cand_name: str = "CAND",
) -> dict[str, Any]:
    """Compare two matrix.json dicts (or their :class:`Side` indexes); everything is sorted by
    host, variant, scenario, case.

    ``threshold`` is the relative throughput drop that is reported (0.20 = 20%). Raises
    ConfigError when either side is not a matrix.
    """
    base_side, cand_side = side_of(base, base_name), side_of(cand, cand_name)
    base_index, base_states = base_side.index, base_side.states
    cand_index, cand_states = cand_side.index, cand_side.states
    paired = _pair_lone_variants(base_index, base_states, cand_index, cand_states)
    regressions, fixes, changes, appeared, vanished, drops = [], [], [], [], [], []
    noise: list[dict[str, Any]] = []
    flaky: list[dict[str, Any]] = []
    base_signatures = {
        case.signature
        for cases in base_index.values()
        for case in cases.values()
        if case.signature and case.outcome in PROBLEM_OUTCOMES
    }
    new_signatures: dict[str, dict[str, Any]] = {}

    for key in sorted(set(base_index) & set(cand_index)):
        host, variant = key
        before, after = base_index[key], cand_index[key]
        for case_key in sorted(set(before) | set(after)):
            where = {"host": host, "variant": variant, "scenario": case_key[0], "case": case_key[1]}
            old, new = before.get(case_key), after.get(case_key)
            if old is None:
                appeared.append({**where, "outcome": new.outcome, "signature": new.signature})
                continue
            if new is None:
                vanished.append({**where, "outcome": old.outcome, "signature": old.signature})
                continue
            if new.flaky and not old.flaky:
                # Red first, then passed on a rerun: not a regression, not a fix either.
                flaky.append(
                    {
                        **where,
                        "base": old.outcome,
                        "cand": "flaky",
                        "first_signature": new.first_signature,
                    }
                )
            elif old.outcome == "passed" and new.outcome != "passed":
                regressions.append(
                    {
                        **where,
                        "base": old.outcome,
                        "cand": new.outcome,
                        "signature": new.signature,
                        "message": new.message,
                        "expected": new.expected,
                    }
                )
            elif old.outcome in PROBLEM_OUTCOMES and new.outcome == "passed":
                fixes.append(
                    {
                        **where,
                        "base": old.outcome,
                        "cand": new.outcome,
                        "base_signature": old.signature,
                    }
                )
            elif (
                old.outcome in PROBLEM_OUTCOMES
                and new.outcome in PROBLEM_OUTCOMES
                and (old.signature != new.signature or old.outcome != new.outcome)
            ):
                changes.append(
                    {
                        **where,
                        "base": old.outcome,
                        "cand": new.outcome,
                        "base_signature": old.signature,
                        "cand_signature": new.signature,
                        "message": new.message,
                        "new_signature": bool(new.signature)
                        and new.signature not in base_signatures,
                    }
                )
            found, not_counted = drops_mod.drops(where, old.metrics, new.metrics, threshold)
            drops += found
            noise += not_counted

    for key in sorted(cand_index):
        for case_key, case in sorted(cand_index[key].items()):
            if (
                case.outcome in PROBLEM_OUTCOMES
                and case.signature
                and case.signature not in base_signatures
            ):
                entry = new_signatures.setdefault(
                    case.signature, {"signature": case.signature, "cases": 0, "examples": []}
                )
                entry["cases"] += 1
                if len(entry["examples"]) < 5:
                    entry["examples"].append(
                        {
                            "host": key[0],
                            "variant": key[1],
                            "scenario": case_key[0],
                            "case": case_key[1],
                            "message": case.message,
                        }
                    )

    counted = [r for r in regressions if not r["expected"]]
    result = {
        "threshold": threshold,
        "base": _side_summary(base_side, base_name),
        "cand": _side_summary(cand_side, cand_name),
        "regressions": regressions,
        "flaky": flaky,
        "fixes": fixes,
        "signature_changes": changes,
        "new_signatures": [new_signatures[s] for s in sorted(new_signatures)],
        "appeared": appeared,
        "vanished": vanished,
        "cells_appeared": [
            {"host": h, "variant": v, "state": cand_states[(h, v)]}
            for h, v in sorted(set(cand_index) - set(base_index))
        ],
        "cells_vanished": [
            {"host": h, "variant": v, "state": base_states[(h, v)]}
            for h, v in sorted(set(base_index) - set(cand_index))
        ],
        "throughput_drops": drops,
        "throughput_noise": noise,
        "paired": paired,
    }
    result["summary"] = {
        "regressions": len(counted),
        "expected_regressions": len(regressions) - len(counted),
        "flaky": len(flaky),
        "fixes": len(fixes),
        "signature_changes": len(changes),
        "new_signatures": len(new_signatures),
        "appeared": len(appeared),
        "vanished": len(vanished),
        "cells_appeared": len(result["cells_appeared"]),
        "cells_vanished": len(result["cells_vanished"]),
        "throughput_drops": len(drops),
        "throughput_noise": len(noise),
    }
    return result


def _side_summary(side: Side, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "generated_at": side.generated_at,
        "runs": side.runs,
        "cells": len(side.index),
        "cases": sum(len(cases) for cases in side.index.values()),
    }


def exit_code(result: Mapping[str, Any], *, fail_on_throughput: bool = False) -> int:
    """1 on a (not expected) regression, or a throughput drop with ``fail_on_throughput``."""
    summary = result["summary"]
    if summary["regressions"] or (fail_on_throughput and summary["throughput_drops"]):
        return EXIT_CASES_FAILED
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# Markdown


def _md(text: Any) -> str:
    return md_escape("" if text is None else str(text))


def _where(item: Mapping[str, Any]) -> list[str]:
    return [_md(item["host"]), _md(item["variant"]), _md(item["case"] or item["scenario"])]


def _table(title: str, head: list[str], rows: list[list[str]]) -> list[str]:
    if not rows:
        return []
    lines = [
        f"## {title} ({len(rows)})",
        "",
        "| " + " | ".join(head) + " |",
        "|---" * len(head) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows[:MD_MAX_ROWS]]
    if len(rows) > MD_MAX_ROWS:
        lines.append(
            f"| … and {len(rows) - MD_MAX_ROWS} more (see --json) |" + " |" * (len(head) - 1)
        )
    return [*lines, ""]


def _figure(value: float, spread: float | None, samples: int, runs: int = 1) -> str:
    """``812 ±21 (n=5)``, ``812 ±40 (n=10, 2 runs)`` when runs were pooled, or ``812
    (measured once)`` without a spread."""
    pooled = f", {runs} runs" if runs > 1 else ""
    if spread is None:
        if samples <= 1:
            return f"{value:.4g} (measured once)"
        return f"{value:.4g} (n={samples}{pooled})"
    return f"{value:.4g} ±{spread:.2g} (n={samples}{pooled})"


def _runs(side: Mapping[str, Any]) -> str:
    """``3 runs pooled, `` for a side of several runs (``--base-run``), else nothing."""
    runs = side.get("runs", 1)
    return f"{runs} runs pooled, " if runs > 1 else ""


def _drop_row(r: Mapping[str, Any]) -> list[str]:
    judged = "threshold only (no spread)" if r["spread"] is None else f"spread {r['spread']:.3g}"
    if r["basis"].startswith("the run got less CPU"):
        judged += "; less CPU: its per-CPU-second rate held"
    elif r["basis"].startswith("the host was busy"):
        judged += "; " + r["basis"].split(", so")[0]
    return [
        *_where(r),
        _md(r["metric"]),
        _figure(r["base"], r["base_spread"], r["base_samples"], r["base_runs"]),
        _figure(r["cand"], r["cand_spread"], r["cand_samples"], r["cand_runs"]),
        f"{r['change'] * 100:+.1f}%",
        judged,
    ]


def render_markdown(result: Mapping[str, Any]) -> str:
    """The comparison as Markdown (GitHub step summary / PR comment)."""
    s = result["summary"]
    base, cand = result["base"], result["cand"]
    pct = f"{result['threshold'] * 100:g}%"
    verdict = "❌ regressions" if s["regressions"] else "✅ no regression"
    lines = [
        f"# repro compare: {verdict}",
        "",
        f"- base: {_md(base['name'])} ({_runs(base)}{base['cells']} cells, {base['cases']} cases, generated {_md(base['generated_at'])})",
        f"- candidate: {_md(cand['name'])} ({_runs(cand)}{cand['cells']} cells, {cand['cases']} cases, generated {_md(cand['generated_at'])})",
        "",
        f"**{s['regressions']} regressions**"
        + (
            f" (+{s['expected_regressions']} expected reproductions, counted apart)"
            if s["expected_regressions"]
            else ""
        )
        + (f", {s['flaky']} flaky (passed on a rerun)" if s.get("flaky") else "")
        + f", {s['fixes']} fixes, {s['signature_changes']} signature changes, "
        f"{s['new_signatures']} new signatures, {s['appeared']} cases appeared, {s['vanished']} vanished, "
        f"{s['cells_appeared']} cells appeared, {s['cells_vanished']} vanished, "
        f"{s['throughput_drops']} throughput drops > {pct} past the runs' spread"
        + (
            f" ({s['throughput_noise']} more past {pct} but within the spread or on a busy host)"
            if s.get("throughput_noise")
            else ""
        ),
        "",
    ]
    for pair in result.get("paired") or ():
        lines += [
            f"Compared {_md(pair['base'])} (base) with {_md(pair['cand'])} (candidate) on "
            f"{_md(pair['host'])}: the only variant of that host on each side.",
            "",
        ]
    lines += _table(
        "Regressions",
        ["host", "variant", "case", "base", "candidate", "signature", "message"],
        [
            [
                *_where(r),
                r["base"],
                r["cand"] + (" (expected)" if r["expected"] else ""),
                _md(r["signature"]),
                _md(r["message"]),
            ]
            for r in result["regressions"]
        ],
    )
    lines += _table(
        "Flaky (red first, passed on a rerun; not regressions)",
        ["host", "variant", "case", "base", "candidate", "first signature"],
        [
            [*_where(r), r["base"], r["cand"], _md(r["first_signature"])]
            for r in result.get("flaky", [])
        ],
    )
    lines += _table(
        "Fixes",
        ["host", "variant", "case", "base", "candidate", "base signature"],
        [[*_where(r), r["base"], r["cand"], _md(r["base_signature"])] for r in result["fixes"]],
    )
    lines += _table(
        "Signature changes",
        ["host", "variant", "case", "base", "candidate", "message"],
        [
            [
                *_where(r),
                f"{r['base']} {_md(r['base_signature'])}",
                f"{r['cand']} {_md(r['cand_signature'])}" + (" 🆕" if r["new_signature"] else ""),
                _md(r["message"]),
            ]
            for r in result["signature_changes"]
        ],
    )
    lines += _table(
        "New signatures",
        ["signature", "cases", "e.g."],
        [
            [
                _md(r["signature"]),
                str(r["cases"]),
                _md(
                    f"{r['examples'][0]['host']} · {r['examples'][0]['variant']} · {r['examples'][0]['case']}"
                ),
            ]
            for r in result["new_signatures"]
        ],
    )
    lines += _table(
        f"Throughput drops > {pct} and past the runs' spread",
        ["host", "variant", "case", "metric", "base", "candidate", "change", "judged"],
        [_drop_row(r) for r in result["throughput_drops"]],
    )
    lines += _table(
        f"Past {pct} but not counted (within the runs' spread, or the run got less CPU)",
        ["host", "variant", "case", "metric", "base", "candidate", "change", "judged"],
        [_drop_row(r) for r in result.get("throughput_noise", [])],
    )
    lines += _table(
        "Cases that appeared",
        ["host", "variant", "case", "outcome"],
        [[*_where(r), r["outcome"]] for r in result["appeared"]],
    )
    lines += _table(
        "Cases that vanished",
        ["host", "variant", "case", "outcome in base"],
        [[*_where(r), r["outcome"]] for r in result["vanished"]],
    )
    lines += _table(
        "Cells that appeared",
        ["host", "variant", "state"],
        [[_md(r["host"]), _md(r["variant"]), _md(r["state"])] for r in result["cells_appeared"]],
    )
    lines += _table(
        "Cells that vanished",
        ["host", "variant", "state in base"],
        [[_md(r["host"]), _md(r["variant"]), _md(r["state"])] for r in result["cells_vanished"]],
    )
    return "\n".join(lines).rstrip("\n") + "\n"
