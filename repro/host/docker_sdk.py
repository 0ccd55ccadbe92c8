"""Import the docker Python SDK, and tell a missing SDK from a folder that only shadows it.

Seen on a real host (the H100 device run of 2026-11-27, torch 2.11+cu130, no SDK installed):
``python -m repro host`` run from this repository's root printed "docker unreachable: module
'docker' has no attribute 'from_env'". ``import docker`` had not failed: with no SDK installed
anywhere on ``sys.path``, Python made a namespace package (PEP 420) of the checkout's own
``docker/`` folder, the Dockerfiles. Any folder named ``docker`` without ``__init__.py`` on the
path does the same; an installed SDK, a regular package, always wins over such a folder.
"""

from __future__ import annotations

from types import ModuleType

INSTALL_HINT = "pip install 'repro-matrix[docker]'"


class SdkMissing(Exception):
    """The docker SDK cannot be used here; ``str(exc)`` is one line naming why."""


def import_sdk() -> ModuleType:
    """The ``docker`` module of the SDK (docker-py, ``docker>=7``).

    Raises SdkMissing when ``import docker`` fails, or when it finds something that is not the
    SDK (no ``docker.from_env``): the message then names the folders it found instead.
    """
    try:
        import docker
    except ImportError:
        raise SdkMissing("the docker Python SDK is not installed") from None
    if not callable(getattr(docker, "from_env", None)):
        found = list(getattr(docker, "__path__", []) or []) or [
            str(getattr(docker, "__file__", ""))
        ]
        raise SdkMissing(
            "the docker Python SDK is not installed ('import docker' found "
            f"{', '.join(found)}, which is not the SDK)"
        )
    return docker
