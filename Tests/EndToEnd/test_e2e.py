"""End to end: touchgated on libfprint's virtual reader and pam_touchgate.so inside real Linux-PAM
(pam_wrapper + pamtester in a pty); the CLI's own tests are in test_cli.py. A fresh temp dir and
daemon per test."""

import json
import glob
import os
import re
import signal

import pytest

import harness
from harness import PROMPT, RETRY_TOO_SHORT, PASSWORD_AFTER_BOOT, no_match, not_recognised, queued
from clients import HINT_ENTER

# Each test that uses the reader runs on each of libfprint's three kinds of reader (readers.py).
pytestmark = pytest.mark.usefixtures("reader_kind")

STRANGERS = ["stranger-1", "stranger-2", "stranger-3"]


def scan_and_wait(world, session, print_id):
    world.reader.scan(print_id)
    return session.wait()


def assert_no_prompt(session):
    assert PROMPT not in session.messages(), session.transcript()


# --- PAM -----------------------------------------------------------------------------------------


def test_matching_finger_succeeds(world, alice):
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    scan_and_wait(world, pam, alice)
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    assert pam.returncode == 0
    assert pam.messages() == [PROMPT]


def test_three_wrong_fingers_end_with_maxtries(world, alice):
    pam = world.pam("alice")
    expected = [PROMPT, no_match(2), no_match(1), not_recognised(3)]
    pam.wait_for(PROMPT)
    for i, stranger in enumerate(STRANGERS[:2]):
        world.reader.scan(stranger)
        pam.wait_for(no_match(2 - i))
    scan_and_wait(world, pam, STRANGERS[2])
    assert pam.result == "PAM_MAXTRIES", pam.transcript()
    assert pam.returncode != 0
    assert pam.messages() == expected


@pytest.mark.parametrize("config, options, tries", [
    ("max_tries = 2\n", "", 2),        # the daemon's config
    ("", "max_tries=1", 1),            # the module's option, which may only tighten it
])
def test_max_tries_comes_from_config_or_module_option(world, config, options, tries):
    conf = world.dir / "touchgate.conf"
    conf.write_text(config)
    world.service(options=options)
    world.start_daemon(config=conf)
    assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    for i in range(tries - 1):
        world.reader.scan(STRANGERS[i])
        pam.wait_for(no_match(tries - 1 - i))
    scan_and_wait(world, pam, STRANGERS[tries - 1])
    assert pam.result == "PAM_MAXTRIES", pam.transcript()
    assert pam.messages()[-1] == not_recognised(tries)


def test_started_as_systemd_starts_it_the_settings_come_from_its_variables(world):
    """No arguments: the socket in RUNTIME_DIRECTORY, the state in STATE_DIRECTORY, the config
    (here max_tries = 2 and the print store) in CONFIGURATION_DIRECTORY."""
    (world.dir / "etc").mkdir()
    config = world.dir / "etc" / "touchgate.conf"
    config.write_text("max_tries = 2\nprint_store = %s\n" % world.prints)
    daemon = world.start_daemon(config=config, as_systemd=True)
    daemon.log.wait_for("listening on %s" % world.socket)
    assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0
    assert list(world.prints.glob("alice/%s/*/*" % world.reader_kind)), "the print is in the configured print store"
    assert (world.state / "users" / "alice" / "state.json").is_file(), "the counters are in STATE_DIRECTORY"
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(STRANGERS[0])
    pam.wait_for(no_match(1))
    scan_and_wait(world, pam, STRANGERS[1])
    assert pam.result == "PAM_MAXTRIES", pam.transcript()
    assert pam.messages()[-1] == not_recognised(2)


def test_retry_hint_is_shown_then_match_succeeds(world, alice):
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.retry(1)  # swipe too short: a hint, not a failed match
    pam.wait_for(RETRY_TOO_SHORT)
    # Not counted toward a lockout either (a match would clear the count: looked at before it).
    counted = json.loads(world.cli("status", "--user", "alice", "--json").stdout)["failedMatches"]
    assert counted == 0, counted
    scan_and_wait(world, pam, alice)
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    assert pam.messages() == [PROMPT, RETRY_TOO_SHORT]


def test_after_root_enrolls_the_user_types_their_password_once(world, daemon):
    rc, cli = harness.enroll(world, "alice", "alice-print")  # root enrolls for alice
    assert rc == 0, cli.stderr

    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert pam.messages() == [PASSWORD_AFTER_BOOT]  # passwordRequired(boot): no prompt

    # alice proves her password to the daemon (its own PAM service checks it): biometrics work.
    enabled = world.cli("enable", "--user", "alice", as_user="alice", password=harness.PASSWORDS["alice"])
    assert enabled.returncode == 0, enabled
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    scan_and_wait(world, pam, "alice-print")
    assert pam.result == "PAM_SUCCESS", pam.transcript()


def test_user_without_prints_gets_no_prompt(world, alice):
    pam = world.pam("bob").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert_no_prompt(pam)
    assert pam.messages() == [], pam.transcript()  # not even "No fingerprints enrolled": noise for most


def test_unknown_user_is_user_unknown(world, alice):
    pam = world.pam("carol").wait()
    assert pam.result == "PAM_USER_UNKNOWN", pam.transcript()
    assert_no_prompt(pam)


@pytest.mark.parametrize("how", ["no socket", "stale socket"])
def test_daemon_not_running_is_authinfo_unavail_at_once(world, how):
    if how == "stale socket":
        # A daemon killed with SIGKILL leaves its socket file behind: connect is refused.
        daemon = world.start_daemon()
        daemon.signal(signal.SIGKILL)
        daemon.proc.wait(harness.DEFAULT_WAIT)
        assert world.socket.exists()
    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert_no_prompt(pam)
    elapsed = harness.ms(pam.ended - pam.auth_started())
    # Within the connect deadline (TG_CONNECT_DEADLINE_MS, 1 s): a module that waited or retried
    # would reach it.
    assert elapsed < 1000, "pam_authenticate took %.0f ms with no daemon" % elapsed


def test_frozen_daemon_gives_up_within_seconds(world, alice):
    world.daemon.signal(signal.SIGSTOP)
    pam = world.pam("alice").wait(timeout=10)
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert pam.messages() == ["Fingerprint service not responding: use your password"]
    elapsed = harness.ms(pam.ended - pam.auth_started())
    # TG_SILENCE_DEADLINE_MS (1.5 s), not the 30 s of a scan. Measured from the line pamtester
    # prints before it calls PAM, read by another thread (so later, under load): a little slack below.
    assert 1200 <= elapsed < 4000, "gave up after %.0f ms" % elapsed


def test_client_killed_mid_prompt_frees_the_reader(world, alice):
    first = world.pam("alice")
    first.wait_for(PROMPT)
    first.kill()
    # The daemon notices the closed connection and cancels the scan (its record says so).
    world.daemon.log.wait_for("outcome=appCancel reason=clientGone")

    second = world.pam("alice")
    i = second.wait_for(PROMPT)
    waited = second.time_of(i) - harness.ms(second.auth_started() - second.started)
    # Not behind the dead client's scan (30 s): the reader was free at once. The daemon gives a
    # driver 1 s to end a cancelled scan (docs/spec.md §10); the rest is slack for the thread
    # that reads pamtester's lines.
    assert waited < 2000, "prompt shown %.0f ms after pam_authenticate began" % waited
    scan_and_wait(world, second, alice)
    assert second.result == "PAM_SUCCESS", second.transcript()
    assert second.messages() == [PROMPT]  # in particular, no "Waiting for the fingerprint reader"


def test_concurrent_prompts_queue_and_both_succeed(world, alice):
    first = world.pam("alice")
    first.wait_for(PROMPT)
    second = world.pam("alice", ctty=True)  # at a terminal, where Enter would leave the wait
    second.wait_for(queued(1))
    assert PROMPT not in second.messages(), second.transcript()

    scan_and_wait(world, first, alice)
    assert first.result == "PAM_SUCCESS", first.transcript()
    assert first.messages() == [PROMPT]

    second.wait_for(PROMPT)
    scan_and_wait(world, second, alice)
    assert second.result == "PAM_SUCCESS", second.transcript()
    assert second.messages() == [queued(1), HINT_ENTER, PROMPT], second.transcript()


def test_a_prompt_without_a_terminal_is_not_queued_but_sent_to_the_password_at_once(world, alice):
    first = world.pam("alice")
    first.wait_for(PROMPT)
    # No terminal: nothing could cut a wait short, and the password module after it would wait too.
    second = world.pam("alice").wait()
    assert second.result == "PAM_AUTHINFO_UNAVAIL", second.transcript()
    assert second.messages() == ["The fingerprint reader is busy: use your password"], second.transcript()

    scan_and_wait(world, first, alice)
    assert first.result == "PAM_SUCCESS", first.transcript()


def test_deleted_finger_no_longer_authenticates(world, alice):
    deleted = world.cli("delete", "--user", "alice", "--finger", "right-index-finger")
    assert deleted.returncode == 0, deleted
    listed = world.cli("list", "--user", "alice")
    assert listed.returncode == 0 and "right-index-finger" not in listed.stdout, listed

    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert_no_prompt(pam)


# --- the reader goes away or overheats (docs/spec.md §9) -------------------------------------------------


def test_reader_unplugged_mid_prompt_ends_it_at_once_and_says_why(world, alice):
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.unplug()
    pam.wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert pam.messages()[-1] == "The fingerprint reader was removed: use your password"
    # Later prompts are not shown at all: no reader.
    later = world.pam("alice").wait()
    assert later.result == "PAM_AUTHINFO_UNAVAIL" and PROMPT not in later.messages(), later.transcript()
    assert later.messages() == ["No fingerprint reader available: use your password"]


def test_without_libfprint_the_daemon_serves_says_why_and_leaves_the_password(world, alice):
    """libfprint is loaded at run time; where it cannot be (hidden here by an empty file mounted
    over it, in the daemon's own mount namespace) the daemon still starts, says why, and every
    prompt falls through to the password at once."""
    world.daemon.stop()
    library = os.path.realpath(next(iter(sorted(glob.glob("/usr/lib/*/libfprint-2.so.2")))))
    hide = ["unshare", "--mount", "--propagation", "private",
            "sh", "-c", 'mount --bind /dev/null "$0" && exec "$@"', library]
    daemon = world.start_daemon(prefix=hide)
    daemon.log.wait_for("no fingerprint reader: cannot load libfprint")  # raises when it never comes
    later = world.pam("alice").wait()
    assert later.result == "PAM_AUTHINFO_UNAVAIL", later.transcript()
    assert later.messages() == ["No fingerprint reader available: use your password"]
    # Her print is not called damaged for it: nothing to enroll again.
    status = world.cli("status", "--user", "alice")
    assert "canEvaluate.reason: noReader" in status.stdout, status
    assert re.search(r"^fingers: right-index-finger$", status.stdout, re.M), status
    assert not re.search(r"^damagedFingers:.*right-index-finger", status.stdout, re.M), status


def test_a_reader_too_hot_ends_the_prompt_and_says_why(world, alice):
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.error(257)  # FP_DEVICE_ERROR_TOO_HOT
    pam.wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
    assert pam.messages()[-1] == "The fingerprint reader is too hot: use your password"
