#!/usr/bin/env bash
# The install test (Tests/Install): builds the .debs, installs them on a throwaway Debian 12 root
# made by mmdebstrap, and uses them there as an administrator and a user would. Needs root and
# Debian's mirror. TOUCHGATE_SKIP_INSTALL_TEST=1 skips it (for a quick local run; CI runs it).
set -uo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT" || exit 1

if [ "${TOUCHGATE_SKIP_INSTALL_TEST:-0}" = 1 ]; then
    echo "install: 0 passed, 0 failed (skipped: TOUCHGATE_SKIP_INSTALL_TEST=1)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-test.sh: needs root (mmdebstrap, chroot, mounts)" >&2
    echo "install: 0 passed, 1 failed"
    exit 1
fi

work=$(mktemp -d /tmp/tg-install-XXXXXX)
# The test runs in a private mount namespace: what it mounts in the root goes away with it, so
# the root is removed from out here, where nothing is mounted in it (--one-file-system as well).
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() { rm -rf --one-file-system "$work"; }
trap cleanup EXIT
TOUCHGATE_INSTALL_WORK="$work" unshare --mount --propagation private \
    python3 -B -m pytest -q -p no:cacheprovider -s Tests/Install "$@" &
tests=$!
# A time limit's SIGTERM reaches the tests too, which then stop what they started in the root.
trap 'kill -TERM "$tests" 2>/dev/null' TERM INT
wait "$tests"; rc=$?
if kill -0 "$tests" 2>/dev/null; then wait "$tests"; rc=$?; fi
exit "$rc"
