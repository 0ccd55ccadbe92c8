"""An empty scenario: measures the runner's per-case isolation overhead (benchmarks/).

It imports nothing heavy, so a run of it costs one Python start plus the harness.
"""

PARAMS: dict = {"torch": [False]}
TIMEOUT_S = 30.0
#: Runs only when matrix.yaml names it (a benchmark's subject, not a repro).
OPT_IN = True


def run(ctx, params) -> None:
    if params.get("torch"):
        import torch  # noqa: F401 - the cost of the import is what is measured
