"""A minimal client of touchgated's wire protocol (touchgate_wire.h), for tests that need exact codes.

Runs in-process as root, or as a test user in a child process (`as_user`), since the daemon decides
rights from the socket peer's credentials."""

import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

KIND = {"can_evaluate": 0x01, "evaluate": 0x02, "cancel": 0x03, "enroll": 0x04, "list": 0x05,
        "delete": 0x06, "devices": 0x07, "status": 0x08, "enable": 0x09, "disable": 0x0A,
        "lock": 0x0B, "reset": 0x0C, "domain_state": 0x0D, "monitor": 0x0E, "password": 0x0F,
        "password_success": 0x10, "verify_password": 0x11, "keyring_enable": 0x12, "keyring_disable": 0x13}
RESULT, PROGRESS, EVENT = 0x40, 0x41, 0x42
TAG = {"user": 1, "policy": 2, "service": 3, "max_tries": 4, "timeout": 5, "locale": 6, "tty": 7,
       "rhost": 8, "finger": 9, "all": 10, "code": 11, "message": 12, "style": 13, "progress": 14,
       "stage": 15, "stages": 16, "device": 17, "reason": 18, "seconds": 19, "flags": 20,
       "password": 21, "domain_state": 22, "json": 23}
INT_TAGS = {2, 4, 5, 10, 11, 13, 14, 15, 16, 19, 20}
NAME = {v: k for k, v in TAG.items()}
KEEPALIVE = 6
# An answer waited for through keepalives (a password check the PAM stack delays, the readers'
# first opening, the TPM) comes within the CLI's own bound for a short request (docs/spec.md §6).
REQUEST_DEADLINE = 45.0


def encode(kind, request_id, **fields):
    body = struct.pack(">BBHI", 1, KIND[kind], 0, request_id)
    for key, value in fields.items():
        tag = TAG[key]
        if tag in INT_TAGS:
            body += struct.pack(">HHi", tag, 4, value)
        else:
            data = value.encode()
            body += struct.pack(">HH", tag, len(data)) + data
    return struct.pack(">I", len(body)) + body


def read_frame(sock, deadline=None):
    """One frame; each read waits for what is left until `deadline` (time.monotonic()) when given,
    else for the socket's own timeout."""
    def exactly(n):
        data = b""
        while len(data) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("timed out")
                sock.settimeout(left)
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError("daemon closed the connection")
            data += chunk
        return data
    (length,) = struct.unpack(">I", exactly(4))
    body = exactly(length)
    _, kind, _, request_id = struct.unpack(">BBHI", body[:8])
    fields, p = {}, 8
    while p < len(body):
        tag, n = struct.unpack(">HH", body[p:p + 4])
        raw = body[p + 4:p + 4 + n]
        p += 4 + n
        value = struct.unpack(">i", raw)[0] if tag in INT_TAGS else raw.decode()
        fields.setdefault(NAME.get(tag, str(tag)), []).append(value)
    return kind, request_id, {k: ("".join(v) if k == "json" else v[0] if len(v) == 1 and k not in ("finger", "device") else v)
                              for k, v in fields.items()}


def request(socket_path, kind, timeout=REQUEST_DEADLINE, **fields):
    """Sends one request; returns (RESULT fields, [progress messages]) once the answer has come,
    within `timeout` seconds in all. Keepalives are skipped."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(socket_path))
        s.sendall(encode(kind, 7, **fields))
        progress = []
        while True:
            try:
                k, rid, f = read_frame(s, deadline)
            except socket.timeout:
                raise TimeoutError("no answer to %s within %.1f s (progress so far: %r)"
                                   % (kind, timeout, progress)) from None
            assert rid == 7, "reply for another request id: %r" % rid
            if k == PROGRESS:
                if f.get("progress") != KEEPALIVE:
                    progress.append(f.get("message"))
                continue
            assert k == RESULT, "unexpected frame kind %#x" % k
            return f, progress


BUSY, UNSOLICITED = -2008, 0xFFFFFFFF


def flood(socket_path, count, hold=None):
    """Opens `count` connections, then asks each for the device list: a connection the daemon
    took answers it; one it refused at accept has its unsolicited TG_ERR_BUSY refusal waiting.
    Returns {"answered": n, "busy": n, "other": [...]}; the connections are kept in `hold` (a list)
    when given, closed otherwise."""
    conns = []
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5.0)
        s.connect(str(socket_path))
        conns.append(s)
    tally = {"answered": 0, "busy": 0, "other": []}
    for s in conns:
        try:
            s.sendall(encode("devices", 7))
        except OSError:
            pass  # refused: the daemon closed it after its refusal
        try:
            k, rid, f = read_frame(s)
        except (EOFError, OSError) as e:
            tally["other"].append(repr(e))
            continue
        if rid == UNSOLICITED and f.get("code") == BUSY:
            tally["busy"] += 1
        elif rid == 7 and k == RESULT:
            tally["answered"] += 1
        else:
            tally["other"].append((k, rid, f))
    if hold is None:
        for s in conns:
            s.close()
    else:
        hold.extend(conns)
    return tally


PROMPT, QUEUED = 1, 4  # TG_PROGRESS_*


def leave_prompts(socket_path, user, count):
    """Holds the reader with a prompt for `user`, then `count` times starts another, sees it queued
    behind the first and leaves it (closes the connection); then leaves the first. Returns `count`."""
    def progress_until(s, wanted):
        deadline = time.monotonic() + 10
        while True:
            kind, _, f = read_frame(s, deadline)
            assert kind != RESULT, "answered: %r" % f
            if kind == PROGRESS and f.get("progress") == wanted:
                return

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as holder:
        holder.connect(str(socket_path))
        holder.sendall(encode("evaluate", 1, user=user, policy=1, timeout=60))
        progress_until(holder, PROMPT)
        for _ in range(count):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(socket_path))
                s.sendall(encode("evaluate", 2, user=user, policy=1, timeout=60))
                progress_until(s, QUEUED)
    return count


def run_as(user_uid, call):
    """Evaluates `call` (an expression using this module's functions) in a child process running
    as `user_uid`, so SO_PEERCRED names that user; returns its JSON value."""
    with open(os.path.abspath(__file__)) as f:
        source = f.read()
    code = source + "\nprint(json.dumps(%s))\n" % call
    out = subprocess.run([SYSTEM_PYTHON, "-c", code], capture_output=True, text=True, timeout=30,
                         user=user_uid, group=user_uid, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# As long as `run_as` gives its child: a flood reads one answer per connection.
HOLD_DEADLINE = 30.0


class hold_as:
    """A child process running as `user_uid` that opens `count` connections (see `flood`) and holds
    them until `release()`; `tally` is what `flood` saw."""

    def __init__(self, user_uid, socket_path, count):
        with open(os.path.abspath(__file__)) as f:
            source = f.read()
        code = source + ("\n_held = []\nprint(json.dumps(flood(%r, %d, hold=_held)), flush=True)\nsys.stdin.read()\n"
                         % (str(socket_path), count))
        self.proc = subprocess.Popen([SYSTEM_PYTHON, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, user=user_uid, group=user_uid, extra_groups=[], cwd="/",
                                     env={"PATH": "/usr/bin:/bin"})
        # The child's only line, written at once: it ends when the flood is done.
        if not select.select([self.proc.stdout], [], [], HOLD_DEADLINE)[0]:
            self.proc.kill()
            self.proc.wait()
            raise TimeoutError("the flooding child printed nothing within %.0f s" % HOLD_DEADLINE)
        line = self.proc.stdout.readline()
        assert line, "the flooding child exited early"
        self.tally = json.loads(line)

    def release(self):
        self.proc.stdin.close()
        self.proc.wait(10)


# The test users may read neither this checkout nor root's own interpreter: the child gets the
# system interpreter and this file's source inline.
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def request_as(user_uid, socket_path, kind, **fields):
    """`request` from a child process running as `user_uid` (so SO_PEERCRED names that user)."""
    with open(os.path.abspath(__file__)) as f:
        source = f.read()
    code = source + ("\nr, _ = request(%r, %r, **json.loads(sys.argv[1]))\nprint(json.dumps(r))\n"
                     % (str(socket_path), kind))
    out = subprocess.run([SYSTEM_PYTHON, "-c", code, json.dumps(fields)], capture_output=True, text=True,
                         timeout=10, user=user_uid, group=user_uid, extra_groups=[], cwd="/",
                         env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
