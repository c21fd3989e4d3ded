"""touchgate as a benchmarked system: touchgated on a virtual reader, pam_touchgate.so, its CLI."""

import os
import re
import select
import signal
import socket
import subprocess
import threading
import time

import harness
import wire
from pamclient import pump_lines

SERVICE = "bench-touchgate"
FPRINTD_NAME = "net.reactivated.Fprint"  # served by the daemon's D-Bus front-end


class Touchgate:
    name = "touchgate"
    service = SERVICE
    prompt = re.compile(r"^Swipe your finger across the fingerprint reader")
    # After a failed match the daemon says so and re-arms the reader at once.
    told_no_match = re.compile(r"^Fingerprint not recognised, try again")
    rearm_prompts = False  # whether the prompt is shown again once the reader is re-armed
    waiting = re.compile(r"^Waiting for the fingerprint reader")
    ready_event = "READY=1 on NOTIFY_SOCKET"
    cheap_query = "canEvaluate (new connection per client, as root)"
    holds_reader_open = True  # the daemon opens each reader once and keeps it

    def __init__(self, world, touchgated, bus=None, client=None):
        """`bus`: its own private system bus (privatebus.PrivateBus, `client` connected to it), on
        which the daemon serves fprintd's API and holds its sleep inhibitor, as installed; without
        one it runs with neither."""
        self.world = world
        self.bus, self.client = bus, client
        self._owner_mark = 0
        if client is not None:
            client.watch_names(FPRINTD_NAME)
        self.binary = str(touchgated)
        self.socket = world.socket
        self.reader = world.reader
        world.service(SERVICE)
        # READY=1 arrives as a datagram: readiness is an event, not a poll of the socket.
        self.notify_path = world.dir / "tg-notify.sock"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        self.proc = None
        self.pid = None
        self.log = None
        self.activator = False
        # pam_wrapper preloaded, for the one password typed: the enrollment's (without_pam_wrapper()).
        self.pam_wrapper = True

    # The daemon

    def argv(self):
        """touchgated started as touchgated.service starts it: no arguments, the directories in
        the environment (env()). A build from before that start existed gets them as flags."""
        if self._help_mentions("CONFIGURATION_DIRECTORY"):
            return [self.binary]
        argv = [self.binary, "--socket", str(self.socket), "--state-dir", str(self.world.state), "--config", "/nonexistent"]
        # The prints in the run's world, never the machine's /var/lib/fprint (a build from before
        # the print store was configurable keeps them under --state-dir).
        if self._help_mentions("--print-store"):
            argv += ["--print-store", str(self.world.prints)]
        return argv

    def _help_mentions(self, word):
        if not hasattr(self, "_help"):
            out = subprocess.run([self.binary, "--help"], capture_output=True, text=True, timeout=10)
            self._help = out.stdout + out.stderr
        return word in self._help

    def env(self):
        env = harness.daemon_env(self.world)
        env["NOTIFY_SOCKET"] = str(self.notify_path)
        # What the unit's RuntimeDirectory=, StateDirectory= and ConfigurationDirectory= give it;
        # the configuration is the defaults but for the print store, which is the run's.
        config_dir = self.world.dir / "tg-config"
        config_dir.mkdir(exist_ok=True)
        (config_dir / "touchgate.conf").write_text("print_store = %s\n" % self.world.prints)
        env.update(RUNTIME_DIRECTORY=str(self.socket.parent), STATE_DIRECTORY=str(self.world.state),
                   CONFIGURATION_DIRECTORY=str(config_dir))
        if self.bus is not None:
            env.update(self.bus.env())
        if not self.pam_wrapper:  # nss_wrapper only, as fprintd runs
            env["LD_PRELOAD"] = " ".join(lib for lib in env["LD_PRELOAD"].split() if lib != "libpam_wrapper.so")
            for key in ("PAM_WRAPPER", "PAM_WRAPPER_SERVICE_DIR"):
                env.pop(key, None)
        return env

    def _drain_notify(self):
        while select.select([self.notify], [], [], 0)[0]:
            self.notify.recv(256)

    def _wait_ready(self, timeout=10.0):
        """Arrival time of READY=1; fails if the daemon exits first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("touchgated sent no READY=1 within %.0f s:\n%s" % (timeout, self.log.dump()))
            # Woken by the datagram; every 50 ms also checks that the daemon has not exited instead.
            if select.select([self.notify], [], [], min(left, 0.05))[0]:
                t = time.monotonic()
                if b"READY=1" in self.notify.recv(256):
                    return t
            if self.proc.poll() is not None:
                raise RuntimeError("touchgated exited with status %s before it was ready:\n%s"
                                   % (self.proc.returncode, self.log.dump()))

    def _spawn(self, argv, env):
        self._drain_notify()
        self.log = harness.LineLog("touchgated stderr")
        if self.client is not None:
            self._owner_mark = self.client.owner_mark()
        started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env, start_new_session=True)
        threading.Thread(target=pump_lines, args=(self.proc.stderr, self.log), daemon=True).start()
        return started

    def start(self, wrap=()):
        """Spawns the daemon; returns (spawn time, ready time). `wrap` prefixes the command (strace)."""
        started = self._spawn(list(wrap) + self.argv(), self.env())
        self.activator = False
        ready = self._wait_ready()
        self.pid = _only_child(self.proc.pid) if wrap else self.proc.pid
        return started, ready

    def start_activatable(self):
        """systemd-socket-activate holds the socket; the first client's connection starts the daemon."""
        argv = ["systemd-socket-activate", "-l", str(self.socket)]
        for key, value in self.env().items():
            argv += ["-E", "%s=%s" % (key, value)]
        self._spawn(argv + self.argv(), {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        self.activator = True
        self.log.wait_for("Listening on", 10)

    def wait_activated(self, timeout=10.0):
        ready = self._wait_ready(timeout)
        self.pid = self.proc.pid  # the activator execs the daemon in its own process
        return ready

    def end_activation(self):
        pass

    def stop(self):
        """SIGTERM to the daemon (or to the activator still waiting); waits for the process we started."""
        if self.proc is not None and self.proc.poll() is None:
            pid = self.pid or self.proc.pid
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                self.proc.kill()
                self.proc.wait()
        if self.activator:  # an activated daemon leaves the activator's socket behind
            self.activator = False
            try:
                self.socket.unlink()
            except FileNotFoundError:
                pass
        self.pid = None
        if self.activator:  # the daemon did not start, so nobody removed the activator's socket
            try:
                self.socket.unlink()
            except FileNotFoundError:
                pass
        if self.proc is not None:
            harness._remove_pam_wrapper_dir(self.proc.pid)  # pam_wrapper's copy of the services

    def daemon_pid(self):
        return self.pid

    def wait_served(self, timeout=10.0):
        """Until the daemon started last owns fprintd's name on its bus: its D-Bus front-end starts
        after READY=1, and a figure of the whole daemon (RSS) is taken once it runs."""
        if self.client is None:
            return
        try:
            self.client.wait_owner(FPRINTD_NAME, True, self._owner_mark, timeout=timeout, proc=self.proc)
        except (RuntimeError, TimeoutError) as e:
            raise RuntimeError("%s\n%s" % (e, self.log.dump())) from None

    def companions(self):
        """Other server-side processes an authentication costs: its bus and the stand-ins on it,
        if it has one (PAM's path does not use them; what they use is shown all the same)."""
        return self.bus.processes() if self.bus is not None else {}

    def freeze(self):
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self):
        os.kill(self.pid, signal.SIGCONT)
        self.can_evaluate("alice")  # answers again

    def can_evaluate(self, user):
        result, _ = wire.request(self.socket, "can_evaluate", user=user, policy=1, service=SERVICE)
        return result.get("code")

    # Prints and clients

    def enroll(self, user, print_id):
        # As the user, typing their password, so the print is usable at once (no passwordRequired(boot)).
        rc, cli = harness.enroll(self.world, user, print_id, as_user=user)
        if rc != 0:
            raise RuntimeError("touchgate enroll failed: %s\n%s" % (cli.stderr, cli.out.dump()))

    def use_reader(self, kind):
        """With the daemon stopped: a fresh virtual reader of `kind` in place of the run's (the next
        start uses it alone), and pam_wrapper again for the enrollment there. Returns what
        restore_reader() takes back."""
        self.stop()
        previous = (self.world.reader, self.world.readers, self.reader, self.pam_wrapper)
        reader = harness.VirtualReader(self.world.dir / ("vdev-%s.sock" % kind), self.world, kind)
        self.world.reader, self.world.readers, self.reader = reader, [reader], reader
        self.pam_wrapper = True
        return previous

    def restore_reader(self, previous):
        """With the daemon stopped: the reader (and preload) use_reader() replaced."""
        self.world.reader, self.world.readers, self.reader, self.pam_wrapper = previous

    def without_pam_wrapper(self):
        """Restarts the daemon without pam_wrapper's preload, which only the enrollment's password
        needed: from here on it carries the same preload as fprintd (nss_wrapper). pam_wrapper's
        cost (about 50 KB of RssAnon, its constructor's stack) is no part of either daemon."""
        self.stop()
        self.pam_wrapper = False
        self.start()

    def client_env(self):
        return {}

    def burst_args(self, user, count):
        return ["touchgate", str(self.socket), user, str(count)]

    def direct_scan(self, user, print_id, timeout=10.0):
        """scan → RESULT frame at a direct wire client (EVALUATE, no PAM): (ms, result code)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.socket))
            s.sendall(wire.encode("evaluate", 7, user=user, policy=1, service=SERVICE))
            while True:
                kind, _, fields = wire.read_frame(s)
                if kind == wire.PROGRESS and fields.get("progress") == 1:  # TG_PROGRESS_PROMPT
                    break
                if kind == wire.RESULT:
                    raise RuntimeError("EVALUATE ended before the prompt: %r" % fields)
            t0 = time.monotonic()
            self.reader.scan(print_id)
            while True:
                kind, _, fields = wire.read_frame(s)
                if kind == wire.RESULT:
                    return (time.monotonic() - t0) * 1000.0, fields.get("code")

    def is_reply(self, data):
        """In a trace: the daemon's RESULT frame (length, version 1, kind 0x40)."""
        return len(data) >= 6 and data[4] == 1 and data[5] == wire.RESULT


def _only_child(pid):
    """The one child of `pid` (the daemon that strace started)."""
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        children = f.read().split()
    if len(children) != 1:
        raise RuntimeError("expected one child of %d, found %r" % (pid, children))
    return int(children[0])
