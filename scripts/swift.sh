#!/usr/bin/env bash
# Runs swift with these arguments and a TMPDIR of its own, removed when swift ends: the Swift
# driver leaves an empty TemporaryDirectory.* in TMPDIR at every run (swiftlang/swift-driver
# issues 1613 and 2049), so each build or test run would leave a few more in /tmp.
set -uo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
own=$(mktemp -d "${TMPDIR:-/tmp}/touchgate-swift.XXXXXX") || exit 1
trap 'rm -rf --one-file-system "$own"' EXIT
TMPDIR=$own swift "$@"
