"""Several readers at once, and readers that come and go (docs/readers.md): two of libfprint's
virtual readers side by side, both served; the default one (the first libfprint lists) and the
one a door names (the PAM module's device=, the CLI's --device, fprintd's device objects); the
default one unplugged (the virtual readers' UNPLUG), and a reader that reported itself removed
opened again after a sleep. Through the PAM module, the CLI, fprintd's D-Bus API (InterfacesAdded
and InterfacesRemoved on the ObjectManager, GetDevices, GetDefaultDevice) and fprintd's own tools."""

import re

import pytest

import harness
from fprintd_world import (ALICE_PRINT, DEVICE_IFACE, ERROR, MANAGER, MANAGER_IFACE, BusError, BusWorld, bus_world,  # noqa: F401
                           enroll_alice, interfaces_added, manager, status)

ROOT = "/net/reactivated/Fprint"
OBJECT_MANAGER = "org.freedesktop.DBus.ObjectManager"
DEVICE_0 = "/net/reactivated/Fprint/Device/0"
DEVICE_1 = "/net/reactivated/Fprint/Device/1"
SERVED = re.compile(r"reader: (.+) \(\w+\), \d+ enroll stages")
NO_READER = "No fingerprint reader available: use your password"


def start_two_readers(world, logind=False):
    """A plain and an image virtual reader, both served. Returns (the default one: the first
    libfprint lists, which the daemon opens first; the other one)."""
    world.add_reader("virtual_image")
    if logind:
        world.start_logind()
    world.start_daemon()
    log = world.daemon.log
    first = log.wait_for(SERVED)
    second = log.wait_for(SERVED, start=first + 1)
    names = [SERVED.search(log.lines[i][1]).group(1) for i in (first, second)]
    default, other = (next(r for r in world.readers if r.name == name) for name in names)
    world.reader = default  # what the harness's helpers scan on
    return default, other


@pytest.fixture
def two_readers(request):
    """(world, the default reader, the other one), with no logind."""
    w = BusWorld("virtual_device")
    try:
        yield (w,) + start_two_readers(w)
    finally:
        if harness.failed(request) and w.daemon:
            print("touchgated stderr:\n" + w.daemon.log.dump())
        w.close()


def test_every_reader_is_served_and_each_door_uses_the_default_one_or_the_one_it_names(two_readers):
    world, default, other = two_readers
    assert manager(world, "GetDevices") == [[DEVICE_0, DEVICE_1]]
    assert manager(world, "GetDefaultDevice") == [DEVICE_0]
    assert world.root.property("name") == default.name
    assert world.root.property("name", path=DEVICE_1) == other.name
    assert world.cli("devices").stdout.splitlines() == ["%s (%s)" % (r.name, r.kind) for r in (default, other)]

    # One print on each reader: the CLI's --device names the other one (by its driver).
    enroll_alice(world, "alice-on-the-default")
    enroll_alice(world, "alice-on-the-other", finger="left-thumb", reader=other)
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    assert world.cli("list", "--user", "alice", "--device", other.kind).stdout.split() == ["left-thumb"]
    assert world.cli("list", "--user", "alice", "--device", other.name).stdout.split() == ["left-thumb"]
    # fprintd's device objects list their own reader's prints; fprintd-list goes through each.
    assert world.root.call("ListEnrolledFingers", "alice", path=DEVICE_1) == [["left-thumb"]]
    assert world.root.call("ListEnrolledFingers", "alice") == [["right-index-finger"]]
    listing = world.run_tool("fprintd-list", "alice").lines()
    assert "Using device %s" % DEVICE_0 in listing and "Using device %s" % DEVICE_1 in listing, listing

    # PAM: device= names the other reader; the default one's print is no match there, its own is.
    named = world.service("touchgate-other", options="device=%s" % other.kind)
    pam = world.pam("alice", service=named)
    pam.wait_for(harness.PROMPT)
    other.scan("alice-on-the-default")
    pam.wait_for(harness.no_match(2))
    other.scan("alice-on-the-other")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    # Without it, the default one.
    harness.finger_success(world, "alice-on-the-default", reader=default)
    # A name no reader answers to: no prompt, the password is asked, as with no reader at all.
    unknown = world.service("touchgate-unknown", options="device=synaptics")
    pam = world.pam("alice", service=unknown).wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL" and pam.messages() == [NO_READER], pam.transcript()


def test_pam_fprintd_verifies_on_the_reader_with_the_users_prints_and_fprintd_verify_on_the_default(two_readers):
    """Debian's pam_fprintd 1.94 verifies on the first device GetDevices lists (the default one
    first) where ListEnrolledFingers finds the user's prints; fprintd-verify takes the default
    device. VerifyStart reads the prints of its own reader, so both verify where they look."""
    world, default, other = two_readers
    enroll_alice(world, "alice-on-the-other", reader=other)
    service = world.fprintd_service()
    pam = world.pam("alice", service=service)
    pam.wait_for(re.compile(re.escape(other.name)))  # with several readers, it names the one it uses
    other.scan("alice-on-the-other")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    verify = world.run_tool("fprintd-verify", "alice")
    assert verify.returncode != 0, verify.transcript()  # none on the default one
    enroll_alice(world, "alice-on-the-default")
    pam = world.pam("alice", service=service)
    pam.wait_for(re.compile(re.escape(default.name)))
    default.scan("alice-on-the-default")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()


def test_a_deletion_through_one_device_object_leaves_the_other_readers_prints(two_readers):
    world, default, other = two_readers
    enroll_alice(world, "alice-on-the-default")
    enroll_alice(world, "alice-on-the-other", reader=other)
    world.root.call("Claim", "alice", path=DEVICE_1)
    world.root.call("DeleteEnrolledFingers2", path=DEVICE_1)
    world.root.call("Release", path=DEVICE_1)
    assert world.cli("list", "--user", "alice", "--device", other.kind).stdout.strip() == "No fingers enrolled for alice."
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    # The CLI without --device deletes on every reader.
    enroll_alice(world, "alice-on-the-other", reader=other)
    assert world.cli("delete", "--user", "alice", "--finger", "right-index-finger").returncode == 0
    for device in ([], ["--device", other.kind]):
        assert world.cli("list", "--user", "alice", *device).stdout.strip() == "No fingers enrolled for alice."


def test_a_verify_through_the_other_device_object_uses_that_readers_prints(two_readers):
    """VerifyStart checks the claimed user's prints on its own reader, as fprintd's device does:
    alice has a print on the other reader only, and names it (fprintd's VerifyFingerSelected)."""
    world, default, other = two_readers
    enroll_alice(world, "alice-on-the-other", finger="left-thumb", reader=other)
    root = world.root
    root.call("Claim", "alice", path=DEVICE_1)
    mark = root.signal_count()
    root.call("VerifyStart", "any", path=DEVICE_1)
    root.wait_signal("VerifyFingerSelected", lambda a: a == ["left-thumb"], start=mark)
    other.scan("alice-on-the-other")
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
    root.call("VerifyStop", path=DEVICE_1)
    root.call("VerifyStart", "left-thumb", path=DEVICE_1)
    root.call("VerifyStop", path=DEVICE_1)
    e = root.error("VerifyStart", "right-index-finger", path=DEVICE_1)
    assert (e.name, e.message) == (ERROR + "NoEnrolledPrints", "No such print 7"), e
    root.call("Release", path=DEVICE_1)


def test_the_default_reader_unplugged_leaves_the_bus_and_the_other_one_is_the_default_on_every_door(two_readers):
    world, default, other = two_readers
    enroll_alice(world)

    # A prompt on the reader that goes ends at once with the reason; nothing counts as a failure.
    mark = world.root.signal_count()
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    default.unplug()
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert pam.messages()[-1] == "The fingerprint reader was removed: use your password"

    # fprintd's ObjectManager signal: the object goes; the other reader's stays and is the default.
    removed = world.root.signals[world.root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE_0, start=mark)]
    assert removed["path"] == ROOT and removed["iface"] == OBJECT_MANAGER
    assert removed["args"][1] == [DEVICE_IFACE]
    assert manager(world, "GetDevices") == [[DEVICE_1]]
    assert manager(world, "GetDefaultDevice") == [DEVICE_1]
    with pytest.raises(BusError):
        world.root.call("ListEnrolledFingers", "alice", path=DEVICE_0)

    # alice's print belongs to the reader that went: on this one she is not enrolled (no prompt).
    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL" and pam.messages() == [], pam.transcript()
    world.daemon.log.wait_for("outcome=biometryNotEnrolled reason=noPrints")
    listing = world.run_tool("fprintd-list", "alice")
    assert "Using device %s" % DEVICE_1 in listing.lines(), listing.transcript()
    assert any("has no fingers enrolled" in line for line in listing.lines()), listing.transcript()

    # Enrolled on the reader served now, through the CLI: a scan there is a match through PAM.
    world.reader = other
    enroll_alice(world, "alice-on-the-image-reader")
    harness.finger_success(world, "alice-on-the-image-reader", reader=other)
    assert status(world)["failedMatches"] == 0  # the unplugged prompt counted nothing


def test_a_claimed_reader_unplugged_stays_on_the_bus_until_released_and_refuses_new_actions(two_readers):
    world, served, other = two_readers
    enroll_alice(world)
    root = world.root
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    root.wait_finger_needed(True, start=mark)
    served.unplug()
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-disconnected", True], start=mark)

    # As fprintd keeps a claimed device until it is closed: listed, but no new action starts.
    assert manager(world, "GetDevices") == [[DEVICE_1, DEVICE_0]]
    assert manager(world, "GetDefaultDevice") == [DEVICE_1]
    root.call("VerifyStop")
    e = root.error("VerifyStart", "any")
    assert (e.name, e.message) == (ERROR + "NoSuchDevice", "The fingerprint reader was removed")
    assert not any(s["signal"] == "InterfacesRemoved" for s in root.signals[mark:])
    released = root.signal_count()
    assert root.error("Release").name == ERROR + "Internal"  # as fprintd's: the claim ends all the same
    root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE_0, start=released)
    assert manager(world, "GetDevices") == [[DEVICE_1]]

    # The other reader can be claimed by the next client at once.
    root.call("Claim", "alice", path=DEVICE_1)
    root.call("Release", path=DEVICE_1)


@pytest.mark.usefixtures("reader_kind")
def test_a_reader_that_reported_itself_removed_is_opened_again_after_a_sleep(bus_world):
    world = bus_world
    world.start_logind()
    world.start_daemon()
    enroll_alice(world)
    mark = world.root.signal_count()
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    world.reader.error(256)  # libfprint's REMOVED while the reader is still listed
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    world.root.wait_signal("InterfacesRemoved", lambda a: a[0] == DEVICE_0, start=mark)
    e = world.root.error("GetDefaultDevice", path=MANAGER, iface=MANAGER_IFACE)
    assert e.name == ERROR + "NoSuchDevice"
    later = world.pam("alice").wait()
    assert later.messages() == ["No fingerprint reader available: use your password"], later.transcript()

    # A resume opens what libfprint lists again: the reader is back, as a new object.
    world.emit_prepare_for_sleep(True)
    world.emit_prepare_for_sleep(False)
    added = interfaces_added(world, DEVICE_1, mark, timeout=15)  # the suspend's 5 s, then the resume's
    assert added["args"][1][DEVICE_IFACE]["name"] == world.reader.name
    harness.finger_success(world, ALICE_PRINT)


def test_an_enrollment_waiting_for_a_reader_that_goes_ends_and_stores_nothing_for_the_next_one(two_readers):
    world, served, other = two_readers
    enroll_alice(world)
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)  # alice's prompt holds the reader
    cli = harness.CliProcess(world, "enroll", "--user", "bob", as_user="bob", password=harness.PASSWORDS["bob"])
    cli.out.wait_for("Waiting for the fingerprint reader")
    served.unplug()
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    # Its turn comes on the other reader: the print it was started for cannot be taken there.
    assert cli.wait() != 0
    assert "The fingerprint reader was removed" in cli.stderr + cli.out.dump(), (cli.stderr, cli.out.dump())
    assert world.cli("list", "--user", "bob").stdout.strip() == "No fingers enrolled for bob."
    assert manager(world, "GetDevices") == [[DEVICE_1]]


def test_prints_on_two_readers_are_one_enrollment_moving_between_them_asks_no_password(bus_world):
    world = bus_world
    first, second = start_two_readers(world, logind=True)
    enroll_alice(world, "alice-on-the-first")
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    first.error(256)  # the first reader reports itself removed: the second is the default
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    world.reader = second
    enroll_alice(world, "alice-on-the-second")  # with her password: the prints of both are on record
    mark = world.root.signal_count()
    world.emit_prepare_for_sleep(True)
    world.emit_prepare_for_sleep(False)  # the resume opens the first reader listed again: the default
    added = interfaces_added(world, "/net/reactivated/Fprint/Device/2", mark, timeout=15)
    assert added["args"][1][DEVICE_IFACE]["name"] == first.name
    # Back on the first reader: the same set of prints, so no enrollment change and no password.
    world.reader = first
    pam = harness.finger_success(world, "alice-on-the-first", reader=first)
    assert pam.messages() == [harness.PROMPT], pam.transcript()


def test_a_reader_that_would_not_open_at_start_is_served_once_it_opens(world):
    """A reader libfprint lists but that fails to open (not ready yet at boot) is tried again, as
    fprintd opens its reader again at each claim: served once it opens, without a replug or a sleep."""
    later = world.dir / "later"
    world.reader.path = str(later / "vdev.sock")  # its directory does not exist yet: the open fails
    world.start_daemon()
    log = world.daemon.log
    failed = log.wait_for(re.compile("cannot open fingerprint reader"))
    assert world.cli("devices").returncode != 0
    later.mkdir()
    log.wait_for(SERVED, timeout=10, start=failed + 1)  # the next try: 1, 2, 4, 8 s after the one before
    assert world.cli("devices").stdout.splitlines() == ["%s (%s)" % (world.reader.name, world.reader.kind)]
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, cli.stderr
