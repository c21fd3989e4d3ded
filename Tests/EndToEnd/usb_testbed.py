"""A USB fingerprint reader plugged in and unplugged while the daemon runs, through umockdev's USB
emulation: a testbed directory holds the emulated /sys and /dev, the daemon runs with umockdev's
preload library pointed at it, and a uevent tells libudev's monitors (libusb's, under libgusb and
libfprint's FpContext) that the reader came or went. libfprint's egis0570 driver takes the reader
(1c7a:0570, a swipe image sensor whose open only claims its interface); an empty USB capture
answers the device's requests, so the reader opens but takes no scan.

umockdev's testbed is driven with python3-gi from Debian's python3, and its uevents have to be sent
from a process that runs under the preload library too: the test talks to a small controller
(this file run as a script under `umockdev-wrapper`) over its standard input and output."""

import os
import re
import shutil
import struct
import subprocess
import sys
import threading

CONTROLLER_PYTHON = "/usr/bin/python3"  # Debian's: python3-gi and umockdev's typelib live there
PRELOAD = "libumockdev-preload.so.0"
READER_DRIVER = "egis0570"
READER_NAME = "Egis Technology Inc. (aka. LighTuning) 0570"
READER_SYSFS = "/sys/devices/usb1/1-1"


def usb_device(sysfs, devnum, vendor, product, speed, devpath, descriptors):
    """A USB device on bus 1 in umockdev's record format: its sysfs attributes (those libusb reads,
    its descriptors among them), udev properties and device node /dev/bus/usb/001/NNN."""
    return "\n".join([
        "P: %s" % sysfs, "N: bus/usb/001/%03d" % devnum,
        "E: SUBSYSTEM=usb", "E: DEVTYPE=usb_device", "E: DEVNAME=/dev/bus/usb/001/%03d" % devnum,
        "E: BUSNUM=001", "E: DEVNUM=%03d" % devnum, "E: PRODUCT=%x/%x/1" % (vendor, product),
        "A: idVendor=%04x" % vendor, "A: idProduct=%04x" % product,
        # umockdev's "\n" escape: the kernel ends these attributes with a newline, libusb checks it
        "A: busnum=1\\n", "A: devnum=%d\\n" % devnum, "A: speed=%d\\n" % speed, "A: devpath=%d\\n" % devpath,
        "A: dev=189:%d\\n" % (devnum - 1), "H: descriptors=%s" % descriptors, ""])


# The bus's root hub (1d6b:0002).
HUB = usb_device("/devices/usb1", 1, 0x1D6B, 0x0002, 480, 0,
                 "12010002090001406b1d020006050302010109021900010100e0000904000001090000000705810304000c")
# The reader: its device descriptor (1c7a:0570, full speed), one configuration with one
# vendor-specific interface and a bulk endpoint each way.
READER = usb_device("/devices/usb1/1-1", 2, 0x1C7A, 0x0570, 12, 1,
                    "12010002000000407a1c7005000101020301" "09022000010100803209040000"
                    "02ff0000000705810240000007050202400000")


class UsbTestbed:
    """The controller, started at once; `env()` is what the daemon needs to see the testbed."""

    def __init__(self, timeout):
        import harness  # the e2e harness's LineLog and deadline (this file also runs without it)
        self.log = harness.LineLog("umockdev controller")
        wrapper = shutil.which("umockdev-wrapper")
        assert wrapper, "umockdev-wrapper is not installed (scripts/deps.sh installs umockdev)"
        self.proc = subprocess.Popen([wrapper, CONTROLLER_PYTHON, "-B", __file__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        threading.Thread(target=harness._pump_lines, args=(lambda: self.proc.stdout.read1(4096), self.log),
                         daemon=True).start()
        self.timeout = timeout
        # The closing " ." tells the whole line arrived (a wait also matches a line in part).
        ready = re.compile(r"^ready (\S+) \.$")
        self.dir = ready.search(self.log.lines[self.log.wait_for(ready, timeout)][1]).group(1)

    def env(self):
        return {"UMOCKDEV_DIR": self.dir}

    def _command(self, command, answer):
        start = len(self.log.lines)
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        self.log.wait_for(re.compile("^%s$" % answer), self.timeout, start=start)

    def plug(self):
        """The reader is there, and libudev's monitors are told ("add")."""
        self._command("plug", "plugged")

    def unplug(self):
        """libudev's monitors are told the reader went ("remove"), and it is gone from /sys and /dev."""
        self._command("unplug", "unplugged")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(self.timeout)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(self.timeout)


def serve():
    """The controller: a testbed with the USB bus's root hub; `plug` and `unplug` from standard
    input, answered on standard output. The commands are read from GLib's main loop instead of a
    blocking read, so the default main context, which umockdev's objects were made in, keeps
    running between them."""
    import gi
    gi.require_version("UMockdev", "1.0")
    from gi.repository import GLib, UMockdev

    testbed = UMockdev.Testbed.new()
    root = testbed.get_root_dir()
    # The preload library connects every /dev path a process opens to this default handler; here
    # (umockdev 0.17.16) those connections are left waiting, a dozen fill its queue, and the preload
    # library exits a process whose connection is then refused. Without it, a path with no handler
    # of its own (/dev/null, /dev/urandom) is the real one; the reader gets its own handler below.
    os.unlink(os.path.join(root, "ioctl", "_default"))
    testbed.add_from_string(HUB)
    # An empty capture in the libpcap format (no packet; link type 220, Linux USB): umockdev then
    # answers the reader's usbfs requests (claiming its interface), and has no transfer to give.
    capture = os.path.join(root, "empty.pcap")
    with open(capture, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 220))

    def run(command):
        if command == "plug":
            testbed.add_from_string(READER)
            testbed.load_pcap(READER_SYSFS, capture)
            testbed.uevent(READER_SYSFS, "add")
            print("plugged", flush=True)
        elif command == "unplug":
            testbed.uevent(READER_SYSFS, "remove")
            testbed.remove_device(READER_SYSFS)
            print("unplugged", flush=True)
        else:
            print("unknown command %r" % command, flush=True)

    loop = GLib.MainLoop()
    pending = b""

    def readable(fd, condition):
        nonlocal pending
        chunk = os.read(fd, 4096)
        if not chunk:  # the test closed our input: done
            loop.quit()
            return False
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            run(line.decode().strip())
        return True

    GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, sys.stdin.fileno(), GLib.IOCondition.IN | GLib.IOCondition.HUP,
                          readable)
    print("ready", root, ".", flush=True)
    loop.run()
    testbed.clear()


if __name__ == "__main__":
    serve()
