"""Planted failures for the test suite (never in the default catalogue).

``kind`` picks what the case does: pass, fail (AssertionError), error (ValueError), segfault
(SIGSEGV in the case process), abort (SIGABRT), hang (blocks forever with a second thread
alive), sleep (a slow case, for killing the runner mid-run), masked_exit (exit 0 before any
verdict), cudnn (prints a real cuDNN error text, then raises), nan_dice (the DB Dice loss's
``assert loss <= 1`` meeting a NaN, field report F4-4), slow (keeps beating, never finishes),
stall (beats steadily, then goes silent).
"""

from __future__ import annotations

import os
import signal
import threading
import time

PARAMS = {"kind": ["pass"]}
TIMEOUT_S = 10.0


def run(ctx, params) -> None:
    kind = params["kind"]
    ctx.heartbeat("planted", 1)
    ctx.metric("planted_metric_s", 0.25)
    if kind == "pass":
        return
    if kind == "fail":
        assert 1 + 1 == 3, "planted check failed"
    if kind == "error":
        raise ValueError("planted error outside the check")
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "abort":
        os.abort()
    if kind == "hang":
        threading.Thread(
            target=time.sleep, args=(3600,), name="planted-sleeper", daemon=True
        ).start()
        threading.Event().wait()
    if kind == "sleep":
        time.sleep(3600)
    if kind == "masked_exit":
        os._exit(0)
    if kind == "cudnn":
        print("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", flush=True)
        raise RuntimeError("cuDNN error: CUDNN_STATUS_EXECUTION_FAILED")
    if kind == "nan_dice":
        _dice_loss(float("nan"))
    if kind == "slow":
        for step in range(10**6):
            ctx.heartbeat("slow_step", step)
            time.sleep(0.5)
    if kind == "stall":
        for step in range(5):
            ctx.heartbeat("steady_step", step)
            time.sleep(0.05)
        time.sleep(3600)
    raise AssertionError(f"unknown planted kind {kind!r}")


def _dice_loss(loss: float) -> float:
    assert loss <= 1
    return loss
