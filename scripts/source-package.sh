#!/usr/bin/env bash
# Makes the Debian source package from this checkout in OUTDIR: touchgate_<upstream>.orig.tar.xz
# (the checkout's files but debian/, uncommitted changes included, ignored files not), its
# orig-swiftpm component (debian/make-orig-swiftpm: the Swift dependencies' sources), then the
# .debian.tar.xz and the .dsc with dpkg-source -b. Build it anywhere, with no network:
#   dpkg-source -x OUTDIR/touchgate_*.dsc src && cd src && dpkg-buildpackage -us -uc -b
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$TOUCHGATE_ROOT"

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
version=$(dpkg-parsechangelog -SVersion)
upstream=$(sed -e 's/^[0-9]*://' -e 's/-[^-]*$//' <<<"$version")
stamp=$(dpkg-parsechangelog -STimestamp)
tree="$out/touchgate-$upstream"
rm -rf "$tree"

# The checkout's files, as the binary build copies them (tracked or new, not ignored).
upstream_files=()
debian_files=()
while IFS= read -r -d '' name; do
    [ -f "$name" ] || continue
    case "$name" in
        debian/*) debian_files+=("$name") ;;
        *) upstream_files+=("$name") ;;
    esac
done < <(git ls-files -z --cached --others --exclude-standard)

printf '%s\0' "${upstream_files[@]}" |
    tar --null -T - --sort=name --owner=0 --group=0 --numeric-owner --mode=go-w \
        --mtime="@$stamp" --clamp-mtime --transform="s,^,touchgate-$upstream/," -cf - |
    xz -6 -T1 >"$out/touchgate_$upstream.orig.tar.xz"
debian/make-orig-swiftpm "$out" >/dev/null

# dpkg-source -b wants the tree unpacked from the tarballs beside them, with debian/ added.
mkdir -p "$tree/swiftpm"
tar -xJf "$out/touchgate_$upstream.orig.tar.xz" -C "$out"
tar -xJf "$out/touchgate_$upstream.orig-swiftpm.tar.xz" -C "$tree"
printf '%s\0' "${debian_files[@]}" | tar --null -T - -cf - | tar -x -C "$tree"
(cd "$out" && dpkg-source -b "touchgate-$upstream" >&2)
rm -rf "$tree"
echo "$out/touchgate_$version.dsc"
