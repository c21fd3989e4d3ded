"""End to end, bad input and faults on fprintd's D-Bus API: calls without Claim, a second claimer,
unknown finger names, a uid that may not, clients killed mid-enroll and mid-verify — each answered
with fprintd's error name and a sentence, the reader free at once for everyone else."""

import signal

import pytest

from fprintd_world import (ALICE_PRINT, DEVICE_IFACE, ERROR, bus_daemon, bus_world, enroll_alice,  # noqa: F401
                           status)
from fprintd_tools import BusError
from harness import PROMPT

NOT_CLAIMED = (ERROR + "ClaimDevice", "Device was not claimed before use")
ALREADY_CLAIMED = (ERROR + "AlreadyInUse", "Device was already claimed")
IN_USE = (ERROR + "AlreadyInUse", "Device already in use by another user")
INVALID_FINGER = (ERROR + "InvalidFingername", "Invalid finger name")


def err(e):
    return (e.name, e.message)


@pytest.fixture
def alice_enrolled(bus_world, bus_daemon):
    enroll_alice(bus_world)
    return bus_world


def test_device_calls_without_claim_are_refused_as_fprintd_refuses_them(alice_enrolled):
    root = alice_enrolled.root
    for method, args in (("VerifyStart", ("any",)), ("VerifyStop", ()), ("EnrollStart", ("right-index-finger",)),
                         ("EnrollStop", ()), ("Release", ()), ("DeleteEnrolledFinger", ("right-index-finger",)),
                         ("DeleteEnrolledFinger", ("no-such-finger",)), ("DeleteEnrolledFingers2", ())):
        assert err(root.error(method, *args)) == NOT_CLAIMED, method
    # Listing needs no claim; deleting by name claims for the call (fprintd's older method).
    assert root.call("ListEnrolledFingers", "alice") == [["right-index-finger"]]


def test_a_second_claimer_is_told_the_device_is_in_use_until_it_is_released(alice_enrolled):
    world = alice_enrolled
    first, second = world.root, world.client()
    first.call("Claim", "alice")
    assert err(first.error("Claim", "alice")) == ALREADY_CLAIMED
    assert err(second.error("Claim", "alice")) == ALREADY_CLAIMED
    for method, args in (("VerifyStart", ("any",)), ("EnrollStart", ("left-thumb",)), ("Release", ()),
                         ("DeleteEnrolledFingers2", ()), ("DeleteEnrolledFingers", ("alice",))):
        assert err(second.error(method, *args)) == IN_USE, method
    first.call("Release")
    second.call("Claim", "alice")
    second.call("Release")
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]


def test_unknown_finger_names_and_fingers_without_prints(alice_enrolled):
    world = alice_enrolled
    root = world.root
    root.call("Claim", "alice")
    for name in ("left-toe", "any", ""):
        assert err(root.error("EnrollStart", name)) == INVALID_FINGER, name
        assert err(root.error("DeleteEnrolledFinger", name)) == INVALID_FINGER, name
    assert err(root.error("DeleteEnrolledFinger", "left-thumb")) == (
        ERROR + "NoEnrolledPrints", "Fingerprint for finger left-thumb is not enrolled")
    assert err(root.error("VerifyStart", "left-thumb")) == (ERROR + "NoEnrolledPrints", "No such print 1")
    assert err(root.error("VerifyStop")) == (ERROR + "NoActionInProgress", "No verification in progress")

    # As fprintd, an unknown name asks for any finger: here the one alice has.
    mark = root.signal_count()
    root.call("VerifyStart", "left-toe")
    assert root.signals[root.wait_signal("VerifyFingerSelected", start=mark)]["args"] == ["right-index-finger"]
    assert err(root.error("VerifyStart", "any")) == (ERROR + "AlreadyInUse", "Verification already in progress")
    assert err(root.error("EnrollStart", "left-thumb")) == (ERROR + "AlreadyInUse", "Verification already in progress")
    # Deleting while the verify runs is refused as fprintd refuses it, and the print stays.
    for method, args in (("DeleteEnrolledFingers2", ()), ("DeleteEnrolledFinger", ("right-index-finger",))):
        assert err(root.error(method, *args)) == (ERROR + "AlreadyInUse", "Verification already in progress"), method
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    root.call("VerifyStop")
    # As fprintd, the stopped verify's last word came before VerifyStop's answer.
    assert finals(root, "VerifyStatus", mark) == [["verify-no-match", True]]
    root.call("Release")
    assert status(world)["failedMatches"] == 0  # a stopped verify is no failure


def test_a_user_may_not_reach_another_users_prints_nor_change_their_own_without_a_password(alice_enrolled):
    world = alice_enrolled
    bob = world.client("bob")
    for method, args in (("ListEnrolledFingers", ("alice",)), ("Claim", ("alice",)),
                         ("DeleteEnrolledFingers", ("alice",)), ("ListEnrolledFingers", ("no-such-user",))):
        e = bob.error(method, *args)
        assert e.name == ERROR + "PermissionDenied" and e.message, (method, e)
    assert err(bob.error("ListEnrolledFingers", "")) == (ERROR + "NoEnrolledPrints", "Failed to discover prints")

    alice = world.client("alice")
    assert alice.call("ListEnrolledFingers", "") == [["right-index-finger"]]
    e = alice.error("DeleteEnrolledFingers", "alice")
    assert e.name == ERROR + "PermissionDenied" and "needs your password" in e.message, e
    alice.call("Claim", "")
    e = alice.error("DeleteEnrolledFinger", "right-index-finger")
    assert e.name == ERROR + "PermissionDenied" and "needs your password" in e.message, e
    alice.call("Release")
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    # root may name anyone; an account that does not exist has no prints.
    assert err(world.root.error("ListEnrolledFingers", "no-such-user"))[0] == ERROR + "NoEnrolledPrints"


def pam_gets_the_reader_at_once(world):
    """A pam_touchgate.so prompt for alice: shown without waiting in a queue, and it succeeds."""
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    assert not any("Waiting for the fingerprint reader" in m for m in pam.messages()), pam.transcript()
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()


def test_fprintd_enroll_killed_mid_enrollment_frees_the_reader_and_the_claim_at_once(alice_enrolled):
    world = alice_enrolled
    mark = world.root.signal_count()
    enroll = world.tool("fprintd-enroll", "-f", "left-thumb", "alice")
    enroll.out.wait_for("Enrolling left-thumb finger.")
    world.reader.scan("alice-left-thumb")
    enroll.out.wait_for("Enroll result: enroll-stage-passed")
    enroll.kill()
    world.root.wait_finger_needed(False, start=mark)  # the enrollment ended: the client's gone
    pam_gets_the_reader_at_once(world)
    world.root.call("Claim", "alice")  # nobody holds the claim any more
    world.root.call("Release")
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]  # nothing half-enrolled


def test_fprintd_verify_killed_mid_verify_frees_the_reader_and_counts_nothing(alice_enrolled):
    world = alice_enrolled
    mark = world.root.signal_count()
    verify = world.tool("fprintd-verify", "alice")
    verify.out.wait_for("Verify started!")
    i = world.root.wait_finger_needed(True, start=mark)
    verify.kill()
    world.root.wait_finger_needed(False, start=i + 1)
    pam_gets_the_reader_at_once(world)
    assert status(world)["failedMatches"] == 0
    world.root.call("Claim", "alice")
    world.root.call("Release")


def test_a_bus_client_killed_while_queued_leaves_the_queue(alice_enrolled):
    world = alice_enrolled
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    waiting = world.client()
    waiting.call("Claim", "alice")
    waiting.call("VerifyStart", "any")  # queued behind the PAM prompt
    waiting.kill()
    world.daemon.log.wait_for("D-Bus client %s left" % waiting.unique_name)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS"
    pam_gets_the_reader_at_once(world)  # the dead client's verify never took the reader


def test_objects_properties_and_introspection_as_fprintd_exports_them(bus_world, bus_daemon):
    root = bus_world.root
    manager = dict(path="/net/reactivated/Fprint/Manager", iface="net.reactivated.Fprint.Manager")
    assert root.call("GetDevices", **manager) == [["/net/reactivated/Fprint/Device/0"]]
    assert root.call("GetDefaultDevice", **manager) == ["/net/reactivated/Fprint/Device/0"]
    props = root.call("GetAll", DEVICE_IFACE, iface="org.freedesktop.DBus.Properties")[0]
    assert props == {"name": "Virtual device for debugging", "num-enroll-stages": 5, "scan-type": "swipe",
                     "finger-present": False, "finger-needed": False}
    assert root.property("scan-type") == "swipe"
    objects = root.call("GetManagedObjects", path="/net/reactivated/Fprint", iface="org.freedesktop.DBus.ObjectManager")[0]
    assert objects == {"/net/reactivated/Fprint/Device/0": {DEVICE_IFACE: props}}
    xml = root.call("Introspect", iface="org.freedesktop.DBus.Introspectable")[0]
    for name in ("Claim", "Release", "ListEnrolledFingers", "DeleteEnrolledFingers", "DeleteEnrolledFingers2",
                 "DeleteEnrolledFinger", "VerifyStart", "VerifyStop", "EnrollStart", "EnrollStop",
                 "VerifyFingerSelected", "VerifyStatus", "EnrollStatus", "finger-needed"):
        assert '"%s"' % name in xml, name
    e = root.error("Set", DEVICE_IFACE, "name", {"variant": ["s", "x"]}, sig="ssv", iface="org.freedesktop.DBus.Properties")
    assert e.name in ("org.freedesktop.DBus.Error.PropertyReadOnly", "org.freedesktop.DBus.Error.InvalidArgs"), e


def finals(client, member, start):
    """The final statuses (`done` true) of `member` the client has received since `start`."""
    return [s["args"] for s in client.signals[start:] if s["signal"] == member and s["args"][1]]


def test_release_mid_verify_and_enroll_stop_mid_enrollment_end_them_and_free_the_reader(alice_enrolled):
    world = alice_enrolled
    root = world.root
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    root.wait_finger_needed(True, start=mark)
    root.call("Release")  # without VerifyStop: the verify ends with the claim, as in fprintd
    assert finals(root, "VerifyStatus", mark) == [["verify-no-match", True]]
    pam_gets_the_reader_at_once(world)

    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("EnrollStart", "left-thumb")
    world.reader.scan("alice-left-thumb")
    root.wait_signal("EnrollStatus", lambda a: a == ["enroll-stage-passed", False], start=mark)
    root.call("EnrollStop")
    assert finals(root, "EnrollStatus", mark) == [["enroll-failed", True]]
    assert err(root.error("EnrollStop")) == (ERROR + "NoActionInProgress", "No enrollment in progress")
    root.call("Release")
    pam_gets_the_reader_at_once(world)
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]  # nothing half-enrolled


def test_the_older_delete_method_works_unclaimed_and_says_when_there_is_nothing(alice_enrolled):
    world = alice_enrolled
    world.root.call("DeleteEnrolledFingers", "alice")
    assert world.cli("list", "--user", "alice").stdout.strip() == "No fingers enrolled for alice."
    assert err(world.root.error("DeleteEnrolledFingers", "alice")) == (ERROR + "NoEnrolledPrints", "No fingerprint enrolled")


def test_the_older_delete_method_acts_for_the_user_it_names_even_for_the_claims_holder(alice_enrolled):
    """As fprintd: DeleteEnrolledFingers(NAME) deletes NAME's prints ("": the caller's), whoever the
    device is claimed for."""
    world = alice_enrolled
    root = world.root
    root.call("Claim", "alice")
    assert err(root.error("DeleteEnrolledFingers", "")) == (ERROR + "NoEnrolledPrints", "No fingerprint enrolled")
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    root.call("Release")
    root.call("Claim", "bob")
    root.call("DeleteEnrolledFingers", "alice")
    root.call("Release")
    assert world.cli("list", "--user", "alice").stdout.strip() == "No fingers enrolled for alice."


@pytest.mark.parametrize("reader_kind", ["virtual_device", "virtual_device_storage", "virtual_image"], indirect=True)
def test_finger_present_and_needed_follow_the_driver(reader_kind, alice_enrolled):
    """libfprint's finger-status, as the driver reports it, in fprintd's two properties (each
    virtual reader is told by its finger command)."""
    world = alice_enrolled
    root = world.root
    assert root.property("finger-present") is False
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    root.wait_finger_needed(True, start=mark)
    mark = root.signal_count()
    world.reader.finger(True)
    root.wait_finger_present(True, start=mark)
    assert root.property("finger-present") is True
    mark = root.signal_count()
    world.reader.scan(ALICE_PRINT)
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
    root.call("VerifyStop")
    root.call("Release")


def test_a_verify_starts_from_the_finger_status_the_driver_has_then(reader_kind, alice_enrolled):
    """The driver's finger status is announced only while a D-Bus operation listens: a finger laid
    on the reader before (unannounced) is present from the verify's start, and one lifted in a
    verify that ended is not present at the next one's."""
    world = alice_enrolled
    root = world.root
    root.call("Claim", "alice")
    world.reader.finger(True)
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    root.wait_finger_present(True, start=mark)
    assert root.property("finger-needed") is True
    world.reader.finger(False)
    root.wait_finger_present(False, start=mark)
    root.call("VerifyStop")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    i = root.wait_finger_needed(True, start=mark)
    assert root.property("finger-present") is False
    changes = [s["args"][1] for s in root.signals[mark:i + 1] if s["signal"] == "PropertiesChanged"]
    assert [c for c in changes if c.get("finger-present") is True] == [], changes
    root.call("VerifyStop")
    root.call("Release")


def test_a_pam_prompt_shows_no_finger_on_the_bus(reader_kind, alice_enrolled):
    """finger-needed and finger-present speak of D-Bus clients' own operations, as fprintd's do (its
    reader is open only while claimed): through a PAM prompt on the socket, a finger on the reader
    and the match, both stay false and no PropertiesChanged is sent; a D-Bus verify's is the first."""
    world = alice_enrolled
    root = world.root
    mark = root.signal_count()
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.finger(True)
    assert (root.property("finger-needed"), root.property("finger-present")) == (False, False)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    root.call("Claim", "alice")
    root.call("VerifyStart", "any")
    i = root.wait_finger_needed(True, start=mark)
    assert [s for s in root.signals[mark:i] if s["signal"] == "PropertiesChanged"] == [], root.signals[mark:i]
    root.call("VerifyStop")
    root.call("Release")


def test_on_sigterm_a_verifying_client_hears_its_last_status_before_the_name_goes(alice_enrolled):
    """The daemon stopping ends the verify (systemCancel) and says so with a final VerifyStatus,
    sent while it still owns fprintd's name: fprintd-verify, which listens to the name, hears it."""
    world = alice_enrolled
    t = world.tool("fprintd-verify", "alice")
    t.out.wait_for("Verify started!")
    world.daemon.signal(signal.SIGTERM)
    t.wait()
    assert "Verify result: verify-unknown-error (done)" in t.lines(), t.transcript()
    assert world.daemon.proc.wait(5) == 0


def test_when_the_system_bus_goes_away_the_daemon_stops_in_order(alice_enrolled):
    """GIO's connection would end the process with a SIGTERM the core loop's thread blocks; the
    daemon instead stops as on SIGTERM (socket activation starts it again with a new connection)."""
    world = alice_enrolled
    bus = next(proc for name, proc in world.helpers if name == "dbus-daemon")
    bus.kill()
    assert world.daemon.proc.wait(5) == 0, world.daemon.log.dump()
    world.daemon.log.wait_for("stopped: socket listener")


def test_a_reader_that_cannot_identify_names_the_one_finger_it_verifies(alice_enrolled):
    """As fprintd: with several fingers, `any` on a verify-only reader checks the first print and
    VerifyFingerSelected names it, so a client can say which finger to place."""
    world = alice_enrolled
    enroll_alice(world, "alice-left-thumb", finger="left-thumb")
    root = world.root
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    assert root.signals[root.wait_signal("VerifyFingerSelected", start=mark)]["args"] == ["left-thumb"]
    world.reader.scan("alice-left-thumb")
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
    root.call("VerifyStop")
    root.call("Release")


def outcomes(client, *calls):
    """Each call's reply, as "ok" or its error's name (the calls sent together, then read)."""
    answers = []
    for rid in [client.start(method, *args) for method, args in calls]:
        try:
            client.result(rid)
            answers.append("ok")
        except BusError as e:
            answers.append(e.name)
    return answers


def test_calls_sent_together_are_answered_as_fprintd_answers_them(alice_enrolled):
    """Two deletions of different fingers: both done, the second after the first (fprintd deletes
    in one go where the reader has no storage of its own; on a chip the second is refused,
    test_chip_storage). Two VerifyStops, two Releases while a verify runs: one is done, the other
    refused."""
    world = alice_enrolled
    enroll_alice(world, ALICE_PRINT + "-thumb", finger="left-thumb")
    root = world.root
    root.call("Claim", "alice")
    assert outcomes(root, ("DeleteEnrolledFinger", ("right-index-finger",)),
                    ("DeleteEnrolledFinger", ("left-thumb",))) == ["ok", "ok"]
    listed = world.cli("list", "--user", "alice").stdout
    assert "right-index-finger" not in listed and "left-thumb" not in listed, listed

    enroll_alice(world)
    root.call("VerifyStart", "any")
    stops = outcomes(root, ("VerifyStop", ()), ("VerifyStop", ()))
    assert stops[0] == "ok" and stops[1] in (ERROR + "AlreadyInUse", ERROR + "NoActionInProgress"), stops
    root.call("VerifyStart", "any")
    releases = outcomes(root, ("Release", ()), ("Release", ()))
    assert releases[0] == "ok" and releases[1] in (ERROR + "AlreadyInUse", ERROR + "ClaimDevice"), releases
