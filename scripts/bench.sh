#!/usr/bin/env bash
# Benchmark against the peer's numbers in NOTES: builds, then runs Tests/EndToEnd/bench.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT"
./scripts/build.sh
exec python3 -B Tests/EndToEnd/bench.py "$@"
