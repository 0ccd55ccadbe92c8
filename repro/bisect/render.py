"""What a bisect prints: the plan (``--dry-run``), the result as Markdown with every step's
evidence, the paragraph to paste into an issue, and the JSON record. Pure: text in, text out.
"""

from __future__ import annotations

from typing import Any

from repro.bisect import search, versions
from repro.bisect.run import Plan, Result, Step


def plan_text(plan: Plan, command: list[str]) -> str:
    """The ``--dry-run`` plan: versions with their indices, the bound on steps, the
    environment and the ``repro run`` of one repeat."""
    n = len(plan.versions)
    lines = [
        f"bisect {plan.package}: {n} versions served from {plan.versions[0]} (good) to "
        f"{plan.versions[-1]} (bad)",
    ]
    for index, version in enumerate(plan.versions):
        role = " (good end)" if index == 0 else " (bad end)" if index == n - 1 else ""
        lines.append(f"  [{index}] {version}{role}")
    lines += [
        f"runs: the 2 ends, then at most {search.max_steps(n)} steps between them "
        f"(one more per skipped, flaky or other step), {plan.repeats} repeat(s) each",
        f"each environment: {' '.join(plan.pins('<version>'))}, Python {plan.base.python}, "
        f"{plan.base.source.describe()}",
        f"each repeat: {' '.join(command)}",
        f"results: {plan.results}",
    ]
    return "\n".join(lines) + "\n"


def _ends(result: Result) -> tuple[Step | None, Step | None]:
    outcome = result.outcome
    if outcome is None:
        return None, None
    return result.step_at(outcome.last_good), result.step_at(outcome.first_bad)


def _case_text(result: Result) -> str:
    cases = [r.case for r in result.regressions]
    return ", ".join(f"`{c}`" for c in cases) or ", ".join(
        f"`-k {p}`" for p in result.plan.patterns
    )


def summary_line(result: Result) -> str:
    """One line: the first bad version, the suspects, or why the bisect stopped."""
    if result.stopped:
        return f"stopped: {result.stopped}"
    outcome = result.outcome
    assert outcome is not None
    names = result.plan.versions
    if outcome.found:
        return f"last good {names[outcome.last_good]}, first bad {names[outcome.first_bad]}"
    suspects = ", ".join(names[i] for i in (*outcome.suspects, outcome.first_bad))
    return (
        f"last good {names[outcome.last_good]}; first bad is one of {suspects} "
        "(steps between them were skipped, flaky or failed otherwise: no verdict)"
    )


def paragraph(result: Result) -> str:
    """The paragraph for an issue: versions, ``torch.version.git_version`` of both ends and of
    the last good / first bad, the compare URL, the case, the host key."""
    plan = result.plan
    good_end, bad_end = (
        result.steps[0] if result.steps else None,
        result.step_at(len(plan.versions) - 1),
    )
    last_good, first_bad = _ends(result)
    pkg = plan.package

    def named(step: Step | None) -> str:
        if step is None:
            return "?"
        commit = f", git {step.git_version[:12]}" if step.git_version else ""
        return f"{pkg} {step.installed or step.version}{commit}"

    text = [
        f"Bisected with repro-matrix ({plan.repeats} run(s) per version, each in its own uv "
        f"environment, Python {plan.base.python}): {_case_text(result)} "
        f"{'regresses' if not result.stopped else 'was bisected'} between {named(good_end)} "
        f"(good) and {named(bad_end)} (bad)."
    ]
    if result.regressions:
        reg = result.regressions[0]
        text.append(f"Good end: {reg.good.describe()}. Bad end: {reg.bad.describe()}.")
    text.append(summary_line(result)[0].upper() + summary_line(result)[1:] + ".")
    if last_good is not None and first_bad is not None and result.outcome and result.outcome.found:
        url = versions.compare_url(pkg, last_good.git_version, first_bad.git_version)
        text.append(f"First bad: {named(first_bad)}; last good: {named(last_good)}.")
        if url:
            text.append(f"Commits between them: {url}")
    ends_url = versions.compare_url(
        pkg, good_end.git_version if good_end else None, bad_end.git_version if bad_end else None
    )
    if ends_url and not (result.outcome and result.outcome.found):
        text.append(f"Commits between the ends: {ends_url}")
    text.append(
        f"Versions served ({len(plan.versions)}): {', '.join(plan.versions)}; "
        f"{len(result.steps)} tested ({result.search_steps} between the ends)."
    )
    if result.host_key:
        text.append(f"Host: {result.host_key}.")
    return " ".join(text)


def markdown(result: Result) -> str:
    """The whole result: the summary, every step with its evidence, the paragraph."""
    lines = [
        f"## repro bisect {result.plan.package}: {summary_line(result)}",
        "",
        f"Wall time {result.wall_s:.0f} s; {len(result.steps)} versions tested "
        f"({result.search_steps} between the ends), {result.plan.repeats} run(s) each.",
        "",
        "| # | role | version | verdict | evidence |",
        "|---|---|---|---|---|",
    ]
    for step in result.steps:
        evidence = step.reason.replace("|", "\\|") or "-"
        runs = "; ".join(f"{r.verdict.value}: {r.run_dir}" for r in step.repeats)
        if runs:
            evidence += f" ({runs})"
        lines.append(
            f"| {step.index} | {step.role} | {step.version} | {step.verdict.value} | {evidence} |"
        )
    lines += ["", "Paste into an issue:", "", "> " + paragraph(result), ""]
    return "\n".join(lines)


def to_json(result: Result) -> dict[str, Any]:
    """The JSON record (``bisect.json``, ``--json``)."""
    outcome = result.outcome
    names = result.plan.versions
    return {
        "schema": 1,
        "package": result.plan.package,
        "versions": names,
        "repeats": result.plan.repeats,
        "patterns": list(result.plan.patterns),
        "stopped": result.stopped,
        "last_good": names[outcome.last_good] if outcome else None,
        "first_bad": names[outcome.first_bad] if outcome else None,
        "found": bool(outcome and outcome.found),
        "suspects": [names[i] for i in outcome.suspects] if outcome else [],
        "regressions": [
            {"case": r.case, "good": r.good.__dict__, "bad": r.bad.__dict__}
            for r in result.regressions
        ],
        "steps": [s.to_json() for s in result.steps],
        "search_steps": result.search_steps,
        "host_key": result.host_key,
        "wall_s": round(result.wall_s, 1),
        "paragraph": paragraph(result),
    }
