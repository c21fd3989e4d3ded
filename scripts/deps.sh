#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the demo need, only those missing.
set -euo pipefail
# shellcheck source=env.sh
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

packages=(
    # build: the daemon links libfprint/GLib, Linux-PAM and libaudit; the PAM module is plain C
    libfprint-2-dev libglib2.0-dev libpam0g-dev libaudit-dev pkg-config gcc make libc6-dev binutils
    # tpm2-tss's headers for the TPM sealing shim (the libraries themselves are loaded at run time)
    libtss2-dev
    # swift build fetches its package dependencies over https
    git ca-certificates
    # real PAM without touching /etc: pam_wrapper (and its pam_matrix), nss_wrapper users, pamtester
    libpam-wrapper libnss-wrapper pamtester
    # the end-to-end tests and the demo; strace stops the daemon in the middle of a write
    python3 strace
    # the real-client tests: sudo, su, login and vlock in a private mount namespace
    sudo vlock login util-linux openssl
    # message catalogs (xgettext, msgfmt), the Chinese locale they are tested in, the manual's lint
    gettext locales mandoc
    # fprintd's D-Bus API: a private dbus-daemon (and dbus-monitor), polkit and logind stand-ins,
    # libfprint's typelib to write prints as fprintd does (fprintd's own clients are fetched by the
    # tests with apt-get download, never installed)
    dbus-daemon dbus-bin python3-dbusmock python3-gi gir1.2-fprint-2.0
    # synthetic fingerprint images for libfprint's virtual image reader
    python3-numpy
    # a USB reader plugged in and unplugged while the daemon runs: umockdev's USB emulation, driven
    # from python3-gi (listed above)
    umockdev gir1.2-umockdev-1.0
    # a login that opens the GNOME login keyring: the real gnome-keyring-daemon and pam_gnome_keyring.so
    # (the Secret Service is asked with python3-gi's Gio over a private dbus-daemon, listed above)
    gnome-keyring libpam-gnome-keyring
    # the policy's time rules end to end: the daemon's wall clock is moved, not waited for
    libfaketime
    # the TPM sealing tests: a software TPM on a socket, tpm2-tss's TCTI for it, and tpm2-tools
    # to extend a PCR behind the shim's back
    swtpm libtss2-tcti-swtpm0 tpm2-tools
    # the Swift toolchain itself (swift.org's list for Debian 12; its binutils-gold is binutils
    # here): without them, on a minbase system, swift fails on libncurses.so.6 and clang++ cannot
    # find <string>
    libicu-dev libcurl4-openssl-dev libedit-dev libsqlite3-dev libncurses-dev
    libpython3-dev libxml2-dev uuid-dev tzdata gnupg2 libstdc++-12-dev
    # the Debian packages and their install test: build (dpkg-buildpackage requires build-essential
    # of every source package), lintian, manual pages, a throwaway root
    build-essential debhelper dpkg-dev lintian mmdebstrap debian-archive-keyring
    # scripts/lint.sh: the C formatter's check and the shell linter (swift-format comes with Swift)
    clang-format shellcheck
    # the system test: a Debian guest booted under QEMU (qemu-img makes its copy-on-write disk)
    qemu-system-x86 qemu-utils
)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else echo "deps.sh: need root to run: $*" >&2; exit 1
    fi
}

missing=()
for p in "${packages[@]}"; do
    # "install ok installed" only: a removed package keeps its status entry.
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
updated=no
apt_install() {
    if [ "$updated" = no ]; then as_root apt-get update -q; updated=yes; fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "$@"
}
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps.sh: installing ${missing[*]}"
    apt_install "${missing[@]}"
fi

# gettext translates only into an installed locale: add zh_CN.UTF-8 if missing (a new locale,
# no setting of this machine changes).
if ! locale -a 2>/dev/null | grep -qix 'zh_CN\.utf-\?8'; then
    echo "deps.sh: generating the zh_CN.UTF-8 locale"
    as_root localedef -i zh_CN -f UTF-8 zh_CN.UTF-8
fi

# pytest for the end-to-end tests: pip for a python3 of its own (pyenv, venv), else Debian's package.
if ! python3 -m pytest --version >/dev/null 2>&1; then
    echo "deps.sh: installing pytest"
    if ! python3 -m pip install -q pytest 2>/dev/null; then
        apt_install python3-pytest
    fi
    python3 -m pytest --version >/dev/null 2>&1 || { echo "deps.sh: python3 -m pytest still does not work" >&2; exit 1; }
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "deps.sh: no Swift toolchain found (install Swift 6 from swift.org, e.g. to /opt/swift)" >&2
    exit 1
fi
