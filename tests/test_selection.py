"""One glob semantics for every selector: ``-k`` (cases), ``--variant`` and ``expect:``.

``*`` and ``?`` are the only wildcards; brackets are literal everywhere, because case ids are
``scenario[axis=value,...]``. (Before, ``-k`` and ``--variant`` used fnmatch, where ``[...]`` is a
character class and ``ddp[backend=*]`` matched nothing.)
"""

from __future__ import annotations

import pytest
from conftest import REPO, run_cli

from repro import config
from repro.errors import ConfigError


def listed(*args: str) -> list[str]:
    proc = run_cli("run", "--list", "--config", "matrix.yaml", *args, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_glob_brackets_are_literal_and_only_star_and_question_mark_are_wildcards():
    assert config.glob_match("ddp[backend=*]", "ddp[backend=gloo,fault=none]")
    assert config.glob_match("cu12?-torch2.8", "cu128-torch2.8")
    assert not config.glob_match("cu12[68]-*", "cu128-torch2.8")  # no character class
    assert config.glob_match("cu12[68]-*", "cu12[68]-torch2.8")
    assert not config.glob_match("ddp", "ddp[backend=gloo]")  # a glob matches the whole id


@pytest.mark.slow
def test_case_selector_with_brackets_lists_every_case_of_the_scenario():
    every = listed()
    ddp = [case_id for case_id in every if case_id.startswith("ddp[")]
    assert ddp and listed("-k", "ddp[backend=*]") == ddp
    cudnn_cpu = [c for c in every if c.startswith("cudnn[device=cpu,")]
    assert cudnn_cpu and listed("-k", "cudnn[device=cpu,*") == cudnn_cpu
    assert listed("-k", "fork_safety") == [c for c in every if "fork_safety" in c]


def test_case_selector_with_a_character_class_matches_nothing_and_exits_2():
    proc = run_cli(
        "run", "--list", "--config", "matrix.yaml", "-k", "dd[pq]*", cwd=REPO, timeout=120
    )
    assert proc.returncode == 2
    assert "case selector 'dd[pq]*' matches no case" in proc.stderr
    assert "brackets are literal" in proc.stderr


def test_variant_selector_brackets_are_literal():
    matrix = config.load(REPO / "matrix.yaml")
    assert [v.id for v in matrix.select_variants(["cu12?-torch2.8"])] == [
        "cu126-torch2.8",
        "cu128-torch2.8",
    ]
    with pytest.raises(ConfigError, match=r"variant selector 'cu12\[68\]-\*' matches no variant"):
        matrix.select_variants(["cu12[68]-*"])
    proc = run_cli("plan", "--variant", "cu12[68]-*", cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "matches no variant id" in proc.stderr


def test_expect_selectors_use_the_same_globs():
    matrix = config.load(REPO / "matrix.yaml")
    rank_raises = next(e for e in matrix.expectations if "rank_raises" in e.case)
    assert rank_raises.case == "ddp[backend=*,fault=rank_raises]"
    assert rank_raises.matches(
        scenario="ddp",
        case="ddp[backend=gloo,fault=rank_raises]",
        variant="cpu-torch2.13",
        host="h",
    )
    assert not rank_raises.matches(
        scenario="ddp", case="ddp[backend=gloo,fault=none]", variant="cpu-torch2.13", host="h"
    )
    entry = config.Expectation(index=0, reason="r", case="*", variant="cu12[68]-*")
    assert not entry.matches(scenario="x", case="x", variant="cu128-torch2.8", host="h")
