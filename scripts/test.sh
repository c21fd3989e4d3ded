#!/usr/bin/env bash
# The test command: builds everything (test targets included), then runs the test runners, each
# printing its own summary: swift test, the C tests of the PAM module, the end-to-end tests, a short
# run of each fuzz harness, the install test of the Debian packages (--skip-install, or
# TOUCHGATE_SKIP_INSTALL_TEST=1, skips that one locally; CI runs it) and the system test on a booted
# Debian guest (--skip-system, or TOUCHGATE_SKIP_SYSTEM_TEST=1, skips it locally; CI runs it). All
# run even if one fails; the exit status is non-zero if anything failed.
set -uo pipefail
for arg in "$@"; do
    case "$arg" in
        --skip-install) export TOUCHGATE_SKIP_INSTALL_TEST=1 ;;
        --skip-system) export TOUCHGATE_SKIP_SYSTEM_TEST=1 ;;
        *) echo "usage: $0 [--skip-install] [--skip-system]" >&2; exit 2 ;;
    esac
done
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT" || exit 1
require_root scripts/test.sh "it installs what it needs with apt-get and tests in mount namespaces"
exec </dev/null  # nothing here reads standard input (CI has none)

logs=$(mktemp -d)
packages=$(mktemp -d /tmp/tg-packages-XXXXXX)
packages_pid=
image_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    local pid
    for pid in $packages_pid $image_pid; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid"
    done
    rm -rf --one-file-system "$logs" "$packages"
}
trap cleanup EXIT
failed=()
durations=()  # "name N s", in run order: where the time of a run goes

# run NAME TIMEOUT COMMAND...: runs it with a hard time limit, its output shown and kept.
run() {
    local name=$1 limit=$2; shift 2
    echo
    echo "=== $name: $*"
    local began=$SECONDS
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logs/$name.log"
    local rc=${PIPESTATUS[0]}
    durations+=("$name $((SECONDS - began)) s")
    if [ "$rc" -ne 0 ]; then
        [ "$rc" -eq 124 ] && echo "=== $name: stopped after ${limit}s"
        failed+=("$name (exit $rc)")
    fi
    return 0
}

# waited NAME PID WHAT LOG LINES: waits for a step that ran in the background, records how long the
# test command waited for it (NAME-wait) and shows the end of its log.
waited() {
    local began=$SECONDS
    wait "$2"
    durations+=("$1-wait $((SECONDS - began)) s")
    echo
    echo "=== $3, built in the background (waited for $((SECONDS - began)) s)"
    tail -n "$5" "$4"
}

started=$(date +%s)
# What every runner needs from Debian first (the linters too, on a fresh machine).
run deps 1800 ./scripts/deps.sh
# The install test's first step, the Debian packages built from a source package with no network
# (four minutes of both cores), runs meanwhile in the background at the lowest CPU priority: the
# runners before the install test leave cores idle much of the time, and take what they need first.
if [ "${TOUCHGATE_SKIP_INSTALL_TEST:-0}" != 1 ] && [ "$(id -u)" -eq 0 ]; then
    timeout --kill-after=10 2700 nice -n 19 python3 -B Tests/Install/build_packages.py "$packages/build" \
        >"$logs/packages.log" 2>&1 &
    packages_pid=$!
fi
run lint 300 ./scripts/lint.sh
run build 1800 ./scripts/build.sh --tests
# The core tests read the build's catalogs (made by build.sh), as the daemon in the end-to-end tests does.
run swift-test 1200 env TOUCHGATE_LOCALEDIR="$TOUCHGATE_ROOT/.build/locale" ./scripts/swift.sh test
run c-tests 600 make -C pam check
run e2e 600 python3 -B -m pytest -q -p no:cacheprovider Tests/EndToEnd
run fuzz 600 ./fuzz/run.sh
if [ -n "$packages_pid" ]; then
    waited packages "$packages_pid" "the packages" "$logs/packages.log" 40
    packages_pid=
    # The system test's image (Tests/System/image.py) is built from the same packages in the
    # background while the install test runs; their copies first, since the install test moves them.
    if [ "${TOUCHGATE_SKIP_SYSTEM_TEST:-0}" != 1 ] && [ "$(cat "$packages/build/result" 2>/dev/null)" = ok ]; then
        mkdir "$packages/image-debs"
        find "$packages/build" -maxdepth 1 -name '*.deb' ! -name '*-dbgsym_*' -exec cp -t "$packages/image-debs" {} +
        timeout --kill-after=10 2400 nice -n 19 python3 -B Tests/System/image.py "$packages/image-debs" \
            "$packages/image-work" >"$logs/image.log" 2>&1 &
        image_pid=$!
    fi
    run install 2400 env TOUCHGATE_PACKAGES_BUILD="$packages/build" ./scripts/install-test.sh
else
    run install 2400 ./scripts/install-test.sh
fi
if [ -n "$image_pid" ]; then
    waited image "$image_pid" "the system test's image" "$logs/image.log" 5
    image_pid=
fi
run system 2400 ./scripts/system-test.sh

echo
echo "=== summary ($(( $(date +%s) - started )) s)"
# Each runner's own summary lines, again, in one place.
grep -hE "^[[:space:]]*Executed [0-9]+ tests?, with" "$logs/swift-test.log" | tail -n 1 | sed 's/^[[:space:]]*/XCTest: /' || true
grep -hE "Test run with [0-9]+ tests?" "$logs/swift-test.log" | tail -n 1 || true
grep -h "^lint: [0-9]" "$logs/lint.log" || true
grep -h "^C tests:" "$logs/c-tests.log" || true
grep -h "^e2e:" "$logs/e2e.log" || true
grep -h "^fuzz:" "$logs/fuzz.log" || true
grep -h "^install:" "$logs/install.log" || true
grep -h "^system:" "$logs/system.log" || true
printf 'time per runner:'; printf ' %s;' "${durations[@]}"; echo
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all passed"
