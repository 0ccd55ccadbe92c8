"""A throwaway single-node Slurm cluster in a temporary directory, for the Slurm lane's tests
and ``benchmarks/slurm_lane.py``.

The recipe is the one measured on this project's machine kind (../shared/slurm-notes.md):
munged, slurmctld and slurmd as plain processes (no systemd), every file under one temporary
directory, ``SchedulerParameters=batch_sched_delay=0`` (a batch job starts in ~1 s, not 3 s),
``KillWait=5`` (a cancelled job that ignores SIGTERM does not hold the node for 30 s),
``JobRequeue=0`` (a job on a failed node ends NODE_FAIL instead of going back to PENDING), node
named ``reprotest`` at 127.0.0.1 (the host name need not resolve), and the job-completion log
``jobcomp/filetxt`` (no slurmdbd: ``sacct`` says "accounting storage is disabled", which the
lane must cope with, as on many small clusters).

Differences from the notes, each for a reason: the controller and slurmd listen on two free
ports chosen at start (not 6817/6818), so neither a system cluster nor a second test session
on the same machine is ever talked to; the node claims ``CPUS`` CPUs with
``SlurmdParameters=config_overrides`` (the notes' tested variant), so the tests' sleeping tasks
run beside the CPU-heavy ones on a 2-core runner.

Safety: :meth:`Cluster.start` refuses to start when a chosen port already answers (the notes'
stale-cluster trap: every client would silently talk to the old cluster) and checks during the
readiness loop that its own daemons are alive; :meth:`Cluster.stop` always runs (context
manager), cancels every job and waits for the queue to drain BEFORE stopping the daemons
(killed daemons leave running jobs re-parented to PID 1), then SIGTERMs the daemons by their
saved PIDs, SIGKILLs survivors after 10 s and removes the directory.

:func:`unavailable` says why a cluster cannot start here (not root, binaries missing): the
fixture skips with that reason, unless ``REPRO_SLURM_REQUIRED=1`` (``.ci/run`` sets it after
installing Slurm) makes it a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

#: Set to 1 where Slurm must start (CI installs it): the fixture fails instead of skipping.
REQUIRED_ENV = "REPRO_SLURM_REQUIRED"
NODE = "reprotest"
PARTITION = "debug"
#: CPUs the node claims (config_overrides): more than the cores, so sleeping tasks never wait.
CPUS = 8
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
READY_TIMEOUT_S = 30.0


def unavailable() -> str | None:
    """Why a throwaway cluster cannot start on this machine, or None."""
    missing = [name for name in BINARIES if shutil.which(name) is None]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} not on PATH): apt-get install -y "
            "--no-install-recommends slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        return "a throwaway Slurm needs root (slurmd runs jobs as their submitting user)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _memory_mib() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)


class StaleCluster(RuntimeError):
    """A port the new cluster would use already answers."""


class Cluster:
    """One throwaway cluster. ``env`` is the environment every client command needs
    (``SLURM_CONF``); ``start_s`` the seconds from writing slurm.conf to the node being idle."""

    def __init__(self, min_job_age_s: int = 300):
        self.dir = Path(tempfile.mkdtemp(prefix="repro-slurm-"))
        self.conf = self.dir / "etc" / "slurm.conf"
        self.jobcomp = self.dir / "log" / "jobcomp.txt"
        self.min_job_age_s = min_job_age_s
        self.pids: dict[str, int] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._logs: list = []
        self.start_s: float | None = None
        self.ctld_port = self.slurmd_port = 0

    @property
    def env(self) -> dict[str, str]:
        """``os.environ`` with ``SLURM_CONF`` pointing at this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def config_text(self) -> str:
        tmp = self.dir
        cpus = CPUS
        return "\n".join(
            [
                "ClusterName=reprotest",
                "SlurmctldHost=localhost(127.0.0.1)",
                "SlurmUser=root",
                "SlurmdUser=root",
                "AuthType=auth/munge",
                "CredType=cred/munge",
                f"AuthInfo=socket={tmp}/run/munge.socket",
                f"SlurmctldPort={self.ctld_port}",
                f"SlurmdPort={self.slurmd_port}",
                f"StateSaveLocation={tmp}/state",
                f"SlurmdSpoolDir={tmp}/spool",
                f"SlurmctldPidFile={tmp}/run/slurmctld.pid",
                f"SlurmdPidFile={tmp}/run/slurmd.pid",
                f"SlurmctldLogFile={tmp}/log/slurmctld.log",
                f"SlurmdLogFile={tmp}/log/slurmd.log",
                "SlurmctldDebug=info",
                "SlurmdDebug=info",
                "MailProg=/bin/true",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "SchedulerType=sched/backfill",
                "SchedulerParameters=batch_sched_delay=0",
                "SlurmdParameters=config_overrides",
                "MpiDefault=none",
                "ReturnToService=2",
                "AccountingStorageType=accounting_storage/none",
                "JobAcctGatherType=jobacct_gather/none",
                "JobCompType=jobcomp/filetxt",
                f"JobCompLoc={self.jobcomp}",
                f"MinJobAge={self.min_job_age_s}",
                "KillWait=5",
                # A job whose node fails ends NODE_FAIL instead of being requeued (the default,
                # JobRequeue=1, puts it back to PENDING): many sites run so, and the tests need
                # the state to see it.
                "JobRequeue=0",
                f"NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={socket.gethostname()} "
                f"CPUs={cpus} Sockets=1 CoresPerSocket={cpus} ThreadsPerCore=1 "
                f"RealMemory={_memory_mib()} State=UNKNOWN",
                f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / "log" / f"{name}.out", "wb")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        proc = subprocess.Popen(
            argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pids[name] = proc.pid
        self._procs[name] = proc

    def _alive(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def start(self) -> Cluster:
        """Start munged, slurmctld and slurmd; return when the node is idle. Raises
        StaleCluster when a chosen port answers, RuntimeError (with the daemons' logs) when a
        daemon dies or the node is not idle within 30 s."""
        # munged refuses a socket under a directory others cannot traverse (mkdtemp: 0700).
        self.dir.chmod(0o755)
        for sub in ("etc", "state", "spool", "log", "run"):
            (self.dir / sub).mkdir(mode=0o755, parents=True, exist_ok=True)
        self.ctld_port, self.slurmd_port = _free_port(), _free_port()
        while self.slurmd_port == self.ctld_port:
            self.slurmd_port = _free_port()
        for port in (self.ctld_port, self.slurmd_port):
            if _answers(port):
                raise StaleCluster(f"port {port} already answers: refusing to start beside it")
        started = time.monotonic()
        self.conf.write_text(self.config_text())
        key = self.dir / "run" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        run = self.dir / "run"
        self._spawn(
            "munged",
            [
                "munged", "-F", f"--key-file={key}", f"--socket={run}/munge.socket",
                f"--pid-file={run}/munged.pid", f"--seed-file={run}/munged.seed",
            ],
        )  # fmt: skip
        deadline = time.monotonic() + 5
        while not (run / "munge.socket").exists():
            if time.monotonic() > deadline or not self._alive("munged"):
                raise RuntimeError(f"munged did not start: {self.logs()}")
            time.sleep(0.02)
        self._spawn("slurmctld", ["slurmctld", "-D", "-i"])
        self._spawn("slurmd", ["slurmd", "-D", "-N", NODE])
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            for name in self.pids:
                if not self._alive(name):
                    raise RuntimeError(f"{name} exited during start-up: {self.logs()}")
            state = self.run("sinfo", "-h", "-o", "%T", timeout=5, check=False).stdout.strip()
            if state == "idle":
                break
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"node not idle after {READY_TIMEOUT_S:g} s ({state!r}): {self.logs()}"
                )
            time.sleep(0.1)
        self.start_s = time.monotonic() - started
        return self

    def run(
        self, *argv: str, timeout: float = 30, check: bool = True
    ) -> subprocess.CompletedProcess:
        """A client command against this cluster (text output captured)."""
        try:
            done = subprocess.run(
                list(argv), env=self.env, capture_output=True, text=True, timeout=timeout,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            done = subprocess.CompletedProcess(list(argv), 124, "", f"timed out: {exc}")
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
        return done

    def logs(self, tail: int = 3000) -> str:
        parts = []
        for path in sorted((self.dir / "log").glob("*")):
            with contextlib.suppress(OSError):
                parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel every job, wait (10 s at most) for the queue to drain, SIGTERM the daemons by
        PID, SIGKILL survivors after 10 s, remove the directory. Never raises."""
        if self.pids and all(self._alive(n) for n in ("slurmctld", "slurmd")):
            self.run("scancel", f"--user={os.getuid()}", timeout=10, check=False)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                left = self.run("squeue", "-h", timeout=5, check=False)
                if left.returncode != 0 or not left.stdout.strip():
                    break
                time.sleep(0.1)
        for name, pid in self.pids.items():
            if self._alive(name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(self._alive(n) for n in self.pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for name, pid in self.pids.items():
            if self._alive(name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc = self._procs.get(name)
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
        for log in self._logs:
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
