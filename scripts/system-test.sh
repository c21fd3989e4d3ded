#!/usr/bin/env bash
# The system test (Tests/System): boots a Debian 12 image with the project's .debs installed (those
# the install test kept in .build/debs, built here if absent or built from other sources) under
# QEMU, and uses touchgate there through systemd, logind, polkit, journald, getty, sudo and reboot.
# Needs root, QEMU and Debian's mirror (the image is cached in .build/system-image).
# TOUCHGATE_SKIP_SYSTEM_TEST=1 skips it (for a quick local run; CI runs it).
set -uo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT" || exit 1

if [ "${TOUCHGATE_SKIP_SYSTEM_TEST:-0}" = 1 ]; then
    echo "system: 0 passed, 0 failed (skipped: TOUCHGATE_SKIP_SYSTEM_TEST=1)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "system-test.sh: needs root (mmdebstrap, the image's files)" >&2
    echo "system: 0 passed, 1 failed"
    exit 1
fi

work=$(mktemp -d /tmp/tg-system-XXXXXX)
trap 'rm -rf --one-file-system "$work"' EXIT
TOUCHGATE_SYSTEM_WORK="$work" python3 -B -m pytest -q -p no:cacheprovider -s Tests/System "$@" &
tests=$!
# A time limit's SIGTERM reaches the tests too, which then stop QEMU.
trap 'kill -TERM "$tests" 2>/dev/null' TERM INT
wait "$tests"; rc=$?
if kill -0 "$tests" 2>/dev/null; then wait "$tests"; rc=$?; fi
exit "$rc"
