"""nox sessions for repro-matrix. Configuration only: the logic lives in the `repro` package.

    nox -s repro-host   the main job: run the scenarios on this interpreter, then build the matrix
    nox -s matrix       rebuild results/matrix.{json,md,html} from everything under results/
    nox -s tests        the test suite (installs a torch build into the session's venv)
    nox -s lint         ruff

Environment: REPRO_TORCH_SPEC is the torch requirement the `tests` session installs
(default torch==2.13.0, the CPU build this project's CI uses).
"""

from __future__ import annotations

import os
import sys

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.error_on_missing_interpreters = True

TORCH_SPEC = os.environ.get("REPRO_TORCH_SPEC", "torch==2.13.0")
RESULTS = "results"


@nox.session(name="repro-host", venv_backend="none")
def repro_host(session: nox.Session) -> None:
    """Main job: run every scenario case on the interpreter running nox, then build the matrix.

    Uses the torch build already installed in that interpreter (that is what is under test).
    Extra arguments go to `repro run`, e.g. `nox -s repro-host -- -k dataloader`.
    """
    python = sys.executable
    session.run(python, "-m", "pip", "install", "--quiet", "-e", ".[nvidia]", external=True)
    # `repro run` exits 1 when a reproduction reproduced (red cases): still build the matrix.
    session.run(python, "-m", "repro", "run", "--results", RESULTS, *session.posargs, external=True, success_codes=[0, 1])
    session.run(python, "-m", "repro", "report", RESULTS, "--output", RESULTS, external=True)


@nox.session
def matrix(session: nox.Session) -> None:
    """Merge every JUnit file under results/ (or the given paths) into results/matrix.*."""
    session.install("-e", ".")
    inputs = session.posargs or [RESULTS]
    session.run("repro", "report", *inputs, "--output", RESULTS)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite, with real subprocesses, real crashes/hangs and a real 2-rank gloo DDP."""
    session.install(TORCH_SPEC)
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", *(session.posargs or ["-q", "-ra"]))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff lint and format check."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
