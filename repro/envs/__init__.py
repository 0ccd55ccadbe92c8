"""The venv lane: a uv virtual environment per torch pin (or per version of any package), cached
by a content key and reused, in which ``repro run`` runs the cases with the same runner,
isolation, JUnit and signatures as the host lane.

``spec`` says what an environment holds and computes its key (pure); ``uv`` builds the uv
command lines and reads uv's failures; ``cache`` makes or reuses an environment; ``lane``
runs a matrix.yaml variant in one (``repro venv-run``, the ``venv-<runtime>`` nox sessions).
Never imports torch.
"""

from repro.envs.cache import Env, ensure_env, env_root
from repro.envs.spec import EnvSpec
from repro.envs.uv import InstallFailed

__all__ = ["Env", "EnvSpec", "InstallFailed", "ensure_env", "env_root"]
