"""An image reader ends a scan only once the finger is lifted: libfprint reports the match first,
then waits for the finger to leave and deactivates the reader. The result is told at the report, on
every door, as fprintd tells it; the reader's next scan still waits for the finger to be lifted,
and a close (sleep, shutdown) does not. docs/readers.md, "When the result is told"."""

import pytest

import harness
from fprintd_world import ALICE_PRINT, bus_daemon, bus_world, enroll_alice  # noqa: F401
from test_fprintd_sleep import wait_inhibitors

pytestmark = pytest.mark.parametrize("reader_kind", ["virtual_image"])


def authenticate(world, touch):
    """alice's PAM authentication, `touch` done at the prompt; asserts it succeeds."""
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    touch()
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()


def test_a_match_is_told_while_the_finger_is_still_on_the_reader(reader_kind, world, alice):
    authenticate(world, lambda: world.reader.hold(ALICE_PRINT))
    # The finger is still there: the next prompt's scan begins once it is lifted, with a new touch.
    authenticate(world, lambda: (world.reader.finger(False), world.reader.scan(ALICE_PRINT)))


def test_no_match_is_told_while_the_finger_is_on_and_the_next_try_takes_a_new_touch(reader_kind, world, alice):
    pam = world.pam("alice")
    pam.wait_for(harness.PROMPT)
    world.reader.hold("someone-else")
    pam.wait_for(harness.no_match(2))
    world.reader.finger(False)
    world.reader.scan(ALICE_PRINT)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
    assert [m for m in pam.messages() if "not recognised" in m] == [harness.no_match(2)], pam.transcript()


def test_fprintds_verify_match_comes_while_the_finger_is_on(reader_kind, bus_world, bus_daemon):
    world, root = bus_world, bus_world.root
    enroll_alice(world)
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    root.wait_finger_needed(True, start=mark)
    world.reader.hold(ALICE_PRINT)
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
    root.call("VerifyStop")
    root.call("Release")
    # The next client's verify takes a new touch once the finger is lifted.
    root.call("Claim", "alice")
    mark = root.signal_count()
    root.call("VerifyStart", "any")
    world.reader.finger(False)
    world.reader.scan(ALICE_PRINT)
    root.wait_signal("VerifyStatus", lambda a: a == ["verify-match", True], start=mark)
    root.call("VerifyStop")
    root.call("Release")


def test_sleep_does_not_wait_for_a_finger_left_on_the_reader(reader_kind, bus_world):
    world = bus_world
    world.start_logind()
    daemon = world.start_daemon()
    daemon.log.wait_for("holding a sleep delay inhibitor")
    enroll_alice(world)
    authenticate(world, lambda: world.reader.hold(ALICE_PRINT))

    # The finger stays; the reader closes for the sleep all the same, well before the scan's
    # 30 s deadline would end it.
    world.emit_prepare_for_sleep(True)
    daemon.log.wait_for("released the sleep inhibitor", timeout=10)
    wait_inhibitors(world, [])
    world.emit_prepare_for_sleep(False)
    daemon.log.wait_for("readers reopened after sleep", timeout=10)
    authenticate(world, lambda: world.reader.scan(ALICE_PRINT))
