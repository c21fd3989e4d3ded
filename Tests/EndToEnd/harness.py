"""End-to-end harness: a real touchgated on libfprint's virtual reader, the real CLI, real PAM.

Shared by the pytest tests and demo.py. Every wait has a deadline; nothing sleeps to wait for
something to happen (the only loops are bounded polls for an event, at 5-10 ms steps).

Pieces:
  World        a temp dir with test users (nss_wrapper), PAM service files (pam_wrapper) and a daemon
  Daemon       touchgated with a virtual reader; ready = its socket accepts connections (daemon.py)
  VirtualReader  drives the world's virtual reader, one of libfprint's three kinds (readers.py)
  run_cli / CliProcess   the `touchgate` binary, one-shot or followed line by line
  enroll       `touchgate enroll` driven by its own output: one SCAN per prompt/stage line shown
  PamSession   pamtester inside a pty, through pam_wrapper (pam_session.py, re-exported here)
  LineLog      what a program prints, line by line with timestamps, waited for (lines.py)
"""

import atexit
import ctypes
import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

from readers import ENV_VARIABLE as READER_ENV, KINDS as READER_KINDS, VirtualReader  # noqa: F401 (re-exported)
from lines import DEFAULT_WAIT, LineLog, WaitTimeout, _pump_lines, _pty_reader, ms, now  # noqa: F401 (re-exported)

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("TOUCHGATE_BIN_DIR", REPO / ".build" / "debug"))
TOUCHGATED = BIN_DIR / "touchgated"
TOUCHGATE = BIN_DIR / "touchgate"
PAM_MODULE = Path(os.environ.get("TOUCHGATE_PAM_MODULE", REPO / "pam" / "pam_touchgate.so"))
# libfaketime: shifts the daemon's wall clock for the policy's time rules (Daemon(clock=…)).
FAKETIME = next(iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))), "libfaketime.so.1")
# pam_wrapper's password database module: the daemon's own password service uses it here.
PAM_MATRIX = next(iter(sorted(glob.glob("/usr/lib/*/pam_wrapper/pam_matrix.so"))), "pam_matrix.so")

# The compiled message catalogs of this build (scripts/build.sh: make -C po mo).
LOCALEDIR = REPO / ".build" / "locale"

SERVICE = "touchgate-test"     # the PAM service pamtester runs (pam_touchgate.so alone, `required`)
PASSWORD_SERVICE = "touchgate"  # the daemon's default `password_service`: pam_matrix here


# What the daemon tells a person (English, docs/spec.md §8); one place, so a wording change is one edit.
PROMPT = "Swipe your finger across the fingerprint reader"
RETRY_TOO_SHORT = "Swipe was too short, try again"
NOT_ENROLLED = "No fingerprints enrolled"
PASSWORD_AFTER_BOOT = "Enter your password: it is required once after the computer starts"


def no_match(tries_left):
    return "Fingerprint not recognised, try again (%d %s left)" % (tries_left, "try" if tries_left == 1 else "tries")


def not_recognised(tries):
    return "Fingerprint not recognised after %d %s: use your password" % (tries, "try" if tries == 1 else "tries")


def queued(ahead):
    return "Waiting for the fingerprint reader (%d ahead in the queue)" % ahead


# PAM return codes (security/_pam_types.h, Linux-PAM 1.5) and their pam_strerror() texts,
# taken from the system's libpam so that pamtester's output maps back to the exact code.
PAM_CODE_NAMES = [
    "PAM_SUCCESS", "PAM_OPEN_ERR", "PAM_SYMBOL_ERR", "PAM_SERVICE_ERR", "PAM_SYSTEM_ERR",
    "PAM_BUF_ERR", "PAM_PERM_DENIED", "PAM_AUTH_ERR", "PAM_CRED_INSUFFICIENT",
    "PAM_AUTHINFO_UNAVAIL", "PAM_USER_UNKNOWN", "PAM_MAXTRIES", "PAM_NEW_AUTHTOK_REQD",
    "PAM_ACCT_EXPIRED", "PAM_SESSION_ERR", "PAM_CRED_UNAVAIL", "PAM_CRED_EXPIRED", "PAM_CRED_ERR",
    "PAM_NO_MODULE_DATA", "PAM_CONV_ERR", "PAM_AUTHTOK_ERR", "PAM_AUTHTOK_RECOVERY_ERR",
    "PAM_AUTHTOK_LOCK_BUSY", "PAM_AUTHTOK_DISABLE_AGING", "PAM_TRY_AGAIN", "PAM_IGNORE",
    "PAM_ABORT", "PAM_AUTHTOK_EXPIRED", "PAM_MODULE_UNKNOWN", "PAM_BAD_ITEM", "PAM_CONV_AGAIN",
    "PAM_INCOMPLETE",
]


def _pam_texts():
    libpam = ctypes.CDLL("libpam.so.0")
    libpam.pam_strerror.restype = ctypes.c_char_p
    libpam.pam_strerror.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return {libpam.pam_strerror(None, code).decode(): name for code, name in enumerate(PAM_CODE_NAMES)}


PAM_RESULT_BY_TEXT = _pam_texts()


# Worlds and daemons still there when the interpreter exits (an interrupted run) are cleaned then.
_live_worlds = set()
_live_daemons = set()


@atexit.register
def _clean_up_at_exit():
    for world in list(_live_worlds):
        world.close()
    for proc in list(_live_daemons):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _remove_pam_wrapper_dir(proc.pid)

# ---------------------------------------------------------------------------------------------
# The world: temp dir, users, PAM services


USERS = {"root": (0, "/root"), "alice": (1001, "/nonexistent"), "bob": (1002, "/nonexistent")}
PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}


class World:
    """A private temp dir holding test accounts, PAM service files, the daemon's socket and state."""

    def __init__(self, reader_kind="virtual_device"):
        # Short path: Unix socket paths are limited to 108 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="tg-e2e-"))
        self.dir.chmod(0o711)  # the test users reach the socket and the CLI by path, nothing more
        self.socket = self.dir / "touchgated.sock"
        self.vdev = self.dir / "vdev.sock"
        self.state = self.dir / "state"
        self.prints = self.dir / "prints"  # the print store (fprintd's layout)
        self.pam_dir = self.dir / "pam.d"
        self.pam_dir.mkdir()
        self.passwd = self.dir / "passwd"
        self.group = self.dir / "group"
        self.passwd.write_text("".join("%s:x:%d:%d:%s:%s:/bin/sh\n" % (u, uid, uid, u, home)
                                       for u, (uid, home) in USERS.items()))
        self.group.write_text("".join("%s:x:%d:\n" % (u, uid) for u, (uid, _) in USERS.items()))
        # pam_wrapper needs "other"; deny, so a missing service can never authenticate.
        (self.pam_dir / "other").write_text("auth required pam_deny.so\n")
        self.service()
        # The daemon checks passwords through its own PAM service: pam_matrix and a password file.
        self.passdb = self.dir / "passdb"
        self.passdb.write_text("".join("%s:%s:%s\n" % (u, pw, PASSWORD_SERVICE) for u, pw in PASSWORDS.items()))
        (self.pam_dir / PASSWORD_SERVICE).write_text("auth required %s passdb=%s\n" % (PAM_MATRIX, self.passdb))
        # A copy of the CLI that the test users may run (a CI checkout may sit in a 0700 dir).
        self.cli_binary = self.dir / "touchgate"
        if TOUCHGATE.exists():
            shutil.copy2(TOUCHGATE, self.cli_binary)
            self.cli_binary.chmod(0o755)
        # And the catalogs it reads, as /usr/share/locale's are readable by everyone.
        self.localedir = self.dir / "locale"
        if LOCALEDIR.exists():
            shutil.copytree(LOCALEDIR, self.localedir)
            for path in [self.localedir, *self.localedir.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
        self.daemon = None
        self.daemons = []
        self.reader_kind = reader_kind
        self.reader = VirtualReader(self.vdev, self, reader_kind)
        self.readers = [self.reader]  # every virtual reader libfprint is given, in add order
        self.sessions = []
        _live_worlds.add(self)

    def add_reader(self, kind):
        """Another virtual reader of another kind beside the first (before the daemon starts)."""
        assert kind not in [r.kind for r in self.readers], "libfprint has one virtual reader of each kind"
        reader = VirtualReader(self.dir / ("vdev-%s.sock" % kind), self, kind)
        self.readers.append(reader)
        return reader

    def nss_env(self):
        return {"NSS_WRAPPER_PASSWD": str(self.passwd), "NSS_WRAPPER_GROUP": str(self.group)}

    def service(self, name=SERVICE, socket_path=None, options=""):
        """Writes a PAM service file: `auth required <abs module> socket=… <options>`; returns its name."""
        line = "auth required %s socket=%s %s" % (PAM_MODULE, socket_path or self.socket, options)
        (self.pam_dir / name).write_text(line.rstrip() + "\n")
        return name

    def start_daemon(self, config="/nonexistent", timeout=10.0, clock=None, as_systemd=False, prefix=(), args=()):
        self.daemon = Daemon(self, config=config, args=args, clock=clock, as_systemd=as_systemd, prefix=prefix)
        self.daemon.wait_ready(timeout)
        return self.daemon

    def pam(self, user, service=SERVICE, ctty=False):
        session = PamSession(self, user, service, ctty=ctty)
        self.sessions.append(session)
        return session

    def cli(self, *args, timeout=DEFAULT_WAIT, as_user=None, password=None, env=None):
        return run_cli(self, *args, timeout=timeout, as_user=as_user, password=password, env=env)

    def close(self):
        for session in self.sessions:
            session.kill()
        if self.daemon:
            self.daemon.stop()
        for reader in self.readers:
            reader.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        _live_worlds.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def failed(request):
    """Whether the test asking (`request`) failed, in its body or in a fixture's setup: the
    fixtures then print their daemons' logs (conftest.py records each phase's report)."""
    return any(getattr(getattr(request.node, "report_" + when, None), "failed", False) for when in ("setup", "call"))


def reader_kind_of(request):
    """The kind of reader a test's world gets: its `reader_kind` fixture's when it uses it, else
    the plain virtual_device."""
    return request.getfixturevalue("reader_kind") if "reader_kind" in request.fixturenames else "virtual_device"


def _env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LC_", "NSS_WRAPPER", "PAM_WRAPPER", "FP_", "SSH_", "DBUS_"))}
    env.pop("LD_PRELOAD", None)
    env.pop("TOUCHGATE_SOCKET", None)
    env["LANG"] = "C.UTF-8"  # English messages whatever the caller's locale
    env["TOUCHGATE_LOCALEDIR"] = str(LOCALEDIR)  # the daemon's and the CLI's catalogs: the build's
    env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------
# The CLI


def cli_env(world):
    return _env(dict(world.nss_env(), LD_PRELOAD="libnss_wrapper.so", TOUCHGATE_SOCKET=str(world.socket)))


class CliResult:
    def __init__(self, argv, returncode, stdout, stderr, elapsed):
        self.argv, self.returncode, self.stdout, self.stderr, self.elapsed = argv, returncode, stdout, stderr, elapsed

    def __repr__(self):
        return "<%s: exit %s\nstdout:\n%s\nstderr:\n%s>" % (" ".join(self.argv), self.returncode, self.stdout, self.stderr)


def _as_user(user):
    """Popen arguments that run a child as a test user instead of root."""
    if user is None:
        return {}
    uid = USERS[user][0]
    return {"user": uid, "group": uid, "extra_groups": []}


def run_cli(world, *args, timeout=DEFAULT_WAIT, as_user=None, password=None, env=None):
    """Runs `touchgate ARGS` (socket from TOUCHGATE_SOCKET) to completion, with a deadline; as root,
    or as a test user who types `password` (the CLI reads it from stdin when that is not a tty),
    with the world's copies of the CLI and its catalogs (a CI checkout may sit in a 0700 dir)."""
    argv = [str(world.cli_binary if as_user else TOUCHGATE)] + [str(a) for a in args]
    own = {"TOUCHGATE_LOCALEDIR": str(world.localedir)} if as_user else {}
    t0 = now()
    p = subprocess.run(argv, input="" if password is None else password + "\n", capture_output=True,
                       text=True, env=dict(cli_env(world), **own, **(env or {})), timeout=timeout,
                       **_as_user(as_user))
    return CliResult(["touchgate"] + list(map(str, args)), p.returncode, p.stdout, p.stderr, now() - t0)


class CliProcess:
    """`touchgate ARGS` followed line by line on stdout (the CLI flushes every line)."""

    def __init__(self, world, *args, as_user=None, password=None):
        self.argv = ["touchgate"] + [str(a) for a in args]
        self.out = LineLog(" ".join(self.argv))
        self.started = now()
        binary = world.cli_binary if as_user else TOUCHGATE
        self.proc = subprocess.Popen([str(binary)] + [str(a) for a in args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(cli_env(world), **({"TOUCHGATE_LOCALEDIR": str(world.localedir)}
                                                                 if as_user else {})),
                                     **_as_user(as_user))
        try:
            self.proc.stdin.write(b"" if password is None else password.encode() + b"\n")
            self.proc.stdin.close()
        except BrokenPipeError:  # it already exited; wait() reports how
            pass
        self._thread = threading.Thread(target=_pump_lines,
                                        args=(lambda: self.proc.stdout.read1(4096), self.out), daemon=True)
        self._thread.start()

    def wait(self, timeout=DEFAULT_WAIT):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise WaitTimeout("%s still running after %.1f s:\n%s" % (" ".join(self.argv), timeout, self.out.dump()))
        self.out.wait_closed(timeout)
        self.stderr = self.proc.stderr.read().decode("utf-8", "replace")
        self.elapsed = now() - self.started
        return rc


STAGE = re.compile(r"\b(\d+)\s*/\s*(\d+)\b")


def enroll(world, user, print_id, finger=None, as_user=None, on_event=None, timeout=DEFAULT_WAIT, reader=None):
    """`touchgate enroll --user USER`: a SCAN for the prompt line, then one after each stage line
    until the last stage; returns (exit status, CliProcess). `on_event(kind, text)` sees each step.
    As root by default; `as_user=USER` runs it as that user, who types their password. `reader`:
    another of the world's virtual readers, named with --device (its driver), scanned instead."""
    scanner = reader or world.reader
    args = ["enroll", "--user", user] + (["--finger", finger] if finger else [])
    args += ["--device", reader.kind] if reader else []
    cli = CliProcess(world, *args, as_user=as_user, password=PASSWORDS.get(as_user) if as_user else None)
    report = on_event or (lambda kind, text: None)
    try:
        i = cli.out.wait_for(re.compile(r"\S"), timeout)  # the prompt: the reader is listening
        report("shown", cli.out.lines[i][1])
        scanner.scan(print_id)
        report("scan", "SCAN %s" % print_id)
        while True:
            i = cli.out.wait_for(STAGE, timeout, start=i + 1)
            line = cli.out.lines[i][1]
            report("shown", line)
            stage, stages = map(int, STAGE.search(line).groups())
            if stage >= stages:
                break
            scanner.scan(print_id)
            report("scan", "SCAN %s" % print_id)
    except WaitTimeout as e:
        rc = cli.wait(timeout)
        raise WaitTimeout("%s\n(exit status %s, stderr: %s)" % (e, rc, cli.stderr.strip())) from None
    rc = cli.wait(timeout)
    for _, line in cli.out.lines[i + 1:]:
        report("shown", line)
    return rc, cli


# The PAM client, last: it builds on the names above.
def finger_success(world, print_id, user="alice", reader=None):
    """One PAM authentication of `user` by the finger `print_id` on `reader` (the world's): the
    prompt, the scan, PAM_SUCCESS; the finished session."""
    pam = world.pam(user)
    pam.wait_for(PROMPT)
    (reader or world.reader).scan(print_id)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    return pam


def listed(world, user):
    """The fingers `touchgate list` shows for `user`, as root asks."""
    return world.cli("list", "--user", user).stdout.split()


from pam_session import TRACE, PamSession, _remove_pam_wrapper_dir, _take_ctty  # noqa: E402,F401
from daemon import READER_SETTLED, Daemon, daemon_command, daemon_env, run_daemon_once  # noqa: E402,F401


def fail_five_matches(world, user="alice"):
    """Five consecutive failed matches across two prompts (pamtester), none of which succeeds: the
    user's fingerprint is locked out. Returns the second prompt's session."""
    for strangers in (["x1", "x2", "x3"], ["x4", "x5"]):
        pam = world.pam(user)
        pam.wait_for(PROMPT)
        for i, stranger in enumerate(strangers):
            world.reader.scan(stranger)
            if i < len(strangers) - 1:
                pam.wait_for(no_match(2 - i))
        assert pam.wait().result != "PAM_SUCCESS", pam.transcript()
    return pam
