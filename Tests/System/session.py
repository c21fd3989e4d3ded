"""What a person does at the guest's serial console (log in, run sudo, log out) and what root
asks the guest (status, units, the journal), each with a deadline; the words they see are the
end-to-end harness's own."""

import json
import re

from harness import PASSWORD_AFTER_BOOT, PROMPT, no_match, not_recognised  # noqa: F401
from image import PASSWORD, USER
import vm

PRINT = "tgtest-right-index"
HINT_ENTER = "(or press Enter to use your password)"
TYPING = "(typing password \u2014 press Enter)"
LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"
STOPPING = "Fingerprint service stopping: use your password"
NOT_RESPONDING = "Fingerprint service not responding: use your password"
SUDO_PASSWORD = "[sudo] password for %s: " % USER
PAM_UNIX_PASSWORD = "Password: "
SHELL = re.compile(r"^%s@\S+:\S*\$ $" % USER)
RESULT = re.compile(r"^rc=(\d+)$")
LOGIN = re.compile(r"login: $")
CTRL_C = "\x03"
WAIT = 60.0  # s: one step seen on the console, under TCG on a loaded machine


def start_detached(guest, name, command):
    """Runs `command` as root in the guest, detached (the control bridge answers once every holder
    of its pipe is gone), its output to /run/tg-NAME.log; `finished` waits for its end."""
    guest.control.run("rm -f /run/tg-%s.done && mkfifo -m 600 /run/tg-%s.done && "
                      "setsid -f sh -c '%s > /run/tg-%s.log 2>&1; echo $? > /run/tg-%s.done' >/dev/null 2>&1 </dev/null"
                      % (name, name, command, name, name))


def finished(guest, name, limit=60):
    """The output of what `start_detached` ran, then its exit status on a line of its own: read
    when it ends (its status written into a FIFO, which waits for this reader), within `limit`."""
    return guest.control.run("rc=$(timeout %d cat /run/tg-%s.done); cat /run/tg-%s.log; echo \"$rc\""
                             % (limit, name, name), limit=limit + 30, check=False)[1]


def status(guest):
    return json.loads(guest.control.out("touchgate status --user %s --json" % USER))


def unit_state(guest, unit):
    return guest.control.run("systemctl is-active %s" % unit, check=False)[1].strip()


def login_name(guest):
    """At the getty's prompt: the user's name, typed."""
    con = guest.console
    con.expect(LOGIN, WAIT)
    con.type(USER + "\n")


def shell(guest):
    """Waits for the user's shell prompt."""
    return guest.console.expect(SHELL, WAIT)


def logout(guest):
    """`exit` at the shell; the getty's next prompt is left for login_name to answer."""
    guest.console.type("exit\n")
    guest.console.expect(LOGIN, WAIT, advance=False)


def sudo(guest):
    """`sudo -k id -un` typed at the shell; returns where its output starts."""
    con = guest.console
    start = con.mark()
    con.type("sudo -k id -un; echo rc=$?\n")
    return start


def cancel_sudo_password(guest):
    """Ctrl-C at sudo's own password prompt, once sudo reads it: the prompt is printed before sudo
    catches signals and turns echo off, and a Ctrl-C typed in between is lost (seen under load)."""
    guest.control.run("timeout 30 sh -c 'until stty -F /dev/ttyS0 -a | grep -q -- \" -echo \"; do sleep 0.05; done'",
                      limit=45)
    guest.console.type(CTRL_C)


def sudo_result(guest):
    """sudo's exit status, from the line the shell printed after it."""
    con = guest.console
    i = con.expect(RESULT, WAIT)
    rc = int(RESULT.search(con.screen(i)[0]).group(1))
    shell(guest)
    return rc


def seen(guest, start, end=None):
    """The console's lines from `start` (escape sequences removed, empty lines dropped)."""
    return [t for t in guest.console.screen(start)[: None if end is None else end - start] if t.strip()]


def journal_after(guest, cursor):
    """The journal's entries after `cursor` (all of them, as JSON objects)."""
    text = guest.control.out("journalctl -o json --no-pager --after-cursor='%s'" % cursor)
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def cursor(guest):
    text = guest.control.out("journalctl -n 1 -o json --no-pager")
    return json.loads(text.splitlines()[-1])["__CURSOR"]


def password_typed(guest, prompt=None):
    """Types the password once `prompt` (default: sudo's) is on the screen."""
    guest.console.expect(prompt or SUDO_PASSWORD, WAIT)
    guest.console.type(PASSWORD + "\n")


def show(title, lines):
    vm.log("--- %s" % title)
    for line in lines:
        vm.log("    | " + line)


def daemon_pid(guest):
    return guest.control.out("systemctl show -p MainPID --value touchgated.service").strip()


def sudo_with_finger(guest):
    """`sudo` with the enrolled finger on the reader at the prompt: it succeeds."""
    start = sudo(guest)
    guest.console.expect(PROMPT, WAIT)
    guest.reader.scan(PRINT)
    assert sudo_result(guest) == 0, seen(guest, start)


def first_login_by_password(guest, title):
    """The first login after a boot at the getty: touchgate says the password is required once,
    pam_unix takes it, the shell starts; the screen is shown under `title`."""
    start = guest.console.mark()
    login_name(guest)
    password_typed(guest, PAM_UNIX_PASSWORD)
    shell(guest)
    screen = seen(guest, start)
    show(title, screen)
    assert PASSWORD_AFTER_BOOT in screen, screen
