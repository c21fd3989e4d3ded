"""fprintd's world for the end-to-end tests: a private system bus, polkit and logind stand-ins, and
fprintd's real clients (fprintd-enroll/-list/-verify/-delete, pam_fprintd.so) against touchgated.

Pieces:
  fprintd_root()  Debian's fprintd and libpam-fprintd, fetched once with `apt-get download` into a
                  cache and unpacked with `dpkg-deb -x` — never installed (their maintainer scripts
                  change /etc), and fprintd itself never runs
  BusWorld        a harness World with its own dbus-daemon (a system-type bus whose policy includes
                  our shipped data/dbus/net.reactivated.Fprint.conf), optional python3-dbusmock
                  polkitd and logind, and touchgated serving fprintd's API on that bus
  fixtures        bus_world, bus_daemon, and small steps the test_fprintd_* files share
The clients themselves (BusClient, Tool) are in fprintd_tools.py.

Every wait is for an event (a line, a reply, a signal, a name on the bus) with a deadline.
"""

import fcntl
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import harness
import wire
from fprintd_tools import (DEBIAN_PYTHON, DEVICE, DEVICE_IFACE, FPRINT, BusClient, BusError, Tool,  # noqa: F401
                           enroll_with_tool, verify_with_tool)
from harness import DEFAULT_WAIT, LineLog

CACHE = Path(os.environ.get("TOUCHGATE_FPRINTD_CACHE", harness.REPO / ".build" / "fprintd-clients"))
PACKAGES = ("fprintd", "libpam-fprintd")
BUS_POLICY = harness.REPO / "data" / "dbus" / "net.reactivated.Fprint.conf"
BUS_CLIENT = Path(__file__).resolve().parent / "bus_client.py"

MANAGER = "/net/reactivated/Fprint/Manager"
MANAGER_IFACE = "net.reactivated.Fprint.Manager"
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
        subprocess.run(["apt-get", "update", "-q", "-o", "DPkg::Lock::Timeout=600"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=660)
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

    def __init__(self, reader_kind="virtual_device"):
        super().__init__(reader_kind)
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
        """python3-dbusmock's polkitd: every action refused until SetAllowed, for root too."""
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


# ---------------------------------------------------------------------------------------------
# Fixtures and small steps shared by the test_fprintd_* files


@pytest.fixture
def bus_world(request):
    """A BusWorld (own bus, fprintd's clients at hand), no daemon yet."""
    w = BusWorld(harness.reader_kind_of(request))
    yield w
    w.close()
    if harness.failed(request):
        if w.daemon is not None:
            print("touchgated stderr:\n" + w.daemon.log.dump())
        print("dbus-daemon stderr:\n" + w.bus_log.dump())


@pytest.fixture
def bus_daemon(bus_world):
    """touchgated on the virtual reader, serving fprintd's API on the world's bus."""
    return bus_world.start_daemon()


ALICE_PRINT = "alice-right-index"


def enroll_alice(world, print_id=ALICE_PRINT, finger=None, reader=None):
    """alice enrolls with `touchgate enroll`, typing her password: usable at once (`reader`: on
    that one of the world's readers, named with --device)."""
    rc, cli = harness.enroll(world, "alice", print_id, finger=finger, as_user="alice", reader=reader)
    assert rc == 0, "enroll failed: %s\n%s" % (cli.stderr, cli.out.dump())
    return print_id


def password_success(world, user="alice"):
    """What a PAM stack's report line tells the daemon after the password module accepted it."""
    reply, _ = wire.request(world.socket, "password_success", user=user, service="login")
    assert reply["code"] == 0, reply


def manager(world, method):
    """A call of fprintd's Manager (GetDevices, GetDefaultDevice) as root: its reply's values."""
    return world.root.call(method, path=MANAGER, iface=MANAGER_IFACE)


def interfaces_added(world, path, start, timeout=harness.DEFAULT_WAIT):
    """The ObjectManager's InterfacesAdded signal for `path`, at or after signal number `start`."""
    i = world.root.wait_signal("InterfacesAdded", lambda a: a[0] == path, start=start, timeout=timeout)
    return world.root.signals[i]


def status(world, user="alice"):
    reply, _ = wire.request(world.socket, "status", user=user)
    return json.loads(reply["json"])
