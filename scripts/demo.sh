#!/usr/bin/env bash
# The demo: builds everything, then enrolls a finger on a virtual reader and runs real PAM
# authentications against it (see Tests/EndToEnd/demo.py). Needs root (it installs packages).
set -euo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT"
require_root scripts/demo.sh "it installs the packages it needs with apt-get"

./scripts/build.sh
exec python3 -B Tests/EndToEnd/demo.py
