"""End to end, suspend and resume as desktops expect, with python3-dbusmock's logind on the test's
bus: a sleep delay inhibitor held while awake; PrepareForSleep(true) ends every prompt with
systemCancel and says why, then the inhibitor goes; PrepareForSleep(false) reopens the reader and
takes the inhibitor again. Without logind the daemon runs as before."""

import pytest

from fprintd_world import (ALICE_PRINT, ERROR, LOGIND, bus_daemon, bus_world, enroll_alice,  # noqa: F401
                           verify_with_tool)
import harness
from harness import DEFAULT_WAIT, PROMPT, now

SLEEPING = "The computer is going to sleep: use your password"
NO_READER = "No fingerprint reader available: use your password"
INHIBITOR = ["sleep", "touchgated", "End fingerprint prompts and close the reader", "delay"]


def inhibitors(world):
    held = world.root.call("ListInhibitors", dest=LOGIND, path="/org/freedesktop/login1",
                           iface="org.freedesktop.login1.Manager")[0]
    return [entry[:4] for entry in held]  # the mock fills in uid and pid itself


def wait_inhibitors(world, expected):
    """logind drops an inhibitor when its descriptor closes; asked again until it agrees, with a
    deadline (each question is a round trip on the bus, not a sleep)."""
    deadline = now() + DEFAULT_WAIT
    while inhibitors(world) != expected:
        assert now() < deadline, "inhibitors: %r, expected %r" % (inhibitors(world), expected)


def test_suspend_ends_prompts_and_releases_the_inhibitor_resume_takes_it_again(bus_world):
    world = bus_world
    world.start_logind()
    daemon = world.start_daemon()
    daemon.log.wait_for("holding a sleep delay inhibitor")
    assert inhibitors(world) == [INHIBITOR]
    enroll_alice(world)

    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    mark = world.root.signal_count()
    dbus = world.client()  # a D-Bus verify, queued behind the PAM prompt
    dbus.call("Claim", "alice")
    dbus.call("VerifyStart", "any")

    world.emit_prepare_for_sleep(True)
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()  # the password follows
    assert pam.messages()[-1] == SLEEPING, pam.transcript()
    i = world.root.wait_signal("VerifyStatus", start=mark)
    assert world.root.signals[i]["args"] == ["verify-unknown-error", True]  # no failed match: no retry
    dbus.call("VerifyStop")
    daemon.log.wait_for("reason=suspend")  # audited
    daemon.log.wait_for("released the sleep inhibitor", timeout=10)
    wait_inhibitors(world, [])
    asleep = world.pam("alice")  # while asleep: no reader, and the password at once
    assert asleep.wait().result == "PAM_AUTHINFO_UNAVAIL", asleep.transcript()
    assert asleep.messages() == [NO_READER], asleep.transcript()
    # Asleep, the device answers as fprintd's suspended one: a claim made before the sleep starts
    # a verify that ends at once, kept until VerifyStop; a new claim is refused.
    place = dbus.call_placed("VerifyStart", "any")  # answered first, then the signals
    selected = dbus.wait_signal("VerifyFingerSelected", start=place)
    ended = dbus.wait_signal("VerifyStatus", start=place)
    assert dbus.signals[selected]["args"] == ["right-index-finger"]
    assert dbus.signals[ended]["args"] == ["verify-unknown-error", True] and selected < ended
    assert dbus.error("VerifyStart", "any").message == "Verification already in progress"
    dbus.call("VerifyStop")
    place = dbus.call_placed("EnrollStart", "left-thumb")  # as fprintd's test_suspend_prevents_enroll
    ended = dbus.wait_signal("EnrollStatus", start=place)
    assert dbus.signals[ended]["args"] == ["enroll-unknown-error", True]
    dbus.call("EnrollStop")
    dbus.call("Release")
    assert verify_with_tool(world, ["alice"]).lines()[-1] == (
        "failed to claim device: GDBus.Error:%sInternal: Open failed with error: The device is still busy with "
        "another operation, please try again later." % ERROR)

    world.emit_prepare_for_sleep(False)
    daemon.log.wait_for("readers reopened after sleep", timeout=10)
    i = daemon.log.wait_for("holding a sleep delay inhibitor")
    daemon.log.wait_for("holding a sleep delay inhibitor", start=i + 1)  # taken again
    assert inhibitors(world) == [INHIBITOR]
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    assert verify_with_tool(world, ["alice"], scan=ALICE_PRINT).lines()[-1] == "Verify result: verify-match (done)"


def test_without_logind_the_daemon_serves_as_before(bus_world, bus_daemon):
    bus_daemon.log.wait_for("no sleep inhibitor (no logind on this bus?)")
    enroll_alice(bus_world)
    assert verify_with_tool(bus_world, ["alice"], scan=ALICE_PRINT).lines()[-1] == "Verify result: verify-match (done)"


@pytest.mark.usefixtures("reader_kind")  # on each kind of reader (readers.py)
def test_suspend_mid_enrollment_fails_it_and_saves_nothing(bus_world):
    world = bus_world
    world.start_logind()
    daemon = world.start_daemon()
    root = world.root
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("EnrollStart", "right-index-finger")
    world.reader.scan("alice-ri")
    root.wait_signal("EnrollStatus", lambda a: a == ["enroll-stage-passed", False], start=mark)
    world.emit_prepare_for_sleep(True)
    i = root.wait_signal("EnrollStatus", lambda a: a[1], start=mark)
    assert root.signals[i]["args"] == ["enroll-unknown-error", True]  # as fprintd's suspend test has it
    root.call("EnrollStop")
    root.call("Release")
    daemon.log.wait_for("released the sleep inhibitor", timeout=10)
    assert world.cli("list", "--user", "alice").stdout.strip() == "No fingers enrolled for alice."


def test_sleep_is_handled_with_the_fprintd_api_turned_off(bus_world):
    """The sleep watcher is a service of its own: with `fprintd_api = no` the daemon still holds
    the inhibitor, ends prompts before sleep and reopens the reader after it."""
    world = bus_world
    world.start_logind()
    conf = world.dir / "touchgate.conf"
    conf.write_text("fprintd_api = no\n")
    daemon = harness.World.start_daemon(world, config=conf)  # no name on the bus to wait for
    daemon.log.wait_for("holding a sleep delay inhibitor")
    assert inhibitors(world) == [INHIBITOR]
    enroll_alice(world)
    pam = world.pam("alice")
    pam.wait_for(PROMPT)

    world.emit_prepare_for_sleep(True)
    assert pam.wait().result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert pam.messages()[-1] == SLEEPING, pam.transcript()
    daemon.log.wait_for("released the sleep inhibitor", timeout=10)
    wait_inhibitors(world, [])

    world.emit_prepare_for_sleep(False)
    daemon.log.wait_for("readers reopened after sleep", timeout=10)
    wait_inhibitors(world, [INHIBITOR])
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    assert not any("serving fprintd's D-Bus API" in text for text in daemon.log.texts())


def test_sigterm_stops_the_services_last_started_first(bus_world):
    world = bus_world
    world.start_logind()
    daemon = world.start_daemon()
    daemon.log.wait_for("holding a sleep delay inhibitor")
    assert daemon.stop() == 0, daemon.log.dump()
    stopped = [text.split("stopped: ", 1)[1] for text in daemon.log.texts() if "stopped: " in text]
    assert stopped == ["fprintd D-Bus API", "sleep watcher", "reader settled", "readiness", "socket listener",
                       "core", "reader", "linux audit"], daemon.log.dump()
    wait_inhibitors(world, [])  # given back
