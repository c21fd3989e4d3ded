"""End to end, the keyring key file kept without a TPM (`keyring_without_tpm = yes`, docs/spec.md
§12) once it is no longer the key: at its start the daemon seals the passwords it opens again under
the TPM's data key when there is one, or removes them when the option was turned off and nothing
else seals them; the key file goes last. While it cannot go it stays, and doctor says so whatever
the option says."""

import harness
from conftest import ALICE_PRINT
from harness import PASSWORDS
from swtpm import SwTPM
from test_hardening import status
from test_keyring_release import configure, fingerprint_login, fingerprint_stack

RETIRED = "keyring-key: it is no longer the keyring key"
LEFT_NOTE = "the keyring key file kept without a TPM is still in the state directory"
WITHOUT_TPM_NOTE = "login passwords for the keyring are kept without a TPM: a copy of the disk opens them"


def keep_under_the_key_file(world):
    """alice's password kept under <state>/keyring-key (no TPM, keyring_without_tpm = yes); the
    daemon stopped. Returns the key file and her sealed file."""
    world.start_daemon(config=configure(world, None, "keyring_without_tpm = yes\n"))
    rc, _ = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0
    kept = world.cli("keyring", "enable", as_user="alice", password=PASSWORDS["alice"])
    assert kept.returncode == 0, kept
    doc = status(world)
    assert doc["keyring"] == "ready" and doc["keyringWithoutTPM"] is True and doc["keyringKeyFile"] is True, doc
    world.daemon.stop()
    return world.state / "keyring-key", world.state / "users" / "alice" / "keyring"


def doctor(world):
    return world.cli("doctor", "--user", "alice", "--root", str(world.dir)).stdout


def test_turned_off_without_a_tpm_the_key_file_goes_with_the_passwords_it_opens(world):
    key, sealed = keep_under_the_key_file(world)
    daemon = world.start_daemon(config=configure(world, None, "keyring_without_tpm = no\n"))
    daemon.log.wait_for(RETIRED)
    assert not key.exists() and not sealed.exists()
    daemon.log.wait_for("keyring password removed: nothing here seals it")
    doc = status(world)
    assert doc["keyring"] == "off" and doc["keyringKeyFile"] is False and doc["keyringWithoutTPM"] is False, doc
    out = doctor(world)
    assert LEFT_NOTE not in out and WITHOUT_TPM_NOTE not in out, out


def test_a_tpm_that_comes_seals_them_again_and_the_key_file_goes(world):
    key, sealed = keep_under_the_key_file(world)
    before = sealed.read_bytes()
    with SwTPM(world.dir) as tpm:
        # keyring_without_tpm is still yes: the TPM's data key is the key now.
        daemon = world.start_daemon(config=configure(world, tpm, "keyring_without_tpm = yes\n"))
        daemon.log.wait_for(RETIRED)
        assert not key.exists() and sealed.read_bytes() != before
        doc = status(world)
        assert doc["keyring"] == "ready" and doc["keyringKeyFile"] is False and doc["keyringWithoutTPM"] is False, doc
        # The password it held, sealed again, is handed over after a match: the next module asks none.
        session = fingerprint_login(world, fingerprint_stack(world, "keyring-login")).wait()
        assert session.result == "PAM_SUCCESS", session.transcript()
        assert not any("Password" in m for m in session.messages()), session.transcript()
        assert not [t for t in daemon.log.texts() if PASSWORDS["alice"] in t]


def test_a_key_file_that_cannot_go_stays_and_doctor_says_so_whatever_the_option_says(world):
    key, sealed = keep_under_the_key_file(world)
    sealed.chmod(0o646)  # a file that may not be trusted is never written over: it cannot be moved off
    daemon = world.start_daemon(config=configure(world, None, "keyring_without_tpm = no\n"))
    daemon.log.wait_for("keyring-key is kept: some keyring passwords could not be moved off it")
    assert key.exists()
    doc = status(world)
    assert doc["keyringKeyFile"] is True and doc["keyringWithoutTPM"] is False, doc
    out = doctor(world)
    assert LEFT_NOTE in out and WITHOUT_TPM_NOTE not in out, out
