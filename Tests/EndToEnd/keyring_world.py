"""A login that opens the GNOME login keyring: the real gnome-keyring-daemon, started and unlocked by
the real pam_gnome_keyring.so inside a PAM stack that pamtester runs through pam_wrapper.

What it needs, and why: pam_gnome_keyring keeps PAM_AUTHTOK in its auth step; its session step
(auto_start) forks, setuid()s to the account from getpwnam (nss_wrapper answers it inside
pamtester) and execs gnome-keyring-daemon --daemonize --login, the password on its stdin, with
only the PAM environment plus HOME and XDG_RUNTIME_DIR (taken from pamtester's environment) — no
LD_PRELOAD, so the daemon runs unwrapped as uid 1001, which /etc/passwd does not know and does not
need to. So alice gets a real home (USERS says /nonexistent; the keyring is written to
~/.local/share/keyrings), an XDG_RUNTIME_DIR of hers (the daemon's control socket) and a session
bus at $XDG_RUNTIME_DIR/bus, where GLib looks when DBUS_SESSION_BUS_ADDRESS is unset, as on a
systemd login: a real dbus-daemon run as alice (a session bus admits its own uid) whose private
config has no service directories, so that nothing but PAM starts a keyring daemon (Debian's
session.conf would D-Bus-activate one on the first query). The daemon PAM starts holds the
password until the session runs `gnome-keyring-daemon --start` (GNOME's autostart entry): only
then does it serve org.freedesktop.secrets and create or unlock the login keyring, so
start_session() runs that step. The typed password is checked by pam_exec, not pam_matrix, which
zeroes PAM's own copy of PAM_AUTHTOK after checking it, leaving the keyring an empty password. The
Secret Service is asked as alice over her bus by a small Gio client in a child process.
"""

import json
import os
import select
import signal
import subprocess
import threading
from pathlib import Path

import harness
from harness import DEFAULT_WAIT, PASSWORDS, USERS, LineLog, WaitTimeout

PAM_GNOME_KEYRING = next(iter(sorted(Path("/usr/lib").glob("*/security/pam_gnome_keyring.so"))),
                         Path("pam_gnome_keyring.so"))
PAM_EXEC = next(iter(sorted(Path("/usr/lib").glob("*/security/pam_exec.so"))), Path("pam_exec.so"))
PAM_PERMIT = next(iter(sorted(Path("/usr/lib").glob("*/security/pam_permit.so"))), Path("pam_permit.so"))
PAM_DENY = next(iter(sorted(Path("/usr/lib").glob("*/security/pam_deny.so"))), Path("pam_deny.so"))
KEYRING_DAEMON = "/usr/bin/gnome-keyring-daemon"
# Debian's own python3: python3-gi is installed for it (a pyenv interpreter is neither that nor
# readable by the test users).
DEBIAN_PYTHON = "/usr/bin/python3"
SECRETS = "org.freedesktop.secrets"
LOGIN_COLLECTION = "/org/freedesktop/secrets/collection/login"
SERVICE = "keyring-login"  # the login-like PAM stack written by KeyringWorld.login_service

# A session bus for one user: her uid only, no activation (no <servicedir>, no standard dirs).
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

# The Secret Service client, run as the user: one JSON line on stdout.
QUERY = r"""
import json, sys
from gi.repository import Gio, GLib
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
def call(dest, path, iface, method, args, sig):
    return bus.call_sync(dest, path, iface, method, GLib.Variant(sig, args) if sig else None, None,
                         Gio.DBusCallFlags.NO_AUTO_START, 5000, None).unpack()
out = {"owner": None, "collections": None, "locked": None}
(has_owner,) = call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
                    ("org.freedesktop.secrets",), "(s)")
if has_owner:
    (out["owner"],) = call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                           ("org.freedesktop.secrets",), "(s)")
    (out["collections"],) = call("org.freedesktop.secrets", "/org/freedesktop/secrets",
                                 "org.freedesktop.DBus.Properties", "Get",
                                 ("org.freedesktop.Secret.Service", "Collections"), "(ss)")
    if sys.argv[1] in out["collections"]:
        (out["locked"],) = call("org.freedesktop.secrets", sys.argv[1], "org.freedesktop.DBus.Properties", "Get",
                                ("org.freedesktop.Secret.Collection", "Locked"), "(ss)")
print(json.dumps(out))
"""


class KeyringWorld(harness.World):
    """A World where alice has a real home, an XDG_RUNTIME_DIR and a session bus of her own."""

    def __init__(self, user="alice", reader_kind="virtual_device"):
        super().__init__(reader_kind)
        try:
            self._set_up(user)
        except BaseException:
            self.close()
            raise

    def _set_up(self, user):
        self.user = user
        self.uid = USERS[user][0]
        self.home = self.dir / "home" / user
        self.runtime_dir = self.dir / "run" / str(self.uid)
        for d in (self.home, self.runtime_dir):
            d.mkdir(parents=True, mode=0o700)
            d.chmod(0o700)
            os.chown(d, self.uid, self.uid)
        for d in (self.home.parent, self.runtime_dir.parent):
            d.chmod(0o755)
        # The same accounts, with her real home in place of /nonexistent.
        self.passwd.write_text("".join("%s:x:%d:%d:%s:%s:/bin/sh\n"
                                       % (u, uid, uid, u, self.home if u == user else home)
                                       for u, (uid, home) in USERS.items()))
        self.bus_socket = self.runtime_dir / "bus"
        # Not `bus_address`: daemon_env hands a world's bus_address to touchgated as its system bus.
        self.session_bus_address = "unix:path=%s" % self.bus_socket
        self.bus_log = LineLog("dbus-daemon --session")
        self.bus = self._start_bus()
        self.query_script = self.dir / "secret_query.py"
        self.query_script.write_text(QUERY)
        self.query_script.chmod(0o644)

    def _start_bus(self):
        config = self.dir / "session-bus.conf"
        config.write_text(BUS_CONFIG.format(socket=self.bus_socket))
        config.chmod(0o644)
        proc = subprocess.Popen(["dbus-daemon", "--config-file=%s" % config, "--nofork", "--nopidfile",
                                 "--nosyslog", "--print-address=1"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env=self.user_env(), **harness._as_user(self.user))
        harness._live_daemons.add(proc)
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stderr.read1(4096), self.bus_log),
                         daemon=True).start()
        out = LineLog("dbus-daemon address")
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stdout.read1(4096), out), daemon=True).start()
        try:
            out.wait_for("unix:", DEFAULT_WAIT)  # printed once the bus listens
        except WaitTimeout:
            proc.kill()
            proc.wait()
            raise WaitTimeout("alice's session bus did not start:\n%s" % self.bus_log.dump()) from None
        return proc

    def user_env(self, extra=None):
        """The environment of alice's own programs: her home, runtime dir and bus."""
        return harness._env(dict(self.nss_env(), LD_PRELOAD="libnss_wrapper.so", HOME=str(self.home),
                                 USER=self.user, LOGNAME=self.user, XDG_RUNTIME_DIR=str(self.runtime_dir),
                                 DBUS_SESSION_BUS_ADDRESS=self.session_bus_address, **(extra or {})))

    # --- PAM

    def login_service(self, auth=None, name=SERVICE):
        """A login-like stack: `auth` (default: the typed password, read and checked by pam_exec
        against the world's password file) then pam_gnome_keyring in auth (keeps PAM_AUTHTOK for
        the session) and in session (auto_start: starts the daemon with it). Returns the name."""
        if auth is None:
            # pam_exec answers a failed check with PAM_SYSTEM_ERR: pam_deny makes it PAM_AUTH_ERR,
            # and being `required` lets the stack go on, so pam_gnome_keyring still sees the password.
            auth = ("auth [success=1 default=ignore] %s expose_authtok quiet %s\n"
                    "auth required %s" % (PAM_EXEC, self.password_checker(), PAM_DENY))
        (self.pam_dir / name).write_text(
            "%s\n"
            "auth optional %s\n"
            "session optional %s auto_start\n" % (auth, PAM_GNOME_KEYRING, PAM_GNOME_KEYRING))
        return name

    def password_checker(self):
        """pam_exec's program: the typed password (NUL-terminated on stdin) against PASSWORDS.
        Not pam_matrix: it zeroes PAM's own copy of PAM_AUTHTOK in place after checking it
        (wipe_authtok on the pointer pam_get_item returned), so modules after it read ""."""
        passdb = self.dir / "login-passdb"
        passdb.write_text("".join("%s:%s\n" % (u, pw) for u, pw in PASSWORDS.items()))
        checker = self.dir / "check-password"
        checker.write_text("#!/bin/bash\n"
                           "IFS= read -r -d '' typed\n"
                           "expected=$(awk -F: -v u=\"$PAM_USER\" '$1 == u { print $2 }' %s)\n"
                           "[ -n \"$expected\" ] && [ \"$typed\" = \"$expected\" ]\n" % passdb)
        checker.chmod(0o755)
        return checker

    def login(self, service=SERVICE, operations=("authenticate", "open_session")):
        """pamtester SERVICE alice authenticate open_session, with her runtime dir in its
        environment (pam_gnome_keyring looks there for a running daemon's control socket and
        passes it on to the one it starts)."""
        session = harness.PamSession(self, self.user, service, operations=operations,
                                     extra_env={"XDG_RUNTIME_DIR": str(self.runtime_dir)})
        self.sessions.append(session)
        return session

    def start_session(self, timeout=DEFAULT_WAIT):
        """What her desktop session runs first (/etc/xdg/autostart/gnome-keyring-secrets.desktop):
        `gnome-keyring-daemon --start --components=secrets`. The daemon PAM started holds the
        password and waits for this to start its Secret Service, which then creates or unlocks
        the login keyring with it. Returns the CompletedProcess."""
        return subprocess.run([KEYRING_DAEMON, "--start", "--components=secrets"], capture_output=True, text=True,
                              timeout=timeout, env=self.user_env(), cwd=str(self.home),
                              **harness._as_user(self.user))

    # --- the Secret Service, as alice

    def secrets(self, collection=LOGIN_COLLECTION, timeout=DEFAULT_WAIT):
        """{"owner": unique name or None, "collections": [paths] or None, "locked": bool or None}."""
        p = subprocess.run([DEBIAN_PYTHON, "-B", str(self.query_script), collection], capture_output=True,
                           text=True, timeout=timeout, env=self.user_env(), cwd=str(self.home),
                           **harness._as_user(self.user))
        assert p.returncode == 0, "Secret Service query failed (exit %d):\n%s" % (p.returncode, p.stderr)
        return json.loads(p.stdout)

    def keyring_file(self, name="login"):
        return self.home / ".local" / "share" / "keyrings" / ("%s.keyring" % name)

    # --- her keyring daemons

    def keyring_daemons(self):
        """Pids of gnome-keyring-daemon processes of this world (their XDG_RUNTIME_DIR is hers)."""
        if not hasattr(self, "runtime_dir"):  # __init__ failed before it
            return []
        mark = ("XDG_RUNTIME_DIR=%s" % self.runtime_dir).encode()
        pids = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                if os.readlink("/proc/%s/exe" % entry.name) != KEYRING_DAEMON:
                    continue
                if mark in Path("/proc/%s/environ" % entry.name).read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:  # gone meanwhile, or a kernel thread
                continue
        return pids

    def stop_keyring_daemons(self, timeout=DEFAULT_WAIT):
        """SIGTERM to each of her keyring daemons, then waits for each to exit (a pidfd becomes
        readable when its process ends). Returns how many there were."""
        pids = self.keyring_daemons()
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGTERM)
                if not select.select([fd], [], [], timeout)[0]:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                    select.select([fd], [], [], timeout)
                    raise WaitTimeout("gnome-keyring-daemon %d still running %.1f s after SIGTERM" % (pid, timeout))
            except ProcessLookupError:
                pass
            finally:
                os.close(fd)
        return len(pids)

    def close(self):
        try:
            self.stop_keyring_daemons()  # before the bus goes and the home is removed
        finally:
            bus = getattr(self, "bus", None)  # None when __init__ failed before it
            if bus is not None:
                if bus.poll() is None:
                    bus.kill()
                bus.wait()
                harness._live_daemons.discard(bus)
            super().close()


def login_collection_locked(world):
    """Whether alice's login collection is locked, as the Secret Service on her bus says; an
    AssertionError if no keyring daemon serves it there or it has no login collection."""
    state = world.secrets(LOGIN_COLLECTION)
    assert state["owner"], "nothing owns %s on alice's bus" % SECRETS
    assert LOGIN_COLLECTION in state["collections"], "no login collection: %s" % state["collections"]
    return state["locked"]
