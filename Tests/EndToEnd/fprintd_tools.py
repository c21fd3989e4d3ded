"""The clients of fprintd's API used by the tests: BusClient (bus_client.py under Debian's python3,
as root or a test user: calls by id, signals in order) and Tool (one of fprintd's command-line
clients in a pty, followed line by line), and the steps that drive fprintd-enroll and -verify."""

import itertools
import json
import os
import pty
import subprocess
import threading

import harness
from harness import DEFAULT_WAIT, LineLog, WaitTimeout, now

DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's: it has dbusmock and GLib's bindings (PATH's may not)
FPRINT = "net.reactivated.Fprint"
DEVICE = "/net/reactivated/Fprint/Device/0"
DEVICE_IFACE = "net.reactivated.Fprint.Device"


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
        self.reply_places = {}  # call id: how many signals this connection had received before its reply
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
        try:
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
                        self.reply_places[msg["id"]] = len(self.signals)
                    self._cv.notify_all()
        finally:  # waiters learn at once that no more will come
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

    def call_placed(self, method, *args, **kw):
        """Calls, and returns the reply's place among this connection's signals: the index the next
        signal after the reply gets (the bus delivers both in the daemon's order)."""
        rid = self.start(method, *args, **kw)
        self.result(rid)
        with self._cv:
            return self.reply_places.pop(rid)

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

    def property(self, name, **kw):
        """A property of a device object (the first one; `path=` another)."""
        return self.call("Get", DEVICE_IFACE, name, iface="org.freedesktop.DBus.Properties", **kw)[0]

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
        return self._wait_property("finger-needed", needed, start, timeout)

    def wait_finger_present(self, present, start=0, timeout=DEFAULT_WAIT):
        """PropertiesChanged of the device saying finger-present is now `present`."""
        return self._wait_property("finger-present", present, start, timeout)

    def _wait_property(self, name, value, start, timeout):
        return self.wait_signal("PropertiesChanged", lambda a: a[0] == DEVICE_IFACE and a[1].get(name) == value,
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
# fprintd-enroll and fprintd-verify, driven by what they print


def enroll_with_tool(world, print_id, *args, as_user=None, on_line=None, timeout=DEFAULT_WAIT, listening=False):
    """`fprintd-enroll ARGS`: one SCAN once it says "Enrolling …", then one after each
    enroll-stage-passed, until a final result; returns the finished Tool. `listening`: the first
    SCAN waits until the reader needs a finger (fprintd-enroll says "Enrolling" before it calls
    EnrollStart, and a match-on-chip reader may first delete a print, which drops a SCAN)."""
    mark = world.root.signal_count()
    t = world.tool("fprintd-enroll", *args, as_user=as_user)
    i = t.out.wait_for("Enrolling ", timeout)
    if listening:
        world.root.wait_finger_needed(True, start=mark, timeout=timeout)
    while True:
        world.reader.scan(print_id)
        i = t.out.wait_for("Enroll result: ", timeout, start=i + 1)
        if t.out.lines[i][1] != "Enroll result: enroll-stage-passed":
            break
        if on_line:
            on_line(t.out.lines[i][1])
    t.wait(timeout)
    return t


def verify_with_tool(world, user_args, scan=None, as_user=None, timeout=DEFAULT_WAIT):
    """`fprintd-verify ARGS`; with `scan`, that print touches the reader once it listens."""
    t = world.tool("fprintd-verify", *user_args, as_user=as_user)
    if scan is not None:
        t.out.wait_for("Verify started!", timeout)
        world.reader.scan(scan)
    return t.wait(timeout)
