"""End to end, the touchgate CLI against touchgated on libfprint's virtual reader: what it lists and
enrolls, its refusals and their one line, its output when it cannot be written, its usage errors,
its language, and its waits. A fresh temp dir and daemon per test."""

import json
import glob
import os
import re
import subprocess

import pytest

import harness
import terminal
import wire

# Each test that uses the reader runs on each of libfprint's three kinds of reader (readers.py).
pytestmark = pytest.mark.usefixtures("reader_kind")


def test_enrolled_finger_is_listed(world, daemon):
    seen = []
    rc, cli = harness.enroll(world, "alice", "alice-left-thumb", finger="left-thumb", as_user="alice",
                             on_event=lambda kind, text: seen.append((kind, text)))
    assert rc == 0, cli.stderr
    assert [k for k, _ in seen].count("scan") == world.reader.enroll_scans
    assert cli.stderr == ""

    for who in (None, "alice"):  # root, and alice herself
        listed = world.cli("list", "--user", "alice", as_user=who)
        assert listed.returncode == 0, listed
        assert listed.stdout.splitlines() == ["left-thumb"]

    others = world.cli("list", "--user", "bob")
    assert others.returncode == 0, others
    assert "left-thumb" not in others.stdout


def test_enroll_with_a_wrong_password_is_refused(world, daemon):
    result = world.cli("enroll", "--user", "alice", as_user="alice", password="not-her-password")
    assert result.returncode != 0
    assert len(result.stderr.splitlines()) == 1 and "Wrong password" in result.stderr, result
    status = json.loads(world.cli("status", "--user", "alice", "--json").stdout)
    assert status["wrongPasswords"] == 1, status
    listed = world.cli("list", "--user", "alice")
    assert listed.returncode == 0 and "right-index-finger" not in listed.stdout, listed


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
def test_a_password_the_password_service_accepts_is_accepted_whatever_the_local_shadow_says(reader_kind, world):
    """An LDAP account's shadow entry as nslcd serves it, or a Kerberos account's with no local
    password, says '*': no local hash. Its password is for the password service to judge (here
    pam_matrix, which knows it), not the shadow entry; a wrong one still counts."""
    shadow = world.dir / "shadow"
    shadow.write_text("alice:*:19000:0:99999:7:::\n")
    # nss_wrapper serves getspnam() but neither getspnam_r() nor glibc's own shadow look-ups: the
    # daemon gets the file as /etc/shadow, in a mount namespace of its own.
    world.start_daemon(prefix=["unshare", "--mount", "--propagation", "private",
                               "sh", "-c", 'mount --bind "$0" /etc/shadow && exec "$@"', str(shadow)])
    enabled = world.cli("enable", "--user", "alice", as_user="alice", password=harness.PASSWORDS["alice"])
    assert enabled.returncode == 0, enabled
    wrong = world.cli("enable", "--user", "alice", as_user="alice", password="not-her-password")
    assert wrong.returncode != 0 and "Wrong password" in wrong.stderr, wrong
    status = json.loads(world.cli("status", "--user", "alice", "--json").stdout)
    assert status["wrongPasswords"] == 1, status


def test_output_that_cannot_be_written_fails_the_command(world, alice):
    """A status redirected to a full disk is lost: exit 1 and the reason, never a silent 0."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([str(harness.TOUCHGATE), "status", "--user", "alice", "--json"], stdout=full,
                           stderr=subprocess.PIPE, text=True, env=harness.cli_env(world), timeout=harness.DEFAULT_WAIT)
    assert p.returncode == 1, p
    assert p.stderr == "touchgate: cannot write the output: No space left on device\n", p.stderr


@pytest.mark.parametrize("output", ["a full disk", "a closed pipe"])
def test_a_monitor_whose_output_cannot_be_written_ends_and_says_so(world, alice, output):
    """Into a full disk, or a pipe whose reader went (`monitor | head -1`): exit 1 and the reason,
    not a death by SIGPIPE."""
    if output == "a full disk":
        with open("/dev/full", "w") as full:
            mon = subprocess.Popen([str(harness.TOUCHGATE), "monitor"], stdout=full, stderr=subprocess.PIPE,
                                   text=True, env=harness.cli_env(world))
        reason = "No space left on device"
    else:
        read_end, write_end = os.pipe()
        os.close(read_end)
        mon = subprocess.Popen([str(harness.TOUCHGATE), "monitor"], stdout=write_end, stderr=subprocess.PIPE,
                               text=True, env=harness.cli_env(world))
        os.close(write_end)
        reason = "Broken pipe"
    deadline = harness.now() + harness.DEFAULT_WAIT
    while True:
        # A refused remote evaluate is an event: the first one after the subscription ends it.
        wire.request(world.socket, "evaluate", user="alice", policy=1, service="probe", rhost="probe-host")
        try:
            mon.wait(0.2)
            break
        except subprocess.TimeoutExpired:
            assert harness.now() < deadline, "the monitor went on writing into a full disk"
    assert mon.returncode == 1
    assert mon.stderr.read() == "touchgate: cannot write the output: %s\n" % reason


def test_an_empty_socket_path_is_a_usage_error_not_a_path_too_long(world, daemon):
    result = world.cli("--socket", "", "devices")
    assert result.returncode == 64, result
    assert result.stderr.startswith("Error: --socket needs a path\n"), result


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
@pytest.mark.parametrize("args, usage", [([], "touchgate [--socket <path>] <subcommand>"),
                                         (["keyring"], "touchgate keyring <subcommand>"),
                                         (["prints"], "touchgate prints <subcommand>"),
                                         # The empty value takes `disable` as the socket's path.
                                         (["--socket=", "disable"], "touchgate [--socket <path>] <subcommand>")])
def test_a_command_without_its_subcommand_is_a_usage_error(reader_kind, world, daemon, alice, args, usage):
    """A script's `touchgate --socket="$S" disable` with $S empty does nothing: it must not succeed,
    nor print help where the script reads its output."""
    result = world.cli(*args)
    assert (result.returncode, result.stdout) == (64, ""), result
    assert result.stderr.startswith("Error: Missing a subcommand"), result
    assert "USAGE: %s\n" % usage in result.stderr, result
    assert json.loads(world.cli("status", "--user", "alice", "--json").stdout)["enabled"] is True


def test_an_empty_password_is_refused_by_the_cli_and_costs_no_try(world, alice):
    for _ in range(5):  # five wrong passwords would back off
        result = world.cli("enable", "--user", "alice", as_user="alice", password="")
        assert (result.returncode, result.stderr) == (1, "touchgate: no password given\n"), result
    status = json.loads(world.cli("status", "--user", "alice", "--json").stdout)
    assert status["wrongPasswords"] == 0, status


def test_another_user_may_not_list(world, alice):
    result = world.cli("list", "--user", "alice", as_user="bob")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "touchgate: Not permitted\n"), result


def test_delete_all_says_what_it_deleted_and_when_there_was_nothing(world, alice):
    """`delete --all` after the last finger went says there was none, not that it deleted them."""
    gone = world.cli("delete", "--user", "alice", "--all")
    assert gone.returncode == 0 and gone.stdout == "Deleted all fingers for alice.\n", gone
    again = world.cli("delete", "--user", "alice", "--all")
    assert again.returncode == 0 and again.stdout == "No fingers enrolled for alice.\n", again
    assert again.stderr == "", again


def test_devices_lists_the_virtual_reader(world, daemon):
    result = world.cli("devices")
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == ["%s (%s)" % (world.reader.name, world.reader_kind)]


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
def test_roots_monitor_of_an_unknown_account_is_refused_as_every_command_is(reader_kind, world, daemon):
    """Not a silent wait for events that can never come."""
    result = world.cli("monitor", "--user", "nosuch", timeout=harness.DEFAULT_WAIT)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "touchgate: No such user: nosuch\n"), result


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
@pytest.mark.parametrize("command", [["list"], ["verify"], ["enroll"], ["delete", "--all"]])
def test_a_reader_name_that_matches_no_reader_is_said_as_such(reader_kind, world, alice, command):
    """Not the sentence a login shows when there is no reader at all: the name typed matched none."""
    result = world.cli(*command, "--user", "alice", "--device", "typo")
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr == "touchgate: No reader named 'typo' (touchgate devices lists them)\n", result
    assert world.cli("list", "--user", "alice").stdout.split() == ["right-index-finger"]


def test_cli_without_daemon_fails_with_one_line(world):
    result = world.cli("devices", "--socket", "/nonexistent")
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result
    assert "/nonexistent" in lines[0]


def test_the_cli_speaks_the_callers_language(world, alice):
    zh = {"LANG": "zh_CN.UTF-8"}
    # Its own words (the daemon is not reached)...
    unreachable = world.cli("--socket", world.dir / "nowhere.sock", "devices", env=zh)
    assert unreachable.returncode == 1 and unreachable.stderr.startswith("touchgate: 无法连接 touchgated"), unreachable
    assert unreachable.stderr.rstrip().endswith("：没有那个文件或目录"), unreachable  # the C library's words too
    # ...and the daemon's, which it asks for in the caller's language.
    refused = world.cli("list", "--user", "bob", as_user="alice", env=zh)
    assert refused.returncode == 1 and refused.stderr.strip() == "touchgate: 无权执行此操作", refused
    # A language without a catalog (a traditional-script one too) gets English, not the wrong script.
    for lang in ("xx_YY.UTF-8", "zh_TW.UTF-8"):
        other = world.cli("list", "--user", "bob", as_user="alice", env={"LANG": lang})
        assert other.stderr.strip() == "touchgate: Not permitted", (lang, other)


def test_language_chooses_as_gettext_lets_it_for_the_cli_and_the_daemon_alike(world):
    """LANGUAGE's list chooses the CLI's own words ahead of LANG, as gettext lets it; the request
    asks the daemon for that same language, so one line is never half in each. The daemon's own
    LANGUAGE (one started from a shell) chooses nothing for its clients."""
    world.start_daemon(prefix=["env", "LANGUAGE=en"])
    for env, unreachable, refused in [
        ({"LANG": "zh_CN.UTF-8", "LANGUAGE": "en"}, "touchgate: cannot reach touchgated", "touchgate: Not permitted"),
        ({"LANG": "zh_CN.UTF-8", "LANGUAGE": "fr:zh_CN"}, "touchgate: 无法连接 touchgated", "touchgate: 无权执行此操作"),
        ({"LANG": "zh_CN.UTF-8"}, "touchgate: 无法连接 touchgated", "touchgate: 无权执行此操作"),
    ]:
        away = world.cli("--socket", world.dir / "nowhere.sock", "devices", env=env)
        assert away.returncode == 1 and away.stderr.startswith(unreachable), (env, away)
        answer = world.cli("list", "--user", "bob", as_user="alice", env=env)
        assert answer.returncode == 1 and answer.stderr.strip() == refused, (env, answer)


@pytest.mark.parametrize("command", [["enable"], ["enroll", "--finger", "left-thumb"], ["delete", "--all"],
                                     ["keyring", "enable"]])
def test_another_users_account_is_refused_without_asking_a_password(world, alice, command):
    """The daemon refuses another user's account before any password; the CLI asks for none,
    so nobody is invited to type someone else's password (none is on standard input here)."""
    refused = world.cli(*command, "--user", "bob", as_user="alice")
    assert refused.returncode == 1 and refused.stderr.strip() == "touchgate: Not permitted", refused


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
def test_root_is_asked_for_the_login_password_of_the_user_whose_keyring_it_sets_up(reader_kind, world, alice):
    """The daemon checks the password typed for `keyring enable --user alice` as alice's: root's
    prompt names her, so root does not type its own password (a wrong one counted against her)."""
    term = terminal.Terminal(["setsid", "--ctty", "--wait", str(harness.TOUCHGATE), "keyring", "enable",
                              "--user", "alice"], harness.cli_env(world), "touchgate keyring enable")
    try:
        term.expect("Login password of alice: ")
        assert term.text().startswith("Login password of alice: "), term.transcript()
        term.wait_reading(secret=True)
        term.type_line(harness.PASSWORDS["alice"])
        term.wait()
    finally:
        term.kill()
    assert "Wrong password" not in term.text(), term.transcript()
    assert json.loads(world.cli("status", "--user", "alice", "--json").stdout)["wrongPasswords"] == 0


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
def test_root_naming_an_unknown_account_for_the_keyring_is_refused_before_any_password(reader_kind, world, daemon):
    """Refused before a password is read (none is on standard input), in the daemon's sentence."""
    refused = world.cli("keyring", "enable", "--user", "nosuch")
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", "touchgate: No such user: nosuch\n"), refused


@pytest.mark.parametrize("as_systemd", [False, True])
def test_invalid_config_stops_the_daemon_naming_the_line(world, as_systemd):
    (world.dir / "etc").mkdir()
    config = world.dir / "etc" / "touchgate.conf"
    config.write_text("max_tries = 3\n# a comment\nno_such_key = 1\n")
    result = harness.run_daemon_once(world, config, as_systemd=as_systemd)
    assert result.returncode == 1
    assert result.stderr.startswith("touchgated: %s: line 3: " % config), result.stderr
    assert "no_such_key" in result.stderr, result.stderr
    assert not world.socket.exists()

    # The CLI's check-config runs the same validator.
    checked = world.cli("check-config", config)
    assert checked.returncode != 0
    assert re.search(r"(line 3\b|:3:)", checked.stderr) and "no_such_key" in checked.stderr, checked


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
def test_check_config_of_a_file_named_that_does_not_exist_fails(reader_kind, world):
    """Only the default file, not named, may be missing (the defaults then apply): a typo in a
    name given is no valid file."""
    missing = world.dir / "touchgat.conf"
    result = world.cli("check-config", missing)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "%s: no such file\n" % missing), result


@pytest.mark.parametrize("reader_kind", ["virtual_device"], indirect=True)
def test_the_cli_waits_for_a_password_check_the_pam_stack_delays(reader_kind, world, alice):
    """A PAM stack delays a wrong password (pam_unix's fail delay, here pam_faildelay's 3 s); the
    daemon keeps the request alive meanwhile, so the CLI tells the wrong password, not a timeout."""
    faildelay = next(iter(glob.glob("/usr/lib/*/security/pam_faildelay.so")), "pam_faildelay.so")
    stack = world.pam_dir / harness.PASSWORD_SERVICE
    stack.write_text("auth optional %s delay=3000000\n" % faildelay + stack.read_text())
    world.daemon.stop()
    world.start_daemon()  # pam_wrapper reads the services once, when the daemon starts
    enabled = world.cli("enable", "--user", "alice", as_user="alice", password="not her password", timeout=30)
    assert enabled.returncode != 0, enabled
    assert "Wrong password" in enabled.stderr, enabled
    assert enabled.elapsed > 1.5, enabled  # the delay did run: the wait outlasted a reply's deadline
