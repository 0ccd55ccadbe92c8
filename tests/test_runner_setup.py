"""What a self-hosted runner needs from the repository (docs/runners.md): LF scripts on a Windows
checkout, the deep doctor first in every job, WSL2 runners checked for their distribution and
pruned like Linux ones."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github/workflows/gpu-matrix.yml"
JOB_SCRIPT = REPO / ".github/scripts/repro-job.sh"


def tracked(*patterns: str) -> list[str]:
    done = subprocess.run(
        ["git", "ls-files", "--", *patterns], cwd=REPO, capture_output=True, text=True, check=True
    )
    return done.stdout.split()


def test_scripts_check_out_with_lf_whatever_git_for_windows_says():
    # actions/checkout#135: core.autocrlf=true writes CRLF, and bash in WSL2 fails on
    # "set -o pipefail\r". .gitattributes must pin eol=lf for everything bash/Python/Docker read.
    paths = tracked("*.sh", ".ci/run", "docker/Dockerfile*", "*.py", ".github/workflows/*.yml")
    assert JOB_SCRIPT.relative_to(REPO).as_posix() in paths
    done = subprocess.run(
        ["git", "check-attr", "eol", "--", *paths], cwd=REPO, capture_output=True, text=True
    )
    eol = dict(line.rsplit(": eol: ", 1) for line in done.stdout.splitlines())
    assert {path: eol.get(path) for path in paths} == dict.fromkeys(paths, "lf")


def test_every_job_runs_the_deep_doctor_before_its_command():
    text = JOB_SCRIPT.read_text()
    commands = [line.strip() for line in text.splitlines() if not line.strip().startswith("#")]
    doctor = next(i for i, line in enumerate(commands) if "repro doctor" in line)
    planned = next(i for i, line in enumerate(commands) if '"$REPRO_COMMAND"' in line)
    assert "repro doctor --deep" in commands[doctor] and doctor < planned
    for script in (JOB_SCRIPT, REPO / ".github/scripts/prune-images.sh"):
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_wsl2_jobs_check_the_distribution_and_are_pruned():
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["repro"]["steps"]
    wsl = [s for s in steps if "matrix.shell == 'wsl'" in str(s.get("if", ""))]
    [run_step] = [s for s in wsl if "repro-job.sh" in s["run"]]
    assert run_step["shell"] == "pwsh"
    check = run_step["run"].index("wsl --list --quiet")
    assert check < run_step["run"].index("--exec bash .github/scripts/repro-job.sh")
    assert "docs/runners.md" in run_step["run"]
    [prune] = [s for s in wsl if "prune-images.sh" in s["run"]]
    assert "always()" in prune["if"]
    linux = [s for s in steps if "prune-images.sh" in str(s.get("run", "")) and s not in wsl]
    assert len(linux) == 1  # one prune script, run on both kinds of runner


def test_runners_doc_covers_the_windows_runner():
    doc = (REPO / "docs/runners.md").read_text()
    for needle in ("NETWORK SERVICE", "Vampire/setup-wsl#43", "pwsh", "actions/checkout#135",
                   "prune-images.sh", ".gitattributes"):  # fmt: skip
        assert needle in doc, needle
    assert re.search(r"--windowslogonaccount", doc)
