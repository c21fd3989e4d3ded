"""Real clients end to end (docs/spec.md §9, §10, §11): sudo, su, login and vlock, each in a pty that is its
controlling terminal, as a test user, in a private mount namespace whose /etc/pam.d holds the
touchgate stack (fingerprint, then pam_unix, then the report line); touchgated on libfprint's
virtual reader. A fresh temp dir, daemon and enrolled alice per test.

Each test asserts what the person saw, line by line, from the moment the client began to
authenticate; the exit status; and that the terminal's modes afterwards are the ones it had
before the client started."""

import signal

import pytest

import clients
import harness
import terminal
import wire
from clients import CLIENTS, HINT_ENTER, HINT_TYPE, TYPING
from harness import PASSWORDS, PROMPT, no_match, now
from terminal import CTRL_C, ENTER

ALL = list(CLIENTS.values())
LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"
NOT_RESPONDING = "Fingerprint service not responding: use your password"
REMOTE = "Fingerprint is not offered in remote sessions"
AT_ONCE = 1.0             # s: "they never wait for a timeout to use their password"
DEAD_DAEMON_LIMIT = 2.0   # s: the module's silence deadline is 1.5 s; a closed socket is immediate
# An SSH session as sshd leaves it in the environment (sudo and su set no PAM_RHOST).
SSH_ENV = {"SSH_CONNECTION": "203.0.113.7 52110 192.0.2.10 22", "SSH_CLIENT": "203.0.113.7 52110 22"}


@pytest.fixture
def setup(world):
    """The private /etc (accounts, the touchgate stack for every client, sudoers) of this world."""
    assert not clients.missing_requirements(), "; ".join(clients.missing_requirements())
    c = clients.Clients(world)
    yield c
    c.close()


@pytest.fixture
def either_or(world):
    """The same, with policy=biometrics-or-password on the fingerprint line."""
    assert not clients.missing_requirements(), "; ".join(clients.missing_requirements())
    c = clients.Clients(world, policy="biometrics-or-password")
    yield c
    c.close()


def assert_sane(term):
    """The terminal is as the client found it: echo, canonical input, signals, CR/NL handling."""
    before, after = term.modes_before, term.modes()
    assert terminal.not_sane(before) == [], "the pty did not start sane"
    diffs = terminal.modes_differences(before, after)
    assert diffs == [], "terminal left %s; screen:\n%s" % (" ".join(diffs), term.transcript())
    assert after == before, "termios changed: %r -> %r" % (before, after)


def assert_seen(client, term, lines):
    """Exactly these lines since the client began to authenticate (then the proof, for a success)."""
    assert client.seen(term) == lines, term.transcript()


def can_evaluate(world, user="alice"):
    result, _ = wire.request(world.socket, "can_evaluate", user=user, policy=1, service="sudo")
    return result["code"], result.get("reason")


def lock_out(world):
    """Five consecutive failed matches across two prompts (pamtester): alice's fingerprint is locked."""
    first = world.pam("alice")
    first.wait_for(PROMPT)
    for i, stranger in enumerate(["x1", "x2"]):
        world.reader.scan(stranger)
        first.wait_for(no_match(2 - i))
    world.reader.scan("x3")
    first.wait()
    second = world.pam("alice")
    second.wait_for(PROMPT)
    world.reader.scan("x4")
    second.wait_for(no_match(2))
    world.reader.scan("x5")
    second.wait()
    assert second.messages()[-1] == LOCKED, second.transcript()
    assert can_evaluate(world) == (-8, "lockout")


def at_the_prompt(client, setup, hint=HINT_ENTER, **kw):
    """Starts the client and waits until the fingerprint prompt and the module's hint are shown
    (the module reads keys from then on)."""
    term = client.start(setup, **kw)
    term.expect(PROMPT)
    term.expect(hint)
    return term


def password_then_success(client, term, since=None, limit=AT_ONCE):
    """The client's own password prompt comes (within `limit` seconds of `since`, when given); the
    person types the password once the client reads it; the client lets them in."""
    _, shown = term.expect(client.password_prompt, timeout=max(limit + 1, harness.DEFAULT_WAIT))
    if since is not None:
        assert shown - since < limit, "password prompt after %.2f s" % (shown - since)
    term.wait_reading(secret=True)
    term.type_line(PASSWORDS[client.user])
    assert client.finish(term) == 0, term.transcript()
    assert PASSWORDS[client.user] not in term.text()  # never echoed


# --- the fingerprint -----------------------------------------------------------------------------


@pytest.mark.parametrize("client", ALL, ids=str)
def test_a_finger_lets_the_person_in_without_a_key(world, alice, setup, client):
    term = at_the_prompt(client, setup)
    world.reader.scan(alice)
    assert client.finish(term) == 0, term.transcript()
    assert_seen(client, term, [client.prefix + PROMPT, HINT_ENTER] + client.proof + [""])
    assert_sane(term)


# --- the password, never behind a timeout --------------------------------------------------------


@pytest.mark.parametrize("client", ALL, ids=str)
def test_enter_at_the_fingerprint_prompt_goes_straight_to_the_password(world, alice, setup, client):
    term = at_the_prompt(client, setup)
    pressed = now()
    term.send(ENTER)
    password_then_success(client, term, since=pressed)
    assert_seen(client, term, [client.prefix + PROMPT, HINT_ENTER, client.password_prompt] + client.proof + [""])
    assert_sane(term)
    assert can_evaluate(world) == (0, None)  # choosing the password is not a failed match


@pytest.mark.parametrize("client", ALL, ids=str)
def test_a_password_typed_at_the_fingerprint_prompt_goes_to_pam_unix(world, alice, setup, client):
    """policy=biometrics: the typed line becomes PAM_AUTHTOK, pam_unix (try_first_pass) checks it
    without asking again."""
    term = at_the_prompt(client, setup)
    term.type_line(PASSWORDS[client.user])
    assert client.finish(term) == 0, term.transcript()
    assert PASSWORDS[client.user] not in term.text()
    assert_seen(client, term, [client.prefix + PROMPT, HINT_ENTER, TYPING] + client.proof + [""])
    assert_sane(term)


@pytest.mark.parametrize("client", ALL, ids=str)
def test_biometrics_or_password_accepts_the_password_at_the_same_prompt(world, alice, either_or, client):
    """policy=biometrics-or-password: the daemon checks the typed password itself."""
    term = at_the_prompt(client, either_or, hint=HINT_TYPE)
    term.type_line(PASSWORDS[client.user])
    assert client.finish(term) == 0, term.transcript()
    assert PASSWORDS[client.user] not in term.text()
    assert_seen(client, term, [client.prefix + PROMPT, HINT_TYPE, TYPING] + client.proof + [""])
    assert_sane(term)


@pytest.mark.parametrize("client", ALL, ids=str)
def test_a_locked_out_person_is_told_why_then_the_password_works(world, alice, setup, client):
    lock_out(world)
    term = client.start(setup)
    _, told = term.expect(client.prefix + LOCKED)  # told, with no fingerprint prompt
    password_then_success(client, term, since=told)  # and the password at once
    assert_seen(client, term, [client.prefix + LOCKED, client.password_prompt] + client.proof + [""])
    assert_sane(term)

    # The report line told the daemon (the client runs PAM as root): the finger works again.
    assert can_evaluate(world) == (0, None)
    again = at_the_prompt(client, setup)
    world.reader.scan(alice)
    assert client.finish(again) == 0, again.transcript()
    assert_seen(client, again, [client.prefix + PROMPT, HINT_ENTER] + client.proof + [""])


# --- Ctrl-C --------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", ALL, ids=str)
def test_ctrl_c_at_the_fingerprint_prompt_gives_the_password_and_a_sane_terminal(world, alice, setup, client):
    """Ctrl-C is userCancel: the prompt ends at once, silently, the password module follows, and
    the terminal (echo, signals) is the client's again."""
    term = at_the_prompt(client, setup)
    pressed = now()
    term.send(CTRL_C)
    password_then_success(client, term, since=pressed)
    assert_seen(client, term, [client.prefix + PROMPT, HINT_ENTER, client.password_prompt] + client.proof + [""])
    assert_sane(term)
    assert can_evaluate(world) == (0, None)  # a cancel is not a failed match


def test_ctrl_c_twice_cancels_sudo_and_leaves_the_terminal_sane(world, alice, setup):
    """The second Ctrl-C reaches sudo as SIGINT (so the module gave ISIG back) and sudo gives up."""
    sudo = CLIENTS["sudo"]
    term = at_the_prompt(sudo, setup)
    term.send(CTRL_C)
    term.expect(sudo.password_prompt)
    term.wait_reading(secret=True)  # its SIGINT handler in place
    term.send(CTRL_C)
    assert term.wait() == 1, term.transcript()
    assert_seen(sudo, term, [PROMPT, HINT_ENTER, sudo.password_prompt, "sudo: a password is required", ""])
    assert_sane(term)


# --- when things go wrong ------------------------------------------------------------------------


@pytest.mark.parametrize("client", ALL, ids=str)
def test_daemon_killed_mid_prompt_the_password_still_works(world, alice, setup, client):
    term = at_the_prompt(client, setup)
    killed = now()
    world.daemon.signal(signal.SIGKILL)
    password_then_success(client, term, since=killed, limit=DEAD_DAEMON_LIMIT)
    assert_seen(client, term, [client.prefix + PROMPT, HINT_ENTER, NOT_RESPONDING, client.password_prompt]
                + client.proof + [""])
    assert_sane(term)


def test_a_remote_login_goes_straight_to_the_password(world, alice, setup):
    """`login -h HOST` (what telnetd/rlogind run) sets PAM_RHOST: no fingerprint prompt."""
    login = CLIENTS["login"]
    term = login.start(setup, argv=["login", "-h", "somehost.example", "alice"])
    _, told = term.expect(REMOTE)
    password_then_success(login, term, since=told)  # and the password straight after it
    assert_seen(login, term, [REMOTE, login.password_prompt] + login.proof + [""])
    assert_sane(term)


# sudo replaces environ with its env_reset copy before PAM runs: the module also reads the
# exec-time environment (/proc/self/environ), so sudo over SSH is remote too.
@pytest.mark.parametrize("client", [CLIENTS["sudo"], CLIENTS["su"], CLIENTS["vlock"]], ids=str)
def test_in_an_ssh_session_the_password_comes_straight_away(world, alice, setup, client):
    """sudo, su and vlock set no PAM_RHOST; SSH_CONNECTION in their environment marks the session remote."""
    term = client.start(setup, env=SSH_ENV)
    _, told = term.expect(client.prefix + REMOTE)
    password_then_success(client, term, since=told)
    assert_seen(client, term, [client.prefix + REMOTE, client.password_prompt] + client.proof + [""])
    assert_sane(term)
