"""A throwaway Debian 12 machine for the install test: the packages built from this checkout, a
minbase root made by mmdebstrap, and commands run in it with chroot.

The whole test runs inside a private mount namespace (scripts/install-test.sh starts it with
`unshare -m`), so /proc, /sys and /dev mounted into the root vanish with the test whatever ends it,
and the root is deleted from outside that namespace, where nothing is mounted in it. The host's
/etc is never written. Every wait has a deadline; nothing sleeps.
"""

import hashlib
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "Tests" / "EndToEnd"))

import harness  # noqa: E402  (LineLog, VirtualReader, PAM result names: the e2e harness's own)
from harness import LineLog, WaitTimeout, now  # noqa: E402,F401

WORK = Path(os.environ.get("TOUCHGATE_INSTALL_WORK") or "/tmp/tg-install")
BUILD_LIMIT = 1800   # s: a clean release build of the Swift code
MMDEBSTRAP_LIMIT = 600
COMMAND_LIMIT = 120  # s: apt, pam-auth-update, lintian
DAEMON = "/usr/libexec/touchgate/touchgated"
VDEV = "/run/tg-vdev.sock"       # libfprint's virtual reader, inside the root
NOTIFY = "/run/tg-notify.sock"   # where the daemon's READY=1 arrives, inside the root
SOCKET = "/run/touchgate/touchgated.sock"
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/root",
       "DEBIAN_FRONTEND": "noninteractive", "TERM": "dumb"}


class OutsideDaemon:
    """A process outside the root whose executable reads as DAEMON from inside it, as a host's
    touchgated does from a chroot: python in a mount namespace of its own, where a tmpfs over
    /usr/libexec holds a copy of it under that name. It says "ready" once it runs as that path,
    and lives until closed."""

    def __init__(self):
        script = ("mount -t tmpfs tmpfs /usr/libexec && mkdir -p %s && cp %s %s && "
                  "PYTHONHOME=/usr exec %s -c 'import sys; print(\"ready\", flush=True); sys.stdin.read()'"
                  % (os.path.dirname(DAEMON), sys.executable, DAEMON, DAEMON))
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.log = LineLog("outside daemon")
        threading.Thread(target=harness._pump_lines, args=(lambda: self.proc.stdout.read1(4096), self.log),
                         daemon=True).start()
        self.log.wait_for("ready", 10)
        assert os.readlink("/proc/%d/exe" % self.proc.pid) == DAEMON

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        if self.alive():
            self.proc.stdin.close()
            self.proc.wait(10)


def log(text):
    print(text, flush=True)


def run(argv, limit=COMMAND_LIMIT, check=True, **kw):
    """Runs a host command with a time limit; its output is kept and shown when it fails."""
    p = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=limit, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(map(str, argv)), p.returncode, p.stdout, p.stderr))
    return p


# ---------------------------------------------------------------------------------------------
# The packages


SOURCE_LIMIT = 900  # s: resolving the Swift dependencies and compressing their sources


def offline_env(home):
    """A build environment with nothing of this machine's: fresh HOME, no git configuration (so no
    URL rewriting to a local mirror either), the Swift toolchain on PATH, and a TMPDIR beside HOME
    (the Swift driver leaves an empty directory there at every run: scripts/swift.sh)."""
    swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    tmp = Path(home).parent / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return {"PATH": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % Path(swift).parent, "LANG": "C.UTF-8",
            "HOME": str(home), "TMPDIR": str(tmp), "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def progress(out, text):
    """Says how the build went, and keeps it in out/progress.log (for a build made beforehand)."""
    log(text)
    with open(out / "progress.log", "a") as f:
        f.write(text + "\n")


def build_packages(out):
    """The packages as Debian's build machines make them, and the ones every later step installs:
    the source package made from this checkout (scripts/source-package.sh, with the Swift
    dependencies' sources as its orig-swiftpm component), unpacked in a fresh directory and built
    with `dpkg-buildpackage -us -uc -b` inside `unshare --net` (no interface but a loopback that is
    down), with a fresh HOME and no git configuration. One build serves both the offline proof and
    the install test. Returns ({package: .deb}, .changes); the .dsc and the build's log, HOME and
    output are in out/, with what its namespace had: `net-dev` (its /proc/net/dev) and `fetch` (a
    git ls-remote tried there, and its exit status)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "source-digest").write_text(source_digest())  # before: the tree may change meanwhile
    t0 = now()
    p = run([REPO / "scripts" / "source-package.sh", out / "source"], limit=SOURCE_LIMIT)
    dsc = Path(p.stdout.strip().splitlines()[-1])
    progress(out, "made the source package in %.0f s" % (now() - t0))
    home = out / "home"
    home.mkdir(parents=True)
    tree = out / "touchgate"
    run(["dpkg-source", "-x", dsc, tree])
    t0 = now()
    # The build's own namespace records what it had: its interfaces, and a fetch it tried.
    inside = ('cat /proc/net/dev > "$1"; git ls-remote https://github.com/apple/swift-log > "$2" 2>&1; '
              'echo "exit $?" >> "$2"; exec dpkg-buildpackage -us -uc -b')
    p = subprocess.run(["unshare", "--net", "sh", "-c", inside, "sh", out / "net-dev", out / "fetch"], cwd=tree,
                       env=offline_env(home), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=BUILD_LIMIT)
    (out / "build.log").write_text(p.stdout)
    if p.returncode != 0:
        raise AssertionError("dpkg-buildpackage: exit %d\n%s" % (p.returncode, "\n".join(p.stdout.splitlines()[-40:])))
    progress(out, "built the packages from the source package, with no network, in %.0f s" % (now() - t0))
    return outputs(out)


def outputs(out):
    """({package: .deb}, .changes) of a build in `out`."""
    return {d.name.split("_")[0]: d for d in out.glob("*.deb")}, next(out.glob("touchgate_*.changes"))


def built_packages(built, out):
    """The packages another process built into `built` (build_packages.py, which the test command
    runs in the background), moved to `out`: as build_packages(out) returns them. Raises when that
    build failed."""
    result = (built / "result").read_text() if (built / "result").exists() else "it did not finish"
    if result != "ok":
        raise AssertionError("the packages built beforehand (%s) failed: %s" % (built, result))
    shutil.move(built, out)
    for line in (out / "progress.log").read_text().splitlines():
        log(line + " (beforehand)")
    return outputs(out)


KEPT_DEBS = REPO / ".build" / "debs"  # the last build's .debs, for the system test (ignored by git)


def source_digest():
    """SHA-256 over the files the packages are built from as they are now: what source-package.sh
    takes (git's files, tracked or new, not ignored), the tests and benchmarks aside."""
    names = run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).stdout
    digest = hashlib.sha256()
    for name in sorted(set(n for n in names.split("\0") if n and not n.startswith(("Tests/", "bench/")))):
        path = REPO / name
        if path.is_symlink():
            content = os.readlink(path).encode()
        elif path.is_file():
            content = path.read_bytes()
        else:
            continue  # deleted in the working tree: not in the source package either
        digest.update(b"%s\0%d\0" % (name.encode(), len(content)) + content)
    return digest.hexdigest()


def keep_debs(debs):
    """Copies the built .debs (not their debug symbols) to the checkout's .build/debs, replacing
    what was there, with the digest of the sources they were built from: the system test boots
    these instead of building them again, while the sources are the same."""
    tmp = KEPT_DEBS.with_name("debs.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, deb in debs.items():
        if not name.endswith("-dbgsym"):
            shutil.copy2(deb, tmp / deb.name)
    digest = next(iter(debs.values())).parent / "source-digest"
    if digest.exists():
        shutil.copy2(digest, tmp / digest.name)
    shutil.rmtree(KEPT_DEBS, ignore_errors=True)
    tmp.rename(KEPT_DEBS)


def kept_debs(of_the_checkout=True):
    """{package name: path} of the kept .debs, or None when both packages are not there or (unless
    `of_the_checkout` is false) they were built from other sources than the checkout's now."""
    debs = {d.name.split("_")[0]: d for d in KEPT_DEBS.glob("*.deb")}
    if not {"touchgate", "libpam-touchgate"} <= set(debs):
        return None
    stamp = KEPT_DEBS / "source-digest"
    if of_the_checkout and (not stamp.exists() or stamp.read_text() != source_digest()):
        log("the kept .debs were built from other sources than the checkout's: building them again")
        return None
    return debs


def debs_for_tests(work):
    """The kept .debs, else built now (as the install test builds them) and kept."""
    debs = kept_debs()
    if debs is None:
        out = Path(work) / "build"
        shutil.rmtree(out, ignore_errors=True)
        keep_debs(build_packages(out)[0])
        debs = kept_debs(of_the_checkout=False)  # the tree may have changed during the build
    return debs


def depends(deb):
    """The package names in a .deb's Depends (alternatives: the first)."""
    field = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    return [re.split(r"[\s(:]", alt.split("|")[0].strip())[0] for alt in field.split(",") if alt.strip()]


# ---------------------------------------------------------------------------------------------
# The machine


class Machine:
    """A Debian 12 minbase root with systemd's tools (not running), pamtester and the packages'
    libraries; commands run in it through chroot, with /proc, /sys and /dev mounted."""

    def __init__(self, root, include):
        self.root = Path(root)
        t0 = now()
        run(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(include), "bookworm", self.root],
            limit=MMDEBSTRAP_LIMIT)
        log("mmdebstrap made a Debian 12 minbase root in %.0f s" % (now() - t0))
        self.mounts = []
        for kind, target, argv in [("proc", "proc", ["mount", "-t", "proc", "proc"]),
                                   ("sysfs", "sys", ["mount", "-t", "sysfs", "sysfs"]),
                                   ("dev", "dev", ["mount", "--rbind", "/dev"])]:
            run(argv + [self.root / target])
            self.mounts.append(self.root / target)
        self.processes = []

    def path(self, inside):
        """The host path of a path inside the root."""
        return self.root / str(inside).lstrip("/")

    def argv(self, command):
        return ["chroot", str(self.root), "env", "-i"] + ["%s=%s" % kv for kv in ENV.items()] + list(command)

    def run(self, *command, limit=COMMAND_LIMIT, check=True, input=None):
        p = subprocess.run(self.argv(command), input=input or "", capture_output=True, text=True, timeout=limit)
        if check and p.returncode != 0:
            raise AssertionError("in the root: %s: exit %d\n%s%s" % (" ".join(command), p.returncode, p.stdout, p.stderr))
        return p

    def read(self, inside):
        return self.path(inside).read_bytes()

    def spawn(self, *command, env=None):
        """A long-running command in the root (its own session); stderr kept line by line."""
        argv = self.argv(["%s=%s" % kv for kv in (env or {}).items()] + list(command)) if env else self.argv(command)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        proc.log = LineLog(" ".join(command))
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stderr.read1(4096), proc.log),
                         daemon=True).start()
        self.processes.append(proc)
        return proc

    def pids_of(self, program):
        """Processes whose executable is `program` inside this root."""
        target = str(self.path(program))
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.readlink(entry / "exe") == target:
                        pids.append(int(entry.name))
                except OSError:
                    pass
        return pids

    def close(self):
        """Stops what the test started in the root and unmounts; the root itself is removed by
        scripts/install-test.sh from outside the mount namespace."""
        for proc in self.processes:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        for pid in self.pids_of(DAEMON):
            os.kill(pid, signal.SIGKILL)
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-R", str(target)], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


class Notifications:
    """A datagram socket inside the root standing in for systemd's NOTIFY_SOCKET."""

    def __init__(self, machine):
        self.path = machine.path(NOTIFY)
        if self.path.exists():
            self.path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.path))

    def wait(self, text, timeout=10.0):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096).decode()
        except socket.timeout:
            raise WaitTimeout("no %r on NOTIFY_SOCKET within %.1f s" % (text, timeout))
        assert text in data.split("\n"), data
        return data

    def close(self):
        self.sock.close()


class Terminal:
    """A command in the root on a pty (its controlling terminal when `ctty`), its screen as lines."""

    def __init__(self, machine, *command, ctty=True):
        master, slave = pty.openpty()
        self.started = now()
        try:
            self.proc = subprocess.Popen(machine.argv(command), stdin=slave, stdout=slave, stderr=slave,
                                         start_new_session=True, preexec_fn=harness._take_ctty if ctty else None)
        finally:
            os.close(slave)
        self._master = master
        self.out = LineLog(" ".join(command))
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        try:
            harness._pump_lines(harness._pty_reader(self._master), self.out)
        finally:
            os.close(self._master)

    def wait_for(self, pattern, timeout=harness.DEFAULT_WAIT, start=0):
        return self.out.wait_for(pattern, timeout, start)

    def type(self, text):
        os.write(self._master, text.encode())

    def wait(self, timeout=harness.DEFAULT_WAIT):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise WaitTimeout("still running after %.1f s:\n%s" % (timeout, self.out.dump()))
        self.out.wait_closed(timeout)
        return self.proc.returncode

    def transcript(self):
        return self.out.dump()

    @property
    def pam_result(self):
        """pamtester's result as a PAM code name."""
        for text in reversed(self.out.texts()):
            if text.startswith("pamtester: "):
                rest = text[len("pamtester: "):]
                if rest.startswith("successfully "):
                    return "PAM_SUCCESS"
                if not harness.TRACE.match(text):
                    return harness.PAM_RESULT_BY_TEXT.get(rest.rstrip("."), "unknown (%s)" % rest)
        return None
