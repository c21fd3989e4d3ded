#!/usr/bin/env bash
# Unpacks Debian's fprintd and libpam-fprintd into a cache dir without installing them (their
# maintainer scripts would change /etc/pam.d), installs only their library dependencies, and
# prints the unpacked root. Cache: $TOUCHGATE_BENCH_CACHE, else ~/.cache/touchgate-bench.
set -euo pipefail

cache=${TOUCHGATE_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/touchgate-bench}
apt_get() { apt-get -q -o DPkg::Lock::Timeout=600 "$@"; }

candidate() { apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }'; }
version=$(candidate fprintd)
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    apt_get update >&2
    version=$(candidate fprintd)
fi
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    echo "fetch-fprintd: no fprintd package known to apt" >&2
    exit 1
fi

dir="$cache/fprintd-${version//:/_}"
if [ ! -e "$dir/complete" ]; then
    rm -rf "$dir"
    mkdir -p "$dir/debs"
    # Downloaded as root into a root-owned dir: no sandbox user needed.
    (cd "$dir/debs" && apt_get -o APT::Sandbox::User=root download "fprintd=$version" "libpam-fprintd=$version" >&2)
    for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
    touch "$dir/complete"
fi

# Their dependencies that are shared libraries (Section: libs), not dbus, polkit or PAM's config.
deps=$(for deb in "$dir"/debs/*.deb; do dpkg-deb -f "$deb" Depends; done |
       tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/[[:space:]]//g' | grep -v '^$' | sort -u)
# shellcheck disable=SC2086  # one package name per word
libs=$( { apt-cache show --no-all-versions $deps 2>/dev/null || true; } |
       awk '/^Package:/ { p = $2 } /^Section:/ && $2 == "libs" { print p }' | sort -u)
needed=()
for dep in $libs; do
    dpkg-query -W -f='${Status}' "$dep" 2>/dev/null | grep -q "install ok installed" || needed+=("$dep")
done
if [ ${#needed[@]} -gt 0 ]; then
    echo "fetch-fprintd: installing ${needed[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt_get install -y --no-install-recommends "${needed[@]}" >&2
fi
echo "$dir/root"
