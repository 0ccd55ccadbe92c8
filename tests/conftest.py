"""Shared helpers: run the real `repro` CLI in a subprocess against a throwaway matrix file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from junitparser import JUnitXml

REPO = Path(__file__).resolve().parent.parent
PLANTED = Path(__file__).resolve().parent / "planted"


def cli_env(extra_path: Path | None = None) -> dict[str, str]:
    """Environment for a `python -m repro` child: this checkout and the planted scenarios importable."""
    env = dict(os.environ)
    paths = [str(REPO), str(PLANTED)] + ([str(extra_path)] if extra_path else [])
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("REPRO_CASE_TOKEN", None)
    return env


def run_cli(
    *args: str, cwd: Path, timeout: float = 600, module: str = "repro"
) -> subprocess.CompletedProcess:
    """Run ``python -m MODULE ARGS`` (the real CLI) with output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def spelled_outside(pattern: str, codec: Path) -> list[str]:
    """``path:line`` of every line of repro/, benchmarks/ and noxfile.py, ``codec`` excepted,
    that ``pattern`` (a regex) finds: a codec's names spelled elsewhere. Asserts the walk found
    the package and that ``codec`` itself holds the pattern."""
    spelled = re.compile(pattern)
    files = [*sorted((REPO / "repro").rglob("*.py")), *sorted((REPO / "benchmarks").rglob("*.py"))]
    files.append(REPO / "noxfile.py")
    assert len(files) > 100, "the walk did not find the package"
    assert spelled.search(codec.read_text()), f"{codec} does not hold {pattern}"
    return [
        f"{path.relative_to(REPO)}:{number}"
        for path in files
        if path != codec
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if spelled.search(line)
    ]


def write_matrix(directory: Path, scenarios_yaml: str) -> Path:
    """A minimal valid matrix.yaml with the given `scenarios:` block (YAML text, indented 2)."""
    text = textwrap.dedent(
        """\
        version: 1
        defaults: {results_dir: results}
        variants:
          - {runtime: cpu, torch: "2.13.0", base_image: "python:3.12-slim"}
        scenarios:
        """
    ) + textwrap.indent(textwrap.dedent(scenarios_yaml), "  ")
    path = directory / "matrix.yaml"
    path.write_text(text)
    return path


def only_run_dir(results: Path) -> Path:
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def cases_by_name(junit_path: Path) -> dict:
    """{case id: (testcase, {property: value})} from a JUnit file, via junitparser."""
    xml = JUnitXml.fromfile(str(junit_path))
    out = {}
    for suite in xml:
        for case in suite:
            props = {}
            for child in case._elem:
                if child.tag == "properties":
                    props = {p.get("name"): p.get("value") for p in child}
            out[case.name] = (case, props)
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty working directory for one CLI run."""
    return tmp_path


def host_has_nvidia_gpu() -> bool:
    """This host has an NVIDIA GPU by the device nodes, WSL2's /dev/dxg or the PCI bus (checked
    here independently of repro.envs.lane.missing_accelerator, which the tests compare it to)."""
    import glob

    pci = [
        d
        for d in glob.glob("/sys/bus/pci/devices/*")
        if _read(f"{d}/vendor") == "0x10de" and _read(f"{d}/class")[:6] in ("0x0300", "0x0302")
    ]
    nodes = [p for p in glob.glob("/dev/nvidia*") if not p.endswith("nvidia-caps")]
    return bool(
        pci or nodes or os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/dxg")
    )


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip().lower()
    except OSError:
        return ""
