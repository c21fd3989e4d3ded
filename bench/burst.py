"""A burst of N clients asking, at the same moment, whether a user could use a fingerprint now.

    burst.py touchgate SOCKET USER N        canEvaluate over touchgate's wire protocol
    burst.py fprintd ADDRESS DEVICE USER N  ListEnrolledFingers over D-Bus (what pam_fprintd asks)

Runs in a process of its own so that it does not delay the bench's timing of the PAM prompt beside
it. All clients run on one GLib main loop, each with its own connection (as each PAM client has),
so none waits for another on this side. Prints "ready", starts them all on a line on stdin, then
prints one JSON line: each client's time from the start to its answer or its failure, in ms.
A client gives up after TIMEOUT seconds (a PAM module that waited longer would be useless).
"""

import json
import os
import socket
import struct
import sys
import time

from gi.repository import Gio, GLib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "EndToEnd"))

TIMEOUT = 5.0
RETRY_MS = 10  # pam_touchgate retries a full listen backlog (EAGAIN) every 10 ms; so does this client


class Burst:
    def __init__(self, count):
        self.count = count
        self.loop = GLib.MainLoop()
        self.latencies, self.failures = [], []
        self.start = None

    def done(self, error=None):
        self.latencies.append((time.monotonic() - self.start) * 1000.0)
        if error is not None:
            self.failures.append(error[:200])
        if len(self.latencies) == self.count:
            self.loop.quit()

    def run(self, start_one):
        self.start = time.monotonic()
        for _ in range(self.count):
            start_one(self)
        GLib.timeout_add(int(TIMEOUT * 3000), self.loop.quit)  # a last resort; clients have their own
        self.loop.run()
        return (time.monotonic() - self.start) * 1000.0


def touchgate(path, user):
    import wire
    request = wire.encode("can_evaluate", 7, user=user, policy=1, service="bench-burst")

    class Client:
        def __init__(self, burst):
            self.burst, self.deadline = burst, burst.start + TIMEOUT
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.setblocking(False)
            self.buf = bytearray()
            self.sources = []
            self.connect()

        def end(self, error=None):
            for source in self.sources:
                GLib.source_remove(source)
            self.sources = []
            self.sock.close()
            self.burst.done(error)
            return False

        def connect(self):
            self.sources = []
            try:
                self.sock.connect(path)  # a Unix socket connects at once, or says EAGAIN: backlog full
            except BlockingIOError:
                if time.monotonic() + RETRY_MS / 1000.0 > self.deadline:
                    return self.end("timeout while the listen backlog was full")
                self.sources = [GLib.timeout_add(RETRY_MS, self.connect)]
                return False
            except OSError as e:
                return self.end("connect: %s" % e)
            self.sock.send(request)  # 50 bytes: fits in an empty socket buffer
            left = max(1, int((self.deadline - time.monotonic()) * 1000))
            self.sources = [GLib.io_add_watch(self.sock.fileno(), GLib.PRIORITY_DEFAULT,
                                              GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, self.readable),
                            GLib.timeout_add(left, self.late)]
            return False

        def readable(self, _fd, _condition):
            data = self.sock.recv(4096)
            if not data:
                self.sources.pop(0)  # this watch ends by returning False
                return self.end("connection closed")
            self.buf.extend(data)
            while len(self.buf) >= 4 and len(self.buf) >= 4 + struct.unpack(">I", self.buf[:4])[0]:
                length = struct.unpack(">I", self.buf[:4])[0]
                kind = self.buf[5]
                del self.buf[:4 + length]
                if kind == wire.RESULT:
                    self.sources.pop(0)
                    return self.end()
            return True

        def late(self):
            self.sources.pop()  # this timer ends by returning False
            return self.end("no answer within %.0f s" % TIMEOUT)

    return Client


def fprintd(address, device, user):
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION

    def start_one(burst):
        def connected(_source, result, _data):
            try:
                conn = Gio.DBusConnection.new_for_address_finish(result)
            except GLib.Error as e:
                burst.done("connect: %s" % e.message)
                return
            conn.call("net.reactivated.Fprint", device, "net.reactivated.Fprint.Device", "ListEnrolledFingers",
                      GLib.Variant("(s)", (user,)), GLib.VariantType("(as)"), Gio.DBusCallFlags.NONE,
                      int(TIMEOUT * 1000), None, answered, None)

        def answered(conn, result, _data):
            try:
                conn.call_finish(result)
                error = None
            except GLib.Error as e:
                error = e.message
            conn.close(None, None, None)
            burst.done(error)

        Gio.DBusConnection.new_for_address(address, flags, None, None, connected, None)
    return start_one


def main(argv):
    kind, count = argv[0], int(argv[-1])
    start_one = touchgate(*argv[1:3]) if kind == "touchgate" else fprintd(*argv[1:4])
    burst = Burst(count)
    print("ready", flush=True)
    if not sys.stdin.readline():
        return 1
    wall = burst.run(start_one)
    print(json.dumps({"latencies_ms": burst.latencies, "failures": burst.failures,
                      "unfinished": count - len(burst.latencies), "wall_ms": wall}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
