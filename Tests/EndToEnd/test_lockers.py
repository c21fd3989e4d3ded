"""Screen lockers with deviceOwnerAuthentication (locked out at the lock screen, as on a Mac): the
README's console-locker stack — `auth sufficient pam_touchgate.so policy=biometrics-or-password`
then `auth required pam_unix.so try_first_pass` — with real vlock run as alice in a pty that is
its controlling terminal, against touchgated on libfprint's virtual reader.

A locker runs as the user, so it cannot report a password success from pam_unix: the module asks
for the password itself when the fingerprint is refused, touchgated checks it (its back-off
applies) and a correct one clears the lockout and every passwordRequired reason. Each test asserts
what the person saw line by line, the exit status, the daemon's state, that the next lock accepts
the finger, and that the terminal is as it was."""

import json
import re
import signal

import pytest

import clients
import harness
import terminal
import wire
from clients import CLIENTS, HINT_TYPE
from harness import PASSWORDS, PROMPT
from terminal import ENTER

VLOCK = CLIENTS["vlock"]
ALICE_UID = harness.USERS["alice"][0]
PASSWORD = "Password: "
PASSWORD_ZH = "密码："

# What the daemon says (Messages.swift), in English and Chinese.
LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"
LOCKED_ZH = "指纹连续 5 次验证失败已锁定：请输入密码"
WRONG = "Wrong password"
WRONG_ZH = "密码错误"
# The time left, rounded up: a minute, or the seconds once under one (the clock runs meanwhile).
BACKOFF = re.compile(r"^Too many wrong passwords: try again in (1 minute|[1-5]?[0-9] seconds)$")
REQUIRED = {
    "boot": "Enter your password: it is required once after the computer starts",
    "enrollmentChanged": "Enter your password: the enrolled fingerprints changed",
    "adminLock": "Enter your password: the administrator locked fingerprint authentication",
}
PROMPT_ZH = "请在指纹识别器上滑动手指"
HINT_TYPE_ZH = "（或输入密码后按回车键）"


@pytest.fixture
def locker(world):
    """Private /etc for the clients; vlock's service is the README's console-locker stack."""
    assert not clients.missing_requirements(), "; ".join(clients.missing_requirements())
    c = clients.Clients(world)
    c.console_locker()
    yield c
    c.close()


def can_evaluate(world):
    result, _ = wire.request(world.socket, "can_evaluate", user="alice", policy=1, service="vlock")
    return result["code"], result.get("reason")


def status(world):
    result = world.cli("status", "--user", "alice", "--json")
    assert result.returncode == 0, result
    return json.loads(result.stdout)


def lock_out(world):
    """Five consecutive failed matches across two prompts (pamtester): alice's fingerprint is locked."""
    pam = harness.fail_five_matches(world)
    assert pam.messages()[-1] == LOCKED, pam.transcript()
    assert can_evaluate(world) == (-8, "lockout")


def assert_sane(term):
    assert terminal.modes_differences(term.modes_before, term.modes()) == [], term.transcript()
    assert term.modes() == term.modes_before, "termios changed"


def unlock_with_password(term, prompt=PASSWORD, password=PASSWORDS["alice"]):
    """At the module's own password prompt (echo off, so it reads the keys), the password."""
    term.expect(prompt)
    term.wait_reading(secret=True)
    term.type_line(password)


def next_lock_takes_the_finger(world, locker, alice, env=None, prompt=PROMPT, hint=HINT_TYPE):
    """The fingerprint works again: the next lock shows the prompt and a finger unlocks it."""
    term = VLOCK.start(locker, env=env)
    term.expect(hint)
    world.reader.scan(alice)
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + prompt, hint, ""], term.transcript()
    assert_sane(term)


def test_a_lockout_is_cleared_by_one_password_at_the_locker(world, alice, locker):
    lock_out(world)
    term = VLOCK.start(locker)
    unlock_with_password(term)
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED, PASSWORD, ""], term.transcript()
    assert PASSWORDS["alice"] not in term.text()
    assert_sane(term)

    # The password the daemon checked cleared the lockout (vlock runs as alice: no report line).
    assert can_evaluate(world) == (0, None)
    assert status(world)["failedMatches"] == 0
    next_lock_takes_the_finger(world, locker, alice)


def _require_password(world, alice, reason):
    """Brings alice's fingerprint into passwordRequired(reason) as it happens on a real machine."""
    if reason == "boot":
        boot = world.dir / "boot_id"
        boot.write_text("another-boot\n")
        world.daemon.stop()
        world.daemon = harness.Daemon(world, args=("--boot-id-file", str(boot))).wait_ready()
    elif reason == "enrollmentChanged":
        # Root adds a finger. The same virtual print: a verify-only reader checks one template.
        rc, cli = harness.enroll(world, "alice", alice, finger="left-thumb")
        assert rc == 0, cli.stderr
    elif reason == "adminLock":
        locked = world.cli("lock", "--user", "alice")
        assert locked.returncode == 0, locked
    assert can_evaluate(world) == (-11, reason)


@pytest.mark.parametrize("reason", ["boot", "enrollmentChanged", "adminLock"])
def test_each_password_required_reason_is_cleared_at_the_locker(world, alice, locker, reason):
    """idle and interval need days to pass: the policy's unit tests cover them with a clock."""
    _require_password(world, alice, reason)
    term = VLOCK.start(locker)
    unlock_with_password(term)
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + REQUIRED[reason], PASSWORD, ""], term.transcript()
    assert_sane(term)
    assert can_evaluate(world) == (0, None)
    next_lock_takes_the_finger(world, locker, alice)


def test_a_wrong_password_is_auth_err_and_counted(world, alice, locker):
    lock_out(world)
    # Through PAM directly, for the code: the module alone, at a terminal (pamtester, root).
    (world.pam_dir / "touchgate-locker").write_text(
        "auth required %s socket=%s policy=biometrics-or-password\n" % (harness.PAM_MODULE, world.socket))
    pam = world.pam("alice", service="touchgate-locker", ctty=True)
    pam.wait_for(PASSWORD)
    pam.type("not-her-password\r")
    pam.wait()
    assert pam.result == "PAM_AUTH_ERR", pam.transcript()
    assert pam.messages() == [LOCKED, PASSWORD, WRONG], pam.transcript()
    assert status(world)["wrongPasswords"] == 1

    # At the locker: told, then pam_unix asks afresh; its success cannot clear the lockout.
    term = VLOCK.start(locker)
    unlock_with_password(term, password="still-wrong")
    term.expect(WRONG)
    unlock_with_password(term)  # pam_unix's own "Password: "
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED, PASSWORD, WRONG, PASSWORD, ""], term.transcript()
    assert_sane(term)
    assert status(world)["wrongPasswords"] == 2
    assert can_evaluate(world) == (-8, "lockout")


def test_in_back_off_the_locker_is_told_and_nothing_is_checked(world, alice, locker):
    for _ in range(5):  # five wrong passwords: password entry backs off for a minute
        r = wire.request_as(ALICE_UID, world.socket, "enable", user="alice", password="not-it")
        assert r["code"] == -1, r
    lock_out(world)
    term = VLOCK.start(locker)
    unlock_with_password(term)  # straight to pam_unix: touchgate asks nothing in back-off
    assert term.wait() == 0, term.transcript()
    seen = VLOCK.seen(term)
    assert len(seen) == 4 and BACKOFF.match(seen[1]), term.transcript()
    assert [seen[0]] + seen[2:] == [VLOCK.prefix + LOCKED, PASSWORD, ""], term.transcript()
    assert status(world)["wrongPasswords"] == 5  # no password reached the daemon
    assert can_evaluate(world) == (-8, "lockout")


def test_the_daemon_dying_before_the_password_costs_nothing(world, alice, locker):
    """Killed after the refusal: the typed password goes to pam_unix (try_first_pass), once."""
    lock_out(world)
    term = VLOCK.start(locker)
    term.expect(PASSWORD)
    term.wait_reading(secret=True)
    world.daemon.signal(signal.SIGKILL)
    world.daemon.proc.wait(harness.DEFAULT_WAIT)
    term.type_line(PASSWORDS["alice"])
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED, PASSWORD, ""], term.transcript()
    assert_sane(term)


@pytest.mark.parametrize("keys", ["\x03", "\x04"], ids=["ctrl-c", "ctrl-d"])
def test_ctrl_c_or_ctrl_d_at_the_password_prompt_gives_pam_unix_a_sane_terminal(world, alice, locker, keys):
    lock_out(world)
    term = VLOCK.start(locker)
    term.expect(PASSWORD)
    term.wait_reading(secret=True)
    term.send(keys)
    unlock_with_password(term)  # pam_unix's own prompt
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED, PASSWORD, PASSWORD, ""], term.transcript()
    assert_sane(term)
    assert can_evaluate(world) == (-8, "lockout")  # userCancel: nothing was checked
    assert status(world)["wrongPasswords"] == 0


def test_a_chinese_client_sees_chinese_at_each_step(world, alice, locker):
    zh = {"LANG": "zh_CN.UTF-8"}
    lock_out(world)
    term = VLOCK.start(locker, env=zh)
    unlock_with_password(term, prompt=PASSWORD_ZH, password="wrong")
    term.expect(WRONG_ZH)
    unlock_with_password(term)  # pam_unix's own prompt (vlock itself speaks English)
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED_ZH, PASSWORD_ZH, WRONG_ZH, PASSWORD, ""], term.transcript()

    term = VLOCK.start(locker, env=zh)
    unlock_with_password(term, prompt=PASSWORD_ZH)
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED_ZH, PASSWORD_ZH, ""], term.transcript()
    next_lock_takes_the_finger(world, locker, alice, env=zh, prompt=PROMPT_ZH, hint=HINT_TYPE_ZH)


def test_an_unknown_locale_gets_english(world, alice, locker):
    lock_out(world)
    term = VLOCK.start(locker, env={"LANG": "xx_YY.UTF-8"})
    unlock_with_password(term)
    assert term.wait() == 0, term.transcript()
    assert VLOCK.seen(term) == [VLOCK.prefix + LOCKED, PASSWORD, ""], term.transcript()
