"""End to end, touchgated's stop: SIGTERM ends a prompt with systemCancel and says why, a wrong
password still in the password stack is counted and answered, and a reader still opening does not
keep the daemon past the package's SIGKILL."""

import glob
import os
import select
import signal
import subprocess
import threading

import harness
import wire
from daemon import Daemon
from harness import PROMPT, now
from test_hardening import status

SHUTDOWN = "Fingerprint service stopping: use your password"


def test_sigterm_ends_a_prompt_with_system_cancel_and_a_reason(world, alice):
    session = world.pam("alice")
    session.wait_for(PROMPT)
    world.daemon.signal(signal.SIGTERM)
    session.wait()
    assert session.result == "PAM_AUTHINFO_UNAVAIL"
    assert session.messages()[-1] == SHUTDOWN, session.transcript()
    world.daemon.proc.wait(10)  # its shutdown steps have deadlines of their own (docs/spec.md §9)
    assert world.daemon.proc.returncode == 0
    world.daemon.log.wait_for("reason=shutdown")


def test_a_wrong_password_being_checked_when_the_daemon_stops_is_counted_and_answered(world, alice):
    """SIGTERM comes while the password stack delays a wrong password (2 s, as pam_unix does, past
    the front-ends' 1 s drain): the stop waits for the check, so the failure is on disk after the
    restart, and the client hears it instead of a closed connection."""
    began = world.dir / "check-began"
    os.mkfifo(began)
    script = world.dir / "check-began.sh"
    script.write_text("#!/bin/sh\necho began > %s\n" % began)
    script.chmod(0o755)
    pam_exec = next(iter(glob.glob("/usr/lib/*/security/pam_exec.so")), "pam_exec.so")
    faildelay = next(iter(glob.glob("/usr/lib/*/security/pam_faildelay.so")), "pam_faildelay.so")
    stack = world.pam_dir / harness.PASSWORD_SERVICE
    stack.write_text("auth optional %s %s\nauth optional %s delay=2000000\n" % (pam_exec, script, faildelay)
                     + stack.read_text())
    world.daemon.stop()
    world.start_daemon()  # pam_wrapper reads the services once, when the daemon starts
    before = status(world)["wrongPasswords"]
    fifo = os.open(began, os.O_RDONLY | os.O_NONBLOCK)
    answer = {}

    def verify():
        try:
            answer["result"] = wire.request(world.socket, "verify_password", user="alice", password="not hers")[0]
        except Exception as e:  # noqa: BLE001 - the assertion below names it
            answer["error"] = e
    client = threading.Thread(target=verify)
    client.start()
    try:
        assert select.select([fifo], [], [], 10)[0], "the password check did not begin"
    finally:
        os.close(fifo)
    world.daemon.signal(signal.SIGTERM)
    assert world.daemon.proc.wait(10) == 0, world.daemon.log.dump()
    client.join(10)
    assert answer.get("result", {}).get("reason") == "wrongPassword", answer
    world.start_daemon()
    assert status(world)["wrongPasswords"] == before + 1


STALLED_LIBFPRINT = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
/* libfprint's loading stalls (a slow disk, a driver stuck in its start): it never ends in the test. */
void *dlopen(const char *file, int flags)
{
    void *(*real)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (file != NULL && strstr(file, "libfprint") != NULL)
        pause();
    return real(file, flags);
}
"""


def test_a_stop_while_the_readers_are_still_opening_ends_before_the_prerms_sigkill(world):
    """SIGTERM while libfprint is still loading: the daemon waits for it (an exit under it aborts
    in GLib), but only until 8 s after the signal, under the package prerm's 10 s before SIGKILL."""
    source, shim = world.dir / "stall.c", world.dir / "stall.so"
    source.write_text(STALLED_LIBFPRINT)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True, timeout=60)
    preload = ["sh", "-c", 'LD_PRELOAD="$LD_PRELOAD %s" exec "$@"' % shim, "sh"]
    daemon = Daemon(world, prefix=preload)
    daemon.log.wait_for("listening on", 10)
    signalled = now()
    daemon.signal(signal.SIGTERM)
    assert daemon.proc.wait(15) == 0, daemon.log.dump()
    assert now() - signalled < 9, daemon.log.dump()
    daemon.log.wait_for("the readers did not finish opening within")
