"""Signal names: the signature of a case killed by a signal (:func:`signal_signature`, from the
table's ``signals``), a signal's name (:func:`signal_name`), and the words a shell prints for one
(``Bus error`` -> ``SIGBUS``)."""

from __future__ import annotations

import signal

from repro.signatures import table as tables
from repro.signatures.table import SIGNAL_PREFIX


def signal_name(signum: int) -> str:
    """``11 -> "SIGSEGV"`` (from the :mod:`signal` module); unknown numbers give ``"signal N"``.

    A negative number (a ``Popen.returncode``) is read as the signal it stands for.
    """
    try:
        return signal.Signals(abs(signum)).name
    except ValueError:
        return f"signal {abs(signum)}"


def signal_signature(signum: int) -> str:
    """Signature name of a case killed by a signal (see "Exit status conventions").

    ``11 -> "segfault"``, ``6 -> "sigabrt"``, ``7 -> "sigbus"``, ``4 -> "host_sigill"``,
    ``9 -> "sigkill"``, ``15 -> "sigterm"`` (:data:`~repro.signatures.table.SIGNAL_SIGNATURES`),
    others ``"signal_<name>"`` (``"signal_sigusr1"``, ``"signal_99"`` for a number the
    :mod:`signal` module does not know). A negative number (a ``Popen.returncode``) is read as
    the signal it stands for.
    """
    n = abs(signum)
    known = tables.active().signals.get(n)
    if known is not None:
        return known
    name = signal_name(n)
    if name.startswith("SIG"):
        return f"{SIGNAL_PREFIX}{name.lower()}"
    return f"{SIGNAL_PREFIX}{n}"


#: strsignal(3)'s descriptions (what a DataLoader's "killed by signal: X" prints) -> names.
_SIGNAL_DESCRIPTIONS = {
    "killed": "SIGKILL",
    "bus error": "SIGBUS",
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "terminated": "SIGTERM",
    "illegal instruction": "SIGILL",
    "floating point exception": "SIGFPE",
}
