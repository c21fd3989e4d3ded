"""fprintd's world for the end-to-end tests: a private system bus, polkit and logind stand-ins, and
fprintd's real clients (fprintd-enroll/-list/-verify/-delete, pam_fprintd.so) against touchgated.

Pieces:
  fprintd_root()  Debian's fprintd and libpam-fprintd, fetched once with `apt-get download` into a
                  cache and unpacked with `dpkg-deb -x` — never installed (their maintainer scripts
                  change /etc), and fprintd itself never runs
  BusWorld        a harness World with its own dbus-daemon (a system-type bus whose policy includes
                  our shipped data/dbus/net.reactivated.Fprint.conf), optional python3-dbusmock
                  polkitd and logind, and touchgated serving fprintd's API on that bus
  BusClient       bus_client.py under Debian's python3, as root or a test user: calls and signals
  Tool            one of fprintd's command-line clients in a pty, followed line by line

Every wait is for an event (a line, a reply, a signal, a name on the bus) with a deadline.
"""

import fcntl
import itertools
import json
import os
import pty
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import harness
import wire
from harness import DEFAULT_WAIT, LineLog, WaitTimeout, now

CACHE = Path(os.environ.get("TOUCHGATE_FPRINTD_CACHE", harness.REPO / ".build" / "fprintd-clients"))
PACKAGES = ("fprintd", "libpam-fprintd")
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's: it has dbusmock and GLib's bindings (PATH's may not)
BUS_POLICY = harness.REPO / "data" / "dbus" / "net.reactivated.Fprint.conf"
BUS_CLIENT = Path(__file__).resolve().parent / "bus_client.py"

FPRINT = "net.reactivated.Fprint"
MANAGER = "/net/reactivated/Fprint/Manager"
DEVICE = "/net/reactivated/Fprint/Device/0"
MANAGER_IFACE = "net.reactivated.Fprint.Manager"
DEVICE_IFACE = "net.reactivated.Fprint.Device"
ERROR = "net.reactivated.Fprint.Error."
POLKIT = "org.freedesktop.PolicyKit1"
LOGIND = "org.freedesktop.login1"
MOCK_IFACE = "org.freedesktop.DBus.Mock"
SERVING = "serving fprintd's D-Bus API"  # touchgated's line once it owns the name


# ---------------------------------------------------------------------------------------------
# fprintd's clients, from Debian's packages


def fprintd_root():
    """The unpacked packages (fetched and unpacked once; later runs reuse the cache)."""
    root = CACHE / "root"
    done = root / ".unpacked"
    if done.exists():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel runs fetch once
        if done.exists():
            return root
        debs = CACHE / "debs"
        debs.mkdir(exist_ok=True)
        if not all(list(debs.glob("%s_*.deb" % p)) for p in PACKAGES):
            _download(debs)
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, timeout=60)
        done.write_text("\n".join(sorted(d.name for d in debs.glob("*.deb"))) + "\n")
    return root


def _download(into):
    def fetch():
        return subprocess.run(["apt-get", "download", "-q"] + list(PACKAGES), cwd=str(into), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
    p = fetch()
    if p.returncode != 0:  # a fresh machine may have no package lists yet
        subprocess.run(["apt-get", "update", "-q"], stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
        p = fetch()
    if p.returncode != 0:
        raise AssertionError("apt-get download %s failed:\n%s%s" % (" ".join(PACKAGES), p.stdout, p.stderr))


def pam_fprintd_path(root):
    found = sorted(root.glob("lib/*/security/pam_fprintd.so")) + sorted(root.glob("usr/lib/*/security/pam_fprintd.so"))
    assert found, "pam_fprintd.so not in %s" % root
    return found[0]


# ---------------------------------------------------------------------------------------------
# The private bus and the world around it


BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <!-- The system bus's own default policy (Debian's system.conf): nobody owns a name or calls a
       service unless a service's policy file opens it. -->
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <!-- root may watch the bus (dbus-monitor), as on Debian's system bus. -->
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <!-- The stand-ins for polkit and logind, as their own policy files would allow. -->
  <policy user="root">
    <allow own="{polkit}"/>
    <allow own="{logind}"/>
  </policy>
  <policy context="default">
    <allow send_destination="{polkit}"/>
    <allow send_destination="{logind}"/>
  </policy>
  <!-- touchgate's own policy file, as shipped. -->
  <include>{policy}</include>
</busconfig>
"""


class BusWorld(harness.World):
    """A World with its own system bus; touchgated is pointed at it (harness.daemon_env)."""

    def __init__(self):
        super().__init__()
        self.helpers = []  # (name, Popen) of dbus-daemon and the mocks, stopped in reverse order
        self.clients = []
        self.tools = []
        root = fprintd_root()
        # Copies the test users may run (a checkout or cache may sit in a 0700 directory).
        self.bin = self.dir / "fprintd-bin"
        self.bin.mkdir()
        for tool in ("fprintd-enroll", "fprintd-list", "fprintd-verify", "fprintd-delete"):
            shutil.copy2(root / "usr" / "bin" / tool, self.bin / tool)
        shutil.copy2(BUS_CLIENT, self.bin / "bus_client.py")
        self.bin.chmod(0o755)
        self.pam_fprintd = pam_fprintd_path(root)
        self.bus_log = LineLog("dbus-daemon")
        self.bus_address = self._start_bus()
        self.root = self.client()  # root's own connection: mock control, name waits, signals seen

    def _start_bus(self):
        assert BUS_POLICY.exists(), "the shipped bus policy %s is missing" % BUS_POLICY
        config = self.dir / "bus.conf"
        config.write_text(BUS_CONFIG.format(socket=self.dir / "system_bus_socket", policy=BUS_POLICY,
                                            polkit=POLKIT, logind=LOGIND))
        proc = subprocess.Popen(["dbus-daemon", "--config-file=%s" % config, "--nofork", "--nopidfile", "--nosyslog",
                                 "--print-address=1"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                # The bus looks up its callers' accounts (policy user="…"): the test users.
                                env=harness._env(dict(self.nss_env(), LD_PRELOAD="libnss_wrapper.so")))
        self.helpers.append(("dbus-daemon", proc))
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stderr.read1(4096), self.bus_log),
                         daemon=True).start()
        out = LineLog("dbus-daemon address")
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stdout.read1(4096), out), daemon=True).start()
        i = out.wait_for("unix:", 10.0)
        return out.lines[i][1].strip()

    def bus_env(self, extra=None):
        env = {"DBUS_SYSTEM_BUS_ADDRESS": self.bus_address}
        env.update(extra or {})
        return env

    # --- the stand-ins

    def start_polkit(self):
        """python3-dbusmock's polkitd: every action refused until SetAllowed (root is never asked)."""
        self._start_mock("polkitd", POLKIT)

    def start_logind(self):
        """python3-dbusmock's logind: Inhibit hands out a real descriptor; EmitSignal sends PrepareForSleep."""
        self._start_mock("logind", LOGIND)

    def _start_mock(self, template, name):
        log = LineLog("dbusmock " + template)
        proc = subprocess.Popen([DEBIAN_PYTHON, "-B", "-m", "dbusmock", "--system", "--template", template],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=harness._env(self.bus_env()), start_new_session=True)
        self.helpers.append((template, proc))
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stdout.read1(4096), log), daemon=True).start()
        self.root.wait_name(name)
        return log

    def polkit(self, method, *args, sig=""):
        """A call on the polkitd stand-in's mock interface (SetAllowed, SimulateHang, …)."""
        return self.root.call(method, *args, sig=sig, dest=POLKIT, path="/org/freedesktop/PolicyKit1/Authority",
                              iface=MOCK_IFACE)

    def emit_prepare_for_sleep(self, sleeping):
        self.root.call("EmitSignal", "org.freedesktop.login1.Manager", "PrepareForSleep", "b", [{"variant": ["b", sleeping]}],
                       sig="sssav", dest=LOGIND, path="/org/freedesktop/login1", iface=MOCK_IFACE)

    def monitor(self, *match_rules):
        """dbus-monitor as root for `match_rules`: each message that passes is a line (with
        "member=NAME") in the returned LineLog, so a test sees a call reach its destination."""
        log = LineLog("dbus-monitor")
        proc = subprocess.Popen(["dbus-monitor", "--system"] + list(match_rules), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=harness._env(self.bus_env()),
                                start_new_session=True)
        self.helpers.append(("dbus-monitor", proc))
        threading.Thread(target=harness._pump_lines, args=(lambda: proc.stdout.read1(4096), log), daemon=True).start()
        log.wait_for("member=NameLost", 10.0)  # its own name lost as it became a monitor: it sees the bus
        return log

    # --- touchgated on this bus

    def start_daemon(self, config="/nonexistent", timeout=10.0, **kw):
        daemon = super().start_daemon(config=config, timeout=timeout, **kw)
        daemon.log.wait_for(SERVING, timeout)
        return daemon

    # --- clients

    def client(self, as_user=None):
        c = BusClient(self, as_user)
        self.clients.append(c)
        return c

    def tool(self, name, *args, as_user=None):
        t = Tool(self, name, *args, as_user=as_user)
        self.tools.append(t)
        return t

    def run_tool(self, name, *args, as_user=None, timeout=DEFAULT_WAIT):
        """Runs one of fprintd's clients to its end; returns the Tool (returncode, lines)."""
        t = self.tool(name, *args, as_user=as_user)
        t.wait(timeout)
        return t

    def fprintd_service(self, name="fprintd-test", options="debug"):
        """A PAM service with pam_fprintd.so alone (`required`), as from the extracted package."""
        (self.pam_dir / name).write_text(("auth required %s %s" % (self.pam_fprintd, options)).rstrip() + "\n")
        return name

    def pam(self, user, service=harness.SERVICE, ctty=False, env=None):
        """pamtester as in harness, also pointed at this bus (pam_fprintd's sd-bus honours it)."""
        session = harness.PamSession(self, user, service, ctty=ctty, extra_env=self.bus_env(env))
        self.sessions.append(session)
        return session

    def close(self):
        for t in self.tools:
            t.kill()
        for c in self.clients:
            c.close()
        super().close()  # stops touchgated before the bus goes
        for _, proc in reversed(self.helpers):
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def enroll_with_tool(world, print_id, *args, as_user=None, on_line=None, timeout=DEFAULT_WAIT):
    """`fprintd-enroll ARGS`: one SCAN once it says "Enrolling …", then one after each
    enroll-stage-passed, until a final result; returns the finished Tool."""
    t = world.tool("fprintd-enroll", *args, as_user=as_user)
    i = t.out.wait_for("Enrolling ", timeout)
    while True:
        world.reader.scan(print_id)
        i = t.out.wait_for("Enroll result: ", timeout, start=i + 1)
        if t.out.lines[i][1] != "Enroll result: enroll-stage-passed":
            break
        if on_line:
            on_line(t.out.lines[i][1])
    t.wait(timeout)
    return t


# ---------------------------------------------------------------------------------------------
# Clients


class BusError(AssertionError):
    def __init__(self, name, message):
        super().__init__("%s: %s" % (name, message))
        self.name = name
        self.message = message


class BusClient:
    """One bus connection (bus_client.py) as root or a test user; calls by id, signals in order."""

    def __init__(self, world, as_user=None):
        self.user = as_user or "root"
        self.ids = itertools.count(1)
        self.replies = {}
        self.signals = []  # dicts as bus_client.py printed them
        self.unique_name = None
        self._cv = threading.Condition()
        self._closed = False
        self.stderr = LineLog("bus client %s stderr" % self.user)
        self.proc = subprocess.Popen([DEBIAN_PYTHON, "-B", str(world.bin / "bus_client.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=harness._env(world.bus_env()),
                                     start_new_session=True, **harness._as_user(as_user))
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=harness._pump_lines, args=(lambda: self.proc.stderr.read1(4096), self.stderr),
                         daemon=True).start()
        with self._cv:
            if not self._cv.wait_for(lambda: self.unique_name or self._closed, 10.0) or not self.unique_name:
                raise WaitTimeout("bus client as %s did not connect:\n%s" % (self.user, self.stderr.dump()))

    def _pump(self):
        for raw in self.proc.stdout:
            msg = json.loads(raw)
            with self._cv:
                if "ready" in msg:
                    self.unique_name = msg["ready"]
                elif "signal" in msg:
                    msg["t"] = now()
                    self.signals.append(msg)
                else:
                    self.replies[msg["id"]] = msg
                self._cv.notify_all()
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def _send(self, request):
        rid = next(self.ids)
        request["id"] = rid
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        return rid

    def start(self, method, *args, sig=None, dest=FPRINT, path=DEVICE, iface=DEVICE_IFACE, timeout_ms=25000):
        """Sends a call without waiting for its answer; returns its id (see `result`)."""
        return self._send({"op": "call", "dest": dest, "path": path, "iface": iface, "method": method,
                           "sig": "s" * len(args) if sig is None else sig, "args": list(args), "timeout_ms": timeout_ms})

    def result(self, rid, timeout=DEFAULT_WAIT):
        """The reply's values; a D-Bus error is raised as BusError (name, message)."""
        deadline = now() + timeout
        with self._cv:
            while rid not in self.replies:
                left = deadline - now()
                if left <= 0 or self._closed:
                    raise WaitTimeout("bus client %s: no answer to call %d within %.1f s" % (self.user, rid, timeout))
                self._cv.wait(left)
            reply = self.replies.pop(rid)
        if "error" in reply:
            raise BusError(reply["error"], reply["message"])
        return reply["ok"]

    def answered(self, rid):
        with self._cv:
            return rid in self.replies

    def call(self, method, *args, timeout=DEFAULT_WAIT, **kw):
        return self.result(self.start(method, *args, **kw), timeout)

    def error(self, method, *args, **kw):
        """The BusError a call ends with (the test fails if it succeeds)."""
        try:
            value = self.call(method, *args, **kw)
        except BusError as e:
            return e
        raise AssertionError("%s(%s) as %s succeeded (%r); an error was expected" % (method, args, self.user, value))

    def own(self, name):
        return self.result(self._send({"op": "own", "name": name}))[0]

    def wait_name(self, name, timeout=10.0):
        return self.result(self._send({"op": "wait_name", "name": name}), timeout)[0]

    def property(self, name):
        return self.call("Get", DEVICE_IFACE, name, iface="org.freedesktop.DBus.Properties")[0]

    def wait_signal(self, member, match=None, start=0, timeout=DEFAULT_WAIT):
        """Index of the first signal `member` at or after `start` whose args satisfy `match`."""
        deadline = now() + timeout
        with self._cv:
            while True:
                for i in range(start, len(self.signals)):
                    s = self.signals[i]
                    if s["signal"] == member and (match is None or match(s["args"])):
                        return i
                start = max(start, len(self.signals))
                left = deadline - now()
                if left <= 0 or self._closed:
                    raise WaitTimeout("bus client %s: no %s signal within %.1f s; seen: %s"
                                      % (self.user, member, timeout, [(s["signal"], s["args"]) for s in self.signals]))
                self._cv.wait(left)

    def signal_count(self):
        with self._cv:
            return len(self.signals)

    def wait_finger_needed(self, needed, start=0, timeout=DEFAULT_WAIT):
        """PropertiesChanged of the device saying finger-needed is now `needed`."""
        return self.wait_signal("PropertiesChanged", lambda a: a[0] == DEVICE_IFACE and a[1].get("finger-needed") == needed,
                                start, timeout)

    def kill(self):
        """SIGKILL: the connection drops as a crashed client's does."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(DEFAULT_WAIT)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(2.0)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.kill()


class Tool:
    """One of fprintd's clients (`fprintd-verify alice`, …) with a pty for stdout and stderr, so
    its g_print lines arrive as it writes them; as root or a test user."""

    def __init__(self, world, name, *args, as_user=None):
        self.argv = [name] + [str(a) for a in args]
        self.out = LineLog(" ".join(self.argv))
        master, slave = pty.openpty()
        self.started = now()
        try:
            self.proc = subprocess.Popen([str(world.bin / name)] + self.argv[1:], stdin=subprocess.DEVNULL,
                                         stdout=slave, stderr=slave, env=harness._env(world.bus_env()),
                                         start_new_session=True, **harness._as_user(as_user))
        finally:
            os.close(slave)
        self._master = master
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        try:
            harness._pump_lines(harness._pty_reader(self._master), self.out)
        finally:
            os.close(self._master)

    def wait(self, timeout=DEFAULT_WAIT):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise WaitTimeout("%s still running after %.1f s:\n%s" % (" ".join(self.argv), timeout, self.out.dump()))
        self.out.wait_closed(timeout)
        return self

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(DEFAULT_WAIT)
        self.out.wait_closed(DEFAULT_WAIT)

    @property
    def returncode(self):
        return self.proc.returncode

    def lines(self):
        return self.out.texts()

    def transcript(self):
        return "%s (exit %s)\n%s" % (" ".join(self.argv), self.proc.returncode, self.out.dump())


# ---------------------------------------------------------------------------------------------
# Fixtures and small steps shared by the test_fprintd_* files


@pytest.fixture
def bus_world(request):
    """A BusWorld (own bus, fprintd's clients at hand), no daemon yet."""
    w = BusWorld()
    yield w
    w.close()
    call = getattr(request.node, "report_call", None)
    if call is not None and call.failed:
        if w.daemon is not None:
            print("touchgated stderr:\n" + w.daemon.log.dump())
        print("dbus-daemon stderr:\n" + w.bus_log.dump())


@pytest.fixture
def bus_daemon(bus_world):
    """touchgated on the virtual reader, serving fprintd's API on the world's bus."""
    return bus_world.start_daemon()


ALICE_PRINT = "alice-right-index"


def enroll_alice(world, print_id=ALICE_PRINT, finger=None):
    """alice enrolls with `touchgate enroll`, typing her password: usable at once."""
    rc, cli = harness.enroll(world, "alice", print_id, finger=finger, as_user="alice")
    assert rc == 0, "enroll failed: %s\n%s" % (cli.stderr, cli.out.dump())
    return print_id


def password_success(world, user="alice"):
    """What a PAM stack's report line tells the daemon after the password module accepted it."""
    reply, _ = wire.request(world.socket, "password_success", user=user, service="login")
    assert reply["code"] == 0, reply


def status(world, user="alice"):
    reply, _ = wire.request(world.socket, "status", user=user)
    return json.loads(reply["json"])


def verify_with_tool(world, user_args, scan=None, as_user=None, timeout=DEFAULT_WAIT):
    """`fprintd-verify ARGS`; with `scan`, that print touches the reader once it listens."""
    t = world.tool("fprintd-verify", *user_args, as_user=as_user)
    if scan is not None:
        t.out.wait_for("Verify started!", timeout)
        world.reader.scan(scan)
    return t.wait(timeout)
