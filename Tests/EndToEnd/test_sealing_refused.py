"""End to end, a TPM that refuses for good what touchgate needs from it (a real swtpm): the key
sealed on another TPM (a TPM cleared since, or a disk moved from another machine), and a TPM
whose owner hierarchy has a password. Neither is a passing fault: status, doctor and the prompt say
what it is and the way out, the key is never replaced behind the administrator's back, and the way
out works."""

import json
import subprocess

import harness
import test_keyring_release as kr
from conftest import ALICE_PRINT
from harness import PASSWORDS, PROMPT
from swtpm import SwTPM
from test_hardening import can_evaluate, status

KEY_REFUSED = ("the TPM no longer opens the key the prints are sealed with (the TPM was cleared, the disk "
               "comes from another machine, or the PCRs it is bound to changed): remove %s, restart "
               "touchgated and enroll again; the TPM said: ")
OWNER_REFUSED = ("sealing cannot use a TPM whose owner hierarchy has a password: clear the owner password, "
                 "or set seal = no in touchgate.conf; the TPM said: ")
REFUSED_TEXT = ("Fingerprint unavailable: this computer's TPM refuses the key the prints are sealed with "
                "(ask the administrator): use your password")
PASSING = ("now", "later", "check the TPM")


def configure(world, tpm, seal="tpm"):
    conf = world.dir / "touchgate.conf"
    conf.write_text("seal = %s\ntpm = %s\nkeyring_services = login\n" % (seal, tpm.tcti))
    return conf


def doctor(world):
    result = world.cli("doctor", "--user", "alice", "--root", str(world.dir), "--json")
    checks = {}
    for c in json.loads(result.stdout)["checks"]:
        checks.setdefault(c["check"], []).append(c)
    return result, checks


def enrollment_fails(world):
    """An enrollment while the TPM refuses sealing: refused before the first scan, with the
    sentence that sends the person to the way out."""
    cli = harness.CliProcess(world, "enroll", "--user", "alice", "--finger", "left-thumb")
    assert cli.wait() == 1, cli.out.dump()
    assert cli.out.lines == [], cli.out.dump()  # no prompt, no stage
    assert ("Enrolling is not possible: this computer's TPM refuses the key prints are sealed with "
            "(touchgate doctor says what to do)") in cli.stderr, cli.stderr
    return True


def test_a_key_sealed_on_another_tpm_is_said_to_be_refused_with_the_way_out_which_works(world):
    with SwTPM(world.dir) as home:
        world.start_daemon(config=configure(world, home))
        kr.enroll_and_keep(world)
        world.daemon.stop()
    key = world.state / "sealed-key"
    sealed = key.read_bytes()

    with SwTPM(world.dir) as other:  # a cleared TPM: another owner seed, as another machine's
        daemon = world.start_daemon(config=configure(world, other))
        doc = status(world)
        assert doc["sealing"] == "refused" and doc["sealingRefusal"] == "key", doc
        assert doc["sealingKeyFile"] == str(key), doc
        assert doc["sealingDetail"].startswith(KEY_REFUSED % key), doc
        assert "integrity check failed" in doc["sealingDetail"], doc  # the TPM's own answer follows
        assert doc["keyring"] == "unavailable" and doc["keyringDetail"].startswith(KEY_REFUSED % key), doc

        result, checks = doctor(world)
        assert result.returncode != 0, result
        [sealing] = checks["sealing"]
        assert sealing["status"] == "problem", sealing
        assert sealing["summary"] == ("the TPM no longer opens the key the prints are sealed with (the TPM was "
                                      "cleared, the disk comes from another machine, or the bound PCRs changed)")
        assert sealing["fix"] == ("remove %s, restart touchgated and enroll every finger again (if only the bound "
                                  "PCRs changed, booting as before also opens them); passwords still work" % key)
        [keyring] = checks["keyring"]
        assert keyring["summary"] == ("the sealed keyring password cannot be opened: the TPM refuses the key it "
                                      "is sealed with (see sealing)"), keyring
        assert keyring["fix"] == "after sealing's fix, enroll a finger, then log in once with the password"
        user = [c for c in checks["user"] if c["status"] == "note"]
        assert [c["summary"] for c in user] == [
            "fingerprint refused: the prints are sealed under a key this computer's TPM refuses (see sealing)"]
        said = " ".join("%s %s" % (c["summary"], c.get("fix") or "")
                        for c in checks["sealing"] + checks["keyring"] + user)
        assert not [w for w in PASSING if w in said], said

        assert can_evaluate(world) == (-6, "printsSealed")  # the password follows, as before
        session = world.pam("alice").wait()
        assert session.result == "PAM_AUTHINFO_UNAVAIL" and REFUSED_TEXT in session.messages(), session.transcript()
        assert PROMPT not in session.messages()
        # Keeping the keyring password again is refused with the same way out, not "try again later".
        kept = world.cli("keyring", "enable", as_user="alice", password=PASSWORDS["alice"])
        assert kept.returncode != 0, kept
        assert ("Keyring password not kept: this computer's TPM refuses the key it would be sealed with "
                "(touchgate doctor says what to do)") in kept.stderr, kept
        # Refused, and still asked again later (bound PCRs may come back): the key is never replaced.
        assert key.read_bytes() == sealed
        daemon.stop()

        # The way out: the key removed, the daemon started again, the finger enrolled again.
        key.unlink()
        world.start_daemon(config=configure(world, other))
        world.daemon.log.wait_for("prints are sealed to the TPM")
        assert status(world)["sealing"] == "sealed"
        rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
        assert rc == 0, cli.stderr
        session = world.pam("alice")
        session.wait_for(PROMPT)
        world.reader.scan(ALICE_PRINT)
        assert session.wait().result == "PAM_SUCCESS", session.transcript()


def test_an_owner_password_on_the_tpm_is_named_and_clearing_it_lets_prints_be_sealed(world):
    with SwTPM(world.dir) as tpm:
        owner = ["tpm2_changeauth", "-T", tpm.tcti, "-c", "owner"]
        subprocess.run(owner + ["owner-secret"], check=True, capture_output=True, timeout=harness.DEFAULT_WAIT)
        conf = configure(world, tpm, seal="auto")  # the default: a TPM is there, so prints must be sealed
        daemon = world.start_daemon(config=conf)
        doc = status(world)
        assert doc["sealing"] == "refused" and doc["sealingRefusal"] == "ownerPassword", doc
        assert doc["sealingDetail"].startswith(OWNER_REFUSED), doc
        assert "authorization failure" in doc["sealingDetail"], doc

        result, checks = doctor(world)
        assert result.returncode != 0, result
        [sealing] = checks["sealing"]
        assert sealing["status"] == "problem", sealing
        assert sealing["summary"] == "sealing cannot use this TPM: its owner hierarchy has a password"
        assert sealing["fix"] == ("clear the TPM's owner password, or set seal = no in touchgate.conf; passwords "
                                  "still work")

        # Nothing is enrolled meanwhile, nothing in the clear, no key made.
        assert enrollment_fails(world)
        assert not [p for p in world.prints.rglob("*") if p.is_file()]
        assert not (world.state / "sealed-key").exists()
        daemon.stop()

        # The way out: the owner password cleared, the next start seals.
        subprocess.run(owner + ["-p", "owner-secret"], check=True, capture_output=True,
                       timeout=harness.DEFAULT_WAIT)
        world.start_daemon(config=conf)
        world.daemon.log.wait_for("prints are sealed to the TPM")
        rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
        assert rc == 0, cli.stderr
        assert status(world)["sealing"] == "sealed"
