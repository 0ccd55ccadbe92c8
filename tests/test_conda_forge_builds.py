"""scripts/conda_forge_builds.py over a recorded input: five first-parent snapshots of
conda-forge/pytorch-cpu-feedstock (tests/fixtures/conda-forge/snapshots.json, written by the
script's ``--record`` from the feedstock's history, one commit per version, each job once) and two
of its .ci_support job files as the commits held them; and the generated table in compat-extra
agrees with what the recorded snapshots say."""

from __future__ import annotations

import json
from pathlib import Path

from repro.compat.facts import extra_facts
from scripts import conda_forge_builds as builds

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "conda-forge"


def snapshots() -> list[dict]:
    return json.loads((FIXTURES / "snapshots.json").read_text(encoding="utf-8"))


def test_a_job_file_gives_its_platform_cuda_pythons_and_label():
    # 2018-12-31 (d7ceaf0c48): conda-smithy's old name, no platform suffix, the gcc7 label.
    old = builds.config("linux_python2.7.yaml", (FIXTURES / "linux_python2.7.yaml").read_text())
    assert old == {"platform": "linux", "cuda": None, "python": ["2.7"], "label": "gcc7"}
    # 2024-01-30 (8d94e729ea): a linux-64 CUDA 12.0 job for five CPythons, uploaded to main.
    name = next(p.name for p in FIXTURES.glob("linux_64_*cuda_compiler_version12.0*.yaml"))
    job = builds.config(name, (FIXTURES / name).read_text())
    assert job == {
        "platform": "linux",
        "cuda": "12.0",
        "python": ["3.8", "3.9", "3.10", "3.11", "3.12"],
        "label": "main",
    }
    assert builds.config("README", "") is None


def test_the_table_keeps_main_label_pytorch_builds_with_their_first_day():
    table = builds.table(snapshots())
    # 1.0.0 went to the gcc7 label and 1.6.0's first commit built pytorch-cpu/-gpu, no `pytorch`.
    assert all("1.0.0" not in v and "1.6.0" not in v for v in table.values())
    # osx-arm64 from 1.8.0 (2021-03-08), CPU only; linux-aarch64 from 1.12.0 (2022-07-17).
    assert table["macos-arm64"]["1.8.0"] == {
        "day": "2021-03-08",
        "cuda": [],
        "python": ["3.8", "3.9"],
    }
    assert min(table["linux-aarch64"]) == "1.12.0"
    assert table["linux-aarch64"]["1.12.0"]["day"] == "2022-07-17"
    # Linux x86_64 has CUDA builds; their versions sort numerically.
    # (1.8.0's first commit had CUDA 10.2 and 11.0; 11.1 and 11.2 came on 2021-04-21, which the
    # full history's union in compat-extra holds.)
    assert table["linux"]["1.8.0"]["cuda"] == ["10.2", "11.0"]
    assert table["linux"]["2.1.2"]["cuda"] == ["11.2", "11.8", "12.0"]
    assert "3.12" in table["linux"]["2.1.2"]["python"]
    text = builds.render(table)
    assert text.startswith("  pytorch:\n    linux:\n")
    assert '      "1.8.0": {day: "2021-03-08", cuda: [], python: ["3.8", "3.9"]}' in text


def test_compat_extra_holds_the_generated_rows_of_the_recorded_commits():
    """Every row the recorded snapshots give is the one in compat-extra (each recorded commit is
    the first of its version on the branch, so the first day agrees too)."""
    extra = extra_facts()
    for platform, versions in builds.table(snapshots()).items():
        for version, row in versions.items():
            have = extra.get("conda_forge_builds", "pytorch", platform, version)
            assert have is not None, (platform, version)
            assert str(have["day"]) == row["day"], (platform, version)
            assert {str(c) for c in row["cuda"]} <= {str(c) for c in have["cuda"]}
            assert {str(p) for p in row["python"]} <= {str(p) for p in have["python"]}


def test_a_rattler_build_recipe_gives_its_version_and_package():
    """conda-forge/torchvision-feedstock's recipe/recipe.yaml at 488ecd9 (2026-08-01), its first
    lines: the version under ``context:`` and the package name."""
    head = (FIXTURES / "torchvision-recipe-head.yaml").read_text(encoding="utf-8")
    match = builds.VERSION.search(head)
    assert match is not None and (match.group(1) or match.group(2)) == "0.28.0"
    assert builds.builds_package(head, "torchvision")
    assert not builds.builds_package(head, "pytorch")
