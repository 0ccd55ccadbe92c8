"""What of the kernel log belongs next to a hung or crashed case, and why it may be missing.

The watchdog (``repro.runner.watchdog.kernel_log_tail``) appends the kernel log to a killed
case's log. Its plain tail is mostly noise (AppArmor audit lines, USB, network) and, where the
kernel restricts it, an unexplained failure. :func:`evidence` keeps only the lines the field asks
for first (NVIDIA ``NVRM: Xid``, amdgpu/KFD resets, "hogged CPU", OOM kills, hung tasks, soft
lockups, segfaults) and :func:`reading_failed` says plainly when the log is closed to us:
``kernel.dmesg_restrict = 1`` (the default on Ubuntu since 20.10 and on Fedora, see
virt-s1/rhel-edge#5955, moby/moby#41318) makes ``dmesg`` fail with "read kernel buffer failed:
Operation not permitted" for a user without CAP_SYSLOG, as in an unprivileged container.
Never imports torch; pure functions plus one file read.
"""

from __future__ import annotations

import re
from pathlib import Path

#: The sysctl that closes the kernel log to unprivileged users (Documentation/admin-guide/sysctl/kernel.rst).
DMESG_RESTRICT = "/proc/sys/kernel/dmesg_restrict"
#: Kernel log lines worth keeping beside a case: GPU driver faults and resets, OOM, hangs, crashes.
EVIDENCE = re.compile(
    r"NVRM|Xid|nvidia|amdgpu|\bkfd\b|hogged CPU|Out of memory|oom[-_ ]kill|Killed process"
    r"|blocked for more than|hung_task|soft lockup|rcu.{0,20}detected stall|segfault"
    r"|general protection|GPU reset|ring \S+ timeout",
    re.IGNORECASE,
)
_NOT_PERMITTED = re.compile(r"Operation not permitted|Permission denied|EPERM", re.IGNORECASE)


def restricted(path: str = DMESG_RESTRICT) -> bool | None:
    """``kernel.dmesg_restrict`` as a bool; None when it cannot be read."""
    try:
        return Path(path).read_text().strip() == "1"
    except OSError:
        return None


def reading_failed(returncode: int, stderr: str, restrict: bool | None) -> str:
    """The one-line note for a ``dmesg`` that failed with ``returncode`` and ``stderr``.

    "kernel log not readable (dmesg_restrict): ..." when the kernel restricts the log (the
    sysctl says 1, or dmesg says "Operation not permitted"), with how to get it."""
    said = stderr.strip().splitlines()[-1] if stderr.strip() else f"dmesg exited {returncode}"
    if restrict or _NOT_PERMITTED.search(stderr):
        return (
            f"(kernel log not readable (dmesg_restrict): {said}; read it on the host as root, "
            "or allow it with sysctl kernel.dmesg_restrict=0)"
        )
    return f"(kernel log not readable: {said})"


def evidence(text: str, lines: int = 40) -> str:
    """The last ``lines`` kernel log lines of ``text`` that match :data:`EVIDENCE`, or a note
    saying none did (so unrelated lines never pose as the cause)."""
    kept = [line for line in text.splitlines() if EVIDENCE.search(line)]
    if not kept:
        total = len(text.splitlines())
        return f"(kernel log: no GPU driver, OOM, hung-task or crash line among its {total} lines)"
    return "\n".join(kept[-lines:])
