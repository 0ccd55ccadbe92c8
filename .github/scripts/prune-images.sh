#!/usr/bin/env bash
# Disk hygiene on a GPU runner (Linux, or inside WSL2 from a Windows runner): repro-matrix images
# unused for 7 days, then dangling layers. GPU images are several GB each; a persistent runner
# fills its disk within weeks without this. Only images carrying repro-matrix's label are touched.
set -euo pipefail
docker image prune --all --force --filter "label=io.repro-matrix.version" --filter "until=168h"
docker image prune --force # dangling layers only
