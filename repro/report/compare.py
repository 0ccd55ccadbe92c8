"""``repro compare BASE CAND``: what changed between a baseline matrix and a candidate.

The "validate a driver or torch downgrade" workflow: run the matrix before and after, compare.
Cells are matched by (host key, variant id) and cases inside them by (scenario, case id).
Reported: **regressions** (a case that passed now ends any other way), **fixes** (a failed,
errored, crashed or hung case now passes), **signature changes** (a non-pass whose signature or
outcome changed) and signatures never seen in the baseline, cases and cells that **appeared** or
**vanished**, and **throughput drops**: a rate metric (``metric.*_per_s``, e.g. ``it_per_s``)
whose candidate mean is more than the threshold (default 20%) below the baseline mean, with the
number of samples behind each figure.

BASE and CAND are matrix.json files or results directories (merged in memory with
``repro.report.report.build_report``). Exit status: 1 when there is a regression (a regression the
candidate's ``expect:`` entries mark as expected does not count; neither do throughput drops
unless ``--fail-on-throughput``), 0 otherwise, 2 for bad input (one line, no traceback).
:func:`compare` is pure: two matrix.json dicts in, one JSON-able dict out.

This module never imports torch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import (
    EXIT_CASES_FAILED,
    EXIT_CONFIG,
    EXIT_FATAL,
    EXIT_OK,
    ConfigError,
    ReproError,
)

DEFAULT_THRESHOLD = 0.20
RATE_SUFFIX = "_per_s"
MD_MAX_ROWS = 200
PROBLEM_OUTCOMES = ("hung", "crashed", "error", "failed")
_RANK = {o: i for i, o in enumerate((*PROBLEM_OUTCOMES, "passed", "skipped"))}


# --------------------------------------------------------------------------------------------
# Indexing one matrix


@dataclass
class _Case:
    """One case id in one cell; duplicates (foreign files adding up) keep the worst outcome."""

    outcome: str
    signature: str | None
    message: str
    expected: bool
    metrics: dict[str, list[float]] = field(default_factory=dict)

    def add(self, item: Mapping[str, Any]) -> None:
        outcome = str(item.get("outcome"))
        if _RANK.get(outcome, 99) < _RANK.get(self.outcome, 99):
            self.outcome = outcome
            self.signature = item.get("signature")
            self.message = str(item.get("message") or "")
            self.expected = _is_expected(item)
        _add_metrics(self.metrics, item.get("metrics"))


def _is_expected(item: Mapping[str, Any]) -> bool:
    expect = item.get("expect")
    return isinstance(expect, Mapping) and expect.get("status") == "expected"


def _add_metrics(into: dict[str, list[float]], metrics: Any) -> None:
    if not isinstance(metrics, Mapping):
        return
    for name, value in metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            into.setdefault(str(name), []).append(float(value))


Index = dict[tuple[str, str], dict[tuple[str, str], _Case]]


def _index(matrix: Mapping[str, Any], side: str) -> tuple[Index, dict[tuple[str, str], str]]:
    """(cells -> cases, cells -> effective state). Raises ConfigError on a malformed matrix."""
    cells = matrix.get("cells")
    if not isinstance(cells, list):
        raise ConfigError(f"{side}: not a matrix (no 'cells' list)")
    index: Index = {}
    states: dict[tuple[str, str], str] = {}
    for position, cell in enumerate(cells):
        if not isinstance(cell, Mapping) or not isinstance(cell.get("cases"), list):
            raise ConfigError(f"{side}: cells[{position}]: expected an object with a 'cases' list")
        key = (str(cell.get("host")), str(cell.get("variant")))
        states[key] = str(cell.get("effective_state") or cell.get("state") or "")
        cases = index.setdefault(key, {})
        for number, item in enumerate(cell["cases"]):
            if not isinstance(item, Mapping):
                raise ConfigError(f"{side}: cells[{position}].cases[{number}]: expected an object")
            case_key = (str(item.get("scenario") or ""), str(item.get("case") or ""))
            existing = cases.get(case_key)
            if existing is None:
                case = _Case(
                    str(item.get("outcome")),
                    item.get("signature"),
                    str(item.get("message") or ""),
                    _is_expected(item),
                )
                _add_metrics(case.metrics, item.get("metrics"))
                cases[case_key] = case
            else:
                existing.add(item)
    return index, states


def _mean(values: list[float]) -> float:
    return statistics.fmean(values)


# --------------------------------------------------------------------------------------------
# The comparison


def compare(
    base: Mapping[str, Any],
    cand: Mapping[str, Any],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    base_name: str = "BASE",
    cand_name: str = "CAND",
) -> dict[str, Any]:
    """Compare two matrix.json dicts; everything is sorted by host, variant, scenario, case.

    ``threshold`` is the relative throughput drop that is reported (0.20 = 20%). Raises
    ConfigError when either side is not a matrix.
    """
    base_index, base_states = _index(base, base_name)
    cand_index, cand_states = _index(cand, cand_name)
    regressions, fixes, changes, appeared, vanished, drops = [], [], [], [], [], []
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
            if old.outcome == "passed" and new.outcome != "passed":
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
            drops.extend(_drops(where, old, new, threshold))

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
        "base": _side_summary(base, base_index, base_name),
        "cand": _side_summary(cand, cand_index, cand_name),
        "regressions": regressions,
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
    }
    result["summary"] = {
        "regressions": len(counted),
        "expected_regressions": len(regressions) - len(counted),
        "fixes": len(fixes),
        "signature_changes": len(changes),
        "new_signatures": len(new_signatures),
        "appeared": len(appeared),
        "vanished": len(vanished),
        "cells_appeared": len(result["cells_appeared"]),
        "cells_vanished": len(result["cells_vanished"]),
        "throughput_drops": len(drops),
    }
    return result


def _drops(where: dict[str, str], old: _Case, new: _Case, threshold: float) -> list[dict[str, Any]]:
    out = []
    for metric in sorted(set(old.metrics) & set(new.metrics)):
        if not metric.endswith(RATE_SUFFIX):
            continue
        before, after = old.metrics[metric], new.metrics[metric]
        if not before or not after:
            continue
        base_mean, cand_mean = _mean(before), _mean(after)
        if base_mean <= 0:
            continue
        change = (cand_mean - base_mean) / base_mean
        if -change > threshold:
            out.append(
                {
                    **where,
                    "metric": metric,
                    "base": base_mean,
                    "cand": cand_mean,
                    "base_samples": len(before),
                    "cand_samples": len(after),
                    "change": change,
                }
            )
    return out


def _side_summary(matrix: Mapping[str, Any], index: Index, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "generated_at": matrix.get("generated_at"),
        "cells": len(index),
        "cases": sum(len(cases) for cases in index.values()),
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
    from repro.report.report import md_escape

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


def render_markdown(result: Mapping[str, Any]) -> str:
    """The comparison as Markdown (GitHub step summary / PR comment)."""
    s = result["summary"]
    base, cand = result["base"], result["cand"]
    pct = f"{result['threshold'] * 100:g}%"
    verdict = "❌ regressions" if s["regressions"] else "✅ no regression"
    lines = [
        f"# repro compare: {verdict}",
        "",
        f"- base: {_md(base['name'])} ({base['cells']} cells, {base['cases']} cases, generated {_md(base['generated_at'])})",
        f"- candidate: {_md(cand['name'])} ({cand['cells']} cells, {cand['cases']} cases, generated {_md(cand['generated_at'])})",
        "",
        f"**{s['regressions']} regressions**"
        + (f" (+{s['expected_regressions']} expected)" if s["expected_regressions"] else "")
        + f", {s['fixes']} fixes, {s['signature_changes']} signature changes, "
        f"{s['new_signatures']} new signatures, {s['appeared']} cases appeared, {s['vanished']} vanished, "
        f"{s['cells_appeared']} cells appeared, {s['cells_vanished']} vanished, "
        f"{s['throughput_drops']} throughput drops > {pct}",
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
        f"Throughput drops > {pct}",
        ["host", "variant", "case", "metric", "base (n)", "candidate (n)", "change"],
        [
            [
                *_where(r),
                _md(r["metric"]),
                f"{r['base']:.4g} ({r['base_samples']})",
                f"{r['cand']:.4g} ({r['cand_samples']})",
                f"{r['change'] * 100:+.1f}%",
            ]
            for r in result["throughput_drops"]
        ],
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


# --------------------------------------------------------------------------------------------
# Inputs and command line


def load_side(path: Path, config: Any = None) -> dict[str, Any]:
    """A matrix.json file, or a results directory / JUnit file merged in memory.

    Raises ConfigError (one line) for a missing path, a file that is not a matrix, or a
    directory without JUnit files.
    """
    from repro.report import report

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_dir() or path.suffix.lower() == ".xml":
        merged = report.build_report([path], config=config, predict=False)
        if not merged.inputs:
            raise ConfigError(
                f"{path}: no JUnit XML files found (expected a results directory or a matrix.json)"
            )
        return merged.matrix
    return report.read_matrix(path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``repro compare`` arguments (shared by :func:`main` and ``repro.cli.main``)."""
    parser.add_argument(
        "base", type=Path, metavar="BASE", help="baseline matrix.json or results directory"
    )
    parser.add_argument(
        "cand", type=Path, metavar="CAND", help="candidate matrix.json or results directory"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the comparison as JSON instead of Markdown"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="PATH",
        help="also write the Markdown to PATH (e.g. $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD * 100,
        metavar="PCT",
        help="report a rate metric (metric.*_per_s) that drops by more than PCT percent (default: %(default)g)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="PATH",
        help="matrix.yaml whose `expect:` entries apply to results directories",
    )
    parser.add_argument(
        "--fail-on-throughput", action="store_true", help="exit 1 on a throughput drop too"
    )


def main(argv: list[str] | None = None) -> int:
    """``repro compare BASE CAND [--json] [--markdown PATH] [--threshold PCT] [--config PATH]
    [--fail-on-throughput]``: 1 on regression, 0 otherwise, 2 for bad input, 3 when the
    Markdown file cannot be written."""
    parser = argparse.ArgumentParser(
        prog="repro compare",
        description="Compare a baseline matrix with a candidate: regressions (pass -> anything "
        "else), fixes, new or changed signatures, cases that appeared or vanished, throughput "
        "drops. BASE and CAND are matrix.json files or results directories.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Compare for parsed ``repro compare`` arguments; returns the exit status."""
    try:
        if not 0 < args.threshold < 100:
            raise ConfigError(
                f"--threshold: expected a percentage between 0 and 100, got {args.threshold:g}"
            )
        config = None
        if args.config is not None:
            from repro import config as matrix_mod

            config = matrix_mod.load(args.config)
        base = load_side(args.base, config)
        cand = load_side(args.cand, config)
        result = compare(
            base,
            cand,
            threshold=args.threshold / 100,
            base_name=str(args.base),
            cand_name=str(args.cand),
        )
    except ReproError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"repro compare: error: {first}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:
        print(f"repro compare: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_CONFIG
    markdown = render_markdown(result)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print(markdown, end="")
    if args.markdown is not None:
        try:
            args.markdown.write_text(markdown, encoding="utf-8")
        except OSError as exc:
            print(
                f"repro compare: error: cannot write {args.markdown}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_FATAL
    return exit_code(result, fail_on_throughput=args.fail_on_throughput)
