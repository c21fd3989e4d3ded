"""Real clients — sudo, su, login, vlock — driven in a terminal against touchgated and the virtual reader.

A client runs the way a person would have it: in a pty that is its controlling terminal
(`setsid --ctty`, so /dev/tty is the pty), as a test user (`setpriv`), except `login`, which
stays root. sudo, su and vlock are setuid, so pam_wrapper and nss_wrapper cannot reach them;
instead each client starts in its own private mount namespace (`unshare -m --propagation
private`) where, as root and before dropping to the test user, a private /etc/pam.d, private
accounts (passwd, group, shadow with real crypt hashes) and a private sudoers are bind-mounted
over the host's. The real pam_unix.so checks the password; nothing on the host changes.

The daemon runs outside the namespace (harness.World, nss_wrapper users with the same names and
uids); the service files reach it by the absolute path of its socket and load a copy of
pam_touchgate.so from the world's directory (0711 dir, 0644 module), by absolute path.

Pieces:
  Clients    the private /etc of one world (accounts, PAM services, sudoers) and the way to run a client
  Client, CLIENTS   sudo, su, login, vlock as a person uses them: who runs it, whom it authenticates,
             its password prompt, what proves it let them in
  Terminal (terminal.py)   one client in a pty

Every wait has a deadline; nothing sleeps to wait for something.
"""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import harness
from harness import DEFAULT_WAIT, PASSWORDS, USERS
from terminal import ENTER, Terminal, screen_text

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# What the clients themselves print (sudo 1.9, Linux-PAM's pam_unix, vlock 2.2); one place.
SUDO_PASSWORD_PROMPT = "[sudo] password for %s: "
PAM_UNIX_PROMPT = "Password: "
VLOCK_LOCKED = "This TTY is now locked."
VLOCK_ENTER = "Please press [ENTER] to unlock."

# What pam_touchgate itself writes at a terminal, under the daemon's prompt (docs/spec.md §10).
HINT_ENTER = "(or press Enter to use your password)"          # policy biometrics
HINT_TYPE = "(or type your password and press Enter)"         # policy biometrics-or-password
TYPING = "(typing password \u2014 press Enter)"                # once, at the first key typed


# Debian packages: sudo, vlock, login (shadow's login), util-linux (su, setpriv, unshare, setsid,
# mount), openssl.
TOOLS = ("sudo", "vlock", "login", "su", "setpriv", "unshare", "setsid", "mount", "openssl")


def missing_requirements():
    """Why real clients cannot run here (empty: they can): root for the mount namespace, and the tools."""
    why = ["the clients' tests run as root (mount namespace, bind mounts)"] if os.geteuid() != 0 else []
    missing = [tool for tool in TOOLS if shutil.which(tool, path=PATH) is None]
    if missing:
        why.append("missing %s (apt-get install sudo vlock login util-linux openssl)" % " ".join(missing))
    return why


def crypt_sha512(password):
    """A real `$6$` crypt hash (what passwd(1) writes), from openssl (ca-certificates needs it)."""
    out = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=password + "\n", capture_output=True,
                         text=True, check=True, timeout=DEFAULT_WAIT)
    hashed = out.stdout.strip()
    assert hashed.startswith("$6$"), out
    return hashed


def _host_lines(path, drop_names, drop_ids=(), id_field=None):
    """The host's file without the test accounts (by name, or by numeric id in `id_field`)."""
    kept = []
    for line in Path(path).read_text().splitlines():
        fields = line.split(":")
        if not line or fields[0] in drop_names:
            continue
        if id_field is not None and len(fields) > id_field and fields[id_field] in drop_ids:
            continue
        kept.append(line + "\n")
    return "".join(kept)


class Clients:
    """The private /etc that real clients see inside their mount namespace, for one World.

    Accounts: the host's (root as it is) plus alice (1001) and bob (1002), whose passwords are
    harness.PASSWORDS — the same ones the daemon's own password service (pam_matrix) knows.
    PAM services sudo, su, su-l, login, vlock: fingerprint first, then pam_unix, then the line
    that reports a password success to the daemon; account and session trivial; other = deny."""

    SERVICES = ("sudo", "su", "su-l", "login", "vlock")

    def __init__(self, world, policy=None, options=""):
        self.world = world
        self.root = world.dir / "clients"
        self.etc = self.root / "etc"
        self.pam_dir = self.etc / "pam.d"
        self.pam_dir.mkdir(parents=True)
        # A copy the setuid clients can read, and that a parallel `make -C pam` cannot swap mid-test.
        self.module = world.dir / "pam_touchgate.so"
        shutil.copyfile(harness.PAM_MODULE, self.module)
        self.module.chmod(0o644)
        self.homes = {}
        for user in ("alice", "bob"):
            home = self.root / ("home-" + user)
            home.mkdir()
            os.chown(home, USERS[user][0], USERS[user][0])
            home.chmod(0o700)
            self.homes[user] = home
        self._accounts()
        self.services(policy, options)
        self._sudoers()
        # login records the session in wtmp/btmp/lastlog: give it empty copies, not the host's.
        # (/run, with utmp, sudo's timestamps and any nscd socket, is a fresh tmpfs: see run().)
        self.var = self.root / "var"
        self.var.mkdir()
        self.binds = [(self.pam_dir, "/etc/pam.d")] + [(self.etc / f, "/etc/" + f)
                                                       for f in ("passwd", "group", "shadow", "sudoers")]
        for log in ("/var/log/wtmp", "/var/log/btmp", "/var/log/lastlog"):
            if os.path.exists(log):
                copy = self.var / os.path.basename(log)
                copy.touch(0o664)
                self.binds.append((copy, log))
        self.terminals = []

    def _accounts(self):
        test = ("alice", "bob")
        ids = tuple(str(USERS[u][0]) for u in test)
        passwd = _host_lines("/etc/passwd", test, ids, id_field=2)
        passwd += "".join("%s:x:%d:%d:%s:%s:/bin/sh\n" % (u, USERS[u][0], USERS[u][0], u, self.homes[u])
                          for u in test)
        group = _host_lines("/etc/group", test, ids, id_field=2)
        group += "".join("%s:x:%d:\n" % (u, USERS[u][0]) for u in test)
        shadow = _host_lines("/etc/shadow", test)
        shadow += "".join("%s:%s:19000:0:99999:7:::\n" % (u, crypt_sha512(PASSWORDS[u])) for u in test)
        for name, text, mode in (("passwd", passwd, 0o644), ("group", group, 0o644), ("shadow", shadow, 0o600)):
            path = self.etc / name
            path.write_text(text)
            path.chmod(mode)

    def _sudoers(self):
        # timestamp_timeout=0: no cached credential ever skips PAM; clients also run `sudo -k`.
        path = self.etc / "sudoers"
        path.write_text("Defaults !lecture, !fqdn, timestamp_timeout=0, env_reset\n"
                        "Defaults secure_path=\"%s\"\n"
                        "root ALL=(ALL:ALL) ALL\n"
                        "alice ALL=(ALL:ALL) ALL\n" % PATH)
        path.chmod(0o440)

    def touchgate_line(self, extra=""):
        return ("%s socket=%s %s" % (self.module, self.world.socket, extra)).rstrip()

    def services(self, policy=None, options=""):
        """(Re)writes every client's service: the stack a pam-auth-update profile gives common-auth."""
        first = " ".join(x for x in (("policy=" + policy) if policy else "", options) if x)
        stack = ("auth [success=done default=ignore] %s\n"
                 "auth requisite pam_unix.so try_first_pass\n"
                 "auth optional %s\n"
                 "auth required pam_permit.so\n"
                 "account required pam_permit.so\n"
                 "session required pam_permit.so\n"
                 "password required pam_deny.so\n"
                 % (self.touchgate_line(first), self.touchgate_line("report")))
        for name in self.SERVICES:
            (self.pam_dir / name).write_text(stack)
        (self.pam_dir / "other").write_text("".join("%s required pam_deny.so\n" % t
                                                    for t in ("auth", "account", "session", "password")))

    def console_locker(self, service="vlock", options=""):
        """The README's console-locker stack for `service`: deviceOwnerAuthentication (the module asks
        for the password itself when the fingerprint is refused), pam_unix after it."""
        line = self.touchgate_line(("policy=biometrics-or-password " + options).strip())
        (self.pam_dir / service).write_text("auth sufficient %s\n"
                                            "auth required pam_unix.so try_first_pass\n"
                                            "account required pam_permit.so\n"
                                            "session required pam_permit.so\n"
                                            "password required pam_deny.so\n" % line)

    def env(self, user, extra=None):
        home = self.homes.get(user, "/root")
        env = {"PATH": PATH, "LANG": "C.UTF-8", "TERM": "vt100", "HOME": str(home), "SHELL": "/bin/sh",
               "USER": user or "root", "LOGNAME": user or "root"}
        env.update(extra or {})
        return env

    def run(self, argv, as_user="alice", env=None, name=None):
        """Starts `argv` in a fresh pty as its controlling terminal, in a private mount namespace with
        this private /etc, as `as_user` (None: root). Returns the Terminal."""
        # A private /run first: nothing the clients write there (utmp, sudo's timestamps) reaches the
        # host, and no host nscd or userdb socket answers account lookups instead of these files.
        mounts = " && ".join(["mount -t tmpfs -o mode=0755 tmpfs /run"]
                             + ["mount --bind %s %s" % (shlex.quote(str(src)), shlex.quote(dst))
                                for src, dst in self.binds])
        drop = []
        if as_user is not None:
            uid = USERS[as_user][0]
            drop = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]
        script = "%s && exec %s" % (mounts, " ".join(shlex.quote(a) for a in drop + list(argv)))
        full = ["setsid", "--ctty", "unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        term = Terminal(full, self.env(as_user, env), name or " ".join(argv))
        self.terminals.append(term)
        return term

    def close(self):
        for term in self.terminals:
            term.kill()


# ---------------------------------------------------------------------------------------------
# The clients, as a person uses them


class Client:
    """One real client: what a person starts, what they press before it authenticates, what its
    password prompt looks like, and what proves it let them in."""

    def __init__(self, name, argv, as_user, user, password_prompt, proof, prefix="", shell=False):
        self.name = name
        self.argv = argv
        self.as_user = as_user      # who runs it (None: root)
        self.user = user            # whom it authenticates
        self.password_prompt = password_prompt
        self.proof = proof          # the lines it shows once it let the person in
        self.prefix = prefix        # what the client prints in front of the first PAM message
        self.shell = shell          # login: the proof is typed at the shell it starts

    def __repr__(self):
        return self.name

    def start(self, setup, argv=None, env=None):
        """Starts the client and brings it to pam_authenticate; the screen from there on is
        `seen(term)`."""
        term = setup.run(argv or self.argv, as_user=self.as_user, env=env, name=self.name)
        if self.name == "vlock":  # the locked screen first; Enter asks for the unlock
            term.expect(VLOCK_LOCKED)
            term.expect(VLOCK_ENTER + "\n")
            term.wait_reading()
            term.send(ENTER)
        term.auth_from = term.cursor
        return term

    def finish(self, term, timeout=DEFAULT_WAIT):
        """After a successful authentication: shows the proof (login: a command at its shell) and
        waits for the client to exit; returns the exit status."""
        if self.shell:
            term.expect("$ ", timeout)
            term.wait_reading()
            term.type_line("id -un; exit")
        return term.wait(timeout)

    def seen(self, term):
        """What the person saw from the moment the client began to authenticate, line by line."""
        return screen_text(term.raw())[term.auth_from:].split("\n")


CLIENTS = {
    "sudo": Client("sudo", ["sudo", "-k", "id", "-un"], "alice", "alice", SUDO_PASSWORD_PROMPT % "alice", ["root"]),
    # bob becomes alice with alice's finger or password: su authenticates the target account.
    "su": Client("su", ["su", "alice", "-c", "id -un"], "bob", "alice", PAM_UNIX_PROMPT, ["alice"]),
    "login": Client("login", ["login", "alice"], None, "alice", PAM_UNIX_PROMPT, ["$ id -un; exit", "alice"],
                    shell=True),
    # vlock-main prints "<user>'s " before it starts PAM, so the first message follows that.
    "vlock": Client("vlock", ["vlock"], "alice", "alice", PAM_UNIX_PROMPT, [], prefix="alice's "),
}
