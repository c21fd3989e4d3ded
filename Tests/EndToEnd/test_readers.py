"""Each kind of reader on each door: libfprint's three virtual readers (readers.py) behind the PAM
module, the CLI and the D-Bus front-end. The duplicate check of an enrollment on the readers that
can identify, and every error and retry code the virtual readers can produce, mapped as
docs/readers.md says. The match-on-chip reader's own storage: test_chip_storage.py."""

import datetime
import json
import re
import signal
import subprocess

import pytest

import doc_tables
import harness
import reader_codes
import readers
import wire
from fprintd_world import (ALICE_PRINT, DEVICE_IFACE, bus_daemon, bus_world, enroll_alice, enroll_with_tool,  # noqa: F401
                           password_success, status)

IDENTIFYING = pytest.mark.parametrize("reader_kind", ["virtual_device_storage", "virtual_image"])

# libfprint's FpDeviceError and FpDeviceRetry codes, as the virtual readers' ERROR and RETRY
# commands take them: those the reader layer knows, read from its sources (reader_codes.py). What
# each door answers: the tables of docs/readers.md, read from there, a row for each code
# (test_the_tables_have_a_row_for_every_code_the_reader_layer_knows).
ERROR_ROWS = doc_tables.by_code(doc_tables.table("readers.md", "FpDeviceError"))
RETRY_ROWS = doc_tables.by_code(doc_tables.table("readers.md", "FpDeviceRetry"))

# 256 (removed) is sent last: the reader is gone after it.
REMOVED = reader_codes.DEVICE_ERRORS["REMOVED"]
DATA_NOT_FOUND = reader_codes.DEVICE_ERRORS["DATA_NOT_FOUND"]
ERRORS = sorted(code for code in reader_codes.DEVICE_ERRORS.values() if code != REMOVED)
RETRIES = sorted(reader_codes.RETRY_HINTS.values())
# The errors that end a prompt: DATA_NOT_FOUND to a scan is a failed match instead.
ENDING = [code for code in ERRORS if code != DATA_NOT_FOUND]

# The PAM module's result and last sentence; fprintd's VerifyStatus / EnrollStatus.
PAM_RESULT = {code: "PAM_" + row[2].split(",")[0] for code, row in ERROR_ROWS.items()}
PAM_TEXT = {code: doc_tables.sentence(row[2]) for code, row in ERROR_ROWS.items()}
VERIFY_STATUS = {code: row[4] for code, row in ERROR_ROWS.items()}
ENROLL_STATUS = {code: row[5] for code, row in ERROR_ROWS.items()}

RETRY_TEXT = {code: doc_tables.sentence(row[2]) for code, row in RETRY_ROWS.items()}
VERIFY_RETRY = {code: row[3] for code, row in RETRY_ROWS.items()}
ENROLL_RETRY = {code: row[4] for code, row in RETRY_ROWS.items()}
# The codes the virtual readers can send: those the libfprint loaded knows (TOO_FAST from 1.94.9).
RETRY_CODES = sorted(code for code in RETRIES if code in readers.retry_codes())


def test_the_tables_have_a_row_for_every_code_the_reader_layer_knows():
    """docs/readers.md's tables, by code and name, are libfprint's FpDeviceError (every one reaches
    the reader layer's mapping) and the cases of RetryHint: none missing, none the code lacks."""
    assert reader_codes.MAPPED_ERRORS and reader_codes.MAPPED_ERRORS <= set(reader_codes.DEVICE_ERRORS), \
        reader_codes.MAPPED_ERRORS
    assert {code: row[0] for code, row in ERROR_ROWS.items()} == \
        {code: name for name, code in reader_codes.DEVICE_ERRORS.items()}
    assert {code: row[0] for code, row in RETRY_ROWS.items()} == \
        {code: name for name, code in reader_codes.RETRY_HINTS.items()}


def enroll_once(world, user, print_id, finger, as_user=None):
    """`touchgate enroll` refused after its first scan: (exit status, CliProcess)."""
    cli = harness.CliProcess(world, "enroll", "--user", user, "--finger", finger, as_user=as_user,
                             password=harness.PASSWORDS.get(as_user) if as_user else None)
    cli.out.wait_for(re.compile(r"\S"))  # the prompt: the reader is listening
    world.reader.scan(print_id)
    return cli.wait(), cli


# --- any finger ---------------------------------------------------------------------------------


def test_any_finger_matches_on_readers_that_identify_and_the_plain_one_asks_for_the_first(reader_kind, world, alice):
    """Two fingers enrolled: on a reader that can identify, a prompt is one identify over both
    prints, so either finger matches; the plain reader verifies one print at a time, the first
    finger in libfprint's order, as fprintd's VerifyStart("any") picks it there."""
    rc, cli = harness.enroll(world, "alice", "alice-left-thumb", finger="left-thumb", as_user="alice")
    assert rc == 0, cli.stderr
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    world.reader.scan(ALICE_PRINT)  # her right index finger: the second in libfprint's order
    if world.reader.can_identify:
        assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
        return
    pam.wait_for(harness.no_match(2))
    world.reader.scan("alice-left-thumb")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()


# --- the duplicate check ------------------------------------------------------------------------


@IDENTIFYING
def test_a_finger_already_enrolled_is_refused_through_the_cli_saying_whose_only_to_whom_it_may(reader_kind, world, alice):
    # alice's own finger again, as another finger: she is told which of hers it is.
    rc, cli = enroll_once(world, "alice", alice, "left-thumb", as_user="alice")
    assert rc != 0, cli.out.dump()
    assert "This finger is already enrolled as your right-index-finger" in cli.stderr, cli.stderr
    if reader_kind == "virtual_device_storage":
        # The chip matches against all it holds: bob is told only that someone has it, never who.
        rc, cli = enroll_once(world, "bob", alice, "right-index-finger", as_user="bob")
        assert rc != 0
        assert "This finger is already enrolled for another user" in cli.stderr, cli.stderr
        assert "alice" not in cli.stderr + cli.out.dump()
    else:
        # Matched on the computer, bob's scan meets his own prints only: his enrollment is no test
        # of a finger against alice's. It is the first stage; he then leaves.
        cli = harness.CliProcess(world, "enroll", "--user", "bob", "--finger", "right-index-finger",
                                 as_user="bob", password=harness.PASSWORDS["bob"])
        cli.out.wait_for(re.compile(r"\S"))
        world.reader.scan(alice)
        cli.out.wait_for(re.compile(r"stage 1/\d+ "))
        cli.proc.send_signal(signal.SIGINT)
        cli.wait()
        assert "another user" not in cli.stderr and "alice" not in cli.stderr + cli.out.dump(), cli.stderr
        assert "right-index-finger" not in harness.listed(world, "bob")
    # root may know whose it is.
    rc, cli = enroll_once(world, "bob", alice, "right-index-finger")
    assert rc != 0
    assert "This finger is already enrolled as the right-index-finger of alice" in cli.stderr, cli.stderr
    # The probes count toward nobody's lockout.
    for user in ("alice", "bob"):
        doc = json.loads(world.cli("status", "--user", user, "--json").stdout)
        assert doc.get("failedMatches") in (0, None), (user, doc)
    assert harness.listed(world, "alice") == ["right-index-finger"]
    assert "right-index-finger" not in harness.listed(world, "bob")
    # Another finger is enrolled as before, the identify scan first.
    rc, cli = harness.enroll(world, "bob", "bob-print", as_user="bob")
    assert rc == 0, cli.stderr
    assert cli.out.lines[0][1].endswith("scan your finger %d times" % world.reader.enroll_scans), cli.out.dump()


def test_enrolling_a_finger_again_replaces_its_print_through_the_cli(reader_kind, world, alice):
    """As fprintd: the same finger enrolled again replaces its print, and is no duplicate of
    itself (its print is left out of the identify scan; a match-on-chip reader deletes its own
    copy first, or it would refuse the finger it holds)."""
    rc, cli = harness.enroll(world, "alice", alice, as_user="alice")
    assert rc == 0, cli.stderr
    assert harness.listed(world, "alice") == ["right-index-finger"]
    harness.finger_success(world, alice)
    # Another print of that finger: the old one no longer matches.
    rc, cli = harness.enroll(world, "alice", "alice-again", as_user="alice")
    assert rc == 0, cli.stderr
    assert harness.listed(world, "alice") == ["right-index-finger"]
    if reader_kind == "virtual_device_storage":
        assert world.reader.send("LIST").split() == ["alice-again"]
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    world.reader.scan(alice)
    pam.wait_for(harness.no_match(2))
    world.reader.scan("alice-again")
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()


def test_fprintd_enroll_of_a_finger_enrolled_already_replaces_it(reader_kind, bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    # The same finger scanned again: no duplicate of itself.
    t = enroll_with_tool(world, ALICE_PRINT, "-f", "right-index-finger", "alice", listening=True)
    assert t.lines()[-1] == "Enroll result: enroll-completed", t.transcript()
    assert harness.listed(world, "alice") == ["right-index-finger"]
    if world.reader.kind == "virtual_device_storage":
        assert world.reader.send("LIST").split() == [ALICE_PRINT]
    password_success(world)  # root changed her prints: her password once, then the finger
    harness.finger_success(world, ALICE_PRINT)


@IDENTIFYING
def test_fprintd_enroll_of_a_finger_enrolled_for_another_user_ends_in_enroll_duplicate(reader_kind, bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    t = world.tool("fprintd-enroll", "-f", "left-thumb", "bob")
    t.out.wait_for("Enrolling left-thumb finger.")
    world.reader.scan(ALICE_PRINT)
    assert t.wait().lines()[-1] == "Enroll result: enroll-duplicate", t.transcript()
    assert "left-thumb" not in harness.listed(world, "bob")


@pytest.mark.usefixtures("reader_kind")
def test_num_enroll_stages_counts_the_identify_scan_on_readers_that_identify(bus_world, bus_daemon):
    assert bus_world.root.property("num-enroll-stages") == bus_world.reader.enroll_scans
    assert bus_world.root.property("name") == bus_world.reader.name


# --- errors and retries, on every kind and door -------------------------------------------------


@pytest.mark.usefixtures("reader_kind")
def test_every_reader_error_ends_a_pam_prompt_with_a_sentence_and_never_success(world, alice):
    for code in ENDING + [REMOVED]:
        pam = world.pam("alice")
        pam.wait_for(harness.PROMPT)
        world.reader.error(code)
        pam.wait()
        assert pam.result == PAM_RESULT[code], (code, pam.transcript())
        assert pam.result not in ("PAM_SUCCESS", "PAM_IGNORE"), (code, pam.transcript())  # whatever the table says
        assert pam.messages()[-1] == PAM_TEXT[code], (code, pam.transcript())
    assert status(world)["failedMatches"] == 0  # a reader error is no failed match


@pytest.mark.usefixtures("reader_kind")
def test_a_scan_answered_data_not_found_is_a_failed_match_counted_toward_the_lockout(world, alice):
    """Some match-on-chip drivers (libfprint's elanmoc2) answer a finger they do not know with
    DATA_NOT_FOUND instead of a no-match. It counts as one, as fprintd's verify-no-match: as a
    reader error it would let a stranger try finger after finger, one prompt each, uncounted."""
    assert PAM_TEXT[DATA_NOT_FOUND] == harness.no_match(2)  # the table's row says what follows
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    world.reader.error(DATA_NOT_FOUND)
    pam.wait_for(harness.no_match(2))
    assert status(world)["failedMatches"] == 1
    world.reader.error(DATA_NOT_FOUND)
    pam.wait_for(harness.no_match(1))
    world.reader.error(DATA_NOT_FOUND)
    assert pam.wait().result == "PAM_MAXTRIES", pam.transcript()
    assert pam.messages()[-1] == harness.not_recognised(3), pam.transcript()
    assert status(world)["failedMatches"] == 3


@pytest.mark.usefixtures("reader_kind")
def test_every_reader_error_gives_fprintds_verify_and_enroll_status(bus_world, bus_daemon):
    world, root = bus_world, bus_world.root
    enroll_alice(world)
    for code in ERRORS + [REMOVED]:
        root.call("Claim", "alice")
        mark = root.signal_count()
        root.call("VerifyStart", "any")
        root.wait_finger_needed(True, start=mark)
        world.reader.error(code)
        want = [VERIFY_STATUS[code], True]
        root.wait_signal("VerifyStatus", lambda a: a == want, start=mark)
        root.call("VerifyStop")
        # On a reader that identifies, an enrollment's first scan is the duplicate check, where
        # DATA_NOT_FOUND is no duplicate (test_chip_storage.py: ..._duplicate_check_answered_not_found_goes_on).
        if code != REMOVED and not (code == DATA_NOT_FOUND and world.reader.kind != "virtual_device"):
            mark = root.signal_count()
            root.call("EnrollStart", "left-thumb")
            root.wait_finger_needed(True, start=mark)
            world.reader.error(code)
            want = [ENROLL_STATUS[code], True]
            root.wait_signal("EnrollStatus", lambda a: a == want, start=mark)
            root.call("EnrollStop")
        if code == REMOVED:  # the reader is gone from the list: its Release fails, as fprintd's
            assert root.error("Release").name == "net.reactivated.Fprint.Error.Internal"
        else:
            root.call("Release")
    assert harness.listed(world, "alice") == ["right-index-finger"]  # nothing half-enrolled


@pytest.mark.usefixtures("reader_kind")
def test_every_retry_code_is_relayed_and_the_scan_goes_on_on_every_door(bus_world, bus_daemon):
    world, root = bus_world, bus_world.root
    enroll_alice(world)
    for code in RETRY_CODES:
        pam = world.pam("alice")
        pam.wait_for(harness.PROMPT)
        world.reader.retry(code)
        pam.wait_for(RETRY_TEXT[code])
        world.reader.scan(ALICE_PRINT)
        assert pam.wait().result == "PAM_SUCCESS", (code, pam.transcript())

        root.call("Claim", "alice")
        mark = root.signal_count()
        root.call("VerifyStart", "any")
        root.wait_finger_needed(True, start=mark)
        world.reader.retry(code)
        root.wait_signal("VerifyStatus", lambda a: a == [VERIFY_RETRY[code], False], start=mark)
        world.reader.scan(ALICE_PRINT)
        root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
        root.call("VerifyStop")

        mark = root.signal_count()
        root.call("EnrollStart", "left-thumb")
        root.wait_finger_needed(True, start=mark)
        world.reader.retry(code)
        root.wait_signal("EnrollStatus", lambda a: a == [ENROLL_RETRY[code], False], start=mark)
        root.call("EnrollStop")
        root.call("Release")
    assert status(world)["failedMatches"] == 0  # hints are no failed matches


# --- the driver changes its stage count ----------------------------------------------------------


@pytest.mark.parametrize("reader_kind", ["virtual_device", "virtual_device_storage"])  # the image reader has no such command
def test_num_enroll_stages_follows_the_driver_with_properties_changed_and_enrollment_uses_it(reader_kind, bus_world, bus_daemon):
    world, root = bus_world, bus_world.root
    extra = world.reader.enroll_scans - 5  # the identify scan, on the storage reader
    mark = root.signal_count()
    world.reader.send("SET_ENROLL_STAGES 3")
    root.wait_signal("PropertiesChanged", lambda a: a[0] == DEVICE_IFACE and a[1].get("num-enroll-stages") == 3 + extra,
                     start=mark)
    assert root.property("num-enroll-stages") == 3 + extra
    # Enrollment takes the new count: fprintd-enroll sees one stage-passed per scan but the last.
    enrolled = enroll_with_tool(world, "bob-print", "-f", "left-thumb", "bob")
    assert enrolled.returncode == 0, enrolled.transcript()
    assert enrolled.lines()[2:] == ["Enroll result: enroll-stage-passed"] * (2 + extra) + ["Enroll result: enroll-completed"], \
        enrolled.transcript()


@pytest.mark.parametrize("reader_kind", ["virtual_device", "virtual_device_storage"])  # the image reader has no such command
def test_scan_type_follows_the_driver_on_the_bus_and_at_the_prompt(reader_kind, bus_world, bus_daemon):
    """As fprintd's test_scan_type_changes: PropertiesChanged with the new scan-type; the PAM prompt's
    words follow it too."""
    world, root = bus_world, bus_world.root
    for scan_type in ("press", "swipe"):
        mark = root.signal_count()
        world.reader.send("SET_SCAN_TYPE " + scan_type, newline=False)
        root.wait_signal("PropertiesChanged", lambda a: a[0] == DEVICE_IFACE and a[1].get("scan-type") == scan_type,
                         start=mark)
        assert root.property("scan-type") == scan_type
    # The daemon's own prompt says it in its words: press, then swipe.
    enroll_alice(world)
    for scan_type, words in (("press", "Place your finger on"), ("swipe", "Swipe your finger across")):
        world.reader.send("SET_SCAN_TYPE " + scan_type, newline=False)
        session = world.pam("alice")
        session.wait_for(words)
        world.reader.scan(ALICE_PRINT)
        assert session.wait().result == "PAM_SUCCESS", session.transcript()


# --- removal mid-enrollment ---------------------------------------------------------------------


@pytest.mark.usefixtures("reader_kind")
def test_a_reader_unplugged_mid_enrollment_is_reported_disconnected_and_nothing_is_stored(bus_world, bus_daemon):
    world, root = bus_world, bus_world.root
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("EnrollStart", "left-thumb")
    root.wait_finger_needed(True, start=mark)
    world.reader.unplug()
    root.wait_signal("EnrollStatus", lambda a: a == ["enroll-disconnected", True], start=mark)
    # The object stays until released; its Release fails as fprintd's does, and then it is gone.
    manager = dict(path="/net/reactivated/Fprint/Manager", iface="net.reactivated.Fprint.Manager")
    assert root.call("GetDevices", **manager) == [["/net/reactivated/Fprint/Device/0"]]
    root.call("EnrollStop")
    e = root.error("Release")
    assert (e.name, e.message) == ("net.reactivated.Fprint.Error.Internal",
                                   "Release failed with error: This device has been removed from the system."), e
    assert root.call("GetDevices", **manager) == [[]]
    assert "left-thumb" not in harness.listed(world, "alice")
    # Later prompts are told at once that there is no reader.
    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()


# --- fprintd's semantics of the print store ------------------------------------------------------


@pytest.mark.usefixtures("reader_kind")
def test_a_users_print_directory_is_made_at_the_first_enrollment_not_at_start(world, daemon):
    assert [p.name for p in world.prints.iterdir()] == [] if world.prints.exists() else True
    rc, cli = harness.enroll(world, "bob", "bob-print", as_user="bob")
    assert rc == 0, cli.stderr
    user_dir = world.prints / "bob"
    assert user_dir.is_dir() and (user_dir.stat().st_mode & 0o777) == 0o700
    assert [p.name for p in world.prints.iterdir()] == ["bob"]


@pytest.mark.usefixtures("reader_kind")
def test_reader_errors_end_touchgate_verify_with_the_same_sentence(world, alice):
    for code in (0, 5, 8, 257):
        cli = harness.CliProcess(world, "verify", "--user", "alice", as_user="alice")
        cli.out.wait_for(harness.PROMPT)
        world.reader.error(code)
        assert cli.wait() != 0, cli.out.dump()
        assert PAM_TEXT[code] in cli.stderr + cli.out.dump(), (code, cli.stderr, cli.out.dump())


def test_a_print_is_dated_the_day_it_was_enrolled_as_fprintd_dates_it(world, alice, reader_kind):
    """A chip names its records by the date, and a full chip's oldest prints go first."""
    [path] = list(world.prints.glob("alice/%s/*/*" % reader_kind))
    code = ("import sys, gi\ngi.require_version('FPrint', '2.0')\nfrom gi.repository import FPrint\n"
            "d = FPrint.Print.deserialize(open(sys.argv[1], 'rb').read()).get_enroll_date()\n"
            "print(d.get_year(), int(d.get_month()), d.get_day()) if d and d.valid() else print('none')\n")
    out = subprocess.run([wire.SYSTEM_PYTHON, "-c", code, str(path)], capture_output=True, text=True, timeout=30)
    today = datetime.date.today()
    assert out.stdout.split() == [str(today.year), str(today.month), str(today.day)], (out.stdout, out.stderr)
