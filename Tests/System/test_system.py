"""touchgate on a booted Debian 12: systemd listening on touchgated.socket from boot, the first PAM
call starting the service under its hardening, login(1) on the serial getty, sudo, su, logind's
sessions, journald and auditd, a restart, a suspend, a screen locker and a remote login session. The steps run in order on one guest (the
reboot, fprintd's tools, the start loop and the upgrade follow in test_system_lifecycle.py, which
pytest runs after this file); each asserts what the person at the console or the administrator sees.

The screens of the console are printed (-s) so that a run shows what a person saw."""

import json
import re

import session as s
import vm
from image import PASSWORD, USER
from session import (HINT_ENTER, LOCKED, PRINT, PROMPT, STOPPING, SUDO_PASSWORD,
                     TYPING, no_match, not_recognised)
from test_install import ENABLED_COMMON_AUTH, stack

# The journal and audit contract (MESSAGE_ID by event kind, the fields every audit record carries).
MESSAGE_IDS = {
    "outcome": "4c180263b0b74e438ba1fb758ceb605b",
    "lockout": "46d53d2c9c55440fbba212ffaf516201",
    "unlock": "47336640d0cd4df094d6b681fe654f71",
    "enrollmentChanged": "220ec1066cf94048898e793aad447720",
    "admin": "e2d4602f8fb44870b2f1a5c70c8e1fe4",
}


def sudo_until_locked(guest):
    """A sudo prompt with five failed matches (two PAM conversations: three fingers, a wrong
    password, two more): the lockout line, and sudo's own password prompt left open."""
    con = guest.console
    start = s.sudo(guest)
    con.expect(PROMPT, s.WAIT)
    for i, stranger in enumerate(["x1", "x2"]):
        guest.reader.scan(stranger)
        con.expect(no_match(2 - i), s.WAIT)
    guest.reader.scan("x3")
    con.expect(not_recognised(3), s.WAIT)
    con.expect(SUDO_PASSWORD, s.WAIT)
    con.type("wrong-password\n")
    con.expect("Sorry, try again.", s.WAIT)  # sudo asks again: PAM again, so the finger again
    con.expect(PROMPT, s.WAIT)
    guest.reader.scan("x4")
    con.expect(no_match(2), s.WAIT)
    guest.reader.scan("x5")
    con.expect(LOCKED, s.WAIT)
    con.expect(SUDO_PASSWORD, s.WAIT)
    locked = s.status(guest)
    assert locked["lockedOut"] is True, locked
    return start


def test_a_the_socket_listens_from_boot_and_the_service_waits_for_the_first_pam_call(guest, state):
    rc, running = guest.control.run("systemctl is-system-running --wait", limit=180, check=False)
    failed = guest.control.out("systemctl --failed --no-legend --plain")
    vm.log("system state after boot: %s%s" % (running.strip(), (" (failed: %s)" % failed.strip()) if failed.strip() else ""))
    assert s.unit_state(guest, "touchgated.socket") == "active"
    assert s.unit_state(guest, "touchgated.service") == "inactive"
    # What an administrator types to offer the fingerprint (the packages leave it off).
    state["common_auth_before"] = guest.control.out("cat /etc/pam.d/common-auth")
    guest.control.run("pam-auth-update --enable touchgate")
    assert stack(guest.control.out("cat /etc/pam.d/common-auth").encode()) == ENABLED_COMMON_AUTH
    assert s.unit_state(guest, "touchgated.service") == "inactive", "started before any PAM call"
    # The first PAM call (login's service, a user with no prints, the password on stdin) starts it.
    rc, out = guest.control.run("printf '%%s\\n' '%s' | pamtester -v login tgother authenticate" % PASSWORD, check=False)
    vm.log("the first PAM call after boot: " + " / ".join(out.strip().splitlines()))
    # A start the call set off may still be running (the module gave up on it): joined, so its own
    # times are read (only then: a daemon the call did not start must not be started here).
    if s.unit_state(guest, "touchgated.service") == "activating":
        guest.control.run("timeout 60 systemctl start touchgated.service", check=False)
    timing = guest.control.out("systemctl show -p ExecMainStartTimestampMonotonic,ActiveEnterTimestampMonotonic "
                               "--value touchgated.service").split()
    vm.log("touchgated activated: %.2f s from exec to READY=1" % ((int(timing[1]) - int(timing[0])) / 1e6))
    assert rc == 0, out
    assert s.unit_state(guest, "touchgated.service") == "active", "the PAM call did not start the daemon"


def test_b1_root_enrolls_the_user_with_the_cli_on_the_virtual_reader(guest):
    s.start_detached(guest, "enroll", "touchgate enroll --user %s" % USER)
    for _ in range(5):
        guest.reader.scan(PRINT)
    out = s.finished(guest, "enroll")
    vm.log("touchgate enroll: " + out.strip().replace("\n", " / "))
    assert out.strip().endswith("0") and "Enrolled right-index-finger for %s." % USER in out, out
    assert guest.control.out("touchgate list --user %s" % USER).split() == ["right-index-finger"]
    # The guest's TPM (/dev/tpmrm0, reached through the unit's DeviceAllow) sealed the print.
    assert guest.control.out("head -c 4 /var/lib/fprint/%s/*/*/7" % USER) == "TGSP"
    assert s.status(guest)["sealing"] == "sealed"
    assert "prints are sealed to the TPM" in guest.control.out("journalctl -b -u touchgated.service -o cat")


def test_b2_the_first_login_after_boot_asks_for_the_password(guest, state):
    s.first_login_by_password(guest, "login on ttyS0, the first after boot")
    after = s.status(guest)
    assert after["passwordRequired"] == [], after
    state["logged_in"] = True


def test_c1_sudo_with_a_finger(guest):
    start = s.sudo(guest)
    guest.console.expect(PROMPT, s.WAIT)
    guest.console.expect(HINT_ENTER, s.WAIT)
    guest.reader.scan(PRINT)
    assert s.sudo_result(guest) == 0
    screen = s.seen(guest, start)
    s.show("sudo with a finger", screen)
    assert "root" in screen and SUDO_PASSWORD.strip() not in " ".join(screen), screen


def test_c2_three_wrong_fingers_then_the_password(guest):
    start = s.sudo(guest)
    guest.console.expect(PROMPT, s.WAIT)
    for i, stranger in enumerate(["x1", "x2"]):
        guest.reader.scan(stranger)
        guest.console.expect(no_match(2 - i), s.WAIT)
    guest.reader.scan("x3")
    guest.console.expect(not_recognised(3), s.WAIT)
    s.password_typed(guest)
    assert s.sudo_result(guest) == 0
    screen = s.seen(guest, start)
    s.show("sudo, three wrong fingers, the password", screen)
    assert PASSWORD not in "\n".join(guest.console.screen(start))


def test_c3_a_lockout_after_five_is_cleared_by_the_password_through_pam_unix(guest, state):
    state["cursor_lockout"] = s.cursor(guest)
    start = sudo_until_locked(guest)
    guest.console.type(PASSWORD + "\n")
    assert s.sudo_result(guest) == 0
    s.show("sudo: a lockout after five, then the password", s.seen(guest, start))
    cleared = s.status(guest)
    assert cleared["lockedOut"] is False and cleared["failedMatches"] == 0, cleared
    s.sudo_with_finger(guest)


def test_b3_console_login_with_a_finger_and_loginctl_shows_the_session(guest):
    s.logout(guest)
    start = guest.console.mark()
    s.login_name(guest)
    guest.console.expect(PROMPT, s.WAIT)
    guest.reader.scan(PRINT)
    s.shell(guest)
    screen = s.seen(guest, start)
    s.show("login on ttyS0 with a finger", screen)
    assert not any(s.PAM_UNIX_PASSWORD.strip() in line for line in screen), screen
    sessions = guest.control.out("loginctl list-sessions --no-legend")
    vm.log("loginctl list-sessions: " + sessions.strip())
    assert re.search(r"\b%s\b.*\bttyS0\b" % USER, sessions), sessions


def test_b4_console_login_by_typing_the_password_while_the_reader_listens(guest):
    s.logout(guest)
    start = guest.console.mark()
    s.login_name(guest)
    guest.console.expect(PROMPT, s.WAIT)
    guest.console.expect(HINT_ENTER, s.WAIT)
    guest.console.type(PASSWORD + "\n")
    s.shell(guest)
    screen = s.seen(guest, start)
    s.show("login on ttyS0, the password typed at the fingerprint prompt", screen)
    assert TYPING in screen, screen
    assert PASSWORD not in "\n".join(guest.console.screen(start))


def test_f_a_restart_during_a_prompt_ends_it_with_a_sentence_and_the_next_sudo_works(guest):
    start = s.sudo(guest)
    guest.console.expect(PROMPT, s.WAIT)
    guest.control.run("systemctl restart touchgated.service", limit=60)
    guest.console.expect(STOPPING, s.WAIT)
    s.password_typed(guest)
    assert s.sudo_result(guest) == 0
    s.show("sudo while touchgated restarts", s.seen(guest, start))
    s.sudo_with_finger(guest)


SLEEPING = "The computer is going to sleep: use your password"


def test_e_a_suspend_during_a_prompt_ends_it_with_the_sleep_sentence_and_the_reader_works_after_resume(guest):
    """`systemctl suspend` (S3: QEMU reports SUSPEND) while sudo's fingerprint prompt is open; the
    machine is woken from QEMU's side (system_wakeup, as a key press or the lid would) unless it
    woke by itself first (QEMU then refuses the wakeup: the guest is not suspended)."""
    pid = s.daemon_pid(guest)
    start = s.sudo(guest)
    guest.console.expect(PROMPT, s.WAIT)
    since = guest.qmp.mark()
    guest.control.run("systemctl suspend")
    guest.console.expect(SLEEPING, s.WAIT)
    suspended = json.loads(guest.qmp.event("SUSPEND", s.WAIT, since))["timestamp"]
    answer = guest.qmp.execute("system_wakeup")
    woke = json.loads(guest.qmp.event("WAKEUP", s.WAIT, since))["timestamp"]
    # Typed only once the system is back (systemd-sleep's line after the resume): keys sent to a
    # serial port still resuming are lost.
    guest.control.run("timeout 60 bash -c 'exec 3< <(exec journalctl -f -n all -b -t systemd-sleep -o cat); j=$!; "
                      "grep -m1 -q \"System returned from sleep\" <&3; r=$?; kill $j; exit $r'", limit=90)
    vm.log("the guest suspended (QEMU: SUSPEND) and resumed %.3f s later (system_wakeup: %s)"
           % (woke["seconds"] - suspended["seconds"] + (woke["microseconds"] - suspended["microseconds"]) / 1e6,
              answer.strip()))
    vm.log("the guest's kernel on the resume: " + guest.control.out(
        "echo wakeup irq: $(cat /sys/power/pm_wakeup_irq 2>&1); dmesg | grep -E 'PM: |ACPI: (PM|Waking)' | tail -4"
    ).strip().replace("\n", " / "))
    s.password_typed(guest)
    assert s.sudo_result(guest) == 0
    s.show("sudo while the computer goes to sleep, then the password after resume", s.seen(guest, start))
    s.sudo_with_finger(guest)
    assert s.daemon_pid(guest) == pid, "the daemon was restarted across the sleep"


def test_i_the_journal_holds_each_record_once_with_its_fields_and_auditd_the_linux_records(guest, state):
    """The contract: audit records go to journald's native protocol once, with MESSAGE_ID and
    TOUCHGATE_* fields; never also as a stderr or syslog line; Linux audit gets USER_AUTH records
    and an ANOM_LOGIN_FAILURES at the lockout."""
    entries = s.journal_after(guest, state["cursor_lockout"])
    ours = [e for e in entries if e.get("SYSLOG_IDENTIFIER") == "touchgated" or e.get("_SYSTEMD_UNIT") == "touchgated.service"]
    lines = [e for e in ours if isinstance(e.get("MESSAGE"), str) and "event=" in e["MESSAGE"]]
    for e in lines:
        vm.log("journal: %s %s" % (e.get("_TRANSPORT"), e["MESSAGE"]))
    twice = [e["MESSAGE"] for e in lines if e.get("_TRANSPORT") != "journal"]
    assert not twice, "expected each audit record once, through the native protocol (_TRANSPORT=journal); " \
        "these came as %s lines too: %s" % (sorted(set(e.get("_TRANSPORT") for e in lines)), twice)
    events = [e for e in lines if "TOUCHGATE_EVENT" in e]
    assert events, "expected journal fields TOUCHGATE_EVENT etc. on the audit records; saw none"
    for e in events:
        kind = e["TOUCHGATE_EVENT"]
        assert e.get("MESSAGE_ID") == MESSAGE_IDS.get(kind), e
        assert (e.get("PRIORITY"), e.get("SYSLOG_FACILITY"), e.get("TOUCHGATE_USER")) == ("5", "10", USER), e
    lockouts = [e for e in events if e["TOUCHGATE_EVENT"] == "lockout"]
    assert len(lockouts) == 1, [e["MESSAGE"] for e in events]
    outcomes = [e for e in events if e["TOUCHGATE_EVENT"] == "outcome"]
    assert any(e.get("TOUCHGATE_OUTCOME") == "success" and e.get("TOUCHGATE_METHOD") == "fingerprint"
               and e.get("TOUCHGATE_SERVICE") == "sudo" for e in outcomes), [e["MESSAGE"] for e in outcomes]
    auth = guest.control.out("ausearch -m USER_AUTH -i 2>&1 | grep 'op=touchgate:' || true")
    anom = guest.control.out("ausearch -m ANOM_LOGIN_FAILURES -i 2>&1 | grep 'op=touchgate:' || true")
    vm.log("ausearch USER_AUTH: " + (auth.strip().splitlines() or ["(none)"])[-1])
    vm.log("ausearch ANOM_LOGIN_FAILURES: " + (anom.strip().splitlines() or ["(none)"])[-1])
    assert re.search(r"op=touchgate:fingerprint acct=%s .*res=success" % USER, auth), \
        "expected a USER_AUTH record op=touchgate:fingerprint acct=%s res=success:\n%s" % (USER, auth)
    assert re.search(r"op=touchgate:lockout acct=%s" % USER, anom), \
        "expected an ANOM_LOGIN_FAILURES record op=touchgate:lockout acct=%s:\n%s" % (USER, anom)


def test_d1_su_with_a_finger(guest):
    con = guest.console
    start = con.mark()
    con.type("su -c 'id -un' %s; echo rc=$?\n" % USER)
    con.expect(PROMPT, s.WAIT)
    guest.reader.scan(PRINT)
    i = con.expect(s.RESULT, s.WAIT)
    rc = int(s.RESULT.search(con.screen(i)[0]).group(1))
    s.shell(guest)
    screen = s.seen(guest, start)
    s.show("su with a finger", screen)
    assert rc == 0 and USER in screen, screen


VLOCK_ENTER = "Please press [ENTER] to unlock."
# README, "Console screen locker": what an administrator writes for vlock, which runs as the user.
CONSOLE_LOCKER_STACK = "auth sufficient pam_touchgate.so policy=biometrics-or-password\n" \
                       "auth required   pam_unix.so try_first_pass\n"


def test_d2_vlock_with_a_lockout_asks_for_the_password_itself_and_it_unlocks(guest):
    con = guest.console
    # Debian ships no /etc/pam.d/vlock (vlock falls back to "other", i.e. common-auth): the admin
    # writes the README's stack.
    guest.control.run("test ! -e /etc/pam.d/vlock && printf '%s' > /etc/pam.d/vlock"
                      % CONSOLE_LOCKER_STACK.replace("\n", "\\n"))
    start = sudo_until_locked(guest)
    s.cancel_sudo_password(guest)
    assert s.sudo_result(guest) == 1, s.seen(guest, start)
    cur = s.cursor(guest)
    start = con.mark()
    con.type("vlock; echo rc=$?\n")
    con.expect(VLOCK_ENTER, s.WAIT)
    con.type("\n")
    con.expect(LOCKED, s.WAIT)
    con.expect(s.PAM_UNIX_PASSWORD, s.WAIT)  # touchgate's own prompt: the daemon checks it
    con.type(PASSWORD + "\n")
    i = con.expect(s.RESULT, s.WAIT)
    rc = int(s.RESULT.search(con.screen(i)[0]).group(1))
    s.shell(guest)
    screen = s.seen(guest, start)
    s.show("vlock: locked out, touchgate's own password prompt", screen)
    journal = ["%s: %s" % (e.get("SYSLOG_IDENTIFIER"), e.get("MESSAGE")) for e in s.journal_after(guest, cur)]
    assert rc == 0, (screen, journal)
    assert PASSWORD not in "\n".join(guest.console.screen(start))
    after = s.status(guest)
    assert after["lockedOut"] is False and after["failedMatches"] == 0, after
    # The next lock takes the finger.
    start = con.mark()
    con.type("vlock; echo rc=$?\n")
    con.expect(VLOCK_ENTER, s.WAIT)
    con.type("\n")
    con.expect(PROMPT, s.WAIT)
    guest.reader.scan(PRINT)
    i = con.expect(s.RESULT, s.WAIT)
    rc = int(s.RESULT.search(con.screen(i)[0]).group(1))
    s.shell(guest)
    assert rc == 0, s.seen(guest, start)
    guest.control.run("rm /etc/pam.d/vlock")


REMOTE_HOST = "203.0.113.9"
NOT_REMOTE = "Fingerprint is not offered in remote sessions"


def test_l_a_remote_login_session_gets_no_prompt_though_its_ssh_variables_are_cleared(guest):
    """login -h makes a session that logind records as remote (pam_systemd, from PAM_RHOST). A sudo
    in it with SSH_CONNECTION and SSH_CLIENT cleared names no remote host, and the daemon still
    refuses the finger as remote, by that session's record; sudo then asks for the password (none
    is given here: -S with nothing on stdin)."""
    cur = s.cursor(guest)
    # The shell's input held open (the FIFO, read and written by fd 3) so script never sees its
    # end; login -f: root logs the user in without a password; the shell exits after the lines.
    rc, out = guest.control.run(
        "rm -f /run/tg-remote.fifo && mkfifo -m 600 /run/tg-remote.fifo && exec 3<>/run/tg-remote.fifo\n"
        "printf '%%s\\n' 'env -u SSH_CONNECTION -u SSH_CLIENT sudo -k -S true </dev/null; echo sudo-rc=$?' "
        "'grep ^REMOTE /run/systemd/sessions/$XDG_SESSION_ID' 'exit' >&3\n"
        "timeout 50 script -qefc 'login -h %s -f %s' /dev/null <&3\n" % (REMOTE_HOST, USER),
        limit=60, check=False)
    guest.control.run("rm -f /run/tg-remote.fifo")
    s.show("a remote login session's sudo, without its SSH variables", out.splitlines())
    assert rc == 0, out
    assert "REMOTE=1" in out and "REMOTE_HOST=%s" % REMOTE_HOST in out, out
    assert NOT_REMOTE in out and "sudo-rc=1" in out, out
    records = [e.get("MESSAGE", "") for e in s.journal_after(guest, cur) if e.get("TOUCHGATE_EVENT") == "outcome"]
    assert any("reason=remote" in m and "rhost=%s" % REMOTE_HOST in m and "service=sudo" in m for m in records), records
