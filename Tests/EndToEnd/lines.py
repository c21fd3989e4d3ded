"""Reading what programs print: lines with timestamps, waited for with deadlines (never a sleep)."""

import errno
import os
import threading
import time

DEFAULT_WAIT = 5.0  # seconds; any single expected event arrives in milliseconds


class WaitTimeout(AssertionError):
    """An expected event did not happen before its deadline (an AssertionError: the test fails)."""


def now():
    return time.monotonic()


def ms(seconds):
    return seconds * 1000.0


# ---------------------------------------------------------------------------------------------
# Lines from a stream, with arrival times, and waits with deadlines


class LineLog:
    """Lines read by a background thread, each with its monotonic arrival time.

    A line still waiting for its newline (a prompt such as "Password: ") can be waited for too:
    once a wait matches it, it becomes a line of its own, and the newline that ends it later
    (the Enter after the answer) adds no empty line."""

    def __init__(self, name):
        self.name = name
        self.lines = []  # [(t, text)]
        self.closed = False
        self._pending = b""
        self._pending_t = None
        self._promoted = False  # the pending text was taken as a line by a wait
        self._cv = threading.Condition()

    def add(self, text, t=None):
        with self._cv:
            self.lines.append((now() if t is None else t, text))
            self._cv.notify_all()

    def feed(self, chunk, t):
        """Bytes as read; complete lines (CR stripped) become lines."""
        with self._cv:
            if not self._pending:
                self._pending_t = t
            self._pending += chunk
            *complete, self._pending = self._pending.split(b"\n")
            for raw in complete:
                text = _text(raw)
                if self._promoted:
                    self._promoted = False
                    if not text:
                        continue
                self.lines.append((self._pending_t, text))
                self._pending_t = t
            self._cv.notify_all()

    def close(self):
        with self._cv:
            if self._pending:  # what came after a promoted prompt too: the stream ended without a newline
                self.lines.append((self._pending_t, _text(self._pending)))
            self._pending = b""
            self.closed = True
            self._cv.notify_all()

    def _match_pending(self, match):
        """Takes the unfinished line as a line if it matches (caller holds the lock)."""
        if self._pending and match(_text(self._pending)):
            self.lines.append((self._pending_t, _text(self._pending)))
            self._pending = b""
            self._promoted = True
            return len(self.lines) - 1
        return None

    def texts(self):
        with self._cv:
            return [text for _, text in self.lines]

    def wait_for(self, pattern, timeout=DEFAULT_WAIT, start=0):
        """Index of the first line at or after `start` matching `pattern` (substring or compiled regex)."""
        match = pattern.search if hasattr(pattern, "search") else (lambda line: pattern in line)
        deadline = now() + timeout
        with self._cv:
            while True:
                for i in range(start, len(self.lines)):
                    if match(self.lines[i][1]):
                        return i
                start = max(start, len(self.lines))
                i = self._match_pending(match)
                if i is not None:
                    return i
                left = deadline - now()
                if self.closed or left <= 0:
                    why = "stream ended" if self.closed else "no such line within %.1f s" % timeout
                    raise WaitTimeout("%s: waiting for %r: %s; lines so far:\n%s"
                                      % (self.name, getattr(pattern, "pattern", pattern), why, self.dump()))
                self._cv.wait(left)

    def wait_closed(self, timeout=DEFAULT_WAIT):
        deadline = now() + timeout
        with self._cv:
            while not self.closed:
                left = deadline - now()
                if left <= 0:
                    raise WaitTimeout("%s: output not closed within %.1f s" % (self.name, timeout))
                self._cv.wait(left)

    def dump(self):
        return "\n".join("    | " + text for _, text in self.lines)


def _text(raw):
    return raw.decode("utf-8", "replace").rstrip("\r")


def _pump_lines(read_chunk, log):
    """Feeds `log` the chunks read until EOF, then closes it."""
    try:
        while True:
            chunk = read_chunk()
            if not chunk:
                break
            log.feed(chunk, now())
    finally:
        log.close()


def _pty_reader(fd):
    def read():
        try:
            return os.read(fd, 4096)
        except OSError as e:  # EIO: every holder of the slave side has closed it
            if e.errno == errno.EIO:
                return b""
            raise
    return read
