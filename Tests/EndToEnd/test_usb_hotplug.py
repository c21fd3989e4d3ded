"""A USB reader plugged in and unplugged while the daemon runs (docs/readers.md, "Readers that come
and go"), emulated by umockdev (usb_testbed.py): libfprint's FpContext finds it through libgusb's
hotplug and says so with device-added, the daemon opens and serves it beside the readers it serves
already, and libfprint's "removed" lets it go. Beside it, libfprint's virtual reader, which the
daemon found first and which is the default reader while it is there."""

import re

import pytest

import harness
import usb_testbed
from fprintd_world import BusWorld, interfaces_added, manager

DEVICE = "/net/reactivated/Fprint/Device/%d"
SERVED = re.compile(r"reader: (.+) \(\w+\), \d+ enroll stages")


@pytest.fixture
def usb_world(request):
    """A BusWorld with libfprint's virtual reader and an empty emulated USB bus, the daemon serving."""
    w = BusWorld("virtual_device")
    w.usb_testbed = None

    def close(show_logs):
        if show_logs:
            for log in (w.daemon.log if w.daemon else None, w.usb_testbed.log if w.usb_testbed else None):
                if log is not None:
                    print(log.dump())
        w.close()
        if w.usb_testbed is not None:
            w.usb_testbed.close()

    try:
        w.usb_testbed = usb_testbed.UsbTestbed(harness.DEFAULT_WAIT)
        w.start_daemon()
        w.daemon.log.wait_for(SERVED)
    except BaseException:
        close(show_logs=True)
        raise
    yield w
    close(show_logs=harness.failed(request))


def plug_while_busy(world):
    """Plugs the USB reader in while the daemon's reader thread runs an enrollment on the virtual
    reader, and ends that enrollment once the daemon has heard of the new reader (FpContext's
    device-added): the new reader is opened when the action running has ended, after libusb's own
    handling of the plug. umockdev 0.17.16's preload library is not thread-safe, and an open that
    races libusb's handling of the uevent in another thread of the daemon fails inside it."""
    log = world.daemon.log
    cli = harness.CliProcess(world, "enroll", "--user", "alice")
    cli.out.wait_for(re.compile(r"scan your finger"))
    mark = len(log.lines)
    world.usb_testbed.plug()
    log.wait_for("a fingerprint reader was plugged in: %s" % usb_testbed.READER_NAME, start=mark)
    cli.proc.kill()
    cli.wait()


def test_a_usb_reader_plugged_in_is_served_beside_the_others_and_leaves_when_unplugged(usb_world):
    world = usb_world
    log = world.daemon.log
    assert manager(world, "GetDevices")[0] == [DEVICE % 0]
    assert world.root.property("name") == world.reader.name

    # Plugged in beside the reader served: served too (InterfacesAdded), the first stays the default.
    signals = world.root.signal_count()
    plug_while_busy(world)
    args = interfaces_added(world, DEVICE % 1, signals)["args"]
    assert args[1]["net.reactivated.Fprint.Device"]["name"] == usb_testbed.READER_NAME
    assert args[1]["net.reactivated.Fprint.Device"]["scan-type"] == "swipe"
    assert manager(world, "GetDevices")[0] == [DEVICE % 0, DEVICE % 1]
    assert manager(world, "GetDefaultDevice") == [DEVICE % 0]
    assert world.cli("devices").stdout.splitlines() == [
        "%s (virtual_device)" % world.reader.name, "%s (%s)" % (usb_testbed.READER_NAME, usb_testbed.READER_DRIVER)]
    status = world.cli("status", "--device", usb_testbed.READER_DRIVER).stdout.splitlines()
    assert "canEvaluate.name: biometryNotEnrolled" in status

    # The virtual reader unplugged: the USB reader is left, and is the default now.
    signals = world.root.signal_count()
    world.reader.unplug()
    world.root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE % 0, start=signals)
    assert manager(world, "GetDevices")[0] == [DEVICE % 1]
    assert manager(world, "GetDefaultDevice") == [DEVICE % 1]
    assert "canEvaluate.name: biometryNotEnrolled" in world.cli("status").stdout.splitlines()

    # Unplugged: libfprint's "removed"; nothing is served, the bus says so.
    signals = world.root.signal_count()
    world.usb_testbed.unplug()
    log.wait_for("the fingerprint reader was unplugged: %s" % usb_testbed.READER_NAME)
    world.root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE % 1, start=signals)
    assert manager(world, "GetDevices")[0] == []
    assert "canEvaluate.name: biometryNotAvailable" in world.cli("status").stdout.splitlines()

    # Plugged in again: opened at once (FpContext's device-added), a new object.
    signals = world.root.signal_count()
    mark = len(log.lines)
    world.usb_testbed.plug()
    log.wait_for("a fingerprint reader was plugged in: %s" % usb_testbed.READER_NAME, start=mark)
    assert interfaces_added(world, DEVICE % 2, signals)["args"][1]["net.reactivated.Fprint.Device"]["name"] == usb_testbed.READER_NAME
    assert manager(world, "GetDevices")[0] == [DEVICE % 2]


def test_a_usb_reader_unplugged_while_enrolling_is_gone_at_once_for_new_requests(usb_world):
    """The emulated reader never completes a transfer, so its driver never ends the enrollment's
    scan by itself, as a driver slow to notice would: libfprint's removed property, which changes
    at once, takes the reader away from every new request all the same; the other reader stays."""
    world = usb_world
    log = world.daemon.log
    signals = world.root.signal_count()
    plug_while_busy(world)
    interfaces_added(world, DEVICE % 1, signals)
    cli = harness.CliProcess(world, "enroll", "--user", "bob", "--device", usb_testbed.READER_DRIVER)
    cli.out.wait_for(re.compile(r"scan your finger"))  # the enrollment's first scan: the reader is busy
    signals = world.root.signal_count()
    mark = len(log.lines)
    world.usb_testbed.unplug()
    log.wait_for("the fingerprint reader was unplugged: %s" % usb_testbed.READER_NAME, start=mark)
    world.root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE % 1, start=signals)
    gone = world.cli("status", "--device", usb_testbed.READER_DRIVER).stdout.splitlines()
    assert "canEvaluate.name: biometryNotAvailable" in gone
    assert manager(world, "GetDevices")[0] == [DEVICE % 0]
    assert "canEvaluate.name: biometryNotEnrolled" in world.cli("status", "--user", "bob").stdout.splitlines()
    cli.proc.kill()
    cli.wait()
