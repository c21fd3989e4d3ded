"""End to end, authorization the desktop's way: fprintd's polkit actions asked of a polkitd stand-in
(python3-dbusmock) on the test's bus, allowing and denying, for every caller as fprintd asks (root
too: polkitd itself allows uid 0, a stand-in or a site's polkit may not); a hanging polkit holds up
only the bus callers it is deciding about, never the PAM socket."""

import pytest

import harness
import wire
from fprintd_world import (ALICE_PRINT, ERROR, BusError, bus_world, enroll_alice, enroll_with_tool,  # noqa: F401
                           status, verify_with_tool)
from harness import DEFAULT_WAIT, PROMPT, now

VERIFY = "net.reactivated.fprint.device.verify"
ENROLL = "net.reactivated.fprint.device.enroll"
SETUSERNAME = "net.reactivated.fprint.device.setusername"


def denied(action):
    return "GDBus.Error:%sPermissionDenied: Not Authorized: %s" % (ERROR, action)


@pytest.fixture
def polkit_world(bus_world):
    """polkitd (everything refused until SetAllowed), then touchgated; alice has a finger."""
    bus_world.start_polkit()
    bus_world.start_daemon()
    enroll_alice(bus_world)
    return bus_world


def allow(world, *actions):
    world.polkit("SetAllowed", list(actions), sig="as")


def test_polkit_decides_verify_enroll_and_setusername_for_every_caller_root_included(polkit_world):
    world = polkit_world
    listed = world.run_tool("fprintd-list", "alice", as_user="alice")
    assert listed.lines()[-1] == "ListEnrolledFingers failed: " + denied(VERIFY), listed.transcript()
    # Claim needs verify or enroll; as fprintd, the last refusal asked is the one reported.
    assert verify_with_tool(world, [], as_user="alice").lines()[-1] == "failed to claim device: " + denied(ENROLL)
    # root is asked too, as fprintd asks: acting for alice needs setusername, which this polkit refuses.
    assert world.run_tool("fprintd-list", "alice").lines()[-1] == "ListEnrolledFingers failed: " + denied(SETUSERNAME)
    assert world.run_tool("fprintd-list", "root").lines()[-1] == "ListEnrolledFingers failed: " + denied(VERIFY)

    allow(world, VERIFY)
    assert world.run_tool("fprintd-list", "alice", as_user="alice").lines()[-1] == " - #0: right-index-finger"
    mine = verify_with_tool(world, [], scan=ALICE_PRINT, as_user="alice")
    assert mine.lines()[-1] == "Verify result: verify-match (done)", mine.transcript()
    refused = world.tool("fprintd-enroll", "-f", "left-thumb", as_user="alice").wait()
    assert refused.lines()[-1] == "EnrollStart failed: " + denied(ENROLL), refused.transcript()
    others = world.run_tool("fprintd-list", "bob", as_user="alice")
    assert others.lines()[-1] == "ListEnrolledFingers failed: " + denied(SETUSERNAME), others.transcript()

    allow(world, VERIFY, SETUSERNAME)
    assert world.run_tool("fprintd-list", "alice").lines()[-1] == " - #0: right-index-finger"
    others = world.run_tool("fprintd-list", "bob", as_user="alice")
    assert others.lines()[-1] == "User bob has no fingers enrolled for Virtual device for debugging.", others.transcript()


def test_an_enrollment_polkit_allowed_changes_prints_but_never_counts_as_a_password(polkit_world):
    world = polkit_world
    allow(world, VERIFY, SETUSERNAME)  # root verifies alice's finger
    for k in range(5):
        verify_with_tool(world, ["alice"], scan="stranger-%d" % k)
    assert status(world)["lockedOut"]

    allow(world, VERIFY, ENROLL)
    enrolled = enroll_with_tool(world, "alice-left-thumb", "-f", "left-thumb", as_user="alice")
    assert enrolled.returncode == 0, enrolled.transcript()
    assert world.cli("list", "--user", "alice").stdout.split() == ["left-thumb", "right-index-finger"]
    # polkit's grant let the change through; only the password itself clears the lockout.
    after = status(world)
    assert after["lockedOut"] and "enrollmentChanged" in after["passwordRequired"], after
    assert "PermissionDenied" in verify_with_tool(world, [], as_user="alice").lines()[-1]


def test_a_hanging_polkit_holds_up_only_the_bus_callers_it_decides_about(polkit_world):
    world = polkit_world
    allow(world, VERIFY)
    world.polkit("SimulateHang", True, sig="b")
    watch = world.monitor("interface='org.freedesktop.PolicyKit1.Authority',member='CheckAuthorization'")
    alice = world.client("alice")
    claim = alice.start("Claim", "")
    watch.wait_for("member=CheckAuthorization")  # alice's Claim waits on polkit now

    # root over D-Bus waits on polkit too (it is asked, as fprintd asks it); the socket goes on.
    lister = world.tool("fprintd-list", "root")  # its own prints: verify is the one action asked
    watch.wait_for("member=CheckAuthorization", start=watch.wait_for("member=CheckAuthorization") + 1)
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    assert not alice.answered(claim) and lister.proc.poll() is None

    world.polkit("ReleaseHangingCalls")
    assert alice.result(claim) == []  # polkit said yes: alice now holds the claim
    assert lister.wait().lines()[-1] == "User root has no fingers enrolled for %s." % world.reader.name, lister.transcript()
    alice.call("Release")


def test_a_client_gone_while_polkit_decided_its_claim_leaves_no_claim_behind(polkit_world):
    world = polkit_world
    allow(world, VERIFY)
    world.polkit("SimulateHang", True, sig="b")
    watch = world.monitor("interface='org.freedesktop.PolicyKit1.Authority',member='CheckAuthorization'")
    alice = world.client("alice")
    alice.start("Claim", "")
    watch.wait_for("member=CheckAuthorization")
    alice.kill()
    world.polkit("ReleaseHangingCalls")  # polkit says yes to a client that is no longer there
    world.daemon.log.wait_for("D-Bus client %s left: its claim is released" % alice.unique_name)
    world.polkit("SimulateHang", False, sig="b")
    allow(world, VERIFY, SETUSERNAME)  # root acts for alice
    world.root.call("Claim", "alice")
    world.root.call("Release")


def test_permission_is_checked_before_any_other_answer(polkit_world):
    """As fprintd: a caller refused verify learns nothing, not even that there are no prints."""
    world = polkit_world
    allow(world, ENROLL)  # enough to claim, not to verify
    bob = world.client("bob")
    bob.call("Claim", "")
    e = bob.error("VerifyStart", "any")  # bob has no prints: still PermissionDenied first
    assert (e.name, e.message) == (ERROR + "PermissionDenied", "Not Authorized: " + VERIFY), e
    bob.call("Release")

    allow(world, VERIFY)  # enough to claim, not to enroll or delete
    alice = world.client("alice")
    alice.call("Claim", "")
    for method, args in (("EnrollStart", ("left-toe",)), ("DeleteEnrolledFinger", ("left-toe",))):
        e = alice.error(method, *args)  # not even the finger's name is judged before polkit
        assert (e.name, e.message) == (ERROR + "PermissionDenied", "Not Authorized: " + ENROLL), (method, e)
    mark = alice.signal_count()
    alice.call("VerifyStart", "any")
    alice.wait_finger_needed(True, start=mark)
    for method, args in (("EnrollStart", ("left-thumb",)), ("DeleteEnrolledFingers2", ())):
        e = alice.error(method, *args)  # nor whether the reader is busy
        assert (e.name, e.message) == (ERROR + "PermissionDenied", "Not Authorized: " + ENROLL), (method, e)
    alice.call("VerifyStop")
    alice.call("Release")


LIMIT = 5  # lines per uid in each window
WINDOW = 10.0  # s


def test_claims_and_departures_a_user_repeats_at_will_are_logged_within_the_limit(polkit_world):
    """A Claim writes a line, and so does a client that leaves holding its claim; a user can repeat
    both as often as they like, so past the limit for their uid they are left out (one user must
    not spend journald's rate limit, which would drop every user's audit records)."""
    world = polkit_world
    allow(world, VERIFY)
    started = now()
    alice = world.client("alice")
    for _ in range(20):
        alice.call("Claim", "")
        alice.call("Release")
    gone = world.client("alice")
    gone.call("Claim", "")
    gone.kill()
    deadline = now() + DEFAULT_WAIT
    while True:  # its claim is released once the daemon has seen it go
        try:
            alice.call("Claim", "")
            break
        except BusError as e:
            assert e.name == ERROR + "AlreadyInUse" and now() < deadline, e
    alice.call("Release")
    # A record written after them all: every line they wrote has been read once it has.
    wire.request(world.socket, "evaluate", user="root", policy=1, service="marker", rhost="marker-host")
    world.daemon.log.wait_for("service=marker")
    windows = 1 + int((now() - started) // WINDOW)

    texts = world.daemon.log.texts()
    lines = [t for t in texts if "device claimed over D-Bus" in t or "left: its claim is released" in t]
    assert 0 < len(lines) <= LIMIT * windows, world.daemon.log.dump()
    assert "(more like it from uid %d are left out for 10 s)" % harness.USERS["alice"][0] in lines[LIMIT - 1]
