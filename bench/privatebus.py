"""A private D-Bus system bus for fprintd: dbus-daemon with its own config, polkit and logind stand-ins.

Nothing under /etc is read or changed: the bus listens in the bench's work dir, and every process
that should use it is given DBUS_SYSTEM_BUS_ADDRESS.
"""

import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from gi.repository import Gio, GLib

BUS = "org.freedesktop.DBus"
POLKIT = "org.freedesktop.PolicyKit1"
LOGIND = "org.freedesktop.login1"

# Everyone may own and call anything: access control is the polkit stand-in's (which allows all).
CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
"""


def clean_env(extra=None):
    """PATH and a C.UTF-8 locale, nothing inherited that could steer a library (preloads, buses)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/root"}
    env.update(extra or {})
    return env


def read_line(stream, deadline, what):
    """One line from a pipe, waiting at most until `deadline` (monotonic)."""
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            raise TimeoutError("%s: no line within the deadline (got %r)" % (what, data))
        chunk = os.read(stream.fileno(), 1)
        if not chunk:
            raise EOFError("%s: stream ended (got %r)" % (what, data))
        data += chunk
    return data.decode().strip()


class PrivateBus:
    """dbus-daemon on a socket in `workdir`, with a service dir for the activation scenario."""

    def __init__(self, workdir):
        self.dir = Path(workdir)
        self.socket = self.dir / "bus.sock"
        self.services = self.dir / "bus-services"
        self.services.mkdir(exist_ok=True)
        config = self.dir / "bus.conf"
        config.write_text(CONFIG.format(socket=self.socket, services=self.services))
        # The bus gets no preload and no user database wrapper: it only routes messages.
        self.proc = subprocess.Popen(["dbus-daemon", "--config-file=%s" % config, "--nofork", "--print-address=1"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=clean_env())
        self.address = read_line(self.proc.stdout, time.monotonic() + 10, "dbus-daemon --print-address")
        self.pid = self.proc.pid
        self.stand_ins = {}  # name -> Popen

    def env(self):
        return {"DBUS_SYSTEM_BUS_ADDRESS": self.address}

    def processes(self):
        """{name: pid} of the bus and its stand-ins, the server-side processes a client of it may cost."""
        pids = {"dbus-daemon": self.pid}
        pids.update(("%s stand-in" % t, p.pid) for t, p in self.stand_ins.items())
        return pids

    def start_stand_in(self, client, template, name):
        """python3-dbusmock's template on this bus; returns once it owns its name."""
        mark = client.owner_mark()
        log = open(self.dir / ("%s.log" % template), "wb")
        proc = subprocess.Popen([sys.executable, "-m", "dbusmock", "--system", "--template", template],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=clean_env(self.env()))
        log.close()
        self.stand_ins[template] = proc
        client.wait_owner(name, True, mark, timeout=30, proc=proc)
        return proc

    def stop(self):
        for proc in list(self.stand_ins.values()) + [self.proc]:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


class BusClient:
    """The bench's own connection to the private bus (GDBus): calls, and names and signals as events.

    Messages are seen by a GDBus filter, which runs on GDBus's own I/O thread as they arrive, so an
    event's time is its arrival time whatever the bench's main thread is doing."""

    def __init__(self, address):
        flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        self.conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        self._cv = threading.Condition()
        self.owners = []    # [(t, name, new_owner)]
        self.signals = []   # [(t, path, member, args)]
        self._signal_members = set()
        self.conn.add_filter(self._filter)

    def _filter(self, _conn, message, incoming):
        if incoming and message.get_message_type() == Gio.DBusMessageType.SIGNAL:
            t = time.monotonic()
            member = message.get_member()
            body = message.get_body()
            args = body.unpack() if body is not None else ()
            with self._cv:
                if member == "NameOwnerChanged" and message.get_sender() == BUS:
                    self.owners.append((t, args[0], args[2]))
                elif member in self._signal_members:
                    self.signals.append((t, message.get_path(), member, args))
                self._cv.notify_all()
        return message

    def call(self, dest, path, iface, method, args=None, reply=None, timeout=10.0):
        result = self.conn.call_sync(dest, path, iface, method, args, GLib.VariantType(reply) if reply else None,
                                     Gio.DBusCallFlags.NONE, int(timeout * 1000), None)
        return result.unpack() if result is not None else ()

    def bus_call(self, method, args=None, reply=None):
        return self.call(BUS, "/org/freedesktop/DBus", BUS, method, args, reply)

    def watch_names(self, *names):
        for name in names:
            self.bus_call("AddMatch", GLib.Variant("(s)", ("type='signal',sender='%s',member='NameOwnerChanged',"
                                                             "arg0='%s'" % (BUS, name),)))

    def watch_signals(self, sender, iface, *members):
        for member in members:
            self._signal_members.add(member)
            self.bus_call("AddMatch", GLib.Variant("(s)", ("type='signal',sender='%s',interface='%s',member='%s'"
                                                             % (sender, iface, member),)))

    def owner_mark(self):
        with self._cv:
            return len(self.owners)

    def signal_mark(self):
        with self._cv:
            return len(self.signals)

    def wait_owner(self, name, present, mark, timeout=10.0, proc=None):
        """Arrival time of the first NameOwnerChanged for `name` after `mark` that gives it an owner
        (present) or takes it away; fails at the deadline or if `proc` exits first."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for t, n, new in self.owners[mark:]:
                    if n == name and bool(new) == present:
                        return t
                mark = len(self.owners)
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError("%s exited with status %s before %s %s" % (
                        proc.args[0], proc.returncode, name, "appeared" if present else "went away"))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("%s did not %s within %.0f s" % (name, "appear" if present else "go away", timeout))
                self._cv.wait(min(left, 0.05) if proc is not None else left)

    def wait_signal(self, member, mark, timeout=10.0, match=lambda args: True):
        """(arrival time, args) of the first signal `member` after `mark` whose args satisfy `match`."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for t, _path, m, args in self.signals[mark:]:
                    if m == member and match(args):
                        return t, args
                mark = len(self.signals)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no %s signal within %.0f s" % (member, timeout))
                self._cv.wait(left)

    def has_owner(self, name):
        return self.bus_call("NameHasOwner", GLib.Variant("(s)", (name,)), "(b)")[0]

    def owner_pid(self, name):
        return self.bus_call("GetConnectionUnixProcessID", GLib.Variant("(s)", (name,)), "(u)")[0]

    def reload_config(self):
        """Makes the bus re-read its service dir now (it would notice by itself, but not at a known time)."""
        self.bus_call("ReloadConfig")

    def close(self):
        self.conn.close_sync(None)
