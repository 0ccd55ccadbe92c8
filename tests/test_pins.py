"""matrix.yaml's pins against the published facts (repro/data/compat-facts.yaml).

A variant whose torch build the facts mark ``# unverified`` (none since issue 30: torch 2.15's cu126
and cu130 are read from the 2.15.0 wheel's PYTORCH_RELEASES_CODE_CC) must say so on its own line of
matrix.yaml, so nobody takes its cell for a checked build; and every CUDA variant starts from a
``-runtime`` nvidia/cuda base where the facts list one (torch brings its own CUDA wheels: the
``-devel`` image only adds gigabytes).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from repro.compat.facts import Facts

REPO = Path(__file__).resolve().parent.parent
MATRIX = REPO / "matrix.yaml"
VARIANT_LINE = re.compile(
    r"^\s*-\s*\{.*\bruntime:\s*(?P<runtime>[\w.]+).*\btorch:\s*\"(?P<torch>[\d.]+)\""
)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def unverified_builds(facts: Facts) -> set[tuple[str, str]]:
    """(torch minor, runtime) of every torch_variants entry whose line is marked unverified."""
    found = set()
    for minor, release in (facts.get("torch_variants") or {}).items():
        for i, variant in enumerate(release.get("variants") or []):
            if facts.unverified("torch_variants", minor, "variants", i, "runtime"):
                found.add((str(minor), variant["runtime"]))
    return found


def test_the_facts_name_a_source_for_every_build():
    # torch 2.15's cu126/cu130/cu134 were marked unverified until issue 30 read them from torch
    # 2.15.0's own PYTORCH_RELEASES_CODE_CC; a build marked again must be marked in matrix.yaml too
    # (next test).
    facts = Facts.load()
    assert unverified_builds(facts) == set()
    assert {"cu126", "cu130", "cu132", "cu134"} <= {
        v["runtime"] for v in facts.get("torch_variants", "2.15", "variants")
    }


def test_every_unverified_build_is_marked_on_its_matrix_line():
    unverified = unverified_builds(Facts.load())
    lines = [m for line in MATRIX.read_text().splitlines() if (m := VARIANT_LINE.match(line))]
    assert len(lines) >= 10  # the pattern still reads matrix.yaml's variant lines
    for match in lines:
        if (_minor(match["torch"]), match["runtime"]) in unverified:
            assert "unverified" in match.string, match.string


def test_cuda_variants_use_the_runtime_base_image_where_one_is_listed():
    facts = Facts.load()
    variants = yaml.safe_load(MATRIX.read_text())["variants"]
    for variant in variants:
        listed = (facts.get("base_images", variant["runtime"]) or {}).get("nvidia_cuda") or []
        if any("-runtime-" in tag for tag in listed):
            assert "-runtime-" in variant["base_image"], variant
