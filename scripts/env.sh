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

# require_root SCRIPT WHY: stops an unprivileged run, saying how to run SCRIPT as root. Debian
# installs no sudo when root has a password, so a root shell comes first.
require_root() {
    [ "$(id -u)" -eq 0 ] && return 0
    local cmd="$TOUCHGATE_ROOT/$1"
    {
        echo "$1: run this as root: $2."
        echo "  in a root shell:  $cmd"
        if command -v sudo >/dev/null 2>&1; then
            echo "  or with sudo:     sudo $cmd"
        else
            echo "  or, without sudo: su -c $cmd   (root's password)"
        fi
    } >&2
    exit 1
}
