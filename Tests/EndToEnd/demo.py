#!/usr/bin/env python3
"""touchgate demo: a real touchgated on libfprint's virtual reader, the real CLI, and real PAM
(pam_touchgate.so inside Linux-PAM through pam_wrapper, driven by pamtester in a pty).

Prints what each person saw and the PAM result with timings; exits non-zero if anything did
not behave as expected. Everything lives in a temp dir that is removed on every path."""

import signal
import sys

import harness
from harness import PROMPT, NOT_ENROLLED, no_match, not_recognised

ALICE_PRINT = "alice-right-index"
STRANGERS = ["stranger-1", "stranger-2", "stranger-3"]

failures = []


def say(line=""):
    print(line, flush=True)


def check(ok, what):
    say("    %s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures.append(what)
    return ok


def show_session(session, reader, since):
    """The pamtester transcript (its own lines marked `pamtester`) merged with the commands given
    to the reader, in ms since pamtester was started."""
    events = [(t, "shown", text) for t, text in session.out.lines]
    events += [(t, "reader", "finger on the reader: " + cmd) for t, cmd in reader.sent[since:]]
    for t, kind, text in sorted(events, key=lambda e: e[0]):
        if text.startswith("pamtester: "):
            kind, text = "pamtester", text[len("pamtester: "):]
        say("    %7.1f ms  %-9s %s" % (harness.ms(t - session.started), kind, text))


def authenticate(world, title, user, fingers, expected_result, expected_messages):
    say()
    say(title)
    say("  $ pamtester %s %s authenticate    # PAM service: auth required pam_touchgate.so"
        % (harness.SERVICE, user))
    since = len(world.reader.sent)
    session = world.pam(user)
    prompt_at = None
    scan_at = None
    if fingers:
        i = session.wait_for(PROMPT)
        prompt_at = session.out.lines[i][0]
        for n, finger in enumerate(fingers):
            scan_at = harness.now()
            world.reader.scan(finger)
            if n + 1 < len(fingers):  # the next finger once the person was told to try again
                i = session.wait_for(no_match(len(fingers) - n - 1), start=i + 1)
    session.wait()
    show_session(session, world.reader, since)
    started = session.auth_started()
    result_at = session.out.lines[-1][0]
    timing = ["pam_authenticate began at %.1f ms" % harness.ms(started - session.started)]
    if prompt_at is not None:
        timing.append("prompt shown %.1f ms later" % harness.ms(prompt_at - started))
    if scan_at is not None:
        timing.append("last finger to result %.1f ms" % harness.ms(result_at - scan_at))
    timing.append("result after %.1f ms in pam_authenticate" % harness.ms(result_at - started))
    say("  result: %s" % session.result)
    say("  timing: %s" % "; ".join(timing))
    check(session.result == expected_result, "PAM result is %s" % expected_result)
    if expected_messages is not None:
        check(session.messages() == expected_messages,
              "the person saw exactly: %s" % " / ".join(expected_messages))
    return session


def main():
    say("touchgate demo: libfprint virtual reader, touchgated, touchgate CLI, pam_touchgate.so in Linux-PAM")
    with harness.World() as world:
        say("work dir: %s (removed at the end)" % world.dir)
        say()
        say("touchgated --socket %s --state-dir %s   # FP_VIRTUAL_DEVICE=%s"
            % (world.socket.name, world.state.name, world.vdev.name))
        daemon = world.start_daemon()
        say("  ready in %.0f ms; %s" % (harness.ms(daemon.ready_after), "reader: " + (daemon.reader_line() or "?")))

        say()
        say("alice enrolls her right index finger (as alice: she types her password, touchgated checks it")
        say("through its own PAM service, here pam_matrix); each scan is given when the CLI asks for it")
        say("  $ touchgate enroll --user alice")

        def on_enroll(kind, text):
            say("    %-9s %s" % ("reader" if kind == "scan" else "shown", text if kind != "scan"
                                   else "finger on the reader: " + text))

        rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice", on_event=on_enroll)
        say("  exit %d in %.0f ms%s" % (rc, harness.ms(cli.elapsed), (": " + cli.stderr.strip()) if cli.stderr else ""))
        if not check(rc == 0, "enroll succeeded"):
            return 1
        listed = world.cli("list", "--user", "alice")
        say("  $ touchgate list --user alice")
        for line in listed.stdout.splitlines():
            say("    shown     " + line)
        check(listed.returncode == 0 and listed.stdout.splitlines() == ["right-index-finger"],
              "touchgate list shows right-index-finger")

        authenticate(world, "(a) alice authenticates and touches the enrolled finger", "alice",
                     [ALICE_PRINT], "PAM_SUCCESS", [PROMPT])
        authenticate(world, "(b) someone else tries three fingers on alice's account", "alice",
                     STRANGERS, "PAM_MAXTRIES", [PROMPT, no_match(2), no_match(1), not_recognised(3)])
        bob = authenticate(world, "(c) bob, who has no prints, authenticates: no prompt, the password module would follow",
                           "bob", [], "PAM_AUTHINFO_UNAVAIL", None)
        check(PROMPT not in bob.messages(), "bob was never asked for a finger")
        check(bob.messages() == [], "nothing was shown (no \"%s\" for someone who never set up a finger)"
              % NOT_ENROLLED)

        say()
        daemon_status = daemon.stop()
        say("touchgated stopped (exit %s)" % daemon_status)
    say()
    if failures:
        say("demo: %d check(s) FAILED: %s" % (len(failures), "; ".join(failures)))
        return 1
    say("demo: all checks passed")
    return 0


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through World.__exit__: daemon stopped, dir removed


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    try:
        sys.exit(main())
    except harness.WaitTimeout as e:
        say("demo FAILED: %s" % e)
        sys.exit(1)
