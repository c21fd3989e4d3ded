"""fprintd as a benchmarked system: Debian's fprintd and pam_fprintd, unpacked privately, on a private bus.

fprintd runs on libfprint's virtual reader, stores prints in the bench's work dir
(STATE_DIRECTORY), asks the polkit stand-in (which allows everything) and takes its sleep inhibitor
from the logind stand-in, as it would from polkitd and systemd-logind.
"""

import glob
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

from gi.repository import GLib

import harness
from pamclient import PtyProcess, pump_lines
from privatebus import clean_env

NAME = "net.reactivated.Fprint"
MANAGER = "/net/reactivated/Fprint/Manager"
DEVICE_IFACE = "net.reactivated.Fprint.Device"
SERVICE = "bench-fprintd"


class Fprintd:
    name = "fprintd"
    service = SERVICE
    # pam_fprintd names the finger when the user has one: "Swipe your right index finger across …".
    prompt = re.compile(r"^Swipe your .*finger across the fingerprint reader")
    # After a failed match pam_fprintd says so, stops and restarts verification, and prompts again.
    told_no_match = re.compile(r"^Failed to match fingerprint")
    rearm_prompts = True  # whether the prompt is shown again once the reader is re-armed
    waiting = None  # fprintd has no queue: a second client's Claim is refused
    ready_event = "NameOwnerChanged for net.reactivated.Fprint on the bus"
    cheap_query = "ListEnrolledFingers on the device (new bus connection per client, as root)"
    holds_reader_open = False  # fprintd opens the reader at each Claim and closes it at Release

    def __init__(self, world, root, bus, client):
        self.world, self.bus, self.client = world, bus, client
        root = Path(root)
        self.binary = str(root / "usr/libexec/fprintd")
        self.enroll_binary = str(root / "usr/bin/fprintd-enroll")
        modules = glob.glob(str(root / "lib/*/security/pam_fprintd.so"))
        if not modules:
            raise FileNotFoundError("no pam_fprintd.so under %s" % root)
        (world.pam_dir / SERVICE).write_text("auth required %s\n" % modules[0])
        self.reader = harness.VirtualReader(world.dir / "fp-vdev.sock")
        self.state = world.dir / "fprint"
        self.state.mkdir(mode=0o700, exist_ok=True)
        self.proc = None
        self.pid = None
        self.log = None
        self.activated = False
        self.device = None
        client.watch_names(NAME)
        client.watch_signals(NAME, DEVICE_IFACE, "VerifyStatus", "VerifyFingerSelected")

    def env(self):
        env = clean_env(self.bus.env())
        env.update(self.world.nss_env())
        env.update(STATE_DIRECTORY=str(self.state), FP_DRIVERS_WHITELIST=self.reader.kind,
                   LD_PRELOAD="libnss_wrapper.so")
        env[harness.READER_ENV[self.reader.kind]] = self.reader.path
        return env

    def use_reader(self, kind):
        """With fprintd stopped: a fresh virtual reader of `kind` in place of the run's (the next
        start uses it alone). Returns what restore_reader() takes back."""
        self.stop()
        previous = self.reader
        self.reader = harness.VirtualReader(self.world.dir / ("fp-vdev-%s.sock" % kind), kind=kind)
        return previous

    def restore_reader(self, previous):
        """With fprintd stopped: the reader use_reader() replaced."""
        self.reader = previous

    # The daemon

    def start(self, wrap=()):
        """Spawns fprintd; returns (spawn time, ready time = its name on the bus)."""
        mark = self.client.owner_mark()
        self.log = harness.LineLog("fprintd stderr")
        started = time.monotonic()
        self.proc = subprocess.Popen(list(wrap) + [self.binary, "--no-timeout"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env(),
                                     start_new_session=True)
        threading.Thread(target=pump_lines, args=(self.proc.stderr, self.log), daemon=True).start()
        try:
            ready = self.client.wait_owner(NAME, True, mark, timeout=10, proc=self.proc)
        except (RuntimeError, TimeoutError) as e:
            raise RuntimeError("%s\n%s" % (e, self.log.dump())) from None
        self.pid = self.client.owner_pid(NAME)
        self.activated = False
        self._find_device()
        return started, ready

    def _find_device(self):
        devices = self.client.call(NAME, MANAGER, "net.reactivated.Fprint.Manager", "GetDevices", None, "(ao)")[0]
        if not devices:
            raise RuntimeError("fprintd sees no reader")
        self.device = devices[0]

    def start_activatable(self):
        """The bus starts fprintd when a client first calls it, as Debian's service file has it."""
        env = " ".join("%s=%s" % item for item in self.env().items())
        assert " " not in "".join(self.env().values()), "the service file's Exec line splits at spaces"
        (self.bus.services / (NAME + ".service")).write_text(
            "[D-BUS Service]\nName=%s\nExec=/usr/bin/env %s %s\n" % (NAME, env, self.binary))
        self.client.reload_config()
        self._activation_mark = self.client.owner_mark()
        self.activated = True
        self.proc = None

    def wait_activated(self, timeout=10.0):
        ready = self.client.wait_owner(NAME, True, self._activation_mark, timeout=timeout)
        self.pid = self.client.owner_pid(NAME)
        return ready

    def end_activation(self):
        (self.bus.services / (NAME + ".service")).unlink()
        self.client.reload_config()

    def running(self):
        return self.pid is not None and os.path.exists("/proc/%d" % self.pid)

    def stop(self):
        if self.pid is None:
            return
        mark = self.client.owner_mark()
        had_name = self.client.has_owner(NAME)
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            pidfd = None
        if pidfd is not None:
            os.kill(self.pid, signal.SIGCONT)
            os.kill(self.pid, signal.SIGTERM)
            if not select.select([pidfd], [], [], 10)[0]:
                os.kill(self.pid, signal.SIGKILL)
                select.select([pidfd], [], [], 10)
            os.close(pidfd)
        if self.proc is not None:
            self.proc.wait(10)
        if had_name:
            self.client.wait_owner(NAME, False, mark, timeout=10)
        self.pid = None

    def daemon_pid(self):
        return self.pid

    def wait_served(self, timeout=10.0):
        """Its D-Bus API is its readiness: served once started."""

    def companions(self):
        """The other server-side processes an authentication costs: the bus and the stand-ins."""
        return self.bus.processes()

    def freeze(self):
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self):
        os.kill(self.pid, signal.SIGCONT)
        self._find_device()  # answers again

    # Prints and clients

    def enroll(self, user, print_id, finger="right-index-finger"):
        """fprintd's own fprintd-enroll; one scan when it starts, then one per stage it reports."""
        enroll = PtyProcess([self.enroll_binary, "-f", finger, user], clean_env(self.bus.env()))
        try:
            i, _ = enroll.wait_for("Enrolling %s finger" % finger, 10)
            while True:
                self.reader.scan(print_id)
                i, _ = enroll.wait_for(re.compile(r"^Enroll result: "), 10, i + 1)
                if "enroll-stage-passed" not in enroll.log.lines[i][1]:
                    break
            enroll.finish(10)
        finally:
            enroll.kill()
        if enroll.proc.returncode != 0 or "enroll-completed" not in enroll.log.lines[i][1]:
            raise RuntimeError("fprintd-enroll failed:\n%s" % enroll.transcript())

    def client_env(self):
        return self.bus.env()

    def burst_args(self, user, count):
        return ["fprintd", self.bus.address, self.device, user, str(count)]

    def direct_scan(self, user, print_id, timeout=10.0):
        """scan → VerifyStatus signal at a direct D-Bus client (Claim, VerifyStart, no PAM): (ms, result)."""
        call = lambda method, args=None: self.client.call(NAME, self.device, DEVICE_IFACE, method, args)
        call("Claim", GLib.Variant("(s)", (user,)))
        try:
            mark = self.client.signal_mark()
            call("VerifyStart", GLib.Variant("(s)", ("any",)))
            self.client.wait_signal("VerifyFingerSelected", mark, timeout)
            t0 = time.monotonic()
            self.reader.scan(print_id)
            t1, args = self.client.wait_signal("VerifyStatus", mark, timeout, match=lambda a: a[1])
            call("VerifyStop")
        finally:
            call("Release")
        return (t1 - t0) * 1000.0, args[0]

    def is_reply(self, data):
        """In a trace: fprintd's VerifyStatus signal (to the bus)."""
        return b"VerifyStatus" in data

