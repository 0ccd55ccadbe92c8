"""``matrix.html``: one self-contained page (inline CSS, JS and SVG) from the Jinja2 template
``repro/data/matrix.html.j2`` (``repro.data.HTML_TEMPLATE``), autoescaped.

Sticky headers, filters by state/signature/flag, per-cell drill-down with every case, links to
case logs. Hostile inputs cannot reach outside: a log is linked only when the file exists inside
the input tree *and* inside the output directory (no ``../`` href ever leaves the output tree),
and the page is bounded: case rows stop at :data:`HTML_MAX_CASE_BYTES` (estimated) and the table
at :data:`HTML_MAX_TABLE_CELLS`; the page says what was cut.
"""

from __future__ import annotations

import os
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro import compat
from repro import data as shipped_data
from repro.junit.files import is_under
from repro.outcomes import EXPECT_EXPECTED, EXPECT_SKIPPED, SEVERITY_RANK, Outcome
from repro.report import start_methods
from repro.report.labels import (
    LEGEND,
    RED_STATES,
    case_label,
    cell_label,
    cell_marks,
    css_class,
    has_flaky,
    merge_notes,
    skip_groups,
    skip_line,
    variant_lanes,
)
from repro.report.merge import totals_line
from repro.report.model import (
    EFFECTIVE_STATE_ORDER,
    GENERATOR,
    STATE_EXPECTED,
    STATE_FLAKY,
    STATE_INVALID,
    STATE_MISSING,
    STATE_NO_TESTS,
    STATE_XPASS,
    CaseRecord,
    Cell,
    PredictionView,
    Report,
    truncate,
)
from repro.report.plot import throughput_svg

#: Above this many cells, matrix.html starts with every cell's drill-down closed.
HTML_MAX_OPEN = 60
#: Budget for the per-case rows of the drill-downs (bytes, estimated from the texts shown).
HTML_MAX_CASE_BYTES = 64 * 1024 * 1024
#: Matrix table cells (hosts x variants) shown; further host rows are left out.
HTML_MAX_TABLE_CELLS = 50_000
#: Signatures offered in the filter's list.
HTML_MAX_SIGNATURES = 1000
#: Partial and superseded inputs listed (``labels.merge_notes``); the rest are counted.
HTML_MAX_MERGE_NOTES = 1000
#: Markup around one case row, beyond its texts (bytes; about 250 measured on the template).
_CASE_ROW_OVERHEAD = 300


def _log_href(target: Path, out_abs: Path) -> str | None:
    """A relative href to ``target`` (a resolved log path, see ``Report.log_files``) when it lies
    inside ``out_abs``; None otherwise: no link in matrix.html leaves the output tree."""
    real = str(target)
    if not is_under(real, str(out_abs)) or real == str(out_abs):
        return None
    rel = os.path.relpath(real, out_abs)
    return "./" + urllib.parse.quote(Path(rel).as_posix())


def _cell_title(report: Report, cell: Cell | None, host: str, variant: str) -> str:
    state, text = cell_label(cell)
    lines = [f"{host} × {variant}", f"{state}: {text}" if text != state else state]
    if cell is not None:
        groups: Counter[tuple[int, str, str]] = Counter()
        first_message: dict[tuple[int, str, str], str] = {}
        for case in cell.cases:
            if case.outcome is Outcome.PASSED:
                continue
            key = (SEVERITY_RANK[case.outcome], case.outcome.value, case.signature or "")
            groups[key] += 1
            first_message.setdefault(key, case.message)
        ranked = sorted(groups.items(), key=lambda item: (item[0][0], -item[1], item[0][2]))
        for key, count in ranked[:5]:
            message = truncate(first_message[key], 120)
            signature = f" {key[2]}" if key[2] else ""
            lines.append(f"{key[1]} ×{count}{signature}" + (f": {message}" if message else ""))
        if len(ranked) > 5:
            lines.append(f"… {len(ranked) - 5} more signatures")
        if cell.invalid_files:
            lines.append(f"{cell.invalid_files} invalid input file(s)")
    view = report.predictions.get((host, variant))
    if view is not None:
        lines.append(f"predicted {truncate(view.prediction.summary(), 200)}")
        if view.disagreement:
            lines.append(f"⚠ {view.disagreement}")
    trend = report.trends.get((host, variant))
    if trend is not None and trend.note():
        lines.append(trend.note())
    return "\n".join(lines)


def _top_note(cell: Cell | None, invalid: list[str]) -> str:
    """The one line a cell shows under its counts: an invalid input's error, else the most
    frequent signature of its worst problem outcome (expected reproductions after unexpected
    problems), else the most frequent skip reason."""
    if invalid:
        return truncate(invalid[0], 140)
    if cell is None:
        return ""
    # An unclassified failure shows its first line instead of the word "unknown".
    ranked: Counter[tuple[int, int, str]] = Counter()
    for case in cell.cases:
        if case.outcome.is_problem:
            expected = int(case.expect_status == EXPECT_EXPECTED)
            known = case.signature and case.signature != "unknown"
            note = case.signature if known else case.message or case.signature or ""
            if note:
                ranked[(expected, SEVERITY_RANK[case.outcome], note)] += 1
    if ranked:
        best = min(ranked, key=lambda key: (key[0], key[1], -ranked[key], key[2]))
        return truncate(best[2], 80)
    groups = skip_groups(cell.cases)
    return truncate(groups[0][0], 80) if groups else ""


def _case_size(view: Mapping[str, Any]) -> int:
    """Estimated bytes of one case row in the page (its texts plus markup)."""
    texts = (view["label"], view["signature"], view["message"], view["excerpt"], view["metrics"])
    return sum(len(text) for text in texts) + _CASE_ROW_OVERHEAD


def _metrics_text(metrics: Mapping[str, float | None]) -> str:
    return ", ".join(f"{k}={'null' if v is None else format(v, '.4g')}" for k, v in metrics.items())


def _case_view(report: Report, case: CaseRecord, out_abs: Path) -> dict[str, Any]:
    target = report.log_files.get(case.log) if case.log else None
    href = _log_href(target, out_abs) if target else None
    state = case.display_state
    expect = None
    if case.expect is not None and case.expect_status != EXPECT_SKIPPED:
        expect = {
            "text": f"{case.expect_status}: expected {case.expect.outcome} — {case.expect.reason}",
            "link": case.expect.link,
        }
    return {
        "outcome": case.outcome.value,
        "css": css_class(state),
        "state": state,
        "label": case_label(case),
        "signature": case.signature or "",
        "message": case.message,
        # A flaky pass shows what went wrong the first time (its log is the passing rerun's).
        "first": (
            f"flaky: passed on rerun {case.reruns}; first attempt {case.first_signature or 'red'}"
            if case.is_flaky
            else ""
        ),
        "excerpt": case.excerpt,
        "expect": expect,
        "time": "" if case.time_s is None else f"{case.time_s:.3g}",
        "metrics": _metrics_text(case.metrics),
        "log": case.log,
        "log_href": href,
        "log_note": "missing" if target is None else "outside the output directory",
        "file": case.file,
    }


def _signatures(cell: Cell | None) -> str:
    if cell is None:
        return ""
    return " ".join(sorted({c.signature for c in cell.cases if c.signature}))


def attention_rank(state: str) -> int:
    """0 for a red state, 1 for an expected reproduction (blue), 2 for anything else: the page
    shows red, then blue cells first (rows, columns and drill-downs, otherwise in the report's
    order), so they are on the first screen at any width."""
    return 0 if state in RED_STATES else 1 if state == STATE_EXPECTED else 2


def _red_and_blue_first(report: Report) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(hosts, variants)`` of ``report``, each stably sorted by its most urgent cell."""
    rank: dict[tuple[str, str], int] = {
        (cell.host, cell.column): attention_rank(cell_label(cell)[0]) for cell in report.cells
    }
    host_rank: dict[str, int] = {}
    variant_rank: dict[str, int] = {}
    for (host, variant), value in rank.items():
        host_rank[host] = min(value, host_rank.get(host, 2))
        variant_rank[variant] = min(value, variant_rank.get(variant, 2))
    hosts = sorted(report.hosts, key=lambda h: host_rank.get(h["key"], 2))
    variants = sorted(report.variants, key=lambda v: variant_rank.get(v["id"], 2))
    return hosts, variants


def render_html(report: Report, out_dir: Path) -> str:
    """``matrix.html``: one self-contained page (inline CSS/JS/SVG, links to logs relative to
    out_dir): sticky headers, filters by state/signature/flag, per-cell drill-down; red, then
    blue (expected) cells first (:func:`attention_rank`), the expectations table folded."""
    import jinja2
    import markupsafe

    out_abs = Path(out_dir).resolve()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(shipped_data.ROOT),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    anchors = {(cell.host, cell.column): f"cell-{index}" for index, cell in enumerate(report.cells)}
    cuts: list[str] = []
    all_hosts, all_variants = _red_and_blue_first(report)  # a cut never drops a red one first
    variants = all_variants[:HTML_MAX_TABLE_CELLS]
    if len(variants) < len(report.variants):
        cuts.append(f"{len(report.variants) - len(variants)} variant columns left out of the table")
    variant_ids = [v["id"] for v in variants]
    hosts = all_hosts[: max(1, HTML_MAX_TABLE_CELLS // max(1, len(variant_ids)))]
    if len(hosts) < len(report.hosts):
        cuts.append(f"{len(report.hosts) - len(hosts)} host rows left out of the table")
    invalid: dict[tuple[str, str], list[str]] = {}
    for record in report.inputs:
        if record.state == STATE_INVALID:
            invalid.setdefault((record.host, record.variant), []).append(record.reason or "invalid")
    rows = []
    for host in hosts:
        row_cells = []
        for variant in variant_ids:
            cell = report.cell(host["key"], variant)
            state, text = cell_label(cell)
            flags = cell_marks(report, host["key"], variant)
            row_cells.append(
                {
                    "css": css_class(state),
                    "state": state,
                    "label": text,
                    "note": _top_note(cell, invalid.get((host["key"], variant), [])),
                    "title": _cell_title(report, cell, host["key"], variant),
                    "anchor": anchors.get((host["key"], variant)),
                    "sigs": _signatures(cell),
                    "flags": " ".join(flag for flag, _, _ in flags),
                    "marks": [{"flag": f, "emoji": e, "text": t} for f, e, t in flags],
                }
            )
        rows.append(
            {"key": host["key"], "title": _props_title(host["properties"]), "cells": row_cells}
        )
    details = []
    budget, omitted_cases, omitted_cells = HTML_MAX_CASE_BYTES, 0, 0
    for cell in sorted(report.cells, key=lambda c: attention_rank(cell_label(c)[0])):
        budget -= _CASE_ROW_OVERHEAD + sum(len(f) + 40 for f in cell.files)
        if budget <= 0:
            omitted_cells += 1
            continue
        state, text = cell_label(cell)
        key = (cell.host, cell.column)
        cases = []
        for case in cell.sorted_cases():
            if budget <= 0:
                break
            view = _case_view(report, case, out_abs)
            budget -= _case_size(view)
            cases.append(view)
        omitted_cases += len(cell.cases) - len(cases)
        view = report.predictions.get(key)
        trend = report.trends.get(key)
        flags = cell_marks(report, *key)
        details.append(
            {
                "anchor": anchors[key],
                "host": cell.host,
                "variant": cell.column,
                "css": css_class(state),
                "state": state,
                "label": text,
                # Red cells start open on a small matrix; on a large one a click opens them.
                "open": len(report.cells) <= HTML_MAX_OPEN
                and state
                not in (
                    Outcome.PASSED.value,
                    Outcome.SKIPPED.value,
                    STATE_NO_TESTS,
                    STATE_EXPECTED,
                ),
                "files": cell.files,
                "invalid": invalid.get(key, []),
                "skips": skip_line(cell.cases),
                "sigs": _signatures(cell),
                "flags": " ".join(flag for flag, _, _ in flags),
                # Unexpected outcomes first, then expected reproductions; skips as one line.
                "problem_cases": sorted(
                    (
                        c
                        for c in cases
                        if c["outcome"] not in (Outcome.PASSED.value, Outcome.SKIPPED.value)
                        or c["state"] in (STATE_XPASS, STATE_FLAKY)
                    ),
                    key=lambda c: c["state"] == STATE_EXPECTED,
                ),
                "skipped_cases": [
                    c
                    for c in cases
                    if c["outcome"] == Outcome.SKIPPED.value and c["state"] != STATE_XPASS
                ],
                "passed_cases": [
                    c
                    for c in cases
                    if c["outcome"] == Outcome.PASSED.value
                    and c["state"] not in (STATE_XPASS, STATE_FLAKY)
                ],
                "prediction": _prediction_view(view) if view is not None else None,
                "trend": trend.note() if trend is not None else "",
                "omitted": len(cell.cases) - len(cases),
            }
        )
    if omitted_cases:
        cuts.append(f"{omitted_cases} case rows left out")
    if omitted_cells:
        cuts.append(f"{omitted_cells} cell drill-downs left out")
    disagreements = [
        {
            "host": host,
            "variant": variant,
            "anchor": anchors.get((host, variant)),
            "text": view.disagreement,
            "summary": view.prediction.summary(),
        }
        for (host, variant), view in sorted(report.predictions.items())
        if view.disagreement
    ]
    changes = [
        {
            "host": h,
            "variant": v,
            "anchor": anchors.get((h, v)),
            "text": t.note(),
            "state": cell_label(report.cell(h, v))[0],
        }
        for (h, v), t in sorted(report.trends.items())
        if t.note()
    ]
    outcomes = Counter(view.prediction.outcome for view in report.predictions.values())
    merged = merge_notes(report)
    template = env.get_template(shipped_data.HTML_TEMPLATE.name)
    lanes = variant_lanes(report)
    states = [*EFFECTIVE_STATE_ORDER, STATE_MISSING]
    return template.render(
        generator=GENERATOR,
        generated_at=report.generated_at,
        totals_line=totals_line(report),
        n_inputs=len(report.inputs),
        variants=[
            {
                "id": v["id"],
                "lane": ", ".join(lanes.get(v["id"], ())),
                "title": _props_title(v["properties"]),
            }
            for v in variants
        ],
        rows=rows,
        details=details,
        problems=report.problems,
        warnings=report.warnings,
        merged=merged[:HTML_MAX_MERGE_NOTES],
        merged_more=max(0, len(merged) - HTML_MAX_MERGE_NOTES),
        legend=[
            (css_class(state), text)
            for state, text in LEGEND
            if (state not in (STATE_EXPECTED, STATE_XPASS) or report.expectations)
            and (state != STATE_FLAKY or has_flaky(report))
        ],
        filter_states=[(s, css_class(s)) for s in states],
        all_states=[css_class(s) for s in states],
        signatures=sorted(
            {c.signature for cell in report.cells for c in cell.cases if c.signature}
        )[:HTML_MAX_SIGNATURES],
        disagreements=disagreements,
        predicted={o: outcomes[o] for o in compat.OUTCOMES} if report.predictions else None,
        history_runs=report.history_runs,
        changes=changes,
        expectations=report.matrix["expectations"],
        expectation_labels={r.index: r.label for r in report.expectations},
        plot=markupsafe.Markup(throughput_svg(report)),
        start_methods=[
            {
                "title": start_methods.title(summary),
                "note": start_methods.LEGACY_NOTE if summary.legacy else "",
                "rows": [start_methods.row_texts(row) for row in summary.rows],
            }
            for summary in report.start_methods
        ],
        start_methods_headings=start_methods.HEADINGS,
        start_methods_explanation=start_methods.EXPLANATION,
        cuts=cuts,
    )


def _prediction_view(view: PredictionView) -> dict[str, Any]:
    return {
        "outcome": view.prediction.outcome,
        "unverified": view.prediction.unverified,
        "observed": view.observed,
        "disagreement": view.disagreement,
        "reasons": [r.to_json() for r in view.prediction.reasons],
    }


def _props_title(props: Mapping[str, str]) -> str:
    lines = [f"{k} = {v}" for k, v in props.items()]
    return "\n".join(lines[:50] + ([f"… {len(lines) - 50} more"] if len(lines) > 50 else []))
