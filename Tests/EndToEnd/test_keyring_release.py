"""End to end, the login password kept sealed for the keyring (docs/spec.md §12), with a real swtpm
and Linux-PAM: released as PAM_AUTHTOK after a fingerprint match only to a root caller of a listed
service (a following pam_exec proves the token it received), void once the prints change, renewed
by the next password the stack verifies, refused without a TPM unless the administrator allows it,
and never written to a log."""

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import harness
import wire
from conftest import ALICE_PRINT
from harness import PASSWORDS, PROMPT, USERS
from swtpm import SwTPM
from test_hardening import status

PAM_DIR = harness.REPO / "pam"
PAM_EXEC = next(iter(sorted(Path("/").glob("lib/*/security/pam_exec.so"))), "pam_exec.so")
KEPT = "A fingerprint login now unlocks the keyring of alice."
VOID = "Keyring not unlocked: fingers changed since it was set up; type your password once"
CLOSED = "Keyring not unlocked: the sealed password cannot be opened now; type your password"
WANT_AUTHTOK = 0x20


def configure(world, tpm, extra=""):
    conf = world.dir / "touchgate.conf"
    conf.write_text("seal = %s\ntpm = %s\nkeyring_services = keyring-login\n%s"
                    % ("tpm" if tpm else "auto", tpm.tcti if tpm else "device:/nonexistent", extra))
    return conf


def token_check(world, password=PASSWORDS["alice"]):
    """A program for pam_exec's expose_authtok: succeeds only when PAM_AUTHTOK is `password`."""
    script = world.dir / ("authtok-is-%s" % password)
    script.write_text("#!%s\nimport sys\nsys.exit(0 if sys.stdin.buffer.read().rstrip(b'\\0\\n') == %r else 1)\n"
                      % (sys.executable, password.encode()))
    script.chmod(0o755)
    return script


def fingerprint_stack(world, name, password=PASSWORDS["alice"]):
    """The fingerprint line with authtok, then a module that needs the password: it asks for one
    unless PAM_AUTHTOK is already set, and succeeds only if that is `password`."""
    (world.pam_dir / name).write_text(
        "auth requisite %s socket=%s authtok\nauth required %s expose_authtok quiet %s\n"
        % (harness.PAM_MODULE, world.socket, PAM_EXEC, token_check(world, password)))
    return name


def password_stack(world):
    """A password login: a password module that sets PAM_AUTHTOK as pam_unix does (pam_exec asks
    for it and runs the check), then the report line with authtok."""
    (world.pam_dir / "keyring-password").write_text(
        "auth requisite %s expose_authtok quiet %s\nauth optional %s socket=%s report authtok\n"
        % (PAM_EXEC, token_check(world), harness.PAM_MODULE, world.socket))
    return "keyring-password"


def password_login(world):
    """A password login through the stack's password module and the report line with authtok."""
    session = world.pam("alice", service=password_stack(world))
    session.wait_for("Password")
    session.type(PASSWORDS["alice"] + "\n")
    assert session.wait().result == "PAM_SUCCESS", session.transcript()


def enroll_and_keep(world):
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, cli.stderr
    kept = world.cli("keyring", "enable", as_user="alice", password=PASSWORDS["alice"])
    assert kept.returncode == 0 and KEPT in kept.stdout, kept
    assert status(world)["keyring"] == "ready"


def fingerprint_login(world, service, scan=ALICE_PRINT):
    session = world.pam("alice", service=service)
    session.wait_for(PROMPT)
    world.reader.scan(scan)
    return session


def test_a_fingerprint_login_hands_the_sealed_password_to_the_next_module_of_a_listed_service(world):
    with SwTPM(world.dir) as tpm:
        daemon = world.start_daemon(config=configure(world, tpm))
        enroll_and_keep(world)
        keyring_file = world.state / "users" / "alice" / "keyring"
        assert PASSWORDS["alice"].encode() not in keyring_file.read_bytes()

        session = fingerprint_login(world, fingerprint_stack(world, "keyring-login")).wait()
        assert session.result == "PAM_SUCCESS", session.transcript()
        assert not any("Password" in m for m in session.messages()), session.transcript()

        # The same stack under a service not in keyring_services: the match counts, no password
        # is handed over, so the next module asks for one.
        session = fingerprint_login(world, fingerprint_stack(world, "not-listed"))
        session.wait_for("Password")
        session.type(PASSWORDS["alice"] + "\n")
        assert session.wait().result == "PAM_SUCCESS", session.transcript()
        daemon.log.wait_for("keyring password not released: the service is not in keyring_services")
        assert not [t for t in daemon.log.texts() if PASSWORDS["alice"] in t]


def test_a_client_run_by_the_user_never_gets_the_password(world):
    with SwTPM(world.dir) as tpm:
        daemon = world.start_daemon(config=configure(world, tpm))
        enroll_and_keep(world)
        # alice's own client asks for the password after her own match, for a listed service.
        code = open(wire.__file__).read() + (
            "\nimport socket\ns = socket.socket(socket.AF_UNIX)\ns.settimeout(%r)\ns.connect(%r)\n"
            "s.sendall(encode('evaluate', 9, user='alice', policy=1, service='keyring-login', flags=%d))\n"
            "while True:\n    k, _, f = read_frame(s)\n    print(json.dumps([k, f]), flush=True)\n"
            "    if k == RESULT: break\n" % (harness.DEFAULT_WAIT, str(world.socket), WANT_AUTHTOK))
        uid = USERS["alice"][0]
        child = subprocess.Popen([wire.SYSTEM_PYTHON, "-c", code], stdout=subprocess.PIPE,
                                 user=uid, group=uid, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"})
        frames = harness.LineLog("client")
        threading.Thread(target=harness._pump_lines, args=(lambda: child.stdout.read1(4096), frames),
                         daemon=True).start()
        try:
            i = frames.wait_for(re.compile(r'"progress": 1[,}]'))  # the prompt: the reader listens
            world.reader.scan(ALICE_PRINT)
            i = frames.wait_for("[%d," % wire.RESULT, start=i)
            fields = json.loads(frames.lines[i][1])[1]
            assert fields["code"] == 0 and "password" not in fields, fields
        finally:
            child.kill()
            child.wait(5)
        daemon.log.wait_for("keyring password not released: the caller is not root")


def test_an_enrollment_change_voids_it_and_the_next_password_login_renews_it(world):
    with SwTPM(world.dir) as tpm:
        # Fingerprints stay usable after the change here, so the void password is seen at a match.
        world.start_daemon(config=configure(world, tpm, "require_password_after_enrollment_change = no\n"))
        enroll_and_keep(world)
        rc, _ = harness.enroll(world, "alice", "alice-left-thumb", finger="left-thumb")  # by root: no password
        assert rc == 0
        assert status(world)["keyring"] == "void"

        stack = fingerprint_stack(world, "keyring-login")
        # A reader without identification matches the first finger in libfprint's order: the thumb.
        session = fingerprint_login(world, stack, scan="alice-left-thumb")
        session.wait_for("Password")  # no token: the next module asks
        assert VOID in session.messages(), session.transcript()
        session.type(PASSWORDS["alice"] + "\n")
        assert session.wait().result == "PAM_SUCCESS", session.transcript()
        assert status(world)["keyring"] == "void"  # pam_exec verified nothing for touchgate

        # A password login through the stack's password module and the report line renews it.
        password_login(world)
        world.daemon.log.wait_for("keyring password renewed")
        assert status(world)["keyring"] == "ready"
        session = fingerprint_login(world, stack, scan="alice-left-thumb").wait()
        assert session.result == "PAM_SUCCESS", session.transcript()
        assert VOID not in session.messages()


def test_a_sealed_file_that_may_not_be_trusted_is_unavailable_and_says_why(world):
    with SwTPM(world.dir) as tpm:
        world.start_daemon(config=configure(world, tpm))
        enroll_and_keep(world)
        keyring_file = world.state / "users" / "alice" / "keyring"
        keyring_file.chmod(0o646)  # writable by anyone: refused, never taken for "not set up"
        doc = status(world)
        assert doc["keyring"] == "unavailable" and str(keyring_file) in doc["keyringDetail"], doc
        doctor = world.cli("doctor", "--user", "alice", "--root", str(world.dir))
        assert doctor.returncode != 0, doctor
        assert "the sealed keyring password cannot be opened now: " in doctor.stdout, doctor.stdout

        session = fingerprint_login(world, fingerprint_stack(world, "keyring-login"))
        session.wait_for("Password")  # no token: the next module asks
        assert CLOSED in session.messages(), session.transcript()
        session.type(PASSWORDS["alice"] + "\n")
        assert session.wait().result == "PAM_SUCCESS", session.transcript()
        world.daemon.log.wait_for("keyring password cannot be opened")

        # A password login does not write over the file it refused: it says why instead.
        password_login(world)
        world.daemon.log.wait_for("keyring password not renewed")
        assert status(world)["keyring"] == "unavailable"


def test_without_a_tpm_it_is_refused_unless_the_administrator_allows_a_key_file(world):
    world.start_daemon(config=configure(world, None))
    rc, _ = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0
    refused = world.cli("keyring", "enable", as_user="alice", password=PASSWORDS["alice"])
    assert refused.returncode != 0, refused
    assert "Keyring password not kept: this computer cannot seal it (no TPM; ask the administrator)" in refused.stderr
    assert status(world)["keyring"] == "off"
    world.daemon.stop()

    world.start_daemon(config=configure(world, None, "keyring_without_tpm = yes\n"))
    kept = world.cli("keyring", "enable", as_user="alice", password=PASSWORDS["alice"])
    assert kept.returncode == 0, kept
    key = world.state / "keyring-key"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    doc = status(world)
    assert doc["keyring"] == "ready" and doc["keyringWithoutTPM"] is True, doc
    doctor = world.cli("doctor", "--user", "alice", "--root", str(world.dir))
    assert "login passwords for the keyring are kept without a TPM: a copy of the disk opens them" in doctor.stdout

    forgotten = world.cli("keyring", "disable", as_user="alice")
    assert forgotten.returncode == 0 and "forgotten" in forgotten.stdout, forgotten
    assert status(world)["keyring"] == "off"


def test_a_password_change_renews_it_and_the_daemon_keeps_no_core_file(world):
    with SwTPM(world.dir) as tpm:
        daemon = world.start_daemon(config=configure(world, tpm))
        limits = (Path("/proc") / str(daemon.proc.pid) / "limits").read_text()
        assert [l for l in limits.splitlines() if l.startswith("Max core file size")][0].split()[4:6] == ["0", "0"]
        enroll_and_keep(world)
        # passwd's stack: a password module that takes the new password and leaves it as
        # PAM_AUTHTOK, as pam_unix does (pam/tests/pam_probe.so), then touchgate's password line.
        subprocess.run(["make", "-s", "-C", str(PAM_DIR), "tests/pam_probe.so"], check=True, timeout=120)
        (world.pam_dir / "keyring-passwd").write_text(
            "password required %s\npassword optional %s socket=%s authtok\n"
            % (PAM_DIR / "tests" / "pam_probe.so", harness.PAM_MODULE, world.socket))
        change = harness.PamSession(world, "alice", "keyring-passwd", operations=("chauthtok",))
        world.sessions.append(change)
        change.wait_for("New password")
        change.type("alice-new-secret\n")
        change.wait_for("Retype new password")
        change.type("alice-new-secret\n")
        change.wait()
        assert change.returncode == 0, change.transcript()
        assert "pamtester: authentication token altered successfully." in change.out.texts(), change.transcript()
        daemon.log.wait_for("keyring password renewed")
        session = fingerprint_login(world, fingerprint_stack(world, "keyring-login", "alice-new-secret")).wait()
        assert session.result == "PAM_SUCCESS", session.transcript()
        assert not [t for t in daemon.log.texts() if "alice-new-secret" in t]
