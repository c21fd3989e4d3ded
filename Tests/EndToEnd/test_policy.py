"""End to end, the LocalAuthentication rules (docs/spec.md §3–§7): lockout, password required, back-off,
opt-in, domain state, rights, events — real daemon, libfprint's virtual reader, real PAM."""

import json
import os
import signal
import subprocess
import time

import pytest

import harness
import wire
from harness import PASSWORDS, PROMPT, no_match, not_recognised

ALICE_UID, BOB_UID = harness.USERS["alice"][0], harness.USERS["bob"][0]
LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"

# The policy is the same on each of libfprint's three kinds of reader (readers.py).
pytestmark = pytest.mark.usefixtures("reader_kind")
# Tests that start a second daemon on the same prints: not on the virtual match-on-chip reader,
# whose chip forgets its prints when the daemon closes it (a real chip keeps them;
# test_chip_storage.py covers a chip that lost them).
KEEPS_ITS_PRINTS = pytest.mark.parametrize("reader_kind", ["virtual_device", "virtual_image"])


def can_evaluate(world, user="alice", service="sudo"):
    result, _ = wire.request(world.socket, "can_evaluate", user=user, policy=1, service=service)
    return result["code"], result.get("reason")


def status(world, user="alice", as_user=None):
    result = world.cli("status", "--user", user, "--json", as_user=as_user)
    assert result.returncode == 0, result
    return json.loads(result.stdout)


def fail_prompt(world, print_ids, expect_last):
    """One PAM prompt for alice fed wrong prints; returns the finished session."""
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    for i, pid in enumerate(print_ids[:-1]):
        world.reader.scan(pid)
        pam.wait_for(no_match(2 - i))
    world.reader.scan(print_ids[-1])
    pam.wait()
    assert pam.messages()[-1] == expect_last, pam.transcript()
    return pam


def stack_service(world):
    """sudo-like stack: fingerprint first, then the password module (pam/tests/pam_probe.so, which
    takes alice's password, leaves it as PAM_AUTHTOK, as pam_unix does, and judges it), then the
    report line that tells the daemon about a password success (root callers only)."""
    probe = harness.REPO / "pam" / "tests" / "pam_probe.so"
    subprocess.run(["make", "-s", "-C", str(probe.parent.parent), "tests/pam_probe.so"], check=True, timeout=120)
    (world.pam_dir / "touchgate-stack").write_text(
        "auth [success=done default=ignore] %s socket=%s\n"
        "auth requisite %s settok want=%s\n"
        "auth optional %s socket=%s report\n"
        % (harness.PAM_MODULE, world.socket, probe, PASSWORDS["alice"], harness.PAM_MODULE, world.socket))
    return "touchgate-stack"


def type_password(session, password):
    """Types at pamtester's terminal (the pty's master side)."""
    os.write(session._master, password.encode() + b"\n")


# --- lockout ---------------------------------------------------------------------------------


def test_five_failures_across_prompts_lock_until_a_password_success(world, alice):
    fail_prompt(world, ["x1", "x2", "x3"], not_recognised(3))
    assert status(world)["failedMatches"] == 3

    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan("x4")
    pam.wait_for(no_match(2))
    world.reader.scan("x5")  # the fifth consecutive failure, in another prompt
    pam.wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()  # the password module follows
    assert pam.messages()[-1] == LOCKED
    assert can_evaluate(world) == (-8, "lockout")

    # Told at once, without a prompt, on the next try; the password module runs and succeeds.
    service = stack_service(world)
    pam = world.pam("alice", service=service)
    pam.wait_for("Password")
    assert PROMPT not in pam.messages() and LOCKED in pam.messages(), pam.transcript()
    type_password(pam, PASSWORDS["alice"])
    pam.wait()
    assert pam.result == "PAM_SUCCESS", pam.transcript()

    # The password success reached the daemon: the fingerprint works again.
    assert can_evaluate(world) == (0, None)
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(alice)
    pam.wait()
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    assert status(world)["failedMatches"] == 0


def test_a_fingerprint_success_resets_the_failure_count(world, alice):
    fail_prompt(world, ["x1", "x2", "x3"], not_recognised(3))
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(alice)
    pam.wait()
    assert pam.result == "PAM_SUCCESS"
    assert status(world)["failedMatches"] == 0


def test_a_non_root_client_cannot_clear_its_own_lockout_without_the_password(world, alice):
    fail_prompt(world, ["x1", "x2", "x3"], not_recognised(3))
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan("x4")
    pam.wait_for(no_match(2))
    world.reader.scan("x5")
    pam.wait()
    assert can_evaluate(world) == (-8, "lockout")

    # alice's own process claims a password success: refused (only root callers may report one).
    reported = wire.request_as(ALICE_UID, world.socket, "password_success", user="alice", service="sudo")
    assert reported["code"] == -2002, reported
    for verb in ("reset", "lock"):
        r = world.cli(verb, "--user", "alice", as_user="alice")
        assert r.returncode != 0 and len(r.stderr.splitlines()) == 1, r
    assert can_evaluate(world) == (-8, "lockout")

    # With her password, checked by the daemon, she can.
    enabled = world.cli("enable", "--user", "alice", as_user="alice", password=PASSWORDS["alice"])
    assert enabled.returncode == 0, enabled
    assert can_evaluate(world) == (0, None)


# --- password back-off -------------------------------------------------------------------------


BY_PASSWORD = 0x10  # TG_FLAG_BY_PASSWORD


def wrong_password(world):
    return wire.request_as(ALICE_UID, world.socket, "enable", user="alice", password="not-it")


def test_five_wrong_passwords_lock_password_entry_for_a_minute(world, alice):
    for n in range(1, 5):
        r = wrong_password(world)
        assert (r["code"], r["reason"], r.get("seconds")) == (-1, "wrongPassword", None), (n, r)
        assert r.get("flags") == BY_PASSWORD, r  # a judgement of a password, as clients follow it
    r = wrong_password(world)
    assert (r["code"], r["reason"], r["seconds"]) == (-1, "wrongPassword", 60), r
    # The sixth is refused without being checked, with about a minute left — even the right one.
    r = wire.request_as(ALICE_UID, world.socket, "enable", user="alice", password=PASSWORDS["alice"])
    assert r["code"] == -12 and r["reason"] == "backoff" and 55 <= r["seconds"] <= 60, r
    assert r.get("flags") is None, r  # not checked, so not judged
    # The sentence says the same time, rounded up (a slow machine may already be under a minute).
    left = r["seconds"]
    assert ("1 minute" if left == 60 else "%d seconds" % left) in r["message"], r
    assert status(world)["backoffSecondsLeft"] > 0


def test_back_off_steps_up_after_each_further_wrong_password(world):
    conf = world.dir / "touchgate.conf"
    conf.write_text("password_backoff = 1m, 5m\n")
    clock = world.dir / "clock"
    clock.write_text("+0\n")
    world.start_daemon(config=conf, clock=clock)
    assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0
    for _ in range(4):
        assert wrong_password(world)["code"] == -1
    r = wrong_password(world)
    assert r["seconds"] == 60, r
    refused = wrong_password(world)
    assert refused["code"] == -12, refused
    clock.write_text("+61\n")  # the daemon's clock passes the first step; nobody waits for it
    assert status(world)["backoffSecondsLeft"] == 0
    r = wrong_password(world)
    assert (r["code"], r["seconds"]) == (-1, 300), r  # the next step
    assert wrong_password(world)["code"] == -12


# --- password required -------------------------------------------------------------------------


@KEEPS_ITS_PRINTS
def test_a_new_boot_requires_the_password_until_a_password_success(world):
    boot = world.dir / "boot_id"
    boot.write_text("boot-one\n")
    world.daemon = harness.Daemon(world, args=("--boot-id-file", str(boot))).wait_ready()
    assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0
    assert can_evaluate(world) == (0, None)

    world.daemon.stop()
    boot.write_text("boot-two\n")
    world.daemon = harness.Daemon(world, args=("--boot-id-file", str(boot))).wait_ready()
    assert can_evaluate(world) == (-11, "boot")
    pam = world.pam("alice").wait()
    assert pam.result == "PAM_AUTHINFO_UNAVAIL" and PROMPT not in pam.messages(), pam.transcript()

    ok, _ = wire.request(world.socket, "password_success", user="alice", service="login")
    assert ok["code"] == 0
    assert can_evaluate(world) == (0, None)


def test_a_print_added_by_someone_else_requires_the_password_once(world, alice):
    assert can_evaluate(world) == (0, None)
    rc, cli = harness.enroll(world, "alice", "alice-thumb", finger="left-thumb")  # root adds one
    assert rc == 0, cli.stderr
    assert can_evaluate(world) == (-11, "enrollmentChanged")
    ok, _ = wire.request(world.socket, "password_success", user="alice", service="sudo")
    assert ok["code"] == 0
    assert can_evaluate(world) == (0, None)
    # Adding one herself, with her password, needs nothing more.
    assert harness.enroll(world, "alice", "alice-middle", finger="left-middle-finger", as_user="alice")[0] == 0
    assert can_evaluate(world) == (0, None)


def test_admin_lock_holds_until_a_password_and_reset_clears_counters(world, alice):
    locked = world.cli("lock", "--user", "alice")
    assert locked.returncode == 0, locked
    assert can_evaluate(world) == (-11, "adminLock")
    ok, _ = wire.request(world.socket, "password_success", user="alice", service="sudo")
    assert ok["code"] == 0
    assert can_evaluate(world) == (0, None)

    fail_prompt(world, ["x1", "x2", "x3"], not_recognised(3))
    assert status(world)["failedMatches"] == 3
    reset = world.cli("reset", "--user", "alice")
    assert reset.returncode == 0, reset
    assert status(world)["failedMatches"] == 0


def test_disable_turns_fingerprint_off_without_deleting_prints(world, alice):
    off = world.cli("disable", "--user", "alice", as_user="alice")
    assert off.returncode == 0, off
    assert can_evaluate(world) == (-7, "notEnabled")
    assert world.cli("list", "--user", "alice").stdout.splitlines() == ["right-index-finger"]
    on = world.cli("enable", "--user", "alice", as_user="alice", password=PASSWORDS["alice"])
    assert on.returncode == 0, on
    assert can_evaluate(world) == (0, None)


# --- domain state ------------------------------------------------------------------------------


def domain_state(world, service="sudo", as_user=None):
    r = world.cli("domain-state", "--user", "alice", "--service", service, as_user=as_user)
    assert r.returncode == 0, r
    return r.stdout.strip()


def test_domain_state_follows_the_set_of_prints(world, daemon):
    assert domain_state(world) == "none"
    assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0
    first = domain_state(world)
    assert len(first) == 64 and int(first, 16) >= 0
    assert domain_state(world, as_user="alice") == first
    assert domain_state(world, service="login") != first  # per service

    assert harness.enroll(world, "alice", "alice-thumb", finger="left-thumb", as_user="alice")[0] == 0
    added = domain_state(world)
    assert added != first
    assert world.cli("delete", "--user", "alice", "--finger", "left-thumb").returncode == 0
    assert domain_state(world) == first  # same set, same value, whatever the history


# --- rights ------------------------------------------------------------------------------------


def test_another_user_cannot_read_or_change_alices_state(world, alice):
    for args in (("status", "--user", "alice"), ("domain-state", "--user", "alice"),
                 ("reset", "--user", "alice"), ("lock", "--user", "alice"), ("disable", "--user", "alice"),
                 ("delete", "--user", "alice", "--all")):
        r = world.cli(*args, as_user="bob", password=PASSWORDS["bob"])
        # The refusal itself, not merely some error: an internal error or an unknown user is no
        # answer to a request for another account.
        assert (r.returncode, r.stdout, r.stderr) == (1, "", "touchgate: Not permitted\n"), (args, r)
    reported = wire.request_as(BOB_UID, world.socket, "password_success", user="alice", service="sudo")
    assert reported["code"] == -2002
    assert world.cli("list", "--user", "alice").stdout.splitlines() == ["right-index-finger"]


# --- durability --------------------------------------------------------------------------------


@KEEPS_ITS_PRINTS
def test_kill_9_mid_prompt_loses_no_failure(world, alice):
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan("x1")
    pam.wait_for(no_match(2))
    world.reader.scan("x2")
    pam.wait_for(no_match(1))  # the reply reporting the failure has been sent: it is on disk
    world.daemon.signal(signal.SIGKILL)
    world.daemon.proc.wait(harness.DEFAULT_WAIT)
    pam.wait(timeout=10)
    assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()

    world.daemon = harness.Daemon(world).wait_ready()
    assert status(world)["failedMatches"] == 2
    fail_prompt(world, ["x3", "x4", "x5"], LOCKED)  # 2 + 3 = 5: locked, across the restart
    assert can_evaluate(world) == (-8, "lockout")


@KEEPS_ITS_PRINTS
def test_a_corrupt_state_file_fails_closed_for_that_user_only(world, alice):
    assert harness.enroll(world, "bob", "bob-print", as_user="bob")[0] == 0
    world.daemon.stop()
    (world.state / "users" / "alice" / "state.json").write_text("{ not json")
    world.daemon = harness.Daemon(world).wait_ready()
    assert can_evaluate(world) == (-8, "stateUnreadable")
    assert can_evaluate(world, user="bob") == (0, None)
    ok, _ = wire.request(world.socket, "password_success", user="alice", service="sudo")
    assert ok["code"] == 0
    assert can_evaluate(world) == (0, None)
    assert world.daemon.stop() == 0  # a success is written after its reply; a stop waits for it
    kept = list((world.state / "users" / "alice").glob("state.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == "{ not json"


# --- events ------------------------------------------------------------------------------------


def _wait_subscribed(world, mon, seen='"service":"probe"'):
    """Subscribed once the daemon acknowledged; a probe event (`seen` in the output) proves the
    stream is live."""
    deadline = time.monotonic() + 5
    while True:
        # A remote evaluate is refused at once and published (a preflight alone publishes nothing).
        wire.request(world.socket, "evaluate", user="alice", policy=1, service="probe", rhost="probe-host")
        try:
            mon.out.wait_for(seen, timeout=0.2)
            return
        except harness.WaitTimeout:
            assert time.monotonic() < deadline, mon.out.dump()


def test_monitor_streams_outcomes_root_sees_all_users_see_their_own(world, alice):
    assert harness.enroll(world, "bob", "bob-print", as_user="bob")[0] == 0
    root_mon = harness.CliProcess(world, "monitor", "--json")
    alice_mon = harness.CliProcess(world, "monitor", "--json", as_user="alice")
    for mon in (root_mon, alice_mon):
        _wait_subscribed(world, mon)

    pam = world.pam("bob")
    pam.wait_for(PROMPT)
    world.reader.scan("bob-print")
    pam.wait()
    i = root_mon.out.wait_for('"user":"bob"')
    event = json.loads(root_mon.out.lines[i][1])
    assert (event["event"], event["outcome"], event["method"], event["code"]) == ("outcome", "success", "fingerprint", 0)
    assert "password" not in root_mon.out.lines[i][1].replace('"method":"password"', "")

    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(alice)
    pam.wait()
    alice_mon.out.wait_for('"method":"fingerprint"')
    assert not any('"user":"bob"' in line for line in alice_mon.out.texts()), alice_mon.out.dump()
    for mon in (root_mon, alice_mon):
        mon.proc.terminate()
        mon.wait()


def test_the_monitors_lines_show_what_a_user_sent_as_one_word_with_no_control_character(world, alice):
    """A user's own request names its service: in root's monitor it must not forge a line of its
    own or send the terminal a sequence."""
    mon = harness.CliProcess(world, "monitor")
    _wait_subscribed(world, mon, seen=" alice probe ")
    forged = "x\n2026-11-27 10:00:00 root sudo success -\x1b]0;title\x07"
    wire.request_as(ALICE_UID, world.socket, "evaluate", user="alice", policy=1, service=forged, rhost="h")
    i = mon.out.wait_for(" alice x\\x0a2026-11-27\\x2010:00:00\\x20root")
    assert "\\x1b\\x5d0\\x3btitle\\x07 " in mon.out.lines[i][1], mon.out.dump()
    assert not [t for t in mon.out.texts() if t.startswith("2026-11-27 10:00:00 root") or "\x1b" in t]
    mon.proc.terminate()
    mon.wait()


def test_a_monitor_whose_daemon_stops_says_so_and_fails(world, alice):
    mon = harness.CliProcess(world, "monitor", "--json")
    _wait_subscribed(world, mon)
    assert world.daemon.stop() == 0
    assert mon.wait() == 1, mon.out.dump()
    assert "touchgated ended the event stream" in mon.stderr, mon.stderr


def test_a_monitor_gives_up_on_a_daemon_that_never_acknowledges_it(world, daemon):
    os.kill(daemon.proc.pid, signal.SIGSTOP)  # connected and sent, never read
    try:
        result = world.cli("monitor", timeout=15)
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    assert result.returncode == 1 and "stopped answering" in result.stderr, result
