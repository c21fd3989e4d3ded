"""End to end, prints sealed to the machine's TPM (a real swtpm): sealed on disk and matched after a
restart on each kind of reader; the same disk under another TPM opens no print and the password
still works; prints in the clear sealed at start without an enrollment change; the export back to
fprintd's format."""

import json
import os
import shutil
import signal
import stat
import subprocess

import pytest

import harness
from conftest import ALICE_PRINT
from harness import PASSWORDS, PROMPT
from swtpm import SilentTPM, SwTPM
from test_hardening import can_evaluate, status
from test_policy import stack_service

MAGIC = b"TGSP\x01"
REFUSED_TEXT = ("Fingerprint unavailable: this computer's TPM refuses the key the prints are sealed with "
                "(ask the administrator): use your password")


def configure(world, tpm, seal="tpm"):
    conf = world.dir / "touchgate.conf"
    conf.write_text("seal = %s\ntpm = %s\n" % (seal, tpm.tcti if tpm else "device:/nonexistent"))
    return conf


def print_files(world, user="alice"):
    """The user's print files, whatever the reader (driver and device id differ by kind)."""
    return sorted(p for p in world.prints.glob("%s/*/*/*" % user) if p.is_file())


def verify(world, scan=ALICE_PRINT):
    session = world.pam("alice")
    session.wait_for(PROMPT)
    world.reader.scan(scan)
    return session.wait()


def enroll_alice(world):
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, "enroll failed: %s\n%s" % (cli.stderr, cli.out.dump())


@pytest.mark.usefixtures("reader_kind")
def test_a_print_enrolled_with_a_tpm_is_sealed_on_disk_and_opens_after_a_restart(world):
    """Sealed on disk, matched; after a restart the key is unsealed from its blob again and the file
    opens: matched again where the reader keeps its prints over a restart, and, on the chip (whose
    prints libfprint's virtual driver keeps in the daemon's memory), not listed as sealed."""
    with SwTPM(world.dir) as tpm:
        conf = configure(world, tpm)
        daemon = world.start_daemon(config=conf)
        enroll_alice(world)
        [path] = print_files(world)
        sealed = path.read_bytes()
        assert sealed.startswith(MAGIC), sealed[:8]
        # Nothing of libfprint's serialized print shows: its header, the user it names, the scan.
        assert b"FP3" not in sealed and b"alice" not in sealed and ALICE_PRINT.encode() not in sealed
        key = world.state / "sealed-key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert verify(world).result == "PAM_SUCCESS"
        assert status(world)["sealing"] == "sealed"

        daemon.stop()
        daemon = world.start_daemon(config=conf)
        daemon.log.wait_for("prints are sealed to the TPM (0 sealed now)")
        assert path.read_bytes() == sealed
        if world.reader_kind == "virtual_device_storage":
            # libfprint's virtual chip keeps its prints in the daemon's memory: after a restart it
            # holds none, so the file opens (no sealing problem) but names a print the chip lost.
            assert status(world)["sealedFingers"] == []
        else:
            assert verify(world).result == "PAM_SUCCESS"  # the key unsealed again from its blob


def test_the_same_disk_under_another_tpm_opens_no_print_and_the_password_still_works(world):
    with SwTPM(world.dir) as home:
        world.start_daemon(config=configure(world, home))
        enroll_alice(world)
        world.daemon.stop()
        [path] = print_files(world)
        sealed = path.read_bytes()

        with SwTPM(world.dir) as other:
            daemon = world.start_daemon(config=configure(world, other))
            assert can_evaluate(world) == (-6, "printsSealed")
            # doctor names the TPM as the cause, not the reader it finds working.
            doctor = world.cli("doctor", "--user", "alice", "--root", str(world.dir))
            assert "fingerprint refused: the prints are sealed under a key this computer's TPM refuses" in \
                doctor.stdout, doctor
            doc = status(world)  # refused for good: test_sealing_refused.py follows the way out
            assert doc["sealing"] == "refused" and "refused" in doc["sealingDetail"], doc
            assert doc["sealedFingers"] == ["right-index-finger"] and doc["damagedFingers"] == [], doc
            assert doc["fingers"] == ["right-index-finger"]  # still enrolled: nothing is lost
            session = world.pam("alice").wait()
            assert session.result == "PAM_AUTHINFO_UNAVAIL"
            assert REFUSED_TEXT in session.messages(), session.transcript()
            assert PROMPT not in session.messages()
            # The password is not sealed: the stack's password module follows and succeeds.
            session = world.pam("alice", service=stack_service(world))
            session.wait_for("Password")
            assert REFUSED_TEXT in session.messages(), session.transcript()
            session.type(PASSWORDS["alice"] + "\n")
            assert session.wait().result == "PAM_SUCCESS", session.transcript()
            # And nothing in the clear was written in its place.
            assert path.read_bytes() == sealed
            assert "alice's right-index-finger print is not used: it is sealed, and the TPM no longer opens" in \
                "\n".join(daemon.log.texts())
            # tpm2-tss's own warnings are silenced: the daemon says what failed in its words.
            assert not [t for t in daemon.log.texts() if t.startswith(("WARNING:", "ERROR:"))]
            daemon.stop()

        # Back home, the same print matches, and it was no enrollment change.
        world.start_daemon(config=configure(world, home))
        assert can_evaluate(world)[0] == 0
        assert verify(world).result == "PAM_SUCCESS"


def test_enrolling_while_the_tpm_refuses_the_key_is_refused_before_any_scan(world):
    """The prints must be sealed and this TPM refuses the key (another machine's, as a cleared TPM
    would): no finger is asked for, as no print could be written, and the way out is elsewhere."""
    with SwTPM(world.dir) as home:
        world.start_daemon(config=configure(world, home))
        enroll_alice(world)
        world.daemon.stop()
    [path] = print_files(world)
    with SwTPM(world.dir) as other:
        world.start_daemon(config=configure(world, other))
        cli = harness.CliProcess(world, "enroll", "--user", "alice", "--finger", "left-thumb")
        assert cli.wait() == 1, cli.out.dump()
        assert cli.out.lines == [], cli.out.dump()  # no prompt, no stage
        assert ("Enrolling is not possible: this computer's TPM refuses the key prints are sealed with "
                "(touchgate doctor says what to do)") in cli.stderr, cli.stderr
        assert print_files(world) == [path]
        world.daemon.log.wait_for("enroll refused: the print would have to be sealed, and the TPM no longer opens")


def test_prints_in_the_clear_are_sealed_at_start_without_an_enrollment_change(world):
    world.start_daemon(config=configure(world, None, seal="no"))
    enroll_alice(world)
    assert status(world)["sealing"] == "clear"
    [path] = print_files(world)
    clear = path.read_bytes()
    assert not clear.startswith(MAGIC)
    world.daemon.stop()

    with SwTPM(world.dir) as tpm:
        daemon = world.start_daemon(config=configure(world, tpm, seal="auto"))
        daemon.log.wait_for("prints are sealed to the TPM (1 sealed now)")
        assert path.read_bytes().startswith(MAGIC)
        assert can_evaluate(world)[0] == 0  # the same prints: no password asked for
        assert verify(world).result == "PAM_SUCCESS"


def test_a_status_longer_than_one_field_comes_whole(world):
    """Ten fingers sealed with the TPM away: the status document outgrows one string field (1024
    bytes) and comes in pieces, joined by the CLI, where it used to come without a document."""
    with SwTPM(world.dir) as tpm:
        world.start_daemon(config=configure(world, tpm))
        enroll_alice(world)
        world.daemon.stop()
    [path] = print_files(world)
    for finger in range(1, 11):
        if finger != 7:
            shutil.copy2(path, path.with_name("%x" % finger))  # fprintd names them in hex
    away = world.dir / "touchgate.conf"  # a TPM named by a long path, which the detail names twice
    away.write_text("seal = tpm\ntpm = device:/nonexistent/%s\n" % "/".join(["tpm"] * 40))
    world.start_daemon(config=away)
    shown = world.cli("status", "--user", "alice", "--json")
    assert shown.returncode == 0, shown
    doc = json.loads(shown.stdout)
    assert len(doc["sealedFingers"]) == 10 and len(shown.stdout) > 1024, shown.stdout
    assert status(world)["sealedFingers"] == doc["sealedFingers"]  # the wire's own client joins them too


def test_auto_without_a_tpm_keeps_prints_in_the_clear_and_doctor_says_so(world):
    world.start_daemon(config=configure(world, None, seal="auto"))
    enroll_alice(world)
    [path] = print_files(world)
    assert not path.read_bytes().startswith(MAGIC)
    assert not (world.state / "sealed-key").exists()
    doc = status(world)
    assert doc["sealing"] == "clear" and doc["sealingDetail"].startswith("no TPM is present ("), doc
    doctor = world.cli("doctor", "--user", "alice", "--root", str(world.dir))
    assert "enrolled prints are not sealed: no TPM is present" in doctor.stdout, doctor


def test_the_export_writes_the_prints_back_in_fprintds_format(world):
    with SwTPM(world.dir) as tpm:
        conf = configure(world, tpm)
        world.start_daemon(config=conf)
        enroll_alice(world)
        world.daemon.stop()
        [path] = print_files(world)
        # While the daemon runs, the export is refused: both would rewrite the same files.
        daemon = world.start_daemon(config=conf)
        # Its TPM conversation at start is over before it is stopped: swtpm has no resource
        # manager to flush what a process killed mid-conversation left loaded (/dev/tpmrm0 has).
        daemon.log.wait_for("prints are sealed to the TPM")
        busy = world.cli("prints", "export", "--state-dir", world.state, "--print-store", world.prints,
                         "--config", conf)
        assert busy.returncode != 0 and "touchgated is running: stop it first" in busy.stderr, busy
        world.daemon.stop()
        done = world.cli("prints", "export", "--state-dir", world.state, "--print-store", world.prints,
                         "--config", conf)
        assert done.returncode == 0, done
        assert "1 sealed print written back in the clear in %s" % world.prints in done.stdout
        clear = path.read_bytes()
        assert not clear.startswith(MAGIC) and ALICE_PRINT.encode() in clear
        assert clear.startswith(b"FP3") and b"alice" in clear  # what the sealed file must not show
        # A daemon started after the export (a D-Bus client, while the package is removed) would
        # seal the print again; it refuses to start instead, and says how to go on.
        mark = world.state / "prints-exported"
        refused = harness.run_daemon_once(world, conf)
        assert refused.returncode == 1, refused
        assert "remove %s to use touchgate with sealing, or set seal = no" % mark in refused.stderr, refused
        assert path.read_bytes() == clear

    # Sealing off, as before going back to fprintd: the print is used as it is.
    daemon = world.start_daemon(config=configure(world, None, seal="no"))
    assert verify(world).result == "PAM_SUCCESS"
    daemon.log.wait_for("prints stay in the clear (seal = no): removed %s" % mark)
    assert not mark.exists()


def test_one_process_at_a_time_holds_the_state_a_second_daemon_and_an_export_are_refused(world):
    conf = configure(world, None, seal="no")
    daemon = world.start_daemon(config=conf)
    second = harness.run_daemon_once(world, conf)
    assert second.returncode == 1, second
    assert "touchgated is running (it holds %s): stop it first" % world.state in second.stderr, second
    # A daemon that does not answer (stopped here) still runs: the export does not go ahead.
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        busy = world.cli("prints", "export", "--state-dir", world.state, "--print-store", world.prints,
                         "--config", conf)
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
    assert busy.returncode == 1 and "touchgated is running (it holds" in busy.stderr, busy
    assert not (world.state / "prints-exported").exists()
    # The purge that follows a removal whose export could not run still learns where prints may
    # be sealed, and keeps their key (debian/touchgate.postrm).
    assert (world.state / "prints-left-sealed").read_text() == "%s\n" % world.prints
    assert can_evaluate(world) == (-7, "noPrints")  # and the daemon still answers


def export(world, conf, *extra):
    return subprocess.run(
        [str(harness.TOUCHGATED), "--export-prints", "--state-dir", str(world.state), "--print-store",
         str(world.prints), "--config", str(conf), *extra],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=harness.DEFAULT_WAIT)


def test_the_export_goes_on_past_a_broken_line_and_needs_no_boot_identity(world):
    """The package's removal exports, then purge deletes the key: a configuration the daemon
    refuses (a typo) or a chroot without /proc must not cost the prints."""
    with SwTPM(world.dir) as tpm:
        conf = configure(world, tpm)
        world.start_daemon(config=conf)
        enroll_alice(world)
        world.daemon.stop()
        with open(conf, "a") as f:
            f.write("max_tries = lots\n")
        done = export(world, conf, "--boot-id-file", "/nonexistent")
        assert done.returncode == 0, done
        assert "%s: line 3: max_tries" % conf in done.stderr and "line left out" in done.stderr, done
        assert "1 sealed print written back in the clear" in done.stdout, done
        [path] = print_files(world)
        assert not path.read_bytes().startswith(MAGIC)


def test_an_export_that_leaves_prints_sealed_records_where_for_the_purge(world):
    """Purge runs after touchgate.conf, which names the print store, is gone: it learns from the
    export where prints stayed sealed, and keeps their key (debian/touchgate.postrm)."""
    record = world.state / "prints-left-sealed"
    with SwTPM(world.dir) as tpm:
        conf = configure(world, tpm)
        world.start_daemon(config=conf)
        enroll_alice(world)
        world.daemon.stop()
        away = export(world, configure(world, None))
        assert away.returncode == 1 and "1 print stayed sealed" in away.stderr, away
        assert record.read_text() == "%s\n" % world.prints
        assert (record.stat().st_mode & 0o777) == 0o600
        done = export(world, configure(world, tpm))
        assert done.returncode == 0 and "1 sealed print written back" in done.stdout, done
        assert not record.exists()


def test_the_export_makes_no_print_store_where_there_is_none(world):
    world.state.mkdir(mode=0o700)
    done = export(world, configure(world, None))
    assert done.returncode == 0, done
    assert "no print store at %s: nothing to export" % world.prints in done.stdout, done
    assert not world.prints.exists()
    assert not (world.state / "prints-left-sealed").exists()


def test_ctrl_c_ends_an_export_that_waits_on_a_tpm_that_does_not_answer(world):
    with SwTPM(world.dir) as tpm:
        world.start_daemon(config=configure(world, tpm))
        enroll_alice(world)
        world.daemon.stop()
    # The TPM hangs: each call would wait its 10 s; the person at the terminal need not.
    with SilentTPM() as silent:
        export = subprocess.Popen(
            [str(harness.TOUCHGATED), "--export-prints", "--state-dir", str(world.state),
             "--print-store", str(world.prints), "--config", str(configure(world, silent))],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            silent.wait_for_connection()
            export.send_signal(signal.SIGINT)
            export.wait(harness.DEFAULT_WAIT)
        finally:
            export.kill()
            out, err = export.communicate()
        assert export.returncode == -signal.SIGINT, (export.returncode, out, err)
    [path] = print_files(world)
    assert path.read_bytes().startswith(MAGIC)
    assert (world.state / "prints-left-sealed").read_text() == "%s\n" % world.prints
