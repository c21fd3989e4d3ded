"""The guest's disk: Debian 12 made by mmdebstrap with systemd, logind, polkit, sudo, vlock, auditd
and a kernel, the project's two .debs installed with apt, a user with a password, and the test-only
pieces (guest/): the reader's drop-in and the two bridges to the host. Everything of touchgate
itself is as packaged.

The image (a raw ext4 made with `mkfs.ext4 -d`, no loop mount) and the kernel and initrd taken from
it are cached under .build/system-image/<key>, the key hashing the package list, this recipe and
the .debs; each run boots a qcow2 overlay on it, so no run dirties the cache.
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = REPO / ".build" / "system-image"
GUEST_FILES = HERE / "guest"        # the test's units, scripts and drop-in
EARLY_FILES = HERE / "guest-early"  # what must be there before the kernel package is installed

# What a small Debian desktop-less machine needs to run touchgate as a user's machine does; the
# .debs' own dependencies are added from their control fields. udev names the virtio ports; socat,
# procps and strace serve the test's bridges and the start-up stall's evidence; pamtester makes the
# PAM calls of the start-up loop.
PACKAGES = ["systemd-sysv", "dbus", "polkitd", "login", "sudo", "vlock", "auditd", "linux-image-amd64",
            "udev", "kmod", "socat", "procps", "strace", "pamtester",
            # touchgate's Recommends (tpm2-tss, to seal with the guest's TPM): apt installs them on a
            # Debian system, but the image's apt is set not to install recommended packages.
            "libtss2-esys-3.0.2-0", "libtss2-tctildr0", "libtss2-mu0", "libtss2-rc0"]
USER, PASSWORD = "tgtest", "tgtest-Secret-4711"
ROOT_PASSWORD = "root-Secret-4711"
HOSTNAME = "tgguest"
MMDEBSTRAP_LIMIT = 1200  # s: the kernel and its initramfs are most of it


def log(text):
    print(text, flush=True)


def _run(argv, limit):
    p = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=limit)
    if p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s" % (" ".join(map(str, argv[:3])), p.returncode,
                                                  "\n".join(p.stdout.splitlines()[-40:])))
    return p.stdout


def _key(packages, debs):
    h = hashlib.sha256()
    h.update("\n".join(sorted(packages)).encode())
    files = [p for d in (GUEST_FILES, EARLY_FILES) for p in d.rglob("*") if p.is_file()]
    for recipe in sorted([Path(__file__)] + files):
        h.update(str(recipe.relative_to(HERE)).encode() + b"\0" + recipe.read_bytes())
    for deb in sorted(debs, key=lambda d: d.name):
        h.update(deb.name.encode() + b"\0" + deb.read_bytes())
    return h.hexdigest()[:16]


class Image:
    """The cached image's files: rootfs (raw ext4), vmlinuz, initrd."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.rootfs = self.dir / "rootfs.img"
        self.kernel = self.dir / "vmlinuz"
        self.initrd = self.dir / "initrd.img"

    def overlay(self, path):
        """A qcow2 file whose backing file is the cached image: the run writes only there."""
        _run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", self.rootfs, path], 60)
        return path


UPGRADE_SUFFIX = "+upgrade1"  # the higher version of scenario k's upgrade
UPGRADE_DIR = "/var/lib/tg-test/upgrade"
BEFORE_COMMON_AUTH = "/var/lib/tg-test/common-auth.before"  # as Debian made it, before our packages


def upgraded(debs, out):
    """The same .debs repacked under a higher version (dependencies between them too), for an
    upgrade to be installed with apt while touchgate runs. The files are identical: what the
    upgrade exercises is the packaging (maintainer scripts, the units' restart)."""
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for deb in debs.values():
        old = _run(["dpkg-deb", "-f", deb, "Version"], 60).strip()
        tree = out / (deb.name + ".d")
        shutil.rmtree(tree, ignore_errors=True)
        _run(["dpkg-deb", "-R", deb, tree], 120)
        control = tree / "DEBIAN" / "control"
        control.write_text(control.read_text().replace("(= %s)" % old, "(= %s%s)" % (old, UPGRADE_SUFFIX))
                           .replace("Version: %s\n" % old, "Version: %s%s\n" % (old, UPGRADE_SUFFIX)))
        new = out / deb.name.replace("_%s_" % old.split(":")[-1], "_%s%s_" % (old.split(":")[-1], UPGRADE_SUFFIX))
        _run(["dpkg-deb", "--root-owner-group", "-b", tree, new], 300)
        shutil.rmtree(tree)
        made.append(new)
    return made


def image(debs, depends, work):
    """The image for these .debs ({name: path}), built unless cached. `depends(deb)` lists a .deb's
    dependencies; `work` is a scratch directory."""
    packages = set(PACKAGES)
    for name, deb in debs.items():
        packages.update(d for d in depends(deb) if d not in debs)
    key = _key(packages, debs.values())
    cached = Image(CACHE / key)
    if cached.rootfs.exists() and cached.kernel.exists() and cached.initrd.exists():
        log("system image: cached (%s)" % key)
        return cached
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.iterdir():  # one image at a time: each is about a gigabyte
        shutil.rmtree(old, ignore_errors=True)
    t0 = os.times().elapsed
    building = CACHE / (key + ".tmp")
    building.mkdir()
    root = Path(work) / "guest-root"
    shutil.rmtree(root, ignore_errors=True)
    names = " ".join("/tmp/" + d.name for d in debs.values())
    upgrade = upgraded(debs, Path(work) / "upgrade") if debs else []
    hooks = [
        'mkdir -p "$1"%s && cp "$1"/etc/pam.d/common-auth "$1"%s' % (UPGRADE_DIR, BEFORE_COMMON_AUTH),
        'copy-in %s %s' % (" ".join(str(d) for d in upgrade), UPGRADE_DIR),
        'copy-in %s /tmp' % " ".join(str(d) for d in debs.values()),
        'chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q %s' % names,
        'rm -f %s' % " ".join('"$1"/tmp/' + d.name for d in debs.values()),
    ] if debs else []
    hooks += [
        # fprintd's own clients, without its daemon (touchgate serves its bus name): the two tools
        # taken out of Debian's package.
        'chroot "$1" sh -c "cd /tmp && apt-get download -q fprintd && dpkg-deb -x fprintd_*.deb /tmp/fprintd'
        ' && cp /tmp/fprintd/usr/bin/fprintd-list /tmp/fprintd/usr/bin/fprintd-verify /usr/local/bin/'
        ' && rm -rf /tmp/fprintd /tmp/fprintd_*.deb"',
        'sync-in %s /' % GUEST_FILES,
        'chroot "$1" sh /usr/local/lib/tg-test/setup.sh %s %s %s %s' % (USER, PASSWORD, ROOT_PASSWORD, HOSTNAME),
    ]
    # Before the kernel is installed: an initramfs with only what this guest's root needs (virtio
    # disk, ext4) is made in seconds and unpacked quickly at boot, where "most" takes minutes.
    argv = ["mmdebstrap", "--variant=minbase", "--include=" + ",".join(sorted(packages)),
            "--essential-hook=sync-in %s /" % EARLY_FILES]
    argv += ["--customize-hook=" + h for h in hooks]
    argv += ["bookworm", root]
    try:
        _run(argv, MMDEBSTRAP_LIMIT)
        kernel = sorted(root.glob("boot/vmlinuz-*"))[-1]
        initrd = sorted(root.glob("boot/initrd.img-*"))[-1]
        shutil.copy2(kernel, building / "vmlinuz")
        shutil.copy2(initrd, building / "initrd.img")
        used = int(_run(["du", "-sx", "--block-size=1M", root], 300).split()[0])
        _run(["mkfs.ext4", "-q", "-F", "-L", "tgroot", "-d", root, building / "rootfs.img",
              "%dM" % (used + 768)], 600)
        building.rename(cached.dir)
    finally:
        shutil.rmtree(building, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    log("system image: built in %.0f s (%s)" % (os.times().elapsed - t0, key))
    return cached


def main(argv):
    """`python3 -B Tests/System/image.py DEBS WORK`: the image for the .debs in DEBS, built into the
    cache unless it is there (WORK: a scratch directory). The test command runs it in the background
    beside the install test; the system test then finds it cached (the same .debs, the same key)."""
    if len(argv) != 3:
        sys.exit("usage: image.py DEBS WORK")
    sys.path.insert(0, str(HERE.parent / "Install"))
    import machine  # noqa: E402  (the install test's reading of a .deb's Depends)
    debs = {d.name.split("_")[0]: d for d in Path(argv[1]).glob("*.deb")}
    Path(argv[2]).mkdir(parents=True, exist_ok=True)
    image(debs, machine.depends, argv[2])


if __name__ == "__main__":
    main(sys.argv)
