"""One client in a pty, as a person at the keyboard sees and drives it.

Terminal   the client's output with arrival times (prompts without a newline included), keys,
           termios read through the master, "is it reading the keyboard yet", its exit status
screen_text, modes_differences, not_sane   what a person reads, and whether the terminal is
           left as a person can type in it

Every wait has a deadline; nothing sleeps to wait for something (the only loop that polls is
`Terminal.wait_reading`, for a state change that raises no event).
"""

import errno
import fcntl
import os
import platform
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

from harness import DEFAULT_WAIT, WaitTimeout, now

# System calls in which a client sleeps waiting for a key (read, poll, select, pselect6, ppoll).
READ_SYSCALLS = {"x86_64": {0, 7, 23, 270, 271}, "aarch64": {63, 72, 73}}

# Keys as a terminal sends them (ICRNL turns CR into NL for the reader).
ENTER = "\r"
CTRL_C = "\x03"

CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen_text(raw):
    """What a person reads from terminal output: CR dropped, cursor/clear escapes dropped."""
    return CSI.sub("", raw.decode("utf-8", "replace")).replace("\r", "")


class Terminal:
    """One client in a pty, from the keyboard's side (the master). The output is kept whole
    (prompts end without a newline), with arrival times; `expect` waits for text after a cursor."""

    def __init__(self, argv, env, name):
        self.name = name
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.modes_before = termios.tcgetattr(slave)
        self.started = now()
        try:
            self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        finally:
            os.close(slave)  # only the client holds the slave: its exit ends the output (EIO)
        self.master = master
        self.chunks = []  # [(t, bytes)]
        self.closed = False
        self.cursor = 0  # in screen text
        self.auth_from = 0  # screen text offset where authentication began (Client.start)
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self):
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError as e:
                if e.errno != errno.EIO:  # EIO: every holder of the slave side has closed it
                    raise
                chunk = b""
            with self._cv:
                if not chunk:
                    self.closed = True
                    self._cv.notify_all()
                    return
                self.chunks.append((now(), chunk))
                self._cv.notify_all()

    # Output

    def raw(self):
        with self._cv:
            return b"".join(c for _, c in self.chunks)

    def text(self):
        """Everything the person has seen so far."""
        return screen_text(self.raw())

    def _arrival(self, end):
        """When the screen text first reached `end` characters (monotonic)."""
        raw = b""
        for t, chunk in self.chunks:
            raw += chunk
            if len(screen_text(raw)) >= end:
                return t
        return now()

    def expect(self, pattern, timeout=DEFAULT_WAIT):
        """Waits for `pattern` (substring or compiled regex) after the cursor; moves the cursor past it.
        Returns (match text, arrival time). Fails with the whole screen if it does not come in time."""
        search = pattern.search if hasattr(pattern, "search") else (
            lambda s, pos: re.compile(re.escape(pattern)).search(s, pos))
        deadline = now() + timeout
        with self._cv:
            while True:
                text = screen_text(b"".join(c for _, c in self.chunks))
                m = search(text, self.cursor)
                if m:
                    self.cursor = m.end()
                    return m.group(0), self._arrival(m.end())
                left = deadline - now()
                if self.closed or left <= 0:
                    why = "the client closed the terminal" if self.closed else "not within %.1f s" % timeout
                    raise WaitTimeout("%s: waiting for %r: %s; screen so far:\n%s"
                                      % (self.name, getattr(pattern, "pattern", pattern), why, self.transcript()))
                self._cv.wait(left)

    def transcript(self):
        return "\n".join("    | " + line for line in self.text().split("\n"))

    # Keys

    def send(self, keys):
        os.write(self.master, keys.encode())

    def type_line(self, text):
        self.send(text + ENTER)

    # Terminal modes (Linux: termios ioctls on the master act on the slave, the client's tty)

    def modes(self):
        return termios.tcgetattr(self.master)

    def echo_on(self):
        return bool(self.modes()[3] & termios.ECHO)

    def wait_reading(self, secret=False, timeout=DEFAULT_WAIT):
        """Waits until the client reads the keyboard (with echo off when `secret`), as a person sees it
        ready for their keys. Not earlier: clients print the prompt and only then set the terminal,
        some throwing away what was typed in between (libpam_misc: tcsetattr TCSAFLUSH; vlock:
        tcflush), so keys sent at the mere sight of the prompt can be lost. Ready = a process of the
        terminal's foreground process group (login's shell has its own) sleeps in read/poll/select
        (/proc/PID/syscall); a bounded poll, since neither termios changes nor system calls raise an
        event on the master side."""
        waiting = READ_SYSCALLS.get(platform.machine())
        deadline = now() + timeout
        while True:
            calls = self._foreground_syscalls()
            blocked = waiting is None or any(n in waiting for n in calls)
            if blocked and not (secret and self.echo_on()):
                return
            if self.proc.poll() is not None or now() > deadline:
                raise WaitTimeout("%s: not reading the keyboard%s %.1f s after the prompt (foreground in "
                                  "syscalls %s, echo %s); screen so far:\n%s"
                                  % (self.name, " with echo off" if secret else "", timeout, calls,
                                     "on" if self.echo_on() else "off", self.transcript()))
            time.sleep(0.002)

    def _foreground_syscalls(self):
        """The system call numbers the terminal's foreground processes are in (-1: running)."""
        try:
            pgrp = os.tcgetpgrp(self.master)  # Linux: the slave's foreground process group
        except OSError:
            return []
        calls = []
        for pid in _members(lambda pid: os.getpgid(pid) == pgrp):
            try:
                number = Path("/proc/%d/syscall" % pid).read_text().split()[0]
            except (OSError, IndexError):
                continue
            calls.append(int(number) if number.lstrip("-").isdigit() else -1)
        return calls

    # The process

    def wait(self, timeout=DEFAULT_WAIT):
        """Waits for the client to exit and its output to end; returns the exit status."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise WaitTimeout("%s still running after %.1f s; screen so far:\n%s"
                              % (self.name, timeout, self.transcript())) from None
        deadline = now() + timeout
        with self._cv:
            while not self.closed:
                left = deadline - now()
                if left <= 0:
                    raise WaitTimeout("%s exited but its terminal is still held open after %.1f s:\n%s"
                                      % (self.name, timeout, self.transcript()))
                self._cv.wait(left)
        return self.proc.returncode

    def kill(self):
        """SIGKILL to every process of the client's session (it is the session leader, and login's
        shell may sit in a process group of its own); reaps the client."""
        sid = self.proc.pid
        for pid in _members(lambda pid: os.getsid(pid) == sid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.wait(DEFAULT_WAIT)
        self._thread.join(DEFAULT_WAIT)
        if not self._thread.is_alive() and self.master >= 0:
            os.close(self.master)
            self.master = -1


def _members(belongs):
    """The pids for which `belongs(pid)` holds (processes that exit meanwhile are skipped)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if belongs(int(entry)):
                    found.append(int(entry))
            except OSError:
                pass
    return found


SANE_FLAGS = ((3, ("ECHO", "ICANON", "ISIG", "ECHOE", "ECHOK", "IEXTEN")), (0, ("ICRNL",)), (1, ("OPOST", "ONLCR")))


def modes_differences(before, after):
    """The sane-terminal flags that differ between two termios lists, as stty would name the
    `after` state ("-echo", "icanon"); empty if none differs."""
    diffs = []
    for index, flags in SANE_FLAGS:
        for flag in flags:
            bit = getattr(termios, flag)
            if (before[index] & bit) != (after[index] & bit):
                diffs.append("%s%s" % ("" if after[index] & bit else "-", flag.lower()))
    return diffs


def not_sane(modes):
    """The sane-terminal flags that are off in `modes` (empty: a terminal a person can type in)."""
    return ["-" + flag.lower() for index, flags in SANE_FLAGS for flag in flags
            if not modes[index] & getattr(termios, flag)]
