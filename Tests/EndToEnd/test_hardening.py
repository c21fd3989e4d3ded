"""End to end, touchgated against hostile local clients and faults: connection caps and their
refusal, descriptor exhaustion, threads that do not grow with connections, files that are not
followed or trusted when they should not be, damaged templates (the stop: test_shutdown.py)."""

import glob
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import harness
import wire
from conftest import ALICE_PRINT
from harness import PROMPT, now

ALICE_UID, BOB_UID = harness.USERS["alice"][0], harness.USERS["bob"][0]


def threads(daemon):
    return len(os.listdir("/proc/%d/task" % daemon.proc.pid))


def print_file(world, user, finger_number):
    """The print file on the world's reader (each virtual driver's device id is "0")."""
    return world.prints.joinpath(user, world.reader_kind, "0", "%x" % finger_number)


def can_evaluate(world, user="alice"):
    result, _ = wire.request(world.socket, "can_evaluate", user=user, policy=1, service="sudo")
    return result["code"], result.get("reason")


def status(world, user="alice"):
    result, _ = wire.request(world.socket, "status", user=user)
    import json
    return json.loads(result["json"])


# --- connections -------------------------------------------------------------------------------


def test_one_user_gets_sixteen_connections_and_a_clear_refusal_past_them(world, daemon):
    tally = wire.run_as(ALICE_UID, "flood(%r, 40, hold=[])" % str(world.socket))
    assert tally == {"answered": 16, "busy": 24, "other": []}, tally
    # Her connections are gone with her process; root and other users were never affected.
    assert wire.run_as(BOB_UID, "flood(%r, 3)" % str(world.socket))["answered"] == 3


def test_a_users_flood_does_not_lock_out_a_login_prompt(world, alice):
    # bob holds every connection he may (and is refused past them) while alice authenticates
    # through a root-run PAM client: his connections never reach root's share.
    flood = wire.hold_as(BOB_UID, world.socket, 100)
    try:
        assert flood.tally == {"answered": 16, "busy": 84, "other": []}, flood.tally
        session = world.pam("alice")
        session.wait_for(PROMPT)
        world.reader.scan(alice)
        assert session.wait().result == "PAM_SUCCESS", session.transcript()
    finally:
        flood.release()


def test_a_thousand_connections_add_no_threads(world, daemon):
    # Counted once the reader is open and each worker pool has run (their threads are fixed).
    assert wire.flood(world.socket, 3)["answered"] == 3
    assert can_evaluate(world) == (-7, "noPrints")
    before = threads(daemon)
    held = []
    tally = wire.flood(world.socket, 1000, hold=held)
    try:
        # Root-run clients get the shared total plus the reserve; the rest are refused, not dropped.
        assert tally["answered"] + tally["busy"] == 1000 and tally["other"] == [], tally
        assert tally["busy"] > 0
        assert threads(daemon) <= before + 2, "threads grew from %d to %d" % (before, threads(daemon))
    finally:
        for s in held:
            s.close()
    # Everyone's connections are closed: the daemon serves again, once it has seen them close
    # (each close reaches its loop on its own; until then a new client may still be refused busy).
    deadline = now() + harness.DEFAULT_WAIT
    while (tally := wire.flood(world.socket, 5))["answered"] != 5:
        assert tally["answered"] + tally["busy"] == 5 and now() < deadline, tally


def test_out_of_descriptors_the_daemon_refuses_and_recovers(world, daemon):
    """The caps are sized for the limit the daemon started with; lowering it under the daemon
    makes accept itself fail (EMFILE): refused with a reason, never a crash or a spin."""
    held = []
    assert wire.flood(world.socket, 1)["answered"] == 1  # the listener has sized its caps
    soft, hard = resource.prlimit(daemon.proc.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(daemon.proc.pid, resource.RLIMIT_NOFILE, (48, hard))
    tally = wire.flood(world.socket, 120, hold=held)
    assert daemon.proc.poll() is None, "the daemon died:\n" + daemon.log.dump()
    assert tally["busy"] > 0 and tally["answered"] > 0, tally
    daemon.log.wait_for("refusing new connections until descriptors free up")
    for s in held:
        s.close()
    resource.prlimit(daemon.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
    assert wire.flood(world.socket, 8)["answered"] == 8


REFUSED_BUSY = "refused at accept: busy"


def can_evaluate_or_refusal(world):
    """can_evaluate on a connection of its own, as wire.request sends it: (code, reason); or
    REFUSED_BUSY when the daemon refused the connection at accept, whose unsolicited TG_ERR_BUSY
    frame (request id 0xFFFFFFFF) is read instead, as wire.flood reads it."""
    deadline = time.monotonic() + wire.REQUEST_DEADLINE
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(wire.REQUEST_DEADLINE)
        s.connect(str(world.socket))
        try:
            s.sendall(wire.encode("can_evaluate", 7, user="alice", policy=1, service="sudo"))
        except OSError:
            pass  # refused: the daemon closed it after its refusal, which is still there to read
        while True:
            kind, rid, fields = wire.read_frame(s, deadline)
            if rid == wire.UNSOLICITED and fields.get("code") == wire.BUSY:
                return REFUSED_BUSY
            assert rid == 7, "reply for another request id: %r %r" % (rid, fields)
            if kind == wire.PROGRESS and fields.get("progress") == wire.KEEPALIVE:
                continue
            assert kind == wire.RESULT, "unexpected frame kind %#x: %r" % (kind, fields)
            return fields["code"], fields.get("reason")


def test_a_burst_of_two_hundred_clients_is_answered_without_kernel_refusals(world, alice):
    """Every client connects (the listen backlog holds the burst: no EAGAIN) and gets its answer.
    Only a daemon whose descriptor limit makes its caps smaller than the burst may refuse some at
    accept, saying busy (the unsolicited refusal, counted), and even then it answers the others."""
    results = []
    lock = threading.Lock()

    def ask():
        try:
            r = can_evaluate_or_refusal(world)
        except Exception as e:  # EAGAIN (the listen backlog overflowed), a timeout, a stray frame…
            r = repr(e)
        with lock:
            results.append(r)

    workers = [threading.Thread(target=ask) for _ in range(200)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(wire.REQUEST_DEADLINE + 5)
    assert len(results) == 200, "%d clients still waiting" % (200 - len(results))
    busy = results.count(REFUSED_BUSY)
    answers = [r for r in results if isinstance(r, tuple)]
    errors = [r for r in results if isinstance(r, str) and r != REFUSED_BUSY]
    assert errors == [], (len(errors), sorted(set(errors))[:3])
    assert answers, "no client was answered (%d refused busy)" % busy
    assert set(answers) == {(0, None)}, set(answers)
    # Root-run clients may hold 320 connections (256 in all plus 64 kept for root), fewer when the
    # descriptor limit leaves less than that past the 64 the daemon keeps for itself (Listener).
    soft, _ = resource.prlimit(world.daemon.proc.pid, resource.RLIMIT_NOFILE)
    room = 320 if soft == resource.RLIM_INFINITY else min(320, soft - 64)
    if room >= 200:
        assert busy == 0, "%d of 200 refused busy, with room for %d" % (busy, room)


def test_a_malformed_frame_gets_an_error_and_the_daemon_serves_everyone_else(world, daemon):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(world.socket))
        s.sendall(b"\x00\x00\x00\x08\x02\x01\x00\x00\x00\x00\x00\x07")  # protocol version 2
        kind, rid, fields = wire.read_frame(s)
        assert (kind, fields["code"]) == (wire.RESULT, -2003)
        assert s.recv(1) == b""  # closed
    assert wire.flood(world.socket, 2)["answered"] == 2


def test_the_cli_past_its_users_connections_says_busy_not_a_closed_connection(world, alice):
    """bob holds every connection he may; each CLI run of his is refused at accept, often before it
    has sent its request (the send then fails), and still reads and says the refusal."""
    flood = wire.hold_as(BOB_UID, world.socket, 16)
    try:
        assert flood.tally == {"answered": 16, "busy": 0, "other": []}, flood.tally
        for _ in range(20):
            listed = world.cli("list", "--user", "bob", as_user="bob")
            assert listed.returncode == 1, listed
            assert listed.stderr == "touchgate: Fingerprint service busy: use your password\n", listed
        # Refused before its request (and its language) was read: said in the caller's language.
        chinese = world.cli("list", "--user", "bob", as_user="bob", env={"LANG": "zh_CN.UTF-8"})
        assert chinese.returncode == 1 and chinese.stderr == "touchgate: 指纹服务繁忙：请使用密码\n", chinese
    finally:
        flood.release()


# --- files ------------------------------------------------------------------------------------


def test_a_users_state_directory_replaced_by_a_symlink_is_not_followed(world, alice):
    assert harness.enroll(world, "bob", "bob-print", as_user="bob")[0] == 0
    alice_dir = world.state / "users" / "alice"
    shutil.rmtree(alice_dir)
    alice_dir.symlink_to(world.state / "users" / "bob")
    assert (alice_dir / "state.json").is_file()  # bob's state, readable through the link
    world.daemon.stop()
    world.start_daemon()
    assert can_evaluate(world) == (-8, "stateUnreadable")
    doc = status(world)
    assert doc["stateReadable"] is False and "symbolic link" in doc["stateProblem"], doc


def test_a_users_print_directory_replaced_by_a_symlink_is_not_followed(world, alice):
    assert harness.enroll(world, "bob", "bob-print", as_user="bob")[0] == 0
    shutil.rmtree(world.prints / "alice")
    (world.prints / "alice").symlink_to(world.prints / "bob")
    assert [p for p in (world.prints / "alice").rglob("*") if p.is_file()]  # bob's prints, through it
    world.daemon.stop()
    world.start_daemon()
    # alice cannot verify with bob's finger: her prints are refused, with a reason.
    assert can_evaluate(world) == (-6, "printsUnsafe")
    session = world.pam("alice")
    assert session.wait().result == "PAM_AUTHINFO_UNAVAIL"
    assert PROMPT not in session.messages(), session.transcript()
    assert "symbolic link" in status(world)["printsProblem"]


def test_a_state_file_writable_by_others_or_owned_by_another_user_is_not_trusted(world, alice):
    state = world.state / "users" / "alice" / "state.json"
    for change in (lambda: state.chmod(0o666), lambda: os.chown(state, ALICE_UID, ALICE_UID)):
        world.daemon.stop()
        change()
        world.start_daemon()
        assert can_evaluate(world) == (-8, "stateUnreadable")
        state.chmod(0o600)
        os.chown(state, 0, 0)


def test_a_state_directory_owned_by_another_user_stops_the_daemon(world):
    world.state.mkdir(mode=0o700)
    os.chown(world.state, ALICE_UID, ALICE_UID)
    result = harness.run_daemon_once(world, "/nonexistent")
    assert result.returncode == 1
    assert "state directory" in result.stderr and "owned by uid %d" % ALICE_UID in result.stderr, result.stderr


def test_a_start_that_fails_after_binding_its_socket_removes_the_socket_file(world):
    world.state.mkdir(mode=0o700)
    elsewhere = world.dir / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (world.state / "users").symlink_to(elsewhere)
    result = harness.run_daemon_once(world, "/nonexistent")
    assert result.returncode == 1
    assert "state directory" in result.stderr and "users" in result.stderr, result.stderr
    assert not world.socket.exists()


# Binds a listening socket at each of the first two paths as fds 3 and 4, as systemd passes a
# socket unit's sockets, and execs the rest of the command line with LISTEN_PID and LISTEN_FDS.
SOCKET_ACTIVATE = """
import os, socket, sys
held = []
for i, path in enumerate(sys.argv[1:3]):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    os.dup2(s.fileno(), 3 + i)
    os.set_inheritable(3 + i, True)
    held.append(s)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="2")
os.execv(sys.argv[3], sys.argv[3:])
"""


def test_a_daemon_passed_two_sockets_says_so_and_does_not_start(world):
    """A second ListenStream= (a drop-in): serving one socket while the other's clients wait
    unanswered would be worse than not starting, so the daemon stops and says why."""
    argv, env = harness.daemon_command(world, "/nonexistent")
    paths = [str(world.dir / "first.sock"), str(world.dir / "second.sock")]
    result = subprocess.run([sys.executable, "-c", SOCKET_ACTIVATE] + paths + argv, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, env=env, timeout=harness.DEFAULT_WAIT)
    assert result.returncode == 1, result.stderr
    assert "systemd passed 2 sockets; touchgated serves one" in result.stderr, result.stderr


def test_temporary_files_left_by_interrupted_writes_are_removed_at_start(world, alice):
    users = world.state / "users" / "alice"
    prints = print_file(world, "alice", 7).parent
    left = [users / ".state.json.tmp-1f2e3d", users / "state.json.tmp.4242", prints / ".7.tmp-99aa"]
    for f in left:
        f.write_bytes(b"partial")
    world.daemon.stop()
    world.start_daemon()
    assert [f for f in left if f.exists()] == []
    world.daemon.log.wait_for("removed 3 temporary files")
    assert can_evaluate(world) == (0, None)


def test_kill_9_during_writes_leaves_a_whole_state_and_no_temporary_files(world, alice):
    """Killed in the middle of the write that counts a failed match (strace sends SIGKILL as the
    write's rename begins, its temporary file written): after the restart the state is the one before
    that match, whole, and the temporary file is gone. A writer that wrote the file in place would
    never reach a rename, and the daemon would live."""
    state = world.state / "users" / "alice" / "state.json"
    before = state.read_text()
    world.daemon.stop()
    traced = world.start_daemon(prefix=["strace", "-f", "-qq", "-o", "/dev/null", "-e",
                                        "trace=rename,renameat,renameat2", "-e",
                                        "inject=rename,renameat,renameat2:signal=KILL"])
    try:
        session = world.pam("alice")
        session.wait_for(PROMPT)
        world.reader.scan("stranger")
        assert traced.proc.wait(10) == -signal.SIGKILL, traced.log.dump()
        session.wait()
    finally:  # a daemon strace left alive (the test failed) must not outlive it: its process group
        try:
            os.killpg(traced.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert [p.name for p in state.parent.iterdir() if ".tmp" in p.name] != []
    assert state.read_text() == before
    world.start_daemon()
    world.daemon.log.wait_for("removed 1 temporary files")
    assert can_evaluate(world) == (0, None)
    assert status(world)["stateReadable"] is True
    assert [p.name for p in world.state.rglob("*") if ".corrupt-" in p.name] == []
    assert [p.name for p in world.state.rglob("*") if ".tmp" in p.name] == []


# --- damaged templates -----------------------------------------------------------------------


def damage(world, finger_number, garbage):
    """Overwrites a print file, then tells the daemon about a password success: a changed print is
    a changed set of prints (passwordRequired, enrollmentChanged), and says it is damaged at once."""
    print_file(world, "alice", finger_number).write_bytes(garbage)
    world.daemon.stop()
    world.start_daemon()
    code, reason = can_evaluate(world)
    assert (code, reason) == (-11, "enrollmentChanged")
    result, _ = wire.request(world.socket, "can_evaluate", user="alice", policy=1, locale="C.UTF-8")
    assert "damaged" in result["message"], result
    assert wire.request(world.socket, "password_success", user="alice", service="login")[0]["code"] == 0


def test_a_damaged_template_is_named_and_the_other_finger_still_works(world, alice):
    rc, _ = harness.enroll(world, "alice", "alice-left-thumb", finger="left-thumb", as_user="alice")
    assert rc == 0
    damage(world, 7, b"FP3 garbage")  # right-index-finger
    damaged = "The enrolled right-index-finger is damaged: enroll it again (touchgate enroll --finger right-index-finger)"
    session = world.pam("alice")
    session.wait_for(damaged)
    session.wait_for(PROMPT)
    world.reader.scan("alice-left-thumb")
    assert session.wait().result == "PAM_SUCCESS", session.transcript()
    assert status(world)["damagedFingers"] == ["right-index-finger"]


def test_the_cli_says_a_refusal_and_the_damaged_finger_on_one_line(world, alice):
    rc, _ = harness.enroll(world, "alice", "alice-left-thumb", finger="left-thumb", as_user="alice")
    assert rc == 0
    print_file(world, "alice", 7).write_bytes(b"FP3 garbage")  # right-index-finger
    world.daemon.stop()
    world.start_daemon()
    refused = world.cli("verify", "--user", "alice", as_user="alice")
    lines = refused.stderr.splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and lines[0].startswith("touchgate: "), refused
    assert "; The enrolled right-index-finger is damaged" in lines[0], refused


def test_the_clis_verify_inside_an_ssh_session_is_refused_as_remote(world, alice):
    """As a login there would be (allow_remote = no): no reader listens for someone far away."""
    for name in ("SSH_CONNECTION", "SSH_CLIENT"):
        refused = world.cli("verify", "--user", "alice", as_user="alice", env={name: "192.0.2.1 51000 22"})
        assert refused.returncode == 1, refused
        assert "Fingerprint is not offered in remote sessions" in refused.stderr, refused
    world.daemon.log.wait_for("reason=remote")
    assert status(world)["failedMatches"] == 0


def test_a_program_the_password_stack_runs_starts_with_sigpipes_default_action(world, alice):
    """The daemon ignores SIGPIPE; what a PAM module forks for a password check (pam_exec here)
    must not inherit that. (Its blocked SIGTERM/SIGINT/SIGHUP are not checked here: pam_exec's
    program finds none blocked with or without the daemon's reset.)"""
    pam_exec = next(iter(sorted(glob.glob("/usr/lib/*/security/pam_exec.so"))), "pam_exec.so")
    seen = world.dir / "signals-seen"
    probe = world.dir / "probe.sh"
    probe.write_text("#!/bin/sh\ngrep '^SigIgn:' /proc/self/status > %s\n" % seen)
    probe.chmod(0o755)
    stack = world.pam_dir / harness.PASSWORD_SERVICE
    stack.write_text("auth optional %s %s\n" % (pam_exec, probe) + stack.read_text())
    world.daemon.stop()
    world.start_daemon()  # pam_wrapper reads the services once, when the daemon starts
    enabled = world.cli("enable", "--user", "alice", as_user="alice", password=harness.PASSWORDS["alice"])
    assert enabled.returncode == 0, enabled
    ignored = int(seen.read_text().split(":")[1], 16)
    assert ignored & (1 << (signal.SIGPIPE - 1)) == 0, seen.read_text()


def test_when_every_template_is_damaged_no_prompt_is_shown_and_the_person_is_told(world, alice):
    damage(world, 7, b"\x00\x01garbage")
    assert can_evaluate(world) == (-2007, "templateDamaged")
    session = world.pam("alice")
    assert session.wait().result == "PAM_AUTHINFO_UNAVAIL"
    assert PROMPT not in session.messages()
    assert any("right-index-finger" in m and "damaged" in m for m in session.messages()), session.transcript()


@pytest.mark.parametrize("garbage", [b"FP3", b"F"])
def test_a_print_file_too_short_to_be_a_print_costs_that_finger_not_the_daemon(world, alice, reader_kind, garbage):
    """libfprint asserts on fewer than 4 bytes; the daemon refuses them as no print first."""
    damage(world, 7, garbage)
    assert can_evaluate(world) == (-2007, "templateDamaged")
    assert world.pam("alice").wait().result == "PAM_AUTHINFO_UNAVAIL"
    # Enrolled again (on a match-on-chip reader its copy is named from the file first), then deleted.
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, cli.stderr
    assert world.cli("delete", "--user", "alice", "--finger", "right-index-finger").returncode == 0
    assert world.daemon.proc.poll() is None, world.daemon.log.dump()
