"""The PAM client both systems are driven with: pamtester through pam_wrapper, in a pty.

pamtester's stdout is block-buffered on a pipe, so it writes to a pty (line-buffered), whose lines
tell the bench when to scan. The figures come from a shim preloaded into pamtester (pamtiming.c);
its CPU time comes from wait4() when it exits.
"""

import errno
import itertools
import os
import pty
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

import harness


class ClientTimeout(AssertionError):
    """A PAM client did not show what was expected, or did not end, before its deadline."""


class PtyProcess:
    """A program whose stdin, stdout and stderr are a pty; its lines timed as they arrive.

    `changed` (a threading.Condition), when given, is notified on every line, so that one waiter can
    watch several processes at once."""

    def __init__(self, argv, env, changed=None):
        self.name = " ".join(os.path.basename(a) for a in argv[:3])
        self.log = harness.LineLog(self.name)
        self.changed = changed
        self.exited = None    # monotonic time of the exit
        self.cpu = None       # seconds of CPU (user + system), from wait4
        master, slave = pty.openpty()
        self._master = master
        # The reader waits before the program starts, so no line comes before it reads.
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                         start_new_session=True)
        finally:
            os.close(slave)  # once no process holds it, the reader gets EIO and closes the master
        self.pidfd = os.pidfd_open(self.proc.pid)

    def _pump(self):
        try:
            while True:
                try:
                    chunk = os.read(self._master, 4096)
                except OSError as e:  # EIO: the slave side is closed
                    if e.errno != errno.EIO:
                        raise
                    chunk = b""
                if not chunk:
                    break
                self.log.feed(chunk, time.monotonic())
                self._notify()
        finally:
            self.log.close()
            os.close(self._master)
            self._notify()

    def _notify(self):
        if self.changed is not None:
            with self.changed:
                self.changed.notify_all()

    # Lines

    def wait_for(self, pattern, timeout=harness.DEFAULT_WAIT, start=0):
        """(index, arrival time) of the first line at or after `start` matching `pattern`."""
        try:
            i = self.log.wait_for(pattern, timeout, start)
        except harness.WaitTimeout as e:
            raise ClientTimeout(str(e)) from None
        return i, self.log.lines[i][0]

    def find(self, pattern, start=0):
        """Index of a line already shown that matches, else None (does not wait)."""
        match = pattern.search if hasattr(pattern, "search") else (lambda text: pattern in text)
        for i, text in enumerate(self.log.texts()[start:], start):
            if match(text):
                return i
        return None

    def transcript(self):
        return self.log.dump()

    # The process

    def finish(self, timeout=harness.DEFAULT_WAIT):
        """Waits for pamtester to exit (and its output to end); returns self."""
        if self.exited is None:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                raise ClientTimeout("%s still running after %.1f s:\n%s" % (self.name, timeout, self.transcript()))
            self.exited = time.monotonic()
            self._reap()
        self._thread.join(timeout)
        return self

    def _reap(self):
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu = usage.ru_utime + usage.ru_stime
        os.close(self.pidfd)
        self.pidfd = None

    def kill(self):
        if self.exited is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.exited = time.monotonic()
            self._reap()
            harness._remove_pam_wrapper_dir(self.proc.pid)  # a killed pam_wrapper leaves it behind
        self._thread.join(harness.DEFAULT_WAIT)


def build_timing_shim(directory):
    """Compiles pamtiming.c (preloaded into pamtester: times pam_authenticate and the conversation)."""
    out = Path(directory) / "pamtiming.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(out),
                    str(Path(__file__).with_name("pamtiming.c")), "-ldl"], check=True)
    return out


class Timing:
    """What the preloaded shim saw inside pamtester, on time.monotonic()'s clock (seconds)."""

    def __init__(self, path):
        self.start = self.end = self.rc = None
        self.messages = []  # [(t, style, text)]
        for line in path.read_text().splitlines() if path.exists() else []:
            kind, rest = line.split(" ", 1)
            if kind == "conv":
                t, style, text = (rest.split(" ", 2) + [""])[:3]
                self.messages.append((int(t) / 1e9, int(style), text))
            elif kind == "start":
                self.start = int(rest) / 1e9
            elif kind == "end":
                t, rc = rest.split()
                self.end, self.rc = int(t) / 1e9, int(rc)

    @property
    def result(self):
        return None if self.rc is None else harness.PAM_CODE_NAMES[self.rc]

    def message(self, pattern, after=0.0):
        """Time at which the module handed the first matching message to the application."""
        for t, _, text in self.messages:
            if t > after and pattern.search(text):
                return t
        raise AssertionError("no conversation message matching %r after %.6f: %r"
                             % (pattern.pattern, after, self.messages))


class PamClient(PtyProcess):
    """`pamtester -v SERVICE USER authenticate`, preloading pam_wrapper, nss_wrapper and the timing shim.

    The pty drives the run (a prompt line there is when the bench puts a finger on the reader);
    the figures come from the shim's clock readings at pam_authenticate() and misc_conv()."""

    _serial = itertools.count()

    def __init__(self, world, service, user, shim, extra_env=None, changed=None):
        self.service, self.user = service, user
        self.timing_file = world.dir / ("timing-%d" % next(self._serial))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": "/root",
               "LD_PRELOAD": "%s libpam_wrapper.so libnss_wrapper.so" % shim, "PAM_WRAPPER": "1",
               "PAM_WRAPPER_SERVICE_DIR": str(world.pam_dir), "BENCH_TIMING_FILE": str(self.timing_file)}
        env.update(world.nss_env())
        env.update(extra_env or {})
        super().__init__(["pamtester", "-v", service, user, "authenticate"], env, changed)
        self._timing = None

    def timing(self):
        """The shim's records (once pamtester has exited)."""
        if self._timing is None:
            self._timing = Timing(self.timing_file)
            if self.timing_file.exists():
                self.timing_file.unlink()
            if self._timing.end is None:
                raise AssertionError("no timing from %s:\n%s" % (self.name, self.transcript()))
        return self._timing


def wait_any(clients, changed, ready, timeout):
    """Waits on `changed` until `ready()` returns something true; returns it."""
    deadline = time.monotonic() + timeout
    with changed:
        while True:
            value = ready()
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClientTimeout("nothing happened within %.1f s:\n\n%s"
                                    % (timeout, "\n\n".join(c.transcript() for c in clients)))
            changed.wait(left)


def pump_lines(stream, log):
    """Feeds a daemon's stderr to `log` line by line until it ends."""
    try:
        for line in iter(stream.readline, b""):
            log.add(line.decode("utf-8", "replace").rstrip("\n"))
    finally:
        log.close()
