"""End to end, fprintd's own clients against touchgated's D-Bus API (fprintd itself never runs):
fprintd-enroll, fprintd-list, fprintd-verify, fprintd-delete and pam_fprintd.so through pamtester,
on a private system bus whose policy is the one touchgate ships."""

import subprocess

import pytest

import harness
from fprintd_world import (ALICE_PRINT, ERROR, FPRINT, MANAGER, MANAGER_IFACE, BusError, bus_daemon,  # noqa: F401
                           bus_world, enroll_alice, enroll_with_tool, password_success, status, verify_with_tool)
from harness import PASSWORD_AFTER_BOOT, WaitTimeout, now

LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"
PAM_FPRINTD_PROMPT = "Swipe your right index finger across the fingerprint reader"  # pam_fprintd's own words

# Each test that uses the reader runs on each of libfprint's three kinds of reader (readers.py).
pytestmark = pytest.mark.usefixtures("reader_kind")


def no_prints(world, user="alice"):
    return "User %s has no fingers enrolled for %s." % (user, world.reader.name)


def test_only_root_may_own_the_name_and_touchgated_holds_it(bus_world, bus_daemon):
    # A user's process is refused by the bus policy we ship: it cannot pose as the service.
    alice = bus_world.client("alice")
    try:
        alice.own(FPRINT)
    except BusError as e:
        assert e.name == "org.freedesktop.DBus.Error.AccessDenied", e
    else:
        raise AssertionError("alice could own %s" % FPRINT)
    # root may (the policy lets it), but touchgated already holds the name: 3 = EXISTS.
    assert bus_world.root.own(FPRINT) == 3
    owner = bus_world.root.call("GetNameOwner", FPRINT, dest="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                iface="org.freedesktop.DBus")[0]
    pid = bus_world.root.call("GetConnectionUnixProcessID", owner, dest="org.freedesktop.DBus",
                              path="/org/freedesktop/DBus", iface="org.freedesktop.DBus")[0]
    assert pid == bus_daemon.proc.pid


def test_fprintd_tools_enroll_list_verify_and_delete_against_touchgated(bus_world, bus_daemon):
    world = bus_world
    assert world.run_tool("fprintd-list", "alice").lines()[-1] == no_prints(world)

    enrolled = enroll_with_tool(world, "alice-ri", "-f", "right-index-finger", "alice")
    assert enrolled.returncode == 0, enrolled.transcript()
    assert enrolled.lines()[1:] == ["Enrolling right-index-finger finger."] + ["Enroll result: enroll-stage-passed"] * (world.reader.enroll_scans - 1) \
        + ["Enroll result: enroll-completed"], enrolled.transcript()

    listed = world.run_tool("fprintd-list", "alice")
    assert listed.lines()[-2:] == ["Fingerprints for user alice on %s (swipe):" % world.reader.name,
                                   " - #0: right-index-finger"], listed.transcript()
    # One store: touchgate's own CLI sees the same print.
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]

    # root enrolled it: alice's password is asked once before it unlocks anything (boot first).
    refused = verify_with_tool(world, ["alice"])
    assert refused.returncode == 1
    assert refused.lines()[-1] == "VerifyStart failed: GDBus.Error:%sPermissionDenied: %s" % (ERROR, PASSWORD_AFTER_BOOT)

    password_success(world)
    matched = verify_with_tool(world, ["alice"], scan="alice-ri")
    assert matched.returncode == 0, matched.transcript()
    assert matched.lines()[-3:] == ["Verify started!", "Verifying: right-index-finger", "Verify result: verify-match (done)"]
    missed = verify_with_tool(world, ["alice"], scan="someone-else")
    assert missed.returncode == 1, missed.transcript()
    assert missed.lines()[-1] == "Verify result: verify-no-match (done)"
    assert status(world)["failedMatches"] == 1

    deleted = world.run_tool("fprintd-delete", "alice")
    assert deleted.returncode == 0, deleted.transcript()
    assert deleted.lines()[-1] == "Fingerprints of user alice deleted on %s" % world.reader.name
    assert world.run_tool("fprintd-list", "alice").lines()[-1] == no_prints(world)
    assert world.cli("list", "--user", "alice").stdout.strip() == "No fingers enrolled for alice."
    assert not (world.prints / "alice").exists()  # fprintd's layout: empty directories go too


def test_a_user_lists_and_verifies_their_own_prints_and_is_told_why_enrolling_needs_polkit(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    listed = world.run_tool("fprintd-list", "alice", as_user="alice")
    assert listed.lines()[-1] == " - #0: right-index-finger", listed.transcript()
    mine = verify_with_tool(world, [], scan=ALICE_PRINT, as_user="alice")  # "" is the caller
    assert mine.returncode == 0 and mine.lines()[-1] == "Verify result: verify-match (done)", mine.transcript()

    # Without polkit, changing prints needs the password, which D-Bus cannot ask for: refused, saying so.
    refused = world.tool("fprintd-enroll", "-f", "left-thumb", as_user="alice").wait()
    assert refused.returncode == 1
    assert refused.lines()[-1].startswith("EnrollStart failed: GDBus.Error:%sPermissionDenied: " % ERROR), refused.transcript()
    assert "needs your password" in refused.lines()[-1] and "touchgate enroll" in refused.lines()[-1]
    gone = world.tool("fprintd-delete", "alice", as_user="alice").wait()
    assert "PermissionDenied" in gone.out.dump() and "needs your password" in gone.out.dump(), gone.transcript()
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]


# --- pam_fprintd.so ----------------------------------------------------------------------------


def test_pam_fprintd_authenticates_alice_with_her_finger(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    pam = world.pam("alice", service=world.fprintd_service())
    pam.wait_for(PAM_FPRINTD_PROMPT)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    assert status(world)["lastFingerprintSuccess"] > 0


def test_pam_fprintd_three_wrong_fingers_end_in_maxtries_and_count_toward_the_lockout(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    pam = world.pam("alice", service=world.fprintd_service())
    i = 0
    for k in range(3):  # pam_fprintd starts a verify per try; each is one of touchgate's prompts
        i = pam.wait_for(PAM_FPRINTD_PROMPT, start=i)
        world.reader.scan("stranger-%d" % k)
        i = pam.wait_for("Failed to match fingerprint", start=i + 1)
    assert pam.wait().result == "PAM_MAXTRIES", pam.transcript()
    assert status(world)["failedMatches"] == 3


def test_pam_fprintd_refuses_a_locked_out_user_and_the_reason_reaches_log_client_and_audit(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    for k in range(5):
        verify_with_tool(world, ["alice"], scan="stranger-%d" % k)
    assert status(world)["lockedOut"]
    audited = len(bus_daemon.log.texts())

    # PAM_WRAPPER_DEBUGLEVEL=3 shows what pam_fprintd logs with pam_syslog (its `debug` option is on).
    pam = world.pam("alice", service=world.fprintd_service(), env={"PAM_WRAPPER_DEBUGLEVEL": "3"})
    assert pam.wait().result == "PAM_AUTH_ERR", pam.transcript()  # pam_fprintd's code for a failed VerifyStart
    assert PAM_FPRINTD_PROMPT not in pam.messages()  # no prompt for a finger that cannot be used
    # pam_fprintd shows the person no daemon sentence; its debug log carries ours.
    assert any(line.endswith("VerifyStart failed: " + LOCKED) for line in pam.out.texts()), pam.transcript()
    # The audit record of the refusal, as for any refused evaluation.
    bus_daemon.log.wait_for("event=outcome user=alice service=net.reactivated.Fprint outcome=biometryLockout reason=lockout",
                            start=audited)
    # And fprintd-verify prints the D-Bus error's message.
    told = verify_with_tool(world, ["alice"])
    assert told.lines()[-1] == "VerifyStart failed: GDBus.Error:%sPermissionDenied: %s" % (ERROR, LOCKED)


def test_while_fprintd_holds_the_name_touchgated_serves_pam_alone_and_says_so(bus_world):
    world = bus_world
    assert world.root.own(FPRINT) == 1  # 1 = PRIMARY_OWNER: root's stand-in for a running fprintd
    daemon = harness.World.start_daemon(world)  # not BusWorld's: it would wait for the name
    daemon.log.wait_for("net.reactivated.Fprint is owned by another service (fprintd?): its D-Bus API is not served")
    enroll_alice(world)
    harness.finger_success(world, ALICE_PRINT)


def test_without_a_reader_there_is_no_device_and_fprintd_list_says_so(bus_world):
    world = bus_world
    env = harness.daemon_env(world)
    del env[harness.READER_ENV[world.reader_kind]]
    env["FP_DRIVERS_WHITELIST"] = "no_such_driver"  # libfprint finds no reader at all
    proc = subprocess.Popen([str(harness.TOUCHGATED), "--socket", str(world.socket), "--state-dir", str(world.state),
                             "--print-store", str(world.prints), "--config", "/nonexistent"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        world.root.wait_name(FPRINT)
        manager = dict(path=MANAGER, iface=MANAGER_IFACE)
        assert world.root.call("GetDevices", **manager) == [[]]
        e = world.root.error("GetDefaultDevice", **manager)
        assert (e.name, e.message) == (ERROR + "NoSuchDevice", "No devices available")
        assert world.run_tool("fprintd-list", "alice").lines() == ["No devices available"]
    finally:
        proc.terminate()
        proc.wait(harness.DEFAULT_WAIT)


def test_the_daemon_gives_its_free_heap_pages_back_after_a_claim_and_after_socket_clients(bus_world):
    """An image reader's buffers, or a burst of connections, leave free pages in the heap that
    glibc keeps: the daemon gives them back when a D-Bus client's claim ends and when a spell of
    socket clients is over (it says so at debug level)."""
    world = bus_world
    daemon = world.start_daemon(args=("--debug",))
    mark = len(daemon.log.texts())
    enrolled = enroll_with_tool(world, "alice-ri", "alice")
    assert enrolled.returncode == 0, enrolled.transcript()
    daemon.log.wait_for("gave the heap's free pages back to the kernel after a D-Bus claim", start=mark)
    mark = len(daemon.log.texts())
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    daemon.log.wait_for("gave the heap's free pages back to the kernel after a spell of socket clients", start=mark)


def test_a_verify_listens_past_the_daemons_timeout_until_a_finger_comes(bus_world):
    """As fprintd's, a VerifyStart listens until it is stopped: the daemon's `timeout` (2 s here,
    for the PAM prompts) neither restarts the reader, which would drop finger-needed and raise it
    again, nor records a timeout; the finger given later still matches."""
    world, root = bus_world, bus_world.root
    conf = world.dir / "touchgate.conf"
    conf.write_text("timeout = 2\n")
    daemon = world.start_daemon(config=conf)
    enroll_alice(world)
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    listening = root.wait_finger_needed(True, start=mark)
    logged = len(daemon.log.texts())
    began = now()
    try:  # the wait is the test: no property may change while it listens for over two timeouts
        changed = root.wait_signal("PropertiesChanged", start=listening + 1, timeout=5.0)
        raise AssertionError("a property changed while the verify listened: %s" % root.signals[changed])
    except WaitTimeout:
        pass
    assert now() - began >= 5.0
    assert not [t for t in daemon.log.texts()[logged:] if "outcome=timeout" in t], daemon.log.dump()
    world.reader.scan(ALICE_PRINT)
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=listening)
    root.call("VerifyStop")
    root.call("Release")
    assert not [t for t in daemon.log.texts()[logged:] if "outcome=timeout" in t], daemon.log.dump()


# --- the reader's own words: retry hints, an unplugged reader -------------------------------------


def test_retry_hints_reach_fprintds_clients_in_fprintds_words(bus_world, bus_daemon):
    world = bus_world
    t = world.tool("fprintd-enroll", "alice")
    t.out.wait_for("Enrolling right-index-finger finger.")
    world.reader.retry(1)  # swipe too short: a hint, not a stage
    t.out.wait_for("Enroll result: enroll-swipe-too-short")
    seen = 0
    for k in range(world.reader.enroll_scans):
        world.reader.scan("alice-ri")
        if k < world.reader.enroll_scans - 1:
            # The next finger once the stage is reported: an image reader drops a frame that comes
            # while it is not capturing.
            seen = t.out.wait_for("Enroll result: enroll-stage-passed", start=seen) + 1
    assert t.wait().lines()[-1] == "Enroll result: enroll-completed", t.transcript()

    password_success(world)
    verify = world.tool("fprintd-verify", "alice")
    verify.out.wait_for("Verify started!")
    world.reader.retry(2)  # centre your finger
    verify.out.wait_for("Verify result: verify-finger-not-centered (not done)")
    world.reader.scan("alice-ri")
    assert verify.wait().lines()[-1] == "Verify result: verify-match (done)", verify.transcript()
    assert status(world)["failedMatches"] == 0  # hints are no failed matches

    pam = world.pam("alice", service=world.fprintd_service())
    pam.wait_for(PAM_FPRINTD_PROMPT)
    world.reader.retry(1)
    pam.wait_for("Swipe was too short, try again")  # pam_fprintd's own sentence for it
    world.reader.scan("alice-ri")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()


def test_a_reader_unplugged_mid_verify_is_reported_disconnected(bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    verify = world.tool("fprintd-verify", "alice")
    verify.out.wait_for("Verify started!")
    world.reader.unplug()
    # Then the Release fails, as with Debian's fprintd 1.94.2, and fprintd-verify says so.
    assert verify.wait().lines()[-2:] == [
        "Verify result: verify-disconnected (done)",
        "ReleaseDevice failed: GDBus.Error:net.reactivated.Fprint.Error.Internal: "
        "Release failed with error: This device has been removed from the system."], verify.transcript()
    assert status(world)["failedMatches"] == 0


def test_signals_come_in_fprintds_order_around_the_start_and_the_result(bus_world, bus_daemon):
    """As Debian's fprintd 1.94.2 orders them on the same bus and reader: the start is answered
    first, then VerifyFingerSelected, then finger-needed, which follows the driver's own: a virtual
    reader's result is told before it drops, an image reader drops it once the image is taken, before
    the result, and between an enrollment's captures; a stopped verify stops listening first."""
    world, root = bus_world, bus_world.root
    enroll_alice(world)

    def needed(value):
        return lambda a: a[0] == "net.reactivated.Fprint.Device" and a[1].get("finger-needed") is value

    root.call("Claim", "alice")
    mark = root.signal_count()
    answered = root.call_placed("VerifyStart", "any")
    selected = root.wait_signal("VerifyFingerSelected", start=mark)
    listening = root.wait_signal("PropertiesChanged", needed(True), start=mark)
    assert mark <= answered <= selected < listening, root.signals[mark:]
    world.reader.scan(ALICE_PRINT)
    told = root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=listening)
    dropped = root.wait_signal("PropertiesChanged", needed(False), start=listening)
    assert (dropped < told) if world.reader.kind == "virtual_image" else (told < dropped), root.signals[listening:]
    if world.reader.kind != "virtual_image":
        # The scan command sets and clears the finger's status in one go: no change, as for fprintd.
        assert not [s for s in root.signals[listening:told]
                    if s["signal"] == "PropertiesChanged" and "finger-present" in s["args"][1]], root.signals[listening:]
    root.call("VerifyStop")

    mark = root.signal_count()
    root.call("VerifyStart", "any")
    root.wait_signal("PropertiesChanged", needed(True), start=mark)
    stopped = root.signal_count()
    root.call("VerifyStop")
    assert root.wait_signal("PropertiesChanged", needed(False), start=stopped) < \
        root.wait_signal("VerifyStatus", lambda a: a == ["verify-no-match", True], start=stopped)

    mark = root.signal_count()
    answered = root.call_placed("EnrollStart", "left-thumb")
    listening = root.wait_signal("PropertiesChanged", needed(True), start=mark)
    assert answered <= listening, root.signals[mark:]
    if world.reader.kind != "virtual_device":
        # A reader that can identify: fprintd's duplicate check is an action of its own, so it
        # stops listening, tells the stage, and listens again for the enrollment (an image reader
        # does the same between every two captures).
        for _ in range(2):
            world.reader.scan("alice-left-thumb")
            stage = root.wait_signal("EnrollStatus", lambda a: a == ["enroll-stage-passed", False], start=listening)
            assert listening < root.wait_signal("PropertiesChanged", needed(False), start=listening) < stage < \
                root.wait_signal("PropertiesChanged", needed(True), start=stage), root.signals[listening:]
            listening = root.wait_signal("PropertiesChanged", needed(True), start=stage)
            if world.reader.kind == "virtual_device_storage":
                break  # its driver's own stages listen on
    root.call("EnrollStop")
    root.call("Release")
