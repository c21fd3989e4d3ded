"""libfprint's three virtual readers, one per kind of real reader, driven from the tests:
  virtual_device          host matching, no storage, verify only
  virtual_device_storage  match on chip: prints stored, listed, deleted and identified on the device
  virtual_image           an image sensor: host matching (NBIS) with identification
The first two take text commands (one per connection, the driver closes it); the image reader
takes binary frames: a header of two native ints (width, height) then the pixels, or a negative
width for a command (-1 retry, -2 error, -3 the driver's own finger reports on or off, -4 finger,
-5 removal)."""

import array
import ctypes
import fcntl
import functools
import hashlib
import socket
import struct
import termios
import time

import numpy

from lines import DEFAULT_WAIT, WaitTimeout, now

# How long the driver may take to read a frame once the next is to be sent: one still unread then
# was never taken (no scan wanted it), and the test that sent it fails there, not at a later frame.
UNREAD_FRAME_WAIT = 2.0

KINDS = ("virtual_device", "virtual_device_storage", "virtual_image")
ENV_VARIABLE = {"virtual_device": "FP_VIRTUAL_DEVICE", "virtual_device_storage": "FP_VIRTUAL_DEVICE_STORAGE",
                "virtual_image": "FP_VIRTUAL_IMAGE"}
NAME = {"virtual_device": "Virtual device for debugging",
        "virtual_device_storage": "Virtual device with storage and identification for debugging",
        "virtual_image": "Virtual image device for debugging"}
CAN_IDENTIFY = {"virtual_device": False, "virtual_device_storage": True, "virtual_image": True}


@functools.lru_cache(maxsize=1)
def retry_codes():
    """The FpDeviceRetry codes the libfprint the daemon loads knows (its GLib enum type's values):
    TOO_FAST (4) only from libfprint 1.94.9 on; an older one's virtual readers turn `RETRY 4` into
    GENERAL."""
    fprint, gobject = ctypes.CDLL("libfprint-2.so.2"), ctypes.CDLL("libgobject-2.0.so.0")
    fprint.fp_device_retry_get_type.restype = ctypes.c_size_t
    gobject.g_type_class_ref.restype, gobject.g_type_class_ref.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    gobject.g_enum_get_value.restype = ctypes.c_void_p
    gobject.g_enum_get_value.argtypes = [ctypes.c_void_p, ctypes.c_int]
    enum = gobject.g_type_class_ref(fprint.fp_device_retry_get_type())
    return frozenset(code for code in range(16) if gobject.g_enum_get_value(enum, code))


@functools.lru_cache(maxsize=64)
def finger_image(print_id, width=256, height=320):
    """A synthetic fingerprint for `print_id`: ridges around a core, with a phase singularity
    (a ridge ending or a bifurcation to NBIS) at positions drawn from the id. The same id gives the
    same image, so it matches; another id puts the minutiae elsewhere, so it does not. Drawn once
    per id (about 20 ms) and kept: a timed scan then times the reader, not the drawing."""
    seed = int.from_bytes(hashlib.sha256(print_id.encode()).digest()[:8], "little")
    rng = numpy.random.default_rng(seed)
    y, x = numpy.mgrid[0:height, 0:width].astype(float)
    cx, cy = width / 2 + rng.uniform(-20, 20), height / 2 + rng.uniform(-20, 20)
    phase = 2 * numpy.pi * numpy.hypot(x - cx, (y - cy) * 1.2) / 9.0
    for _ in range(24):
        mx, my = rng.uniform(30, width - 30), rng.uniform(30, height - 30)
        phase += rng.choice([-1, 1]) * numpy.arctan2(y - my, x - mx)
    image = numpy.clip(128 + 110 * numpy.cos(phase), 0, 255).astype(numpy.uint8)
    image.flags.writeable = False  # shared by every scan of the id
    return image


class VirtualReader:
    """The control socket of the world's virtual reader. The socket exists while the daemon holds
    the device open: the daemon's "reader: …" line is the event that says so."""

    def __init__(self, path, world=None, kind="virtual_device"):
        self.path = str(path)
        self.world = world
        self.kind = kind
        self.sent = []  # [(t, command)]
        self._image_connection = None

    @property
    def name(self):
        return NAME[self.kind]

    @property
    def can_identify(self):
        return CAN_IDENTIFY[self.kind]

    @property
    def enroll_scans(self):
        """Scans an enrollment takes: the driver's 5 stages, and on a reader that can identify one
        more first, to check that the finger is not enrolled already (as fprintd does)."""
        return 5 + (1 if self.can_identify else 0)

    def _connect(self, deadline, timeout):
        daemon = self.world.daemon if self.world is not None else None
        if daemon is not None:
            daemon.log.wait_for("reader: ", timeout)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(max(0.01, deadline - now()))
        try:
            s.connect(self.path)
        except OSError as e:
            s.close()
            raise WaitTimeout("virtual reader socket %s: %s" % (self.path, e))
        return s

    def send(self, command, timeout=DEFAULT_WAIT, newline=True):
        """A text command (virtual_device, virtual_device_storage): returns, once the driver took it,
        what it answered (LIST: the ids of the prints in its storage, one a line). `newline=False`
        for a command whose argument the driver takes to the end of what it read (SET_SCAN_TYPE)."""
        assert self.kind != "virtual_image", "the image reader takes frames, not %r" % command
        deadline = now() + timeout
        answer = b""
        with self._connect(deadline, timeout) as s:
            s.sendall(command.encode() + (b"\n" if newline else b""))
            self.sent.append((now(), command))
            while True:  # the driver closes the connection once it has taken the command
                s.settimeout(max(0.01, deadline - now()))
                try:
                    chunk = s.recv(4096)
                    if not chunk:
                        return answer.decode("utf-8", "replace")
                    answer += chunk
                except socket.timeout:
                    raise WaitTimeout("virtual reader did not take %r within %.1f s" % (command, timeout))

    def _frame(self, data, what, timeout=DEFAULT_WAIT):
        # A new connection for each frame: the driver starts reading a connection when its device
        # becomes active, so a frame sent a moment before that waits in the socket instead of
        # being read (and dropped) by a read left over from the previous scan. A new connection
        # replaces the old one and drops what is unread there, so first the previous frame must
        # have been read (the socket's send queue is empty).
        deadline = now() + timeout
        if self._image_connection is not None:
            connection, self._image_connection = self._image_connection, None
            with connection:
                if not self._wait_read(connection, min(deadline, now() + UNREAD_FRAME_WAIT)):
                    raise WaitTimeout("the image reader did not read %r within %.1f s, before %r"
                                      % (self.sent[-1][1], UNREAD_FRAME_WAIT, what))
        self._image_connection = self._connect(deadline, timeout)
        self._image_connection.sendall(data)
        self.sent.append((now(), what))

    @staticmethod
    def _wait_read(connection, deadline):
        """Whether the peer has read everything sent on `connection` by `deadline` (a bounded poll
        at 5 ms steps: the kernel tells no event for it)."""
        queued = array.array("i", [0])
        while True:
            try:
                fcntl.ioctl(connection.fileno(), termios.TIOCOUTQ, queued)
            except OSError:
                return True  # the connection is gone: nothing of it waits
            if queued[0] == 0:
                return True
            if now() >= deadline:
                return False
            time.sleep(0.005)

    def _image_command(self, code, value, what):
        self._frame(struct.pack("=ii", code, value), what)

    def scan(self, print_id):
        if self.kind == "virtual_image":
            image = finger_image(print_id)
            height, width = image.shape
            self._frame(struct.pack("=ii", width, height) + image.tobytes(), "SCAN %s" % print_id)
        else:
            self.send("SCAN %s" % print_id)

    def hold(self, print_id):
        """The image reader: a finger put on the reader and scanned, and left there (the driver's
        own finger reports turned off for it) until `finger(False)` lifts it."""
        assert self.kind == "virtual_image", "only the image reader reports a finger left on it"
        image = finger_image(print_id)
        height, width = image.shape
        self._frame(struct.pack("=ii", -3, 0) + struct.pack("=ii", -4, 1) + struct.pack("=ii", width, height)
                    + image.tobytes(), "HOLD %s" % print_id)

    def retry(self, code):
        """libfprint's FpDeviceRetry: 0 general, 1 too short, 2 centre finger, 3 remove finger."""
        if self.kind == "virtual_image":
            self._image_command(-1, code, "RETRY %d" % code)
        else:
            self.send("RETRY %d" % code)

    def error(self, code):
        """libfprint's FpDeviceError (0 general … 9 duplicate, 256 removed, 257 too hot)."""
        if self.kind == "virtual_image":
            self._image_command(-2, code, "ERROR %d" % code)
        else:
            self.send("ERROR %d" % code)

    def finger(self, present):
        """libfprint's finger status as the driver reports it: a finger on the reader, or none."""
        if self.kind == "virtual_image":
            self._image_command(-4, 1 if present else 0, "FINGER %d" % present)
        else:
            self.send("FINGER %d" % present)

    def unplug(self):
        if self.kind == "virtual_image":
            self._image_command(-5, 0, "UNPLUG")
        else:
            self.send("UNPLUG")

    def close(self):
        if self._image_connection is not None:
            self._image_connection.close()
            self._image_connection = None
