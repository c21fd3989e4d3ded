"""touchgated for the end-to-end tests: its command line (flags, or as touchgated.service starts
it), its environment, readiness (READY=1, then the reader's line), its stderr and its stop.
Re-exported by harness."""

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

import harness
import usb_testbed
from harness import DEFAULT_WAIT, FAKETIME, TOUCHGATED, LineLog, WaitTimeout, _env, _pump_lines, now
from pam_session import _remove_pam_wrapper_dir


def daemon_env(world):
    """The world's virtual readers (libfprint's own variables), the test users, PAM for its password
    checks, and umockdev's emulated USB bus when the world has one."""
    readers = getattr(world, "readers", None) or [world.reader]
    env = _env(dict(world.nss_env(), LD_PRELOAD="libpam_wrapper.so libnss_wrapper.so",
                    PAM_WRAPPER="1", PAM_WRAPPER_SERVICE_DIR=str(world.pam_dir),
                    FP_DRIVERS_WHITELIST=":".join(r.kind for r in readers),
                    **{harness.READER_ENV[r.kind]: r.path for r in readers},
                    # The world's own bus when it has one; never the host's system bus.
                    DBUS_SYSTEM_BUS_ADDRESS=getattr(world, "bus_address", None) or "unix:path=%s" % (world.dir / "no-bus")))
    testbed = getattr(world, "usb_testbed", None)  # a USB reader emulated by umockdev (usb_testbed.py)
    if testbed is not None:
        env["LD_PRELOAD"] = "%s %s" % (usb_testbed.PRELOAD, env["LD_PRELOAD"])
        env["FP_DRIVERS_WHITELIST"] += ":" + usb_testbed.READER_DRIVER
        env.update(testbed.env())
    return env


READER_SETTLED = re.compile(r"reader: |no fingerprint reader|cannot open fingerprint reader")


class Daemon:
    """touchgated on a virtual reader, with nss_wrapper users; stderr kept line by line.

    Ready is the daemon's own READY=1 on a notify socket (as systemd hears it), not a guess.
    `clock`: a file whose content ("+0", "+90"…) shifts the daemon's wall clock through
    libfaketime, so the policy's time rules are tested without waiting (the monotonic clock,
    which deadlines use, is left alone)."""

    def __init__(self, world, config="/nonexistent", args=(), clock=None, as_systemd=False, prefix=()):
        self.world = world
        self.log = LineLog("touchgated stderr")
        self.argv, env = daemon_command(world, config, args, as_systemd)
        self.argv = list(prefix) + self.argv  # e.g. unshare: the daemon execs in its place, same pid
        self.notify_path = world.dir / ("notify-%d.sock" % len(world.daemons))
        world.daemons.append(self)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        env["NOTIFY_SOCKET"] = str(self.notify_path)
        if clock is not None:
            env["LD_PRELOAD"] += " " + FAKETIME
            env.update(FAKETIME_TIMESTAMP_FILE=str(clock), FAKETIME_NO_CACHE="1", DONT_FAKE_MONOTONIC="1")
        self.started = now()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env, start_new_session=True)
        harness._live_daemons.add(self.proc)
        self._thread = threading.Thread(target=_pump_lines, args=(lambda: self.proc.stderr.read1(4096), self.log),
                                        daemon=True)
        self._thread.start()
        self.ready_after = None

    def wait_ready(self, timeout=10.0):
        """Waits for READY=1 (sent once the socket accepts connections, docs/spec.md §6); fails at once if
        the daemon exits first (its stderr closes)."""
        deadline = now() + timeout
        stderr = self.proc.stderr
        with self.notify:
            while True:
                left = deadline - now()
                if left <= 0:
                    raise WaitTimeout("touchgated did not send READY=1 within %.1f s:\n%s" % (timeout, self.log.dump()))
                readable, _, _ = select.select([self.notify, stderr], [], [], left)
                if self.notify in readable and b"READY=1" in self.notify.recv(4096):
                    self.ready_after = now() - self.started
                    # READY=1 comes before the reader is open; a request about prints or the
                    # reader waits for it. Tests go on once the daemon has said what it found.
                    try:
                        self.log.wait_for(READER_SETTLED, max(deadline - now(), 0.1))
                    except WaitTimeout as e:
                        raise WaitTimeout("%s\nwhere touchgated's threads are:\n%s" % (e, self.stacks())) from None
                    return self
                if self.proc.poll() is not None:
                    self.log.wait_closed(2.0)
                    raise AssertionError("touchgated exited with status %d before it was ready:\n%s"
                                         % (self.proc.returncode, self.log.dump()))
                if stderr in readable:
                    self.log.wait_for(re.compile("."), 0.5)  # output, not an exit: keep waiting

    def stacks(self):
        """Every thread's stack, from gdb when it is installed (what a stalled daemon waits on)."""
        if shutil.which("gdb") is None:
            return "(gdb is not installed)"
        try:
            out = subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-ex", "thread apply all bt 16"],
                                 capture_output=True, text=True, timeout=60).stdout
        except subprocess.TimeoutExpired:
            return "(gdb did not finish within 60 s)"
        return "\n".join(l for l in out.splitlines() if l.startswith(("Thread ", "#")))

    def reader_line(self):
        for text in self.log.texts():
            m = re.search(r"reader: (.*)", text)
            if m:
                return m.group(1)
        return None

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL if it has not exited within `timeout`. Returns the exit status."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # in case a test froze it
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self._thread.join(timeout)
        _remove_pam_wrapper_dir(self.proc.pid)  # left behind if it was killed
        harness._live_daemons.discard(self.proc)
        return self.proc.returncode


def daemon_command(world, config, args=(), as_systemd=False):
    """touchgated's argv and environment: the world's paths as flags; or, `as_systemd`, as
    touchgated.service starts it — no arguments, the paths in RUNTIME_DIRECTORY, STATE_DIRECTORY and
    CONFIGURATION_DIRECTORY (so `config` must be named touchgate.conf and name the print store)."""
    env = daemon_env(world)
    if as_systemd:
        assert Path(config).name == "touchgate.conf" and not args
        env.update(RUNTIME_DIRECTORY=str(world.socket.parent), STATE_DIRECTORY=str(world.state),
                   CONFIGURATION_DIRECTORY=str(Path(config).parent))
        return [str(TOUCHGATED)], env
    return [str(TOUCHGATED), "--socket", str(world.socket), "--state-dir", str(world.state),
            "--print-store", str(world.prints), "--config", str(config)] + list(args), env


def run_daemon_once(world, config, timeout=DEFAULT_WAIT, as_systemd=False):
    """Runs touchgated expecting it to stop by itself (e.g. invalid config); returns CompletedProcess."""
    argv, env = daemon_command(world, config, as_systemd=as_systemd)
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=timeout)
