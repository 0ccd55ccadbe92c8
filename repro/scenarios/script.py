"""Bring your own repro: a user's script as one case of the matrix (issue 14, item 4).

A ``scenarios:`` entry with ``script:`` (parsed by ``repro.config.scripts``) becomes one case,
id = the entry's name, whose body is this module's :func:`run`. It runs inside the case process
of ``repro.runner.harness``, so the script gets the same isolation (own session, subreaper,
case token, PDEATHSIG), watchdog and log as a built-in scenario. The script's stdout and
stderr are the case log. Its ending becomes the case's, classified like a built-in case:

- exit status 0: ``passed``;
- another status: ``failed`` with no signature of our own, so the runner's signature table
  (``repro.runner.verdict``) names it from the log (the script's output);
- killed by a signal: this case process ends by the same signal, so the runner sees the same
  negative exit status as for a built-in crash (``crashed``, signal or log signature);
- no exit within ``timeout_s``: the watchdog's ``hung``. A ``.py`` script runs under a small
  bootstrap (:data:`BOOTSTRAP`) that arms ``faulthandler`` for fatal signals and for the
  watchdog's stack-dump signal, so the script's own stack lands in the log.

A ``.py`` script runs with the interpreter under test (this case's ``sys.executable``); any
other file is executed directly, stdin closed. It runs in the case's private writable folder
(``ctx.workdir``, removed after the case) on both lanes, since the container mounts matrix.yaml's
folder read-only; that folder is readable at ``$REPRO_CONFIG_DIR`` (:data:`CONFIG_DIR_VAR`),
and the script's own folder is first on ``sys.path`` as under ``python SCRIPT``.
Its arguments reach it on the command line (each at most
``repro.config.scripts.MAX_ARG_CHARS`` characters); the case's spec that carries them is
written to a file when large (``repro.runner.protocol.case_env``), never into one
environment string, which Linux caps at 128 KiB (MAX_ARG_STRLEN).
Never imports torch.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from repro.scenarios import Case

if TYPE_CHECKING:  # annotations only
    from repro.case_api import Context

#: Placeholder grid: the real values come from matrix.yaml (``repro.config.scripts``).
PARAMS: dict[str, list[Any]] = {
    "script": [""],
    "args": [()],
    "config_dir": [""],
    "fail_on": [()],
}
TIMEOUT_S = 300.0
#: Not a catalogue scenario: only ``script:`` entries run it (``repro.scenarios.builtin``).
CATALOGUE = False
#: Parameters never shown in the case id: the id is the entry's name.
HIDDEN = ("script", "args", "config_dir", "fail_on")
#: The environment variable that holds matrix.yaml's folder (absolute) for the script.
CONFIG_DIR_VAR = "REPRO_CONFIG_DIR"
#: ``repro.runner.harness.DUMP_SIGNAL`` (a test keeps them equal): not imported, so loading
#: matrix.yaml never imports the harness. Workers the script spawns do not answer it (only
#: ``-X faulthandler``'s fatal-signal dumps reach them through PYTHONFAULTHANDLER).
DUMP_SIGNAL = signal.SIGUSR1

#: Run as ``python -X faulthandler -c BOOTSTRAP SCRIPT ARGS...``: answers the watchdog's
#: stack-dump signal, then runs the script as ``python SCRIPT ARGS`` would (``__main__``,
#: ``sys.argv``, the script's folder first on ``sys.path``).
BOOTSTRAP = (
    "import faulthandler, os, runpy, signal, sys; "
    f"faulthandler.register(signal.Signals({int(DUMP_SIGNAL)}), all_threads=True, chain=False); "
    "sys.argv = sys.argv[1:]; "
    "sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0])); "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def case(
    name: str,
    script: str,
    args: Sequence[str],
    config_dir: str,
    timeout_s: float,
    fail_on: tuple[tuple[str, str], ...] = (),
) -> Case:
    """The one case of a ``script:`` entry called ``name``: id ``name``; ``script`` and
    ``config_dir`` (matrix.yaml's folder) are absolute paths, ``timeout_s`` seconds;
    ``fail_on`` as in :class:`repro.config.model.ScriptEntry` (the runner applies it:
    ``repro.runner.verdict``)."""
    params: tuple[tuple[str, Any], ...] = (
        ("script", script),
        ("args", tuple(args)),
        ("config_dir", config_dir),
    )
    if fail_on:
        params += (("fail_on", tuple(fail_on)),)
    return Case(
        scenario=name,
        module=__name__,
        params=params,
        timeout_s=float(timeout_s),
        quiet=HIDDEN,
    )


def command(script: str, args: Sequence[str], python: str | None = None) -> list[str]:
    """The argv that runs ``script`` with ``args``: under ``python`` (default: this
    interpreter) with :data:`BOOTSTRAP` for a ``.py`` file, else the file itself."""
    if script.endswith(".py"):
        return [python or sys.executable, "-X", "faulthandler", "-c", BOOTSTRAP, script, *args]
    return [script, *args]


def die_by(signum: int) -> None:
    """End this process by ``signum``, as the script it ran was ended (no core file, no
    faulthandler dump of this process: the script's own dump is the evidence)."""
    sys.stdout.flush()
    sys.stderr.flush()
    faulthandler.disable()
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal that does not end a process by default (SIGCHLD...)


def run(ctx: Context, params: dict[str, Any]) -> None:
    """Run the user's script (see the module docstring for how its ending is classified)."""
    script = str(params["script"])
    args = [str(a) for a in params.get("args") or ()]
    ctx.property("script", script)
    ctx.heartbeat("script")  # one beat: a hung script reads "last phase 'script'"
    sys.stdout.flush()
    sys.stderr.flush()
    env = dict(os.environ)
    env[CONFIG_DIR_VAR] = str(params.get("config_dir") or os.path.dirname(script))
    proc = subprocess.Popen(
        command(script, args), cwd=ctx.workdir, env=env, stdin=subprocess.DEVNULL
    )
    status = proc.wait()
    if status < 0:
        die_by(-status)
    if status != 0:
        ctx.fail(f"{os.path.basename(script)} exited with status {status}")
