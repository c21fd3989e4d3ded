"""End to end, one daemon and one policy behind both doors: D-Bus (fprintd's clients) and the socket
(pam_touchgate.so, the touchgate CLI) share the counters, the events and the one reader's queue."""

import json

import pytest

import harness
import wire
from fprintd_world import (ALICE_PRINT, ERROR, bus_daemon, bus_world, enroll_alice, enroll_with_tool,  # noqa: F401
                           password_success, status, verify_with_tool)
from harness import PROMPT, no_match, queued

LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"
CHANGED = "Enter your password: the enrolled fingerprints changed"

# The policy is the same on each of libfprint's three kinds of reader (readers.py).
pytestmark = pytest.mark.usefixtures("reader_kind")


def socket_failures(world, prints, last):
    """One pam_touchgate.so prompt for alice fed `prints` (all wrong); the last line it shows."""
    pam = world.pam("alice")
    i = pam.wait_for(PROMPT)
    for k, p in enumerate(prints[:-1]):
        world.reader.scan(p)
        i = pam.wait_for(no_match(2 - k), start=i + 1)
    world.reader.scan(prints[-1])
    pam.wait()
    assert pam.messages()[-1] == last, pam.transcript()
    return pam


def test_dbus_no_matches_count_toward_the_lockout_of_the_socket_path(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    socket_failures(world, ["x1", "x2", "x3"], harness.not_recognised(3))
    for p in ("x4", "x5"):
        missed = verify_with_tool(world, ["alice"], scan=p)
        assert missed.lines()[-1] == "Verify result: verify-no-match (done)", missed.transcript()
    assert status(world)["lockedOut"]
    pam = world.pam("alice")
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL"
    assert PROMPT not in pam.messages() and pam.messages()[-1] == LOCKED, pam.transcript()


def test_socket_no_matches_count_toward_the_lockout_of_the_dbus_path(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    pam = world.pam("alice", service=world.fprintd_service())  # pam_fprintd: three tries, three D-Bus verifies
    i = 0
    for k in range(3):
        i = pam.wait_for("fingerprint reader", start=i)
        world.reader.scan("y%d" % k)
        i = pam.wait_for("Failed to match fingerprint", start=i + 1)
    assert pam.wait().result == "PAM_MAXTRIES"
    socket_failures(world, ["y3", "y4"], LOCKED)  # the fifth consecutive failure, through the socket
    refused = verify_with_tool(world, ["alice"])
    assert refused.lines()[-1] == "VerifyStart failed: GDBus.Error:%sPermissionDenied: %s" % (ERROR, LOCKED)

    # A password success clears it for both doors.
    password_success(world)
    assert verify_with_tool(world, ["alice"], scan=ALICE_PRINT).returncode == 0


def domain_state(world):
    r = world.cli("domain-state", "--user", "alice", "--service", "sudo")
    assert r.returncode == 0, r
    return r.stdout.strip()


def live_monitor(world):
    """`touchgate monitor --json` as root, once a probe event shows its stream is live."""
    mon = harness.CliProcess(world, "monitor", "--json")
    deadline = harness.now() + harness.DEFAULT_WAIT
    while True:  # a remote evaluate is refused at once and published; repeated until the stream has it
        wire.request(world.socket, "evaluate", user="alice", policy=1, service="probe", rhost="probe-host")
        try:
            mon.out.wait_for('"service":"probe"', timeout=0.2)
            return mon
        except harness.WaitTimeout:
            assert harness.now() < deadline, mon.out.dump()


def test_dbus_enrollment_changes_the_domain_state_and_is_an_enrollment_change(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    before = domain_state(world)
    mon = live_monitor(world)

    enrolled = enroll_with_tool(world, "alice-left-thumb", "-f", "left-thumb", "alice")
    assert enrolled.returncode == 0, enrolled.transcript()
    i = mon.out.wait_for('"event":"enrollmentChanged"')
    event = json.loads(mon.out.lines[i][1])
    assert (event["user"], event["service"], event["reason"]) == ("alice", "net.reactivated.Fprint", "enrolled:left-thumb")
    after = domain_state(world)
    assert after != before and len(after) == 64

    # root changed alice's prints: her password is asked once before a finger unlocks anything.
    refused = verify_with_tool(world, ["alice"])
    assert refused.lines()[-1] == "VerifyStart failed: GDBus.Error:%sPermissionDenied: %s" % (ERROR, CHANGED)
    password_success(world)
    thumb = verify_with_tool(world, ["-f", "left-thumb", "alice"], scan="alice-left-thumb")
    assert thumb.lines()[-2:] == ["Verifying: left-thumb", "Verify result: verify-match (done)"], thumb.transcript()

    # Deleting it over D-Bus (claimed, one finger) brings the same set back, and the same value.
    root = world.root
    root.call("Claim", "alice")
    root.call("DeleteEnrolledFinger", "left-thumb")
    root.call("Release")
    i = mon.out.wait_for('"reason":"deleted:left-thumb"', start=i + 1)
    assert json.loads(mon.out.lines[i][1])["event"] == "enrollmentChanged"
    assert domain_state(world) == before
    mon.proc.terminate()
    mon.wait()


def test_a_dbus_verify_waits_behind_a_pam_prompt_for_the_reader(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    pam = world.pam("alice")
    pam.wait_for(PROMPT)  # the socket's prompt holds the reader
    mark = world.root.signal_count()
    verify = world.tool("fprintd-verify", "alice")
    verify.out.wait_for("Verify started!")  # answered: it waits in the queue, no error
    world.reader.scan(ALICE_PRINT)  # for the first in line
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    i = world.root.wait_finger_needed(True, start=mark)  # now the D-Bus verify listens
    assert not any(s["signal"] == "VerifyStatus" for s in world.root.signals[mark:i])
    world.reader.scan(ALICE_PRINT)
    assert verify.wait().lines()[-1] == "Verify result: verify-match (done)", verify.transcript()


def test_a_pam_prompt_waits_behind_a_dbus_verify_and_is_told_so(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    mark = world.root.signal_count()
    verify = world.tool("fprintd-verify", "alice")
    verify.out.wait_for("Verify started!")
    world.root.wait_finger_needed(True, start=mark)
    pam = world.pam("alice", ctty=True)  # at a terminal: one without is refused at once (test_e2e)
    pam.wait_for(queued(1))
    world.reader.scan(ALICE_PRINT)
    assert verify.wait().lines()[-1] == "Verify result: verify-match (done)", verify.transcript()
    pam.wait_for(PROMPT)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
