"""Writes a print the way fprintd 1.94 stores one, with libfprint itself and no touchgate: enrolls
on libfprint's virtual reader (its own socket), then saves fp_print_serialize()'s bytes as
<store>/<user>/<driver>/<device id>/<finger in hex>, directories 0700 and the file 0644.

Run by Debian's /usr/bin/python3 (GLib's introspection bindings and libfprint's typelib):
  fprintd_print.py STORE USER FINGER_NUMBER SCAN_ID VIRTUAL_DEVICE_SOCKET
Prints the file's path.
"""

import os
import socket
import sys
import threading

import gi

gi.require_version("FPrint", "2.0")
from gi.repository import FPrint  # noqa: E402


def send(path, command):
    """One command per connection; the driver closes it once it has taken the command."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(command.encode() + b"\n")
        while s.recv(256):
            pass


def main():
    store, user, finger, scan_id, vdev = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    os.environ["FP_VIRTUAL_DEVICE"] = vdev
    os.environ["FP_DRIVERS_WHITELIST"] = "virtual_device"
    device = FPrint.Context().get_devices()[0]
    device.open_sync(None)  # the driver's socket exists from now on
    template = FPrint.Print.new(device)
    template.set_finger(FPrint.Finger(finger))
    template.set_username(user)
    stages = device.get_nr_enroll_stages()
    feeder = threading.Thread(target=lambda: [send(vdev, "SCAN " + scan_id) for _ in range(stages)])
    feeder.start()  # each SCAN is taken while the enrollment below runs
    enrolled = device.enroll_sync(template, None, None, None)
    feeder.join()
    device.close_sync(None)

    directory = store
    for part in (user, enrolled.get_driver(), enrolled.get_device_id()):  # each level 0700, as fprintd
        directory = os.path.join(directory, part)
        os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, "%x" % finger)
    with open(path, "wb") as f:
        f.write(bytes(enrolled.serialize()))
    os.chmod(path, 0o644)
    print(path)


if __name__ == "__main__":
    main()
