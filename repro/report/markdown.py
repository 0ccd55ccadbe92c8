"""``matrix.md``: the matrix as GitHub-flavoured Markdown for ``$GITHUB_STEP_SUMMARY``.

GitHub caps a step summary at 1 MiB, so the page is built to fit :data:`MD_MAX_BYTES`: the
table falls back to emoji-only cells, then to a pointer to matrix.html; per-cell case lists are
dropped largest-last once the fixed sections have taken their share; every cut says so. Text
from inputs is escaped (``|``, ``<``, ``>``, backticks: junit-notes.md) and never becomes markup.
"""

from __future__ import annotations

import html
from collections import Counter

from repro import compat
from repro.outcomes import EXPECT_EXPECTED, EXPECT_OTHER, EXPECT_XPASS, Outcome
from repro.report import start_methods
from repro.report.labels import (
    EMOJI,
    case_label,
    cell_label,
    cell_marks,
    has_flaky,
    legend_line,
    merge_notes,
    plural,
    skip_line,
    variant_heading,
    variant_lanes,
)
from repro.report.merge import totals_line
from repro.report.model import (
    STATE_EXPECTED,
    STATE_FLAKY,
    STATE_INVALID,
    STATE_XPASS,
    CaseRecord,
    Cell,
    Report,
)

#: Markdown limits: GitHub step summaries are capped at 1 MiB per step.
MD_MAX_BYTES = 900_000
MD_MAX_CASES_PER_CELL = 50
MD_MAX_PROBLEMS = 100
MD_MAX_LIST = 50

_MD_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "~": "\\~",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\r": " ",
        "\n": " ",
        "\t": " ",
    }
)


def md_escape(text: str) -> str:
    """Escape text for a Markdown table cell or list item (one line, no markup, no HTML)."""
    return text.translate(_MD_ESCAPES)


def _md_cell(report: Report, host: str, variant: str, compact: bool = False) -> str:
    state, label = cell_label(report.cell(host, variant))
    marks = cell_marks(report, host, variant)
    if compact:  # emoji only: a very large matrix must still fit the step summary
        return EMOJI[state] + "".join(emoji for _, emoji, _ in marks)
    notes = "".join(f" · {emoji} {md_escape(text)}" for _, emoji, text in marks)
    return f"{EMOJI[state]} {md_escape(label)}{notes}"


def _md_table(report: Report, compact: bool) -> list[str]:
    variant_ids = [v["id"] for v in report.variants]
    lanes = variant_lanes(report)
    headings = [md_escape(variant_heading(v, lanes)) for v in variant_ids]
    lines = ["| host \\\\ variant | " + " | ".join(headings) + " |"]
    lines.append("|---" * (len(variant_ids) + 1) + "|")
    for host in (h["key"] for h in report.hosts):
        row = [_md_cell(report, host, variant, compact) for variant in variant_ids]
        lines.append(f"| **{md_escape(host)}** | " + " | ".join(row) + " |")
    return lines


def _md_warnings(report: Report) -> list[str]:
    if not report.warnings:
        return []
    lines = ["## Warnings", ""]
    lines += [f"- {md_escape(w)}" for w in report.warnings[:MD_MAX_PROBLEMS]]
    if len(report.warnings) > MD_MAX_PROBLEMS:
        lines.append(f"- … and {len(report.warnings) - MD_MAX_PROBLEMS} more (see matrix.json)")
    return [*lines, ""]


def _md_merged(report: Report) -> list[str]:
    """Partial runs and superseded results: the matrix shows the newest result per case, and
    says which inputs did not count whole."""
    notes = merge_notes(report)
    if not notes:
        return []
    lines = [
        "## Runs merged per case",
        "",
        "The newest result of each case counts; a partial run hides no older result.",
        "",
    ]
    for kind, path, text in notes[:MD_MAX_LIST]:
        lines.append(f"- {kind}: {md_escape(path)}: {md_escape(text)}")
    if len(notes) > MD_MAX_LIST:
        lines.append(f"- … and {len(notes) - MD_MAX_LIST} more (see matrix.json inputs)")
    return [*lines, ""]


def _md_changes(report: Report) -> list[str]:
    if report.history_runs is None:
        return []
    lines = ["## Changes since the previous report", ""]
    if not report.history_runs:
        return [*lines, "No earlier report in the history directory yet.", ""]
    groups = {
        "Newly red": [k for k, t in report.trends.items() if t.change == "newly red"],
        "Newly green": [k for k, t in report.trends.items() if t.change == "newly green"],
        "Red several runs in a row": [k for k, t in report.trends.items() if t.red_runs >= 2],
    }
    if not any(groups.values()):
        lines.append(
            f"No cell changed colour ({plural(report.history_runs, 'earlier report')} compared)."
        )
    for title, keys in groups.items():
        if not keys:
            continue
        lines.append(f"**{title}** ({len(keys)}):")
        for host, variant in sorted(keys)[:MD_MAX_LIST]:
            trend = report.trends[(host, variant)]
            state, text = cell_label(report.cell(host, variant))
            was = f", was {trend.previous}" if trend.previous else ""
            streak = f", red {trend.red_runs} runs" if trend.red_runs >= 2 else ""
            lines.append(
                f"- {EMOJI[state]} {md_escape(host)} · {md_escape(variant)}: "
                f"{md_escape(text)}{md_escape(was + streak)}"
            )
        if len(keys) > MD_MAX_LIST:
            lines.append(f"- … and {len(keys) - MD_MAX_LIST} more")
        lines.append("")
    return [*lines, ""] if lines[-1] else lines


def _reason_md(reason: compat.Reason) -> str:
    mark = ", unverified" if reason.unverified else ""
    return f"{md_escape(reason.text)} ({md_escape(reason.fact)}{mark})"


def _md_predictions(report: Report) -> list[str]:
    if not report.predictions:
        return []
    outcomes = Counter(view.prediction.outcome for view in report.predictions.values())
    disagreements = sorted(k for k, v in report.predictions.items() if v.disagreement)
    lines = [
        "## Prediction vs observation",
        "",
        f"Predicted from published compatibility facts: {outcomes[compat.PASS]} pass, "
        f"{outcomes[compat.FAIL]} fail, {outcomes[compat.UNKNOWN]} unknown; "
        f"{plural(len(disagreements), 'disagreement')} with the observed cells.",
        "",
    ]
    if disagreements:
        lines += ["| host | variant | disagreement | predicted because |", "|---|---|---|---|"]
        for key in disagreements[:MD_MAX_LIST]:
            view = report.predictions[key]
            deciding = view.prediction.deciding or view.prediction.reasons
            why = "; ".join(_reason_md(r) for r in deciding[:3])
            lines.append(
                f"| {md_escape(key[0])} | {md_escape(key[1])} | ⚠️ {md_escape(view.disagreement or '')} | {why} |"
            )
        if len(disagreements) > MD_MAX_LIST:
            lines.append(f"| … and {len(disagreements) - MD_MAX_LIST} more | | | |")
        lines.append("")
    failing = sorted(
        k for k, v in report.predictions.items() if v.prediction.outcome == compat.FAIL
    )
    if failing:
        lines += [
            f"<details><summary>Predicted to fail ({len(failing)})</summary>",
            "",
            "| host | variant | observed | reasons |",
            "|---|---|---|---|",
        ]
        for key in failing[:MD_MAX_LIST]:
            view = report.predictions[key]
            state, _ = cell_label(report.cell(*key))
            why = "; ".join(_reason_md(r) for r in view.prediction.deciding[:3])
            lines.append(
                f"| {md_escape(key[0])} | {md_escape(key[1])} | {EMOJI[state]} {state} | {why} |"
            )
        if len(failing) > MD_MAX_LIST:
            lines.append(f"| … and {len(failing) - MD_MAX_LIST} more | | | |")
        lines += ["", "</details>", ""]
    return lines


def _md_expectations(report: Report) -> list[str]:
    if not report.expectations:
        return []
    lines = [
        "## Expected reproductions (matrix.yaml `expect`)",
        "",
        "| entry | outcome | reason | expected | unexpectedly passing | other outcome |",
        "|---|---|---|---|---|---|",
    ]
    labels = {rule.index: rule.label for rule in report.expectations}
    for item in report.matrix["expectations"]:
        reason = md_escape(item["reason"])
        if item["link"]:
            reason += f" ([link]({item['link'].replace(')', '%29').replace(' ', '%20')}))"
        lines.append(
            f"| {md_escape(labels[item['index']])} | {md_escape(item['outcome'])} | {reason} | {item['expected']} "
            f"| {'🟨 ' if item['unexpectedly_passing'] else ''}{item['unexpectedly_passing']} | {item['other_outcome']} |"
        )
    return [*lines, ""]


def _md_problems(report: Report) -> list[str]:
    if not report.problems:
        return []
    lines = ["## Inputs with problems", ""]
    for path, reason in report.problems[:MD_MAX_PROBLEMS]:
        lines.append(f"- {md_escape(path)}: {md_escape(reason)}")
    if len(report.problems) > MD_MAX_PROBLEMS:
        lines.append(f"- … and {len(report.problems) - MD_MAX_PROBLEMS} more (see matrix.json)")
    lines.append("")
    return lines


def _md_start_methods(report: Report) -> list[str]:
    """The start-method summary (``repro.report.start_methods``): one table per host, variant
    and device with dataloader results."""
    if not report.start_methods:
        return []
    lines = ["## Start methods (DataLoader)", "", md_escape(start_methods.EXPLANATION), ""]
    for summary in report.start_methods[:MD_MAX_LIST]:
        lines += [f"**{md_escape(start_methods.title(summary))}**", ""]
        if summary.legacy:
            lines += [f"_{md_escape(start_methods.LEGACY_NOTE)}._", ""]
        lines += [
            "| " + " | ".join(md_escape(h) for h in start_methods.HEADINGS) + " |",
            "|---" * len(start_methods.HEADINGS) + "|",
        ]
        lines += [
            "| " + " | ".join(md_escape(text) for text in start_methods.row_texts(row)) + " |"
            for row in summary.rows
        ]
        lines.append("")
    if len(report.start_methods) > MD_MAX_LIST:
        lines += [f"_… and {len(report.start_methods) - MD_MAX_LIST} more in matrix.json._", ""]
    return lines


def render_markdown(report: Report) -> str:
    """``matrix.md``: fits a GitHub step summary (1 MiB): per-cell details are collapsed and
    dropped, largest sections last, once the fixed sections have taken their share."""
    host_keys = [h["key"] for h in report.hosts]
    variant_ids = [v["id"] for v in report.variants]
    lines = ["# repro-matrix compatibility matrix", "", f"**{totals_line(report)}**", ""]
    invalid = sum(1 for r in report.inputs if r.state == STATE_INVALID)
    lines.append(
        f"{plural(len(report.inputs), 'input file')}, {plural(len(report.cells), 'cell')}"
        + (f", {plural(invalid, 'invalid input')}" if invalid else "")
        + f" · generated {report.generated_at}"
    )
    lines.append("")
    if host_keys:
        table = _md_table(report, compact=False)
        if sum(len(line.encode()) + 1 for line in table) > MD_MAX_BYTES // 2:
            table = _md_table(report, compact=True)
            table.insert(
                0,
                "_Large matrix: cells show their state as an emoji only (legend below the table); matrix.html has the counts._\n",
            )
        if sum(len(line.encode()) + 1 for line in table) > MD_MAX_BYTES * 3 // 4:
            table = [
                f"_The {len(host_keys)} x {len(variant_ids)} matrix does not fit a step summary; see matrix.html._"
            ]
        lines += [
            *table,
            "",
            f"_Legend:_ {legend_line(has_flaky(report), any(c.changed_files for c in report.cells))}",
            "",
        ]
    else:
        lines += ["No JUnit inputs found.", ""]
    lines += _md_warnings(report)
    lines += _md_merged(report)
    lines += _md_changes(report)
    lines += _md_predictions(report)
    lines += _md_expectations(report)
    tail = _md_start_methods(report) + _md_problems(report)

    fixed = len("\n".join(lines).encode()) + len("\n".join(tail).encode())
    budget = MD_MAX_BYTES - fixed - 4096
    sections: list[str] = []
    omitted = 0
    for cell in report.cells:
        listed = [
            case
            for case in cell.sorted_cases()
            if (
                case.outcome not in (Outcome.PASSED, Outcome.SKIPPED)
                or case.expect_status == EXPECT_XPASS
                or case.is_flaky
                or case.findings
            )
        ]
        if not listed and not skip_line(cell.cases):
            continue
        section = _md_cell_section(report, cell, listed)
        size = len(section.encode()) + 1
        if size > budget:
            omitted += 1
            continue
        budget -= size
        sections.append(section)
    if sections or omitted:
        lines += [
            "## Cases that did not pass",
            "",
            "Problems first, then expected reproductions; skips are grouped by reason.",
            "",
        ]
        lines += sections
        if omitted:
            lines += [
                f"_{omitted} more cells omitted to stay under the step-summary size limit; see matrix.html or matrix.json._",
                "",
            ]
    lines += tail
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_cell_section(report: Report, cell: Cell, listed: list[CaseRecord]) -> str:
    """One cell's ``<details>``: its problem cases and expected reproductions (one row each,
    problems first) and one line for its skips grouped by reason."""
    state, text = cell_label(cell)
    summary = html.escape(f"{EMOJI[state]} {cell.host} · {cell.column} — {text}")
    out = [f"<details><summary>{summary}</summary>", ""]
    view = report.predictions.get((cell.host, cell.column))
    if view is not None and view.disagreement:
        out += [f"⚠️ {md_escape(view.disagreement)}: {md_escape(view.prediction.summary())}", ""]
    # Unexpected outcomes before expected reproductions; each group worst first.
    listed = sorted(listed, key=lambda case: case.expect_status == EXPECT_EXPECTED)
    if listed:
        out += ["| outcome | case | signature | message |", "|---|---|---|---|"]
    for case in listed[:MD_MAX_CASES_PER_CELL]:
        label = case.outcome.value
        note = ""
        if case.expect_status == EXPECT_EXPECTED:
            label = "expected reproduction"
            note = f" (expected: {case.expect.reason})"
            emoji = EMOJI[STATE_EXPECTED]
        elif case.expect_status == EXPECT_XPASS:
            label, note = (
                STATE_XPASS,
                f" (expected {case.expect.outcome}: {case.expect.reason})",
            )
            emoji = EMOJI[STATE_XPASS]
        elif case.is_flaky:
            label, emoji = STATE_FLAKY, EMOJI[STATE_FLAKY]
            note = f"passed on rerun {case.reruns}; first attempt {case.first_signature or 'red'}"
        else:
            emoji = EMOJI.get(label, "")
            if case.expect_status == EXPECT_OTHER:
                note = f" (expected {case.expect.outcome}: {case.expect.reason})"
        out.append(
            f"| {emoji} {label} | {md_escape(case_label(case))} "
            f"| {md_escape(case.signature or case.first_signature or '')} "
            f"| {md_escape(case.message + note)} |"
        )
    if len(listed) > MD_MAX_CASES_PER_CELL:
        out.append(f"| | … and {len(listed) - MD_MAX_CASES_PER_CELL} more | | |")
    skips = skip_line(cell.cases)
    if skips:
        out += (
            ["", f"{EMOJI['skipped']} {md_escape(skips)}"]
            if listed
            else [f"{EMOJI['skipped']} {md_escape(skips)}"]
        )
    out += ["", "</details>", ""]
    return "\n".join(out)
