"""A match-on-chip reader's own storage (libfprint's virtual_device_storage), as fprintd keeps it:
deletions reach the chip and a refusal is told, a print the chip lost is not offered, prints only the
chip holds are left alone until it is full, and a full chip gives up one nobody here owns
(docs/readers.md, "Match-on-chip storage")."""

import re

import pytest

import doc_tables
import harness
import reader_codes
from fprintd_tools import BusError
from fprintd_world import ALICE_PRINT, bus_daemon, bus_world, enroll_alice  # noqa: F401
from test_hardening import can_evaluate, status

# The codes from the reader layer's sources, the sentence from docs/readers.md's row for that code
# (test_readers.py checks that the table has one for each).
BUSY = reader_codes.DEVICE_ERRORS["BUSY"]
DATA_NOT_FOUND = reader_codes.DEVICE_ERRORS["DATA_NOT_FOUND"]
STORAGE_FULL = doc_tables.sentence(doc_tables.by_code(doc_tables.table("readers.md", "FpDeviceError"))
                                   [reader_codes.DEVICE_ERRORS["DATA_FULL"]][2])


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_print_deleted_goes_from_the_chip_too_on_every_door(reader_kind, bus_world, bus_daemon):
    world = bus_world
    enroll_alice(world)
    enroll_alice(world, "alice-left-thumb", finger="left-thumb")
    assert sorted(world.reader.send("LIST").split()) == sorted([ALICE_PRINT, "alice-left-thumb"])
    deleted = world.cli("delete", "--user", "alice", "--finger", "left-thumb")
    assert deleted.returncode == 0, deleted
    first = world.daemon.log.wait_for("deleted 1 print(s) from the reader's storage")
    assert world.reader.send("LIST").split() == [ALICE_PRINT]
    gone = world.run_tool("fprintd-delete", "alice")
    assert gone.returncode == 0, gone.transcript()
    world.daemon.log.wait_for("deleted 1 print(s) from the reader's storage", start=first + 1)
    assert world.reader.send("LIST").split() == []


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_chip_that_refuses_a_deletion_is_told_on_every_door_and_the_print_is_deleted_here(reader_kind, bus_world,
                                                                                           bus_daemon):
    """fprintd's PrintsNotDeletedFromDevice: the files go, and the chip's refusal is told (D-Bus: that
    error; the CLI: a line on stderr after "Deleted", exit 0)."""
    world = bus_world
    enroll_alice(world)
    enroll_alice(world, "alice-left-thumb", finger="left-thumb")
    world.reader.error(BUSY)  # taken by the chip's next operation: the deletion
    deleted = world.cli("delete", "--user", "alice", "--finger", "left-thumb")
    assert deleted.returncode == 0, deleted
    assert "refused to delete its own copy" in deleted.stderr, deleted
    assert harness.listed(world, "alice") == ["right-index-finger"]
    assert sorted(world.reader.send("LIST").split()) == sorted([ALICE_PRINT, "alice-left-thumb"])
    world.daemon.log.wait_for("the reader's storage keeps a deleted print")
    world.reader.error(BUSY)
    gone = world.run_tool("fprintd-delete", "alice")
    assert gone.returncode != 0 and "PrintsNotDeletedFromDevice" in gone.transcript(), gone.transcript()
    assert "right-index-finger" not in harness.listed(world, "alice")


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_an_enrollments_duplicate_check_answered_not_found_goes_on(reader_kind, world, daemon):
    """Some match-on-chip drivers answer an identify over an empty storage with DATA_NOT_FOUND: as
    in fprintd, none of the prints is a duplicate, and the enrollment goes on."""
    first = []

    def on_event(kind, text):
        if kind == "shown" and not first:  # the prompt: the duplicate check is listening
            first.append(text)
            world.reader.error(DATA_NOT_FOUND)

    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, finger="left-thumb", on_event=on_event)
    assert rc == 0, (cli.stderr, cli.out.dump())
    assert harness.listed(world, "alice") == ["left-thumb"]
    assert ALICE_PRINT in world.reader.send("LIST").split()


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_print_the_chip_no_longer_holds_is_not_offered_and_is_enrolled_again(reader_kind, world, alice):
    # The virtual chip keeps its prints in memory: a new daemon opens an empty chip, as a reader
    # cleared by another system would be.
    world.daemon.stop()
    world.start_daemon()
    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert harness.PROMPT not in pam.messages(), pam.transcript()  # no prompt that could never match
    assert "right-index-finger" in pam.messages()[-1] and "enroll" in pam.messages()[-1], pam.transcript()
    world.daemon.log.wait_for("the reader no longer holds it")  # raises when it never comes
    # Enrolling it again puts it back on the chip, and it is used at once.
    rc, cli = harness.enroll(world, "alice", alice, as_user="alice")
    assert rc == 0, cli.stderr
    assert world.reader.send("LIST").split() == [alice]
    harness.finger_success(world, alice)


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_print_only_the_chip_holds_of_the_finger_enrolled_is_deleted_from_it(reader_kind, bus_world, bus_daemon):
    """As fprintd's enroll_identify_cb: the duplicate check's scan found the finger on the chip in
    a print no user owns; it is deleted there, or the chip would refuse that finger for ever."""
    world = bus_world
    t = world.tool("fprintd-enroll", "-f", "left-thumb", "bob")
    t.out.wait_for("Enrolling left-thumb finger.")
    # Enrolled by another system: the chip holds it, the store has no file for it. (INSERT is
    # taken by the driver's next operation, before the scan.)
    world.reader.send("INSERT orphan-print")
    world.reader.scan("orphan-print")  # the identify scan: not in the store's gallery
    t.out.wait_for("Enroll result: enroll-stage-passed")
    world.daemon.log.wait_for("deleted from the reader a print of this finger that no user here owns")
    for _ in range(world.reader.enroll_scans - 1):  # the driver's own stages: the chip lets it in
        world.reader.scan("orphan-print")
    assert t.wait().lines()[-1] == "Enroll result: enroll-completed", t.transcript()
    assert "left-thumb" in harness.listed(world, "bob")
    assert world.reader.send("LIST").split() == ["orphan-print"]  # now bob's


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_print_on_the_chip_is_kept_while_the_store_cannot_be_read_in_full(reader_kind, bus_world, bus_daemon):
    """A print the store cannot read now (damaged here; sealed with the TPM away alike) may be the
    one the chip holds: nobody can say it is no one's, so the duplicate check deletes nothing, and
    the enrollment ends as a duplicate at once, as fprintd's ends when it cannot delete it."""
    world = bus_world
    damaged = world.prints.joinpath("alice", reader_kind, "0", "7")
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b"not a print")
    t = world.tool("fprintd-enroll", "-f", "left-thumb", "bob")
    t.out.wait_for("Enrolling left-thumb finger.")
    world.reader.send("INSERT orphan-print")
    world.reader.scan("orphan-print")  # the identify scan: not in the gallery, maybe alice's
    world.daemon.log.wait_for("a print of this finger on the reader is kept: the store cannot be read in full now")
    assert t.wait().lines()[-1] == "Enroll result: enroll-duplicate", t.transcript()
    assert "orphan-print" in world.reader.send("LIST").split()
    assert not any("deleted from the reader" in text for text in world.daemon.log.texts())


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_full_chip_gives_up_a_print_no_user_owns_and_the_enrollment_goes_on(reader_kind, world, alice):
    cli = harness.CliProcess(world, "enroll", "--user", "bob", as_user="bob", password=harness.PASSWORDS["bob"])
    i = cli.out.wait_for(re.compile(r"\S"))
    # Enrolled by another system: the chip holds it, the store has no file for it (INSERT is taken
    # by the driver's next operation, before the scan).
    world.reader.send("INSERT orphan-print")
    world.reader.scan("bob-print")  # the identify scan: bob's finger is nobody's yet
    i = cli.out.wait_for(harness.STAGE, start=i + 1)
    world.reader.error(8)  # the chip is full when the driver's own stages begin
    world.daemon.log.wait_for("deleted one print no user here owns")
    assert world.reader.send("LIST").split() == [alice]  # alice's stays; the orphan went
    while True:  # the driver's stages again, from the first
        world.reader.scan("bob-print")
        i = cli.out.wait_for(harness.STAGE, start=i + 1)
        stage, stages = map(int, harness.STAGE.search(cli.out.lines[i][1]).groups())
        if stage >= stages:
            break
    assert cli.wait() == 0, cli.stderr
    assert sorted(world.reader.send("LIST").split()) == sorted([alice, "bob-print"])
    assert harness.listed(world, "bob") == ["right-index-finger"]
    # The enrollment started again asks for as many scans as the first time: its stages go on
    # counting from the duplicate check's.
    prompts = [line for _, line in cli.out.lines if "scan your finger" in line]
    assert prompts == ["Enrolling right-index-finger: scan your finger %d times" % world.reader.enroll_scans] * 2, \
        cli.out.dump()


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_full_chip_holding_only_owned_prints_ends_the_enrollment_and_deletes_nothing(reader_kind, world, alice):
    cli = harness.CliProcess(world, "enroll", "--user", "bob", as_user="bob", password=harness.PASSWORDS["bob"])
    i = cli.out.wait_for(re.compile(r"\S"))
    world.reader.scan("bob-print")
    cli.out.wait_for(harness.STAGE, start=i + 1)
    world.reader.error(8)
    assert cli.wait() != 0
    assert STORAGE_FULL in cli.stderr + cli.out.dump(), (cli.stderr, cli.out.dump())
    assert world.reader.send("LIST").split() == [alice]
    assert "deleted one print" not in world.daemon.log.dump()


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_print_the_chip_lost_is_found_when_the_reader_opens_again_after_sleep(reader_kind, bus_world):
    """The prints' judgement follows the chip: a print the chip no longer holds when the reader
    opens again (after sleep, another system may have cleared it) is not offered, though alice's
    prints were read and judged usable before."""
    world = bus_world
    world.start_logind()
    daemon = world.start_daemon()
    daemon.log.wait_for("holding a sleep delay inhibitor")
    enroll_alice(world)
    harness.finger_success(world, ALICE_PRINT)
    world.reader.send("REMOVE %s" % ALICE_PRINT)  # taken by the driver's next operation
    world.emit_prepare_for_sleep(True)
    daemon.log.wait_for("released the sleep inhibitor", timeout=10)
    world.emit_prepare_for_sleep(False)
    daemon.log.wait_for("readers reopened after sleep", timeout=10)  # the chip listed again, without it
    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert harness.PROMPT not in pam.messages(), pam.transcript()  # no prompt that could never match
    assert "right-index-finger" in pam.messages()[-1] and "enroll" in pam.messages()[-1], pam.transcript()


ALREADY_IN_USE = "net.reactivated.Fprint.Error.AlreadyInUse"


def outcome(client, method, *args):
    """"ok", or the (name, message) of the error a call ends with."""
    try:
        client.call(method, *args)
        return "ok"
    except BusError as e:
        return (e.name, e.message)


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_nothing_starts_on_the_device_while_a_deletion_runs(reader_kind, bus_world, bus_daemon):
    """As fprintd's can_start_action and can_stop_action: while DeleteEnrolledFingers2 waits for
    the chip, VerifyStart, EnrollStart and another deletion are refused with AlreadyInUse, "Delete
    already in progress", and VerifyStop with "Another operation is already in progress". The
    deletion is seen running once alice's prints are no longer listed (their files go before the
    chip's copy, which the virtual chip deletes after half a second); a call answered before the
    deletion is one made while it ran. A call answered after it proves nothing, so the round is
    tried again, at most five times."""
    world = bus_world
    root = world.root
    deleting = (ALREADY_IN_USE, "Delete already in progress")
    calls = (("VerifyStart", ("any",), deleting), ("EnrollStart", ("left-thumb",), deleting),
             ("DeleteEnrolledFinger", ("right-index-finger",), deleting),
             ("VerifyStop", (), (ALREADY_IN_USE, "Another operation is already in progress")))
    refused = set()
    for _ in range(5):
        enroll_alice(world)
        root.call("Claim", "alice")
        mark = len(world.daemon.log.texts())
        deletion = root.start("DeleteEnrolledFingers2")
        deadline = harness.now() + harness.DEFAULT_WAIT
        while outcome(root, "ListEnrolledFingers", "alice") == "ok":
            assert harness.now() < deadline, "alice's prints are still listed"
        for method, args, expected in calls:
            got = outcome(root, method, *args)
            if root.answered(deletion):
                break  # the deletion ended first: what this call met is not known
            assert got == expected, (method, got)
            refused.add(method)
        assert root.result(deletion) == []
        for stop in ("VerifyStop", "EnrollStop"):
            outcome(root, stop)  # a start that came after the deletion
        root.call("Release")
        world.daemon.log.wait_for("deleted 1 print(s) from the reader's storage", start=mark)
        assert world.reader.send("LIST").split() == []
        if len(refused) == len(calls):
            break
    assert refused == {method for method, _, _ in calls}


def start_without_listing(world):
    """libfprint's virtual chip without the listing feature: the same driver on its own variable."""
    return world.start_daemon(prefix=["env", "-u", "FP_VIRTUAL_DEVICE_STORAGE",
                                      "FP_VIRTUAL_DEVICE_STORAGE_NO_LIST=%s" % world.reader.path])


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
def test_a_chip_that_cannot_list_its_prints_is_cleared_before_its_first_enrollment(reader_kind, world):
    """As fprintd's EnrollStart: a chip that cannot list what it holds may hold an earlier
    installation's prints, which no full chip's reclaim could find. Before the first print of that
    reader is enrolled here, it is cleared; once the store has one, nothing on it is touched."""
    start_without_listing(world)
    world.reader.send("INSERT earlier-install")  # taken by the driver's next operation, the clearing
    world.reader.send("CONT 0")  # the virtual chip's answer to the clearing: done
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, cli.stderr
    world.daemon.log.wait_for("cleared the reader's own storage before its first enrollment")
    assert world.reader.send("LIST").split() == [ALICE_PRINT]

    world.reader.send("INSERT another-system")
    rc, cli = harness.enroll(world, "alice", "alice-left-thumb", finger="left-thumb", as_user="alice")
    assert rc == 0, cli.stderr
    assert sorted(world.reader.send("LIST").split()) == sorted([ALICE_PRINT, "another-system", "alice-left-thumb"])
    assert len([t for t in world.daemon.log.texts() if "cleared the reader's own storage" in t]) == 1


@pytest.mark.parametrize("reader_kind", ["virtual_device_storage"])
@pytest.mark.parametrize("lists", [True, False], ids=["listing", "not-listing"])
def test_a_replacement_cancelled_at_its_prompt_leaves_the_finger_not_enrolled(reader_kind, lists, world):
    """The chip's copy of the print being replaced goes before the prompt. The enrollment then ends
    without a new print (here the client goes at the prompt), and the old file goes too, as fprintd
    deletes it when the enrollment starts: the finger is not enrolled. A chip that cannot list its
    prints could not tell that file's print gone, and a prompt would offer it, counting alice's own
    finger as failed matches."""
    if lists:
        world.start_daemon()
    else:
        start_without_listing(world)
        world.reader.send("CONT 0")  # the virtual chip's answer to the clearing before the first enrollment
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, cli.stderr
    assert world.reader.send("LIST").split() == [ALICE_PRINT]
    replacing = harness.CliProcess(world, "enroll", "--user", "alice")
    replacing.out.wait_for(re.compile(r"\S"))  # the prompt: the chip's copy is gone
    replacing.proc.kill()
    replacing.wait()
    world.daemon.log.wait_for("replacing right-index-finger ended without a new print")
    assert world.reader.send("LIST").split() == []
    assert "right-index-finger" not in harness.listed(world, "alice")
    assert can_evaluate(world) == (-7, "noPrints")
    pam = world.pam("alice").wait()
    assert harness.PROMPT not in pam.messages(), pam.transcript()
    assert status(world)["failedMatches"] == 0
