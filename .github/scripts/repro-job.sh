#!/usr/bin/env bash
# One `repro` job of gpu-matrix.yml on a runner: the same script on Linux and inside WSL2.
# In: REPRO_COMMAND (the planned command, from `repro plan --github`), REPRO_RESULTS (folder to
# upload), RUNNER_NAME, GITHUB_STEP_SUMMARY (optional). A venv per job: a persistent runner's
# system Python is never touched (and PEP 668 refuses system pip on Ubuntu 24.04 / Debian 12).
set -euo pipefail
: "${REPRO_COMMAND:?set by the workflow from the plan}"
results="${REPRO_RESULTS:-results}"
venv="$(mktemp -d "${TMPDIR:-/tmp}/repro-venv.XXXXXX")"
trap 'rm -rf "$venv"' EXIT

python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ".[docker,nvidia]"
export PATH="$venv/bin:$PATH"
mkdir -p "$results"

# Runner health first, deep: every NVML query, a CUDA op after fork (the zygote's premise),
# CUDA/cuDNN/NCCL smoke, a /dev/shm write, Fabric Manager on NVSwitch boards. A failing doctor is
# this runner's problem, never torch's: the run below records the plain findings as `infra.*`
# errors in its `doctor` testsuite, and the summary names the runner so the fleet owner knows
# which machine to fix.
if ! repro doctor --deep; then
  echo "::error::runner ${RUNNER_NAME:-?}: repro doctor --deep failed; its cells are infra errors"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    echo "- :warning: runner \`${RUNNER_NAME:-?}\`: \`repro doctor --deep\` failed (see the job log)" >>"$GITHUB_STEP_SUMMARY"
  fi
fi

# The planned command (from matrix.yaml via `repro plan --github`). Exit 1 is an unexpected red
# (a reproduction the scenarios' EXPECT or matrix.yaml's expect: predicts is not one): the
# results are written by then and the workflow uploads them whatever this job's status, so the
# job fails with the cell red, as the report job's matrix shows it.
status=0
bash -c "$REPRO_COMMAND" || status=$?
if [ "$status" -eq 1 ]; then
  echo "::error::runner ${RUNNER_NAME:-?}: unexpected red cases (exit 1); see the results artifact and the matrix"
  exit 1
fi
if [ "$status" -gt 1 ]; then
  echo "::error::repro exited $status (2: bad input, 3: could not go on)"
  exit "$status"
fi
