"""End to end, a login opens the GNOME login keyring: the real pam_gnome_keyring.so in a PAM stack
run by pamtester (pam_wrapper), the real gnome-keyring-daemon it starts as alice on her own session
bus, and the Secret Service asked over that bus (keyring_world.py) — here with a typed password,
the world in which a password handed over after a fingerprint match is tested the same way."""

import os

import pytest

import harness
from conftest import ALICE_PRINT
from harness import PASSWORDS, PROMPT, USERS
from swtpm import SwTPM
import keyring_world
from keyring_world import PAM_PERMIT, KeyringWorld, login_collection_locked

ALICE_UID = USERS["alice"][0]


@pytest.fixture
def keyring():
    """A world where alice has a home, a runtime dir and a session bus, and no keyring yet."""
    w = KeyringWorld("alice")
    yield w
    w.close()


def log_in(world, service, password=None):
    """pamtester SERVICE alice authenticate open_session, typing `password` at the prompt (None:
    the stack asks for none). Returns the finished session."""
    pam = world.login(service)
    if password is not None:
        pam.wait_for("Password")
        pam.type(password + "\n")
    return pam.wait()


def start_session(world):
    started = world.start_session()
    assert started.returncode == 0, started


def test_a_typed_password_creates_and_unlocks_the_login_keyring(keyring):
    assert not keyring.keyring_file().exists()
    assert keyring.secrets()["owner"] is None, "a Secret Service before any login"
    assert keyring.keyring_daemons() == []

    pam = log_in(keyring, keyring.login_service(), PASSWORDS["alice"])
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    assert "pamtester: successfully opened a session" in pam.out.texts(), pam.transcript()
    daemons = keyring.keyring_daemons()
    assert len(daemons) == 1, "pam_gnome_keyring started %d keyring daemons" % len(daemons)
    assert os.stat("/proc/%d" % daemons[0]).st_uid == ALICE_UID, "the keyring daemon does not run as alice"

    start_session(keyring)
    assert login_collection_locked(keyring) is False
    assert keyring.keyring_file().exists(), "no login keyring on disk"


def test_a_second_login_with_the_right_password_unlocks_it_and_a_wrong_one_does_not(keyring):
    login = keyring.login_service()
    pam = log_in(keyring, login, PASSWORDS["alice"])
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    start_session(keyring)
    assert login_collection_locked(keyring) is False

    # Logged out: her keyring daemon goes, the keyring stays on disk.
    assert keyring.stop_keyring_daemons() == 1
    assert keyring.keyring_daemons() == []
    assert keyring.secrets()["owner"] is None
    assert keyring.keyring_file().exists()

    # A login whose auth stage gives no password: the daemon starts, the keyring stays locked.
    no_password = keyring.login_service(auth="auth required %s" % PAM_PERMIT, name="keyring-no-password")
    pam = log_in(keyring, no_password)
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    assert not any("Password" in line for line in pam.messages()), pam.transcript()
    assert len(keyring.keyring_daemons()) == 1, "pam_gnome_keyring started no keyring daemon"
    start_session(keyring)
    assert login_collection_locked(keyring) is True

    # A wrong password is refused, and pam_gnome_keyring's unlock with it fails too.
    pam = log_in(keyring, login, "not-" + PASSWORDS["alice"])
    assert pam.result == "PAM_AUTH_ERR", pam.transcript()
    assert login_collection_locked(keyring) is True

    # The right one unlocks the running daemon's login keyring.
    pam = log_in(keyring, login, PASSWORDS["alice"])
    assert pam.result == "PAM_SUCCESS", pam.transcript()
    assert login_collection_locked(keyring) is False
    assert len(keyring.keyring_daemons()) == 1, "the unlock started another keyring daemon"


# --- the keyring opened by a finger (docs/spec.md §12) ----------------------------------------

VOID = "Keyring not unlocked: fingers changed since it was set up; type your password once"


def test_a_fingerprint_login_opens_the_login_keyring_void_after_an_enrollment_change_until_a_password(keyring):
    with SwTPM(keyring.dir) as tpm:
        conf = keyring.dir / "touchgate.conf"
        # Fingerprints stay usable after an enrollment change here, so the void password shows at a match.
        conf.write_text("seal = tpm\ntpm = %s\nkeyring_services = keyring-login,keyring-password\n"
                        "require_password_after_enrollment_change = no\n" % tpm.tcti)
        daemon = keyring.start_daemon(config=conf)
        sock = keyring.socket
        fingerprint = keyring.login_service(
            auth="auth requisite %s socket=%s authtok" % (harness.PAM_MODULE, sock), name="keyring-login")
        password = keyring.login_service(
            auth="auth [success=1 default=ignore] %s expose_authtok quiet %s\nauth required %s\n"
                 "auth optional %s socket=%s report authtok"
                 % (keyring_world.PAM_EXEC, keyring.password_checker(), keyring_world.PAM_DENY,
                    harness.PAM_MODULE, sock), name="keyring-password")

        def finger_login(scan):
            pam = keyring.login(fingerprint)
            pam.wait_for(PROMPT)
            keyring.reader.scan(scan)
            pam.wait()
            assert pam.result == "PAM_SUCCESS", pam.transcript()
            assert not any("Password" in m for m in pam.messages()), pam.transcript()
            start_session(keyring)
            return pam

        # Her first login, by password, creates the login keyring; she enrolls and opts in.
        assert log_in(keyring, password, PASSWORDS["alice"]).result == "PAM_SUCCESS"
        start_session(keyring)
        assert login_collection_locked(keyring) is False
        keyring.stop_keyring_daemons()
        rc, cli = harness.enroll(keyring, "alice", ALICE_PRINT, as_user="alice")
        assert rc == 0, cli.stderr
        kept = keyring.cli("keyring", "enable", as_user="alice", password=PASSWORDS["alice"])
        assert kept.returncode == 0, kept

        # A fingerprint login: the keyring is unlocked with the password touchgate kept sealed.
        finger_login(ALICE_PRINT)
        assert login_collection_locked(keyring) is False
        keyring.stop_keyring_daemons()

        # Root adds a finger: the sealed password is void; the login says so and the keyring stays locked.
        assert harness.enroll(keyring, "alice", "alice-left-thumb", finger="left-thumb")[0] == 0
        pam = finger_login("alice-left-thumb")  # no identification: the first finger in libfprint's order
        assert VOID in pam.messages(), pam.transcript()
        assert login_collection_locked(keyring) is True
        keyring.stop_keyring_daemons()

        # One password login renews it; the next fingerprint login unlocks the keyring again.
        assert log_in(keyring, password, PASSWORDS["alice"]).result == "PAM_SUCCESS"
        daemon.log.wait_for("keyring password renewed")
        keyring.stop_keyring_daemons()
        pam = finger_login("alice-left-thumb")
        assert VOID not in pam.messages()
        assert login_collection_locked(keyring) is False
        assert not [t for t in daemon.log.texts() if PASSWORDS["alice"] in t]
