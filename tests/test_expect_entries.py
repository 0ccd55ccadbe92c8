"""Expectations validated once (issue 31, item 7): matrix.yaml's ``expect:`` list and a
``script:`` entry's own ``expect:`` go through one validator (``repro.config.expect_entries``),
so the same bad value gets the same message and the same limits in both places."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repro.config import load
from repro.config.expect_entries import MAX_LINK_CHARS, MAX_REASON_CHARS
from repro.errors import ConfigError

HEADER = """\
version: 1
defaults: {results_dir: results}
variants:
  - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}
scenarios:
  my_bug: {script: repro/ok.py, expect: {%s}}
"""
LIST = HEADER % "reason: fine" + "expect:\n  - {case: 'my_bug', %s}\n"


def _problem(tmp_path: Path, text: str) -> str:
    (tmp_path / "repro").mkdir(exist_ok=True)
    (tmp_path / "repro" / "ok.py").write_text("pass\n")
    config = tmp_path / "matrix.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load(config)
    return str(raised.value)


@pytest.mark.parametrize(
    ("entry", "field", "expected"),
    [
        ("outcome: broken", "outcome", "expected one of failed, hung, crashed, error, any-problem"),
        (
            "link: 'ftp://host/x'",
            "link",
            "an http(s) URL of the issue or document behind the reason",
        ),
        (f"link: 'https://x/{'a' * MAX_LINK_CHARS}'", "link", "an http(s) URL"),
        ("reason: '  '", "reason", "expected a non-empty string saying"),
        (
            f"reason: '{'r' * (MAX_REASON_CHARS + 1)}'",
            "reason",
            "expected a non-empty string saying",
        ),
        ("signature: 7", "signature", "expected a non-empty glob string"),
        ("strict: maybe", "strict", "expected true or false"),
    ],
)
def test_the_list_and_a_script_entry_refuse_the_same_value_alike(tmp_path, entry, field, expected):
    inline = _problem(tmp_path, HEADER % entry)
    listed = _problem(tmp_path, LIST % entry)
    assert re.search(rf"scenarios\.my_bug\.expect\.{field}: [^\n]*{re.escape(expected)}", inline)
    assert re.search(rf"expect\[0\]\.{field}: [^\n]*{re.escape(expected)}", listed)


def test_a_reason_at_the_limit_is_accepted_in_both(tmp_path):
    reason = "r" * MAX_REASON_CHARS
    (tmp_path / "repro").mkdir()
    (tmp_path / "repro" / "ok.py").write_text("pass\n")
    config = tmp_path / "matrix.yaml"
    config.write_text(
        HEADER % f"reason: {reason}" + f"expect:\n  - {{case: my_bug, reason: {reason}}}\n"
    )
    matrix = load(config)
    assert [e.reason for e in matrix.expectations] == [reason, reason]
