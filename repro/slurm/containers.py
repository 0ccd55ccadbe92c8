"""Container command lines for the Slurm lane, generated from a variant's image.

Slurm sites rarely run a Docker daemon ("Slurm clusters usually don't have the docker daemon
running", NVIDIA/pyxis#70); they run containers with **pyxis** (a SPANK plugin: ``srun
--container-image``, images imported by enroot) or **Apptainer** (``apptainer exec
docker://...``). Neither is installable on this project's Debian 12 machines (not in bookworm;
``singularity`` there is a game: ../shared/slurm-notes.md), so these lines are golden-tested,
not run here.

The image is the one ``repro build`` makes, pushed where the nodes can pull it:
``<image repo>:<variant id>`` (``repro.containers.build_settings.image_tag``). Inside, the
container lane runs as ``repro docker-run`` runs it: ``python -m repro run --as-variant ID
--run-dir DIR --fingerprint HOST_FP`` with the results root and matrix.yaml's folder mounted at
the same paths (so every path means the same inside and out), the matrix file read-only, the
host's fingerprint (collected on the node beforehand) keying the row, and no home directory.

- pyxis (NVIDIA/pyxis wiki "Usage"): ``--container-image=[USER@][REGISTRY#]IMAGE[:TAG]`` is an
  enroot URI: the registry host is separated from the path by ``#``, not ``/``
  (:func:`enroot_uri`); ``--container-mounts=SRC:DST[:FLAGS]`` with ``ro`` for read-only;
  ``--no-container-mount-home``; ``--container-workdir``. GPUs come from Slurm's allocation
  (enroot's hooks read it).
- Apptainer (apptainer-exec(1)): ``docker://IMAGE``; ``--nv`` (NVIDIA) or ``--rocm`` (AMD)
  passes the GPU driver in; ``--bind SRC:DST[:ro]``; ``--no-home``; ``--cleanenv`` keeps the
  node's environment (``PYTHONPATH``, a site ``LD_LIBRARY_PATH``) out of the image's Python.

Pure functions of typed values; never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.config import Variant
from repro.containers.build_settings import image_tag

PYXIS = "pyxis"
APPTAINER = "apptainer"
#: The working directory inside the container (the image's own; nothing is written there).
WORKDIR = "/tmp"


@dataclass(frozen=True)
class ContainerRun:
    """What one container task runs: the variant, the image repository, the results root and
    matrix.yaml (both mounted at their own paths), and the run's own arguments."""

    variant: Variant
    image_repo: str
    results_dir: Path
    config: Path

    @property
    def image(self) -> str:
        """``<repo>:<variant id>``."""
        return image_tag(self.variant.id, self.image_repo)


def enroot_uri(image: str) -> str:
    """A docker image reference as pyxis's ``--container-image`` takes it: the registry host
    (a first path component holding ``.`` or ``:``, or ``localhost``; the docker reference
    grammar) joined to the path by ``#``. ``registry.example.com/team/repro:cu128`` ->
    ``registry.example.com#team/repro:cu128``; ``team/repro:cu128`` (Docker Hub) unchanged."""
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def _mounts(run: ContainerRun) -> tuple[tuple[str, bool], ...]:
    """(path, read-only) pairs: the results root, and matrix.yaml's folder read-only (unless
    it lies inside the results root)."""
    config_dir = run.config.parent
    mounts = [(str(run.results_dir), False)]
    if not config_dir.is_relative_to(run.results_dir):
        mounts.append((str(config_dir), True))
    return tuple(mounts)


def pyxis_command(run: ContainerRun, inner: list[str]) -> list[str]:
    """``srun --ntasks=1 --container-image=... --container-mounts=... ... INNER`` (a job step
    of the task's allocation)."""
    mounts = ",".join(f"{path}:{path}" + (":ro" if ro else "") for path, ro in _mounts(run))
    return [
        "srun",
        "--ntasks=1",
        f"--container-image={enroot_uri(run.image)}",
        f"--container-mounts={mounts}",
        f"--container-workdir={WORKDIR}",
        "--no-container-mount-home",
        *inner,
    ]


def apptainer_command(run: ContainerRun, inner: list[str]) -> list[str]:
    """``apptainer exec --cleanenv --no-home [--nv|--rocm] --bind ... docker://IMAGE INNER``."""
    gpu = {"cuda": ["--nv"], "rocm": ["--rocm"]}.get(run.variant.accelerator, [])
    binds = []
    for path, ro in _mounts(run):
        binds += ["--bind", f"{path}:{path}" + (":ro" if ro else "")]
    return [
        "apptainer",
        "exec",
        "--cleanenv",
        "--no-home",
        *gpu,
        *binds,
        "--pwd",
        WORKDIR,
        f"docker://{run.image}",
        *inner,
    ]


def command(runtime: str, run: ContainerRun, inner: list[str]) -> list[str]:
    """The command line of ``runtime`` (:data:`PYXIS` or :data:`APPTAINER`) for ``run``.
    Raises ValueError for another runtime (matrix.yaml's loader allows only these two)."""
    if runtime == PYXIS:
        return pyxis_command(run, inner)
    if runtime == APPTAINER:
        return apptainer_command(run, inner)
    raise ValueError(f"unknown container runtime {runtime!r}")
