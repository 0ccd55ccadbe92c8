"""What crosses between the runner and its zygote (issue 13; the zygote is
:mod:`repro.runner.zygote`, the runner's client :mod:`repro.runner.zygote_client`): the
zygote's environment (its socket descriptor, the thread-pool limits) and the messages.

Wire format: each message is a 4-byte big-endian length then JSON. Runner -> zygote:
``{"env": {...}, "cwd": str}`` with fds ``[log_fd, report_fd]``. Zygote -> runner: ``{"ready":
pid}`` once, ``{"pid": n}`` or ``{"error": text}`` per request, ``{"exit": pid, "returncode":
int}`` when a harness ends (``returncode`` as ``subprocess.Popen``: ``-SIGNUM`` for a signal).
"""

from __future__ import annotations

import array
import json
import os
import socket
import struct

#: Environment variable holding the zygote's socket descriptor.
SOCKET_FD_VAR = "REPRO_ZYGOTE_FD"
_MAX_MESSAGE = 16 * 1024 * 1024
#: Thread pools that start their threads when their library is loaded, limited to one thread
#: in the zygote before it imports anything (issue 19, item 4). numpy's OpenBLAS starts one
#: thread per extra core at ``import numpy``, which ``import torch`` does; each forked case
#: gets the size a fresh interpreter would have (:func:`repro.runner.zygote.restore_thread_pools`). OpenMP and MKL
#: pools start lazily, at the first parallel region, so they need no limit.
ZYGOTE_POOL_LIMITS = {"OPENBLAS_NUM_THREADS": "1"}


def zygote_env(env: dict[str, str], tmpdir: str) -> dict[str, str]:
    """The zygote's environment: the cases' common ``env`` with :data:`ZYGOTE_POOL_LIMITS`
    and ``TMPDIR`` set to ``tmpdir``, a directory the zygote's imports may write to
    (``import torch._dynamo`` creates ``$TMPDIR/torchinductor_<user>``) and that is removed
    with the zygote. A forked case gets its own environment back
    (``repro.runner.zygote._become_harness``)."""
    out = dict(env)
    out.update(ZYGOTE_POOL_LIMITS)
    out["TMPDIR"] = tmpdir
    return out


def send(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    """Send one message (length, then JSON) with ``fds`` passed as SCM_RIGHTS. Raises OSError
    (BrokenPipeError, a socket timeout) when the other side is gone or does not read."""
    data = json.dumps(message).encode()
    payload = struct.pack(">I", len(data)) + data
    if fds:
        sock.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(payload)


def recv(sock: socket.socket) -> tuple[dict, list[int]] | None:
    """One message and the descriptors that came with it; None at EOF."""
    fds = array.array("i")
    head, ancdata, _flags, _addr = sock.recvmsg(4, socket.CMSG_LEN(16 * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if len(head) < 4:
        for fd in fds:
            os.close(fd)
        return None
    (size,) = struct.unpack(">I", head)
    if size > _MAX_MESSAGE:
        raise ValueError(f"zygote message of {size} bytes")
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body), list(fds)
