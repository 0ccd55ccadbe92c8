"""Generate the container-lane nox sessions from matrix.yaml (the noxfile stays configuration).

For every runtime in matrix.yaml (``cu128``, ``cu130``, ``rocm6.4``, ``cpu``...):

- ``build-<runtime>``: build the image of each variant of that runtime if it is out of date;
- ``repro-<runtime>``: build if needed, run every case inside with this host's passthrough,
  write ``results/<run-id>/``, refresh ``results/matrix.*``;
- ``venv-<runtime>``: the same in a cached uv environment per pin (no Docker).

Each builds the matrix first and then fails on an unexpected red (exit 1 of the run: a
reproduction the scenarios' ``EXPECT`` or matrix.yaml's ``expect:`` predicts is not one).

Each is parametrised by torch pin (``nox -s "repro-cu128(2.8.0)"`` runs one pin, ``nox -s
repro-cu128`` all) and tagged with the accelerator, the runtime and ``docker`` (``nox -t cuda``);
GPU sessions are ``default=False``. Arguments after ``--`` go to ``repro docker-run`` (or
``repro build``): ``nox -s repro-cpu -- -k shm --shm-size 64m``, ``nox -s repro-cu128 -- -k CASE
--shell``. Overrides: ``--base-image/--index-url/--wheelhouse/--image-python`` there, or
``REPRO_BASE_IMAGE``/``REPRO_INDEX_URL``/``REPRO_WHEELHOUSE``/``REPRO_PYTHON``; the command prints
the effective settings. Each session installs repro-matrix with the docker SDK into its own venv
(``.nox/<session>``), never into the interpreter running nox.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from repro.errors import EXIT_CASES_FAILED

RESULTS = "results"


def _session_body(config_path: str, variant_ids: dict[str, str], run: bool) -> Callable[..., None]:
    def body(session: Any, torch: str) -> None:
        # The session's own venv: the docker SDK and repro's dependencies never go into the
        # interpreter running nox (torch is not needed on the host side of a container run).
        session.install("--quiet", "-e", ".[docker,nvidia]")
        variant_id = variant_ids[torch]
        if not run:
            session.run(
                "repro", "build", "--variant", variant_id, "--config", config_path,
                *session.posargs,
            )  # fmt: skip
            return
        # --output-dir refreshes results/matrix.* (with the config's expectations) before
        # docker-run returns, even when the container hit its timeout; its exit 1 (an
        # unexpected red) then fails the session with the matrix written.
        session.run(
            "repro", "docker-run", "--variant", variant_id, "--config", config_path,
            "--results-dir", RESULTS, "--output-dir", RESULTS, *session.posargs,
        )  # fmt: skip

    return body


def _venv_body(config_path: str, variant_ids: dict[str, str]) -> Callable[..., None]:
    def body(session: Any, torch: str) -> None:
        # repro-matrix and uv in this session's venv; the variant's torch goes into a cached uv
        # environment of its own (repro.envs), never into this venv or the interpreter under nox.
        session.install("--quiet", "-e", ".[venv,nvidia]")
        run_then_matrix(
            session,
            ("repro", "venv-run", "--variant", variant_ids[torch], "--config", config_path,
             "--results-dir", RESULTS, *session.posargs),
            report_command(config_path),
        )  # fmt: skip

    return body


def report_command(config_path: str) -> tuple[str, ...]:
    """``repro report`` of everything under results/ into results/matrix.*, with the config's
    expectations; one host covers one variant, so no coverage warnings."""
    return (
        "repro", "report", RESULTS, "--output-dir", RESULTS, "--config", config_path,
        "--no-coverage",
    )  # fmt: skip


def run_then_matrix(session: Any, run: Sequence[str], report: Sequence[str]) -> None:
    """Run the cases (``run``: ``repro run`` or ``repro venv-run``), build the matrix
    (``report``) whatever they did, then fail the session when the run's exit status was 1: an
    unexpected red (expected reproductions exit 0, ``repro.errors.EXIT_CODES``). Any other
    failure of the run (2 bad input, 3 cannot go on) fails the session at once."""
    try:
        session.run(*run)
    except Exception as exc:  # nox.command.CommandFailed, which carries the exit status
        if getattr(exc, "return_code", None) != EXIT_CASES_FAILED:
            raise
        session.run(*report)
        session.log(
            f"{run[0]} {run[1]}: unexpected red cases (exit 1); the matrix is in {RESULTS}/"
        )
        raise
    session.run(*report)


def register(nox: Any, config_path: str = "matrix.yaml") -> list[str]:
    """Define ``build-<runtime>``, ``repro-<runtime>`` and ``venv-<runtime>`` for each runtime of ``config_path``.

    Returns the session names. A matrix that cannot be read defines no generated session (and
    says why on stderr) so ``nox -l``, ``tests`` and ``lint`` keep working.
    """
    try:
        from repro import config as matrix
        from repro.errors import ReproError

        try:
            config = matrix.load(config_path)
        except ReproError as exc:
            print(
                f"noxfile: no build-/repro- sessions: {str(exc).splitlines()[0]}", file=sys.stderr
            )
            return []
    except ImportError as exc:  # NOX_SCRIPT_MODE=none and nox's interpreter lacks pyyaml
        print(
            f"noxfile: no build-/repro- sessions ({exc}); run nox without NOX_SCRIPT_MODE=none "
            "so it builds the noxfile's PEP 723 environment",
            file=sys.stderr,
        )
        return []

    by_runtime: dict[str, list] = {}
    for variant in config.variants:
        by_runtime.setdefault(variant.runtime, []).append(variant)
    names = []
    for runtime, variants in by_runtime.items():
        accelerator = variants[0].accelerator
        gpu = accelerator != "cpu"
        pins = [v.torch for v in variants]
        ids = {v.torch: v.id for v in variants}
        tags = list(dict.fromkeys([accelerator, runtime, "docker"] + (["gpu"] if gpu else [])))
        for kind, run in (("build", False), ("repro", True)):
            body = _session_body(config_path, ids, run)
            # One description that is true of each parametrization (nox copies it to every
            # pin): the session's own variant is the pin in parentheses.
            body.__doc__ = (
                f"Build the {runtime} image of the torch pin in parentheses if out of date."
                if not run
                else f"Run every case in the {runtime} image of the torch pin in parentheses "
                "(built if needed); refresh results/matrix.*."
            )
            body.__name__ = body.__qualname__ = f"{kind}_{runtime.replace('.', '_')}"
            name = f"{kind}-{runtime}"
            parametrized = nox.parametrize("torch", pins, ids=pins)(body)
            nox.session(name=name, tags=tags, default=not gpu)(parametrized)
            names.append(name)
        venv_body = _venv_body(config_path, ids)
        venv_body.__doc__ = (
            f"Run every case in a cached uv environment with the pin of {', '.join(ids.values())}, "
            f"refresh results/matrix.* [{runtime}, venv lane, no Docker]."
        )
        venv_body.__name__ = venv_body.__qualname__ = f"venv_{runtime.replace('.', '_')}"
        venv_tags = [t for t in tags if t != "docker"] + ["venv"]
        nox.session(
            name=f"venv-{runtime}", tags=venv_tags, default=not gpu, venv_backend="uv|virtualenv"
        )(nox.parametrize("torch", pins, ids=pins)(venv_body))
        names.append(f"venv-{runtime}")
    return names
