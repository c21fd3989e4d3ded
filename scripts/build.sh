#!/usr/bin/env bash
# Builds everything: touchgated and touchgate (swift build), pam_touchgate.so (make -C pam).
# Idempotent. --tests also builds the Swift test targets.
set -euo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT"

tests=no
for arg in "$@"; do
    case "$arg" in
        --tests) tests=yes ;;
        *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
    esac
done

./scripts/deps.sh
if [ "$tests" = yes ]; then
    ./scripts/swift.sh build --build-tests
else
    ./scripts/swift.sh build
fi
# The module reads the build tree's catalogs, so the tests see them (an install build: make -C pam).
make -C po mo
make -C pam LOCALEDIR="$TOUCHGATE_ROOT/.build/locale"
