# Sourced by the other scripts: repo root, PATH with the Swift toolchain, no prompts.
# shellcheck shell=bash
TOUCHGATE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export TOUCHGATE_ROOT
# Swift may be installed outside PATH (e.g. /opt/swift); look in the usual places.
if ! command -v swift >/dev/null 2>&1; then
    for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin /usr/local/swift/usr/bin; do
        if [ -x "$dir/swift" ]; then export PATH="$dir:$PATH"; break; fi
    done
fi
export DEBIAN_FRONTEND=noninteractive
