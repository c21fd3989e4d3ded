"""`touchgate doctor` end to end: the real CLI against the real daemon on the virtual reader, and a
fixture root (--root) holding the PAM services and the config the package installs."""

import json
import os
import re
import unicodedata
from pathlib import Path

import pytest

import harness
import wire

# Debian 12's common-auth as pam-auth-update writes it with touchgate's two profiles enabled.
COMMON_AUTH = """\
auth\t[success=2 default=ignore]\tpam_touchgate.so
auth\t[success=1 default=ignore]\tpam_unix.so nullok try_first_pass
auth\trequisite\t\t\tpam_deny.so
auth\trequired\t\t\tpam_permit.so
auth\toptional\tpam_touchgate.so report
"""
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(world):
    """A root with the packaged PAM files and touchgate.conf, as after `pam-auth-update --enable touchgate`."""
    r = world.dir / "root"
    pam = r / "etc" / "pam.d"
    pam.mkdir(parents=True)
    (pam / "common-auth").write_text(COMMON_AUTH)
    (pam / "login").write_text("auth requisite pam_nologin.so\n@include common-auth\n")
    (pam / "sudo").write_text("@include common-auth\n")
    (pam / "touchgate").write_text((REPO / "debian" / "touchgate.pam").read_text())
    (r / "etc" / "touchgate").mkdir()
    (r / "etc" / "touchgate" / "touchgate.conf").write_text((REPO / "debian" / "touchgate.conf").read_text())
    return r


def doctor(world, root, user="alice", json_out=True):
    args = ["doctor", "--root", root, "--user", user] + (["--json"] if json_out else [])
    result = world.cli(*args)
    return result, (json.loads(result.stdout) if json_out else None)


def statuses(report):
    return {c["check"]: c["status"] for c in report["checks"] if c["status"] != "note"}


def test_doctor_finds_nothing_wrong_with_a_packaged_setup(world, root, alice):
    result, report = doctor(world, root)
    assert result.returncode == 0, result
    assert report["ok"] is True and report["problems"] == 0
    assert statuses(report) == {"config": "ok", "daemon": "ok", "reader": "ok", "pam": "ok", "password": "ok",
                                "faillock": "ok", "user": "ok"}
    pam = next(c for c in report["checks"] if c["check"] == "pam")
    assert pam["summary"] == "fingerprint offered by: login, sudo (through common-auth)"
    text, _ = doctor(world, root, json_out=False)
    assert text.returncode == 0 and text.stdout.splitlines()[-1] == "All is well.", text


def test_doctor_names_the_bad_line_of_the_config(world, root, daemon):
    conf = root / "etc" / "touchgate" / "touchgate.conf"
    conf.write_text(conf.read_text() + "lockout_threshold = 0\n")
    line = conf.read_text().count("\n")
    result, report = doctor(world, root)
    assert result.returncode == 1
    config = next(c for c in report["checks"] if c["check"] == "config")
    assert config["status"] == "problem"
    assert config["summary"].startswith("%s:%d: lockout_threshold" % (conf, line)), config
    assert "check-config" in config["fix"]


def test_doctor_says_the_daemon_is_not_running_and_checks_what_it_can(world, root):
    result, report = doctor(world, root)
    assert result.returncode == 1
    s = statuses(report)
    assert s["daemon"] == "problem" and s["reader"] == "skipped" and s["user"] == "skipped"
    assert s["pam"] == "ok" and s["password"] == "ok" and s["config"] == "ok"
    daemon = next(c for c in report["checks"] if c["check"] == "daemon")
    assert daemon["fix"].startswith("systemctl start touchgated.socket")


def test_doctor_tells_a_user_without_prints_to_enroll(world, root, daemon):
    result, report = doctor(world, root, user="bob")
    assert result.returncode == 1
    user = next(c for c in report["checks"] if c["check"] == "user")
    assert user == {"check": "user", "status": "problem", "summary": "bob has no enrolled fingerprint",
                    "fix": "touchgate enroll (as bob), or: touchgate enroll --user bob"}
    text, _ = doctor(world, root, user="bob", json_out=False)
    assert text.stdout.splitlines()[-1] == "1 problem."


def columns(text):
    """Terminal columns: two for a wide (Chinese) character."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def test_doctor_in_chinese_keeps_each_fix_under_its_summary(world, root, daemon):
    """问题 and 正常 take two columns each: the summaries and the fix: lines still line up."""
    text = world.cli("doctor", "--root", root, "--user", "bob", env={"LANG": "zh_CN.UTF-8"})
    lines = text.stdout.splitlines()
    fixes = [i for i, line in enumerate(lines) if line.lstrip().startswith("修复")]
    assert text.returncode == 1 and fixes, text
    for i in fixes:
        status_and_check = re.match(r"\S+ +\S+ +", lines[i - 1]).group(0)  # then the summary
        indent = len(lines[i]) - len(lines[i].lstrip(" "))
        assert indent == columns(status_and_check), lines[i - 1:i + 1]


def test_doctor_says_in_words_why_a_password_is_required_first(world, root):
    """After a new boot, the user's fingerprint waits for a password: said as a sentence in the
    caller's language, not as the daemon's reason code."""
    boot = world.dir / "boot_id"
    boot.write_text("boot-one\n")
    world.daemon = harness.Daemon(world, args=("--boot-id-file", str(boot))).wait_ready()
    assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0
    world.daemon.stop()
    boot.write_text("boot-two\n")
    world.daemon = harness.Daemon(world, args=("--boot-id-file", str(boot))).wait_ready()
    _, report = doctor(world, root)
    user = [c for c in report["checks"] if c["check"] == "user" and c["status"] == "note"]
    assert [c["summary"] for c in user] == [
        "fingerprint refused for now: a password is required first: once after the computer starts"], user
    text = world.cli("doctor", "--root", root, "--user", "alice", env={"LANG": "zh_CN.UTF-8"})
    assert "需要先输入密码：开机后需输入一次" in text.stdout, text


def test_doctor_finds_a_password_service_that_would_ask_the_daemon_for_a_finger(world, root, alice):
    (root / "etc" / "pam.d" / "touchgate").write_text("@include common-auth\n")
    result, report = doctor(world, root)
    assert result.returncode == 1
    [problem] = [c for c in report["checks"] if c["status"] == "problem"]
    assert problem["check"] == "password"
    assert "reaches pam_touchgate.so (common-auth:1, common-auth:5)" in problem["summary"], problem


def test_doctor_without_the_profile_says_how_to_enable_it(world, root, alice):
    (root / "etc" / "pam.d" / "common-auth").write_text(
        "auth [success=1 default=ignore] pam_unix.so nullok\nauth requisite pam_deny.so\nauth required pam_permit.so\n")
    result, report = doctor(world, root)
    assert result.returncode == 1
    [problem] = [c for c in report["checks"] if c["status"] == "problem"]
    assert problem == {"check": "pam", "status": "problem", "summary": "no PAM service offers the fingerprint",
                       "fix": "pam-auth-update --enable touchgate"}


def test_doctor_without_the_profile_says_so_beside_a_service_linux_pam_cannot_start(world, root, alice):
    """A broken service that never named pam_touchgate.so is said, and the fingerprint is still
    missing from common-auth."""
    (root / "etc" / "pam.d" / "common-auth").write_text(
        "auth [success=1 default=ignore] pam_unix.so nullok\nauth requisite pam_deny.so\nauth required pam_permit.so\n")
    (root / "etc" / "pam.d" / "chfn").write_text("auth required pam_rootok.so \\\n")
    result, report = doctor(world, root)
    problems = [c for c in report["checks"] if c["status"] == "problem"]
    assert problems == [
        {"check": "pam", "status": "problem", "summary": "no PAM service offers the fingerprint",
         "fix": "pam-auth-update --enable touchgate"},
        {"check": "pam chfn", "status": "problem",
         "summary": "Linux-PAM cannot start this service, every authentication through it fails: "
                    "chfn:1: the file ends in a '\\' continuation: Linux-PAM fails the file",
         "fix": "correct the line"}], problems


def test_doctor_notes_a_password_module_that_needs_the_network_the_unit_closes(world, root, alice):
    (root / "etc" / "pam.d" / "touchgate").write_text(
        "auth [success=2 default=ignore] pam_krb5.so minimum_uid=1000\n"
        "auth [success=1 default=ignore] pam_unix.so nullok try_first_pass\n"
        "auth requisite pam_deny.so\nauth required pam_permit.so\n")
    result, report = doctor(world, root)
    notes = [c for c in report["checks"] if c["check"] == "password" and c["status"] == "note"]
    assert [n["summary"] for n in notes] == [
        "service 'touchgate' uses pam_krb5.so, which reach their servers over the network; "
        "the daemon's unit opens none"], report
    assert "IPAddressAllow=" in notes[0]["fix"], notes


def test_doctor_says_why_prints_that_cannot_be_trusted_are_not_used(world, root, alice):
    os.chmod(world.prints / "alice", 0o777)  # a user directory others may write
    world.daemon.stop()
    world.start_daemon()
    result, report = doctor(world, root)
    assert result.returncode == 1
    [user] = [c for c in report["checks"] if c["check"] == "user"]
    assert user["status"] == "problem" and "the prints cannot be used" in user["summary"], user
    assert "enroll" not in user["fix"], user


def test_doctor_tells_to_enroll_again_when_every_print_is_damaged(world, root, alice):
    [path] = list(world.prints.glob("alice/*/*/*"))
    path.write_bytes(b"\x00\x01garbage")
    world.daemon.stop()
    world.start_daemon()
    # A changed print is a changed set of prints: a password success first.
    assert wire.request(world.socket, "password_success", user="alice", service="login")[0]["code"] == 0
    result, report = doctor(world, root)
    assert result.returncode == 1
    damaged = [c for c in report["checks"] if c["check"] == "user" and c["status"] == "problem"]
    assert [c["fix"] for c in damaged] == [
        "enroll them again: touchgate enroll --user alice --finger right-index-finger"], report


def test_doctor_names_a_service_whose_fingerprint_line_linux_pam_rejects(world, root, alice):
    """A typo in the type keeps the line in place, failing: the service is named, and the fix is
    the line, not a second fingerprint line through pam-auth-update."""
    (root / "etc" / "pam.d" / "common-auth").write_text(COMMON_AUTH.replace("auth\t[success=2", "auht\t[success=2"))
    result, report = doctor(world, root)
    assert result.returncode == 1
    problems = [c for c in report["checks"] if c["status"] == "problem"]
    assert problems[0] == {"check": "pam", "status": "problem", "summary": "no PAM service offers the fingerprint",
                           "fix": "correct the PAM lines named below"}, problems
    assert {"check": "pam login", "status": "problem",
            "summary": "common-auth:1: unknown type 'auht': Linux-PAM fails this line",
            "fix": "correct the line"} in problems, problems


def test_doctor_finds_a_password_service_without_auth_lines_running_others(world, root, alice):
    """Linux-PAM falls back to `other` per type: a touchgate file without auth lines runs other's."""
    (root / "etc" / "pam.d" / "other").write_text("@include common-auth\n")
    (root / "etc" / "pam.d" / "touchgate").write_text("account required pam_deny.so\n")
    result, report = doctor(world, root)
    assert result.returncode == 1
    summaries = [c["summary"] for c in report["checks"] if c["check"] == "password"]
    assert summaries[:2] == [
        "service 'touchgate' has no auth line: Linux-PAM runs those of 'other'",
        "service 'touchgate' reaches pam_touchgate.so (common-auth:1, common-auth:5): "
        "the daemon would ask itself for a finger"], summaries


def test_doctor_reads_nothing_outside_its_root(world, root, alice):
    """Symlinks and `..` resolve inside --root, as for a process chrooted there: a file of the
    host is neither judged nor printed."""
    host = world.dir / "host-secret"
    host.write_text("secret-line-of-the-host\n")
    pam = root / "etc" / "pam.d"
    (pam / "su").symlink_to(host)
    (pam / "login").write_text(f"@include ../../../../../../../..{host}\n@include common-auth\n")
    conf = root / "etc" / "touchgate" / "touchgate.conf"
    conf.unlink()
    conf.symlink_to(host)
    result, _ = doctor(world, root, json_out=False)
    assert "secret-line" not in result.stdout + result.stderr, result
    assert "pam login  Linux-PAM cannot start this service" in result.stdout, result.stdout
