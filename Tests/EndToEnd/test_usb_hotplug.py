"""A USB reader plugged in and unplugged while the daemon runs (docs/readers.md, "Readers that come
and go"), emulated by umockdev (usb_testbed.py): libfprint's FpContext finds it through libgusb's
hotplug and says so with device-added, the daemon opens it when it serves no reader, and libfprint's
"removed" lets it go. Beside it, libfprint's virtual reader, which the daemon serves first."""

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


def test_a_usb_reader_plugged_in_is_served_when_none_is_and_leaves_when_unplugged(usb_world):
    world = usb_world
    log = world.daemon.log
    assert manager(world, "GetDevices")[0] == [DEVICE % 0]
    assert world.root.property("name") == world.reader.name

    # Plugged in beside the reader served: found, and the reader served stays.
    mark = len(log.lines)
    world.usb_testbed.plug()
    log.wait_for("another fingerprint reader was plugged in (%s); serving %s still"
                 % (usb_testbed.READER_NAME, world.reader.name), start=mark)
    assert manager(world, "GetDevices")[0] == [DEVICE % 0]

    # The virtual reader unplugged: the USB reader, which libfprint lists now, is served.
    signals = world.root.signal_count()
    world.reader.unplug()
    args = interfaces_added(world, DEVICE % 1, signals)["args"]
    assert args[1]["net.reactivated.Fprint.Device"]["name"] == usb_testbed.READER_NAME
    assert args[1]["net.reactivated.Fprint.Device"]["scan-type"] == "swipe"
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

    # Plugged in again while none is served: opened at once (FpContext's device-added).
    signals = world.root.signal_count()
    mark = len(log.lines)
    world.usb_testbed.plug()
    log.wait_for("a fingerprint reader was plugged in: %s" % usb_testbed.READER_NAME, start=mark)
    assert interfaces_added(world, DEVICE % 2, signals)["args"][1]["net.reactivated.Fprint.Device"]["name"] == usb_testbed.READER_NAME
    assert manager(world, "GetDevices")[0] == [DEVICE % 2]


def test_a_usb_reader_unplugged_while_enrolling_is_gone_at_once_for_new_requests(usb_world):
    """The emulated reader never completes a transfer, so its driver never ends the enrollment's
    scan by itself, as a driver slow to notice would: libfprint's removed property, which changes
    at once, takes the reader away from every new request all the same."""
    world = usb_world
    log = world.daemon.log
    world.usb_testbed.plug()
    signals = world.root.signal_count()
    world.reader.unplug()
    interfaces_added(world, DEVICE % 1, signals)
    cli = harness.CliProcess(world, "enroll", "--user", "bob")
    cli.out.wait_for(re.compile(r"scan your finger"))  # the enrollment's first scan: the reader is busy
    signals = world.root.signal_count()
    mark = len(log.lines)
    world.usb_testbed.unplug()
    log.wait_for("the fingerprint reader was unplugged: %s" % usb_testbed.READER_NAME, start=mark)
    world.root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE % 1, start=signals)
    assert "canEvaluate.name: biometryNotAvailable" in world.cli("status").stdout.splitlines()
    cli.proc.kill()
    cli.wait()
