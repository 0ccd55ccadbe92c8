"""What a cell and a case say, shared by the Markdown and HTML renderings.

A cell's label is its effective state plus counts worst first (``3 hung · 2 passed``), its marks
are the flags beside it (change since the previous report, red streak, prediction disagreement),
and each state has one emoji. Nothing here reads or writes files.
"""

from __future__ import annotations

from repro import properties as property_names
from repro.outcomes import DOCTOR_SCENARIO, Outcome
from repro.report.model import (
    STATE_EXPECTED,
    STATE_FLAKY,
    STATE_INVALID,
    STATE_MISSING,
    STATE_NO_TESTS,
    STATE_XPASS,
    CaseRecord,
    Cell,
    Report,
)

#: The red states of a cell: a reproduced bug or a broken run (failed, error, crashed, hung);
#: ``expected`` (blue) is not among them.
RED_STATES = frozenset(
    o.value for o in (Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.HUNG)
)

EMOJI = {
    Outcome.PASSED.value: "🟩",
    Outcome.FAILED.value: "🟥",
    Outcome.ERROR.value: "🟧",
    Outcome.CRASHED.value: "🟫",
    Outcome.HUNG.value: "🟪",
    Outcome.SKIPPED.value: "⬜",
    STATE_NO_TESTS: "⚪",
    STATE_INVALID: "❗",
    STATE_MISSING: "➖",
    STATE_EXPECTED: "🟦",
    STATE_XPASS: "🟨",
    STATE_FLAKY: "🔀",
}


#: What each state means, in the order a legend lists them (Markdown and HTML).
LEGEND = (
    (Outcome.PASSED.value, "passed"),
    (Outcome.FAILED.value, "failed (the bug reproduced)"),
    (Outcome.ERROR.value, "error"),
    (Outcome.CRASHED.value, "crashed (signal)"),
    (Outcome.HUNG.value, "hung (watchdog)"),
    (STATE_EXPECTED, "expected reproduction (matrix.yaml expect)"),
    (STATE_XPASS, "unexpectedly passing"),
    (STATE_FLAKY, "flaky (red, then passed on a rerun)"),
    (Outcome.SKIPPED.value, "skipped"),
    (STATE_NO_TESTS, "no tests in the file"),
    (STATE_INVALID, "invalid input file"),
    (STATE_MISSING, "missing (no result)"),
)
#: The marks beside a cell (``cell_marks``), for the legend.
MARK_LEGEND = (
    ("🆕", "newly red"),
    ("✅", "newly green"),
    ("🔁", "red several runs in a row"),
    ("⚠️", "prediction disagrees"),
)
#: The mark of a cell holding a run whose junit.xml changed after the run (issue 32).
CHANGED_MARK = "changed after the run"


def has_flaky(report: Report) -> bool:
    """Whether any case of the report passed only on a rerun."""
    return any(case.is_flaky for cell in report.cells for case in cell.cases)


def legend_line(flaky: bool = False, changed: bool = False) -> str:
    """``🟩 passed · 🟥 failed (the bug reproduced) · …``: one line explaining every emoji
    (``flaky`` only when ``flaky`` is true: a report without reruns never shows it; the
    "changed after the run" mark only when ``changed``)."""
    states = [f"{EMOJI[state]} {text}" for state, text in LEGEND if flaky or state != STATE_FLAKY]
    marks = [*MARK_LEGEND, *((("✏️", CHANGED_MARK),) if changed else ())]
    return " · ".join(states + [f"{emoji} {text}" for emoji, text in marks])


def skip_groups(cases: list[CaseRecord]) -> list[tuple[str, int]]:
    """(reason, count) of the skipped cases, most frequent first (then by reason)."""
    counts: dict[str, int] = {}
    for case in cases:
        if case.outcome is Outcome.SKIPPED and case.expect_status != "expected":
            reason = case.message or "no reason given"
            counts[reason] = counts.get(reason, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def skip_line(cases: list[CaseRecord], limit: int = 10) -> str:
    """``62 skipped: 60 no CUDA/ROCm device visible, 2 needs docker`` (``50 skipped: REASON``
    with one reason; "" when none skipped);
    past ``limit`` reasons: ``, … 3 more reasons``."""
    groups = skip_groups(cases)
    if not groups:
        return ""
    total = sum(n for _, n in groups)
    if len(groups) == 1:
        return f"{total} skipped: {groups[0][0]}"
    parts = [f"{n} {reason}" for reason, n in groups[:limit]]
    if len(groups) > limit:
        parts.append(f"… {plural(len(groups) - limit, 'more reason')}")
    return f"{total} skipped: " + ", ".join(parts)


def cell_label(cell: Cell | None) -> tuple[str, str]:
    """(effective state, short text) of a matrix cell; ``None`` is a missing cell."""
    if cell is None:
        return STATE_MISSING, "missing"
    state = cell.effective_state
    counts = " · ".join(f"{n} {label}" for label, n in cell.display_counts())
    if state == STATE_NO_TESTS:
        return state, "no tests"
    if state == STATE_INVALID:
        return state, "invalid" + (f" · {counts}" if counts else "")
    if cell.invalid_files:
        counts += f" · {cell.invalid_files} invalid"
    return state, counts


def css_class(state: str) -> str:
    """The CSS class of a state (``no tests`` -> ``no-tests``)."""
    return state.replace(" ", "-")


def cell_marks(report: Report, host: str, variant: str) -> list[tuple[str, str, str]]:
    """(flag, emoji, text) shown beside a cell: change since the previous report, red streak,
    disagreement between prediction and observation."""
    out = []
    trend = report.trends.get((host, variant))
    if trend is not None and trend.change == "newly red":
        out.append(("newly-red", "🆕", "newly red"))
    elif trend is not None and trend.change == "newly green":
        out.append(("newly-green", "✅", "newly green"))
    if trend is not None and trend.red_runs >= 2:
        out.append(("streak", "🔁", f"red {trend.red_runs} runs in a row"))
    view = report.predictions.get((host, variant))
    if view is not None and view.disagreement:
        out.append(("disagree", "⚠️", f"predicted {view.prediction.outcome}"))
    cell = report.cell(host, variant)
    if cell is not None and cell.changed_files:  # its junit.xml is not what the runner wrote
        out.append(("changed", "✏️", CHANGED_MARK))
    found = sum(len(case.findings) for case in cell.cases) if cell is not None else 0
    if found:  # passed, but the output shows failure evidence (issue 21, item 4)
        out.append(("findings", "🔎", plural(found, "finding")))
    return out


def case_label(case: CaseRecord) -> str:
    """``scenario › case id`` (just the case id when it already starts with the scenario)."""
    name = case.case or "(no name)"
    return (
        f"{case.scenario} › {name}"
        if case.scenario and not name.startswith(case.scenario)
        else name
    )


def plural(n: int, word: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def merge_notes(report: Report) -> list[tuple[str, str, str]]:
    """(kind, input path, text) for each of our runs that did not finish (``partial``) or lost
    cases to a newer run of the same (host, variant) (``superseded``), in input order: what the
    matrix merged per case instead of showing whole (``repro.report.merge``). Counts are of
    scenario cases: doctor checks (``repro.outcomes.DOCTOR_SCENARIO``), which every run repeats,
    are left out."""
    out = []
    for record in report.inputs:
        tests = sum(case.scenario != DOCTOR_SCENARIO for case in record.cases)
        if record.partial:
            text = f"{record.partial}; its {plural(tests, 'case')} count, older results stay"
            out.append(("partial", record.path, text))
        if record.superseded_cases:
            by = ", ".join(record.superseded_by)
            what = (
                f"all {plural(record.superseded_cases, 'case')}"
                if record.superseded_cases == tests
                else f"{record.superseded_cases} of {plural(tests, 'case')}"
            )
            out.append(("superseded", record.path, f"{what} superseded by the newer {by}"))
    return out


def variant_lanes(report: Report) -> dict[str, list[str]]:
    """Variant id -> the lanes its results came from (sorted; superseded runs left out), read
    from each input's ``variant.lane`` property; a variant without one is absent."""
    from repro.report.model import STATE_SUPERSEDED

    lanes: dict[str, set[str]] = {}
    for record in report.inputs:
        lane = record.variant_properties.get(property_names.LANE)
        if lane and record.state != STATE_SUPERSEDED:
            lanes.setdefault(record.variant, set()).add(lane)
    return {variant: sorted(found) for variant, found in lanes.items()}


def variant_heading(variant: str, lanes: dict[str, list[str]]) -> str:
    """A column heading: the variant id and its lanes, ``cpu-torch2.13 (venv)``."""
    found = lanes.get(variant)
    return f"{variant} ({', '.join(found)})" if found else variant
