"""End to end, the prints people already have: fprintd's layout used as it is (no import step, and
going back to fprintd loses nothing), the older touchgate layout moved into it at start without
loss, a bad file costing only its finger, and a print store that is gone or cannot be written."""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import harness
from fprintd_world import (ALICE_PRINT, DEBIAN_PYTHON, ERROR, bus_world, enroll_alice,  # noqa: F401
                           enroll_with_tool, password_success, status, verify_with_tool)
from harness import PROMPT
from swtpm import SwTPM
from test_sealing import configure, print_files

DEVICE = ("virtual_device", "0")  # libfprint's virtual reader: driver, device id
MAKER = Path(__file__).resolve().parent / "fprintd_print.py"
CHANGED = "Enter your password: the enrolled fingerprints changed"


def print_file(world, user, finger_number):
    return world.prints.joinpath(user, *DEVICE, "%x" % finger_number)


def fprintd_wrote(world, user, finger_number, scan_id):
    """A print saved as fprintd saves one (libfprint's serialized print, 0644 in 0700 directories),
    made by libfprint on a virtual reader of its own: touchgate has no part in it."""
    p = subprocess.run([DEBIAN_PYTHON, "-B", str(MAKER), str(world.prints), user, str(finger_number), scan_id,
                        str(world.dir / ("maker-%s.sock" % user))], capture_output=True, text=True, timeout=30,
                       env=harness._env({}))
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip())


def test_prints_fprintd_enrolled_are_used_as_they_are_and_count_as_an_enrollment_change(bus_world):
    world = bus_world
    world.start_daemon()
    password_success(world)  # alice used her password before: touchgate knows her, with no prints
    world.daemon.stop()
    written = fprintd_wrote(world, "alice", 7, "fprintd-alice")
    before = written.read_bytes()

    world.start_daemon()
    assert world.run_tool("fprintd-list", "alice").lines()[-1] == " - #0: right-index-finger"
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]
    # Not written by touchgate: a changed set of prints, so the password once, then the finger.
    assert status(world)["passwordRequired"] == ["enrollmentChanged"]
    refused = verify_with_tool(world, ["alice"])
    assert refused.lines()[-1] == "VerifyStart failed: GDBus.Error:%sPermissionDenied: %s" % (ERROR, CHANGED)
    password_success(world)
    matched = verify_with_tool(world, ["alice"], scan="fprintd-alice")
    assert matched.lines()[-1] == "Verify result: verify-match (done)", matched.transcript()
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan("fprintd-alice")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    # Left where fprintd keeps it, byte for byte: going back to fprintd loses nothing.
    assert written.read_bytes() == before and stat.S_IMODE(written.stat().st_mode) == 0o644


def test_a_user_new_to_touchgate_with_fprintd_prints_needs_no_enabling_only_the_password_once(bus_world):
    world = bus_world
    fprintd_wrote(world, "bob", 1, "fprintd-bob")  # before touchgate ever ran
    world.start_daemon()
    s = status(world, "bob")
    assert s["enabled"] and s["fingers"] == ["left-thumb"] and "boot" in s["passwordRequired"], s
    password_success(world, "bob")
    matched = verify_with_tool(world, ["bob"], scan="fprintd-bob")
    assert matched.lines()[-2:] == ["Verifying: left-thumb", "Verify result: verify-match (done)"], matched.transcript()


def test_the_older_touchgate_layout_is_moved_into_fprintds_at_start_without_loss(bus_world):
    world = bus_world
    world.start_daemon()
    enroll_alice(world)
    enroll_alice(world, "alice-left-thumb", finger="left-thumb")
    right, thumb = print_file(world, "alice", 7).read_bytes(), print_file(world, "alice", 1).read_bytes()
    enroll_alice(world, "alice-left-thumb-2", finger="left-thumb")  # the store's thumb now differs
    thumb_now = print_file(world, "alice", 1).read_bytes()
    assert thumb_now != thumb
    world.daemon.stop()

    # The older layout: <state>/users/<user>/<finger>.print
    legacy = world.state / "users" / "alice"
    (legacy / "right-index-finger.print").write_bytes(right)
    (legacy / "left-thumb.print").write_bytes(thumb)  # its place is taken by a different print
    print_file(world, "alice", 7).unlink()
    bob_legacy = world.state / "users" / "bob"
    bob_legacy.mkdir(mode=0o700)
    (bob_legacy / "left-thumb.print").write_bytes(b"not a print")

    daemon = world.start_daemon()
    daemon.log.wait_for("moved alice's right-index-finger to the print store")
    daemon.log.wait_for("left-thumb.print: alice's left-thumb in the print store differs; left in place")
    daemon.log.wait_for("bob/left-thumb.print: libfprint cannot read this print; left in place")
    assert print_file(world, "alice", 7).read_bytes() == right
    assert not (legacy / "right-index-finger.print").exists()
    assert (legacy / "left-thumb.print").read_bytes() == thumb and print_file(world, "alice", 1).read_bytes() == thumb_now
    assert (bob_legacy / "left-thumb.print").read_bytes() == b"not a print"

    listed = world.run_tool("fprintd-list", "alice")
    assert listed.lines()[-2:] == [" - #0: left-thumb", " - #1: right-index-finger"], listed.transcript()
    # The same set as at alice's last password (her own enrollment): the moved print works at once.
    assert status(world)["passwordRequired"] == []
    matched = verify_with_tool(world, ["-f", "right-index-finger", "alice"], scan=ALICE_PRINT)
    assert matched.lines()[-1] == "Verify result: verify-match (done)", matched.transcript()


def test_a_corrupt_foreign_or_unreadable_print_file_costs_only_its_finger(bus_world):
    world = bus_world
    daemon = world.start_daemon()
    enroll_alice(world)
    assert harness.enroll(world, "bob", "bob-print", as_user="bob")[0] == 0
    daemon.stop()
    print_file(world, "alice", 1).write_bytes(b"FP3 but not a print")                  # corrupt
    print_file(world, "alice", 2).write_bytes(print_file(world, "bob", 7).read_bytes())  # bob's, foreign
    os.mkfifo(print_file(world, "alice", 3), 0o600)                                      # not a regular file
    print_file(world, "alice", 4).write_bytes(print_file(world, "alice", 7).read_bytes())
    os.chown(print_file(world, "alice", 4), 1001, 1001)                                  # owned by someone else

    daemon = world.start_daemon()
    password_success(world)  # the set changed; alice proves her password once
    # Over D-Bus only the usable print, as Debian's fprintd 1.94.2 lists only the prints it can load
    # (tests/fprintd.py, test_unclaimed_list_enrolled_fingers_ignores_invalid): a desktop then
    # offers to enroll the others again. The CLI lists them all, and status names the damaged.
    listed = world.run_tool("fprintd-list", "alice")
    assert [l.split(": ")[1] for l in listed.lines() if l.startswith(" - #")] == ["right-index-finger"], listed.transcript()
    assert world.cli("list", "--user", "alice").stdout.split() == [
        "left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger", "right-index-finger"]
    for finger, why in (("left-thumb", "libfprint cannot read it"), ("left-index-finger", "it is a print of 'bob', not of alice"),
                        ("left-middle-finger", "is not a regular file"), ("left-ring-finger", "is owned by uid 1001")):
        i = daemon.log.wait_for("alice's %s print is not used: " % finger)
        assert why in daemon.log.texts()[i], daemon.log.texts()[i]

    # Any finger: the good one, and the finger named is the one checked, as fprintd chooses among
    # the prints it can load (the first listed, left-thumb, is damaged).
    matched = verify_with_tool(world, ["-f", "any", "alice"], scan=ALICE_PRINT)
    assert matched.lines()[-2:] == ["Verifying: right-index-finger", "Verify result: verify-match (done)"], \
        matched.transcript()
    # fprintd-verify picks the first listed finger by itself: the usable one.
    first = verify_with_tool(world, ["alice"], scan=ALICE_PRINT)
    assert first.lines()[-1] == "Verify result: verify-match (done)", first.transcript()
    # A damaged finger named: not listed, so fprintd-verify says so itself, as with fprintd.
    damaged = verify_with_tool(world, ["-f", "left-thumb", "alice"])
    assert damaged.lines()[-1] == "Finger 'left-thumb' not enrolled for user alice.", damaged.transcript()
    assert status(world)["damagedFingers"] == ["left-thumb", "left-index-finger", "left-middle-finger", "left-ring-finger"]
    bob = verify_with_tool(world, ["bob"], scan="bob-print")  # bob's own print is his, and unharmed
    assert bob.lines()[-1] == "Verify result: verify-match (done)", bob.transcript()


# libfprint's virtual chip keeps its prints in the daemon's memory: after a restart it holds none.
@pytest.mark.parametrize("reader_kind", ["virtual_device", "virtual_image"])
def test_any_finger_is_chosen_among_the_prints_a_match_can_use_never_a_sealed_one(bus_world, reader_kind):
    """left-thumb sealed under a TPM that cannot open it now, right-index in the clear: VerifyStart
    "any" names the one finger the core matches against, where a reader that verifies one print
    would otherwise name the first listed (left-thumb) and one that identifies would say "any"."""
    world = bus_world
    world.start_daemon(config=configure(world, None, seal="no"))
    enroll_alice(world)  # right-index, in the clear
    world.daemon.stop()
    [clear] = print_files(world)
    aside = world.dir / "right-index-aside"
    clear.rename(aside)  # not there while the TPM seals: it stays in the clear
    with SwTPM(world.dir) as tpm:
        world.start_daemon(config=configure(world, tpm))
        enroll_alice(world, "alice-left-thumb", finger="left-thumb")
        world.daemon.stop()
    aside.rename(clear)

    world.start_daemon(config=configure(world, None))  # sealing required, the TPM gone
    password_success(world)  # the set of prints changed outside the daemon
    assert status(world)["sealedFingers"] == ["left-thumb"]
    root = world.root
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    assert root.signals[root.wait_signal("VerifyFingerSelected", start=mark)]["args"] == ["right-index-finger"]
    world.reader.scan(ALICE_PRINT)
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
    root.call("VerifyStop")
    root.call("Release")


def test_a_print_store_that_vanishes_or_cannot_be_written_is_an_error_for_those_calls_only(bus_world):
    world = bus_world
    daemon = world.start_daemon()
    enroll_alice(world)
    (world.prints / "bob").write_text("in the way")  # bob's directory cannot be made: a file is there
    failed = enroll_with_tool(world, "bob-print", "bob")
    assert failed.returncode == 1 and failed.lines()[-1] == "Enroll result: enroll-failed", failed.transcript()
    listed = world.run_tool("fprintd-list", "bob")  # not "no prints": bob is told his cannot be read
    assert listed.lines()[-1] == "ListEnrolledFingers failed: GDBus.Error:%sInternal: %s" % (
        ERROR, "Fingerprint unavailable: its stored files are not safe to use (ask the administrator)"), listed.transcript()
    kept = world.run_tool("fprintd-delete", "bob")
    assert kept.lines()[-1] == "Failed to delete fingerprints: GDBus.Error:%sPrintsNotDeleted: %s" % (
        ERROR, "Failed to delete the prints: the print store cannot be changed (the daemon's log says why)"), kept.transcript()
    matched = verify_with_tool(world, ["alice"], scan=ALICE_PRINT)  # everyone else is unaffected
    assert matched.lines()[-1] == "Verify result: verify-match (done)"

    shutil.rmtree(world.prints)  # the whole store, gone while the daemon runs
    failed = enroll_with_tool(world, "alice-thumb", "-f", "left-thumb", "alice")
    assert failed.lines()[-1] == "Enroll result: enroll-failed", failed.transcript()
    gone = world.run_tool("fprintd-delete", "alice")
    assert "No fingerprints to delete" in gone.lines()[-1], gone.transcript()
    assert daemon.proc.poll() is None
    assert world.root.call("GetDefaultDevice", path="/net/reactivated/Fprint/Manager",
                           iface="net.reactivated.Fprint.Manager") == ["/net/reactivated/Fprint/Device/0"]

    # A store that is missing at start is made again (0700), and enrolling works again.
    daemon.stop()
    world.start_daemon()
    assert stat.S_IMODE(world.prints.stat().st_mode) == 0o700
    again = enroll_with_tool(world, "alice-again", "alice")
    assert again.returncode == 0, again.transcript()
