"""The latency scenarios, the same code for both systems, the systems interleaved in each repetition.

Times inside the PAM client come from the timing shim preloaded into pamtester (pam_authenticate()
entry and return, each conversation message), on the same clock as the bench's own readings.
"""

import json
import os
import subprocess
import sys
import threading
import time

from figures import quantile
from pamclient import PamClient, wait_any

USER, NO_PRINTS = "alice", "bob"
PRINT, STRANGER = "alice-right-index", "someone-else"
BURST_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "burst.py")

INSIDE = "pamtester (pam_wrapper, in a pty); pam_authenticate() entry to return, timed inside pamtester"


def ms(seconds):
    return seconds * 1000.0


class Context:
    """What every scenario needs: the world, the systems, the plan, the figures and the timing shim."""

    def __init__(self, world, systems, plan, figures, shim, say):
        self.world, self.systems, self.plan, self.figures, self.shim, self.say = world, systems, plan, figures, shim, say
        self.series = {}

    def order(self, rep):
        """Both systems in every repetition, the first one alternating."""
        return self.systems if rep % 2 == 0 else self.systems[::-1]

    def pam(self, system, user=USER, changed=None):
        return PamClient(self.world, system.service, user, self.shim, system.client_env(), changed)

    def authenticate(self, system, timeout=10.0, scan=None):
        """One PAM authentication with a matching scan as soon as the prompt shows (`scan`, the
        reader's own by default); returns the client with `scanned` (when the scan was sent) set."""
        c = self.pam(system)
        try:
            c.wait_for(system.prompt, timeout)
            c.scanned = time.monotonic()
            (scan or system.reader.scan)(PRINT)
            c.finish(timeout)
        except BaseException:
            c.kill()
            raise
        if c.timing().result != "PAM_SUCCESS":
            raise AssertionError("%s: expected PAM_SUCCESS, got %s:\n%s" % (system.name, c.timing().result, c.transcript()))
        return c


def inside(ctx, key, title, user, prepare=None, undo=None, reps=None, unit="ms", timeout=10.0):
    """A figure of the time spent inside pam_authenticate() for `user`, no finger given."""
    f = ctx.figures(key, title, unit, INSIDE)
    for rep in range(ctx.plan.reps if reps is None else reps):
        for s in ctx.order(rep):
            if prepare:
                prepare(s)
            c = ctx.pam(s, user)
            try:
                t = c.finish(timeout).timing()
            finally:
                c.kill()  # only if it is still running
                if undo:
                    undo(s)
            f.outcome(s.name, t.result)
            f.add(s.name, (t.end - t.start) * (1000.0 if unit == "ms" else 1.0))
    return f


def no_prints(ctx):
    f = inside(ctx, "no_prints", "user without prints: inside pam_authenticate", NO_PRINTS)
    f.how = "bob has no prints; " + f.how


def success(ctx):
    prompt = ctx.figures("prompt", "pam_authenticate → prompt shown", "ms",
                         "pam_authenticate() entry to the conversation call carrying the prompt, inside pamtester")
    scan = ctx.figures("scan_success", "scan → PAM_SUCCESS (end to end)", "ms",
                       "from just before the SCAN command is sent to the virtual reader to pam_authenticate()'s "
                       "return with PAM_SUCCESS")
    total = ctx.figures("success_total", "success: pam_authenticate → PAM_SUCCESS", "ms",
                        "pam_authenticate() entry to return; the bench scans when the prompt line shows in the pty")
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            c = ctx.authenticate(s)
            t = c.timing()
            prompt.add(s.name, ms(t.message(s.prompt) - t.start))
            scan.add(s.name, ms(t.end - c.scanned))
            total.add(s.name, ms(t.end - t.start))


def direct(ctx):
    f = ctx.figures("scan_reply_direct", "scan → daemon's reply at a direct client (no PAM)", "ms",
                    "touchgate: an EVALUATE over the wire protocol, from the SCAN command to the RESULT frame; "
                    "fprintd: Claim + VerifyStart over D-Bus, from the SCAN command to the VerifyStatus signal")
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            value, result = s.direct_scan(USER, PRINT)
            f.outcome(s.name, str(result))
            f.add(s.name, value)


def wrong_then_match(ctx):
    rearm = ctx.figures("rearm", "wrong finger → re-armed", "ms",
                        "from the SCAN of a wrong finger to the message after which the next scan counts: "
                        "touchgate's 'try again' (it re-arms the reader right after), fprintd's prompt again "
                        "after 'Failed to match' (pam_fprintd's VerifyStop + VerifyStart)")
    total = ctx.figures("wrong_total", "wrong finger then match: pam_authenticate → PAM_SUCCESS", "ms",
                        "pam_authenticate() entry to return; each scan sent when the pty shows the reader re-armed")
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            c = ctx.pam(s)
            try:
                i, _ = c.wait_for(s.prompt)
                t_wrong = time.monotonic()
                s.reader.scan(STRANGER)
                i, _ = c.wait_for(s.told_no_match, start=i + 1)
                if s.rearm_prompts:
                    c.wait_for(s.prompt, start=i + 1)
                s.reader.scan(PRINT)
                c.finish()
            except BaseException:
                c.kill()
                raise
            t = c.timing()
            rearmed = t.message(s.told_no_match, after=t_wrong)
            if s.rearm_prompts:
                rearmed = t.message(s.prompt, after=rearmed)
            total.outcome(s.name, t.result)
            rearm.add(s.name, ms(rearmed - t_wrong))
            total.add(s.name, ms(t.end - t.start))


def frozen(ctx):
    def freeze(s):
        ctx.say("  %s frozen, waiting for PAM to give up" % s.name)
        s.freeze()
    f = inside(ctx, "frozen", "daemon frozen (SIGSTOP): PAM gives up after", USER, prepare=freeze,
               undo=lambda s: s.thaw(), reps=ctx.plan.frozen_reps, unit="s", timeout=90)
    f.how = "the daemon stopped with SIGSTOP; " + f.how


def concurrent(ctx, count=8):
    served = ctx.figures("concurrent_served", "%d concurrent prompts: served" % count, "count",
                         "%d pamtester started at once for alice; each that shows a prompt gets a matching scan; "
                         "served = PAM_SUCCESS" % count, better="higher")
    refused = ctx.figures("concurrent_refused", "%d concurrent prompts: refused" % count, "count",
                          "clients that ended without PAM_SUCCESS")
    told = ctx.figures("concurrent_told", "%d concurrent prompts: told they wait" % count, "count",
                       "clients that showed a 'waiting for the reader' message", better="higher")
    last = ctx.figures("concurrent_last", "%d concurrent prompts: last one finished after" % count, "ms",
                       "from the first pamtester's start to the last one's exit")
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            changed = threading.Condition()
            clients = [ctx.pam(s, changed=changed) for _ in range(count)]
            done = set()

            def next_event():
                for k, c in enumerate(clients):
                    if k not in done and c.find(s.prompt) is not None:
                        return ("prompt", k)
                return ("over", None) if all(c.log.closed for c in clients) else None
            try:
                while True:
                    what, k = wait_any(clients, changed, next_event, 20)
                    if what == "over":
                        break
                    done.add(k)
                    s.reader.scan(PRINT)
                for c in clients:
                    c.finish()
            finally:
                for c in clients:
                    c.kill()
            results = [c.timing().result for c in clients]
            for r in results:
                served.outcome(s.name, r)
            served.add(s.name, results.count("PAM_SUCCESS"))
            refused.add(s.name, count - results.count("PAM_SUCCESS"))
            told.add(s.name, sum(1 for c in clients if s.waiting and any(s.waiting.search(m) for _, _, m in c.timing().messages)))
            last.add(s.name, ms(max(c.exited for c in clients) - clients[0].started))


def burst(ctx):
    n = ctx.plan.burst
    how = ("%d clients released at once by a separate process on one event loop, each with its own connection: "
           "%s; time from the release to each answer (or failure; a client gives up after 5 s)"
           % (n, "; ".join("%s %s" % (s.name, s.cheap_query) for s in ctx.systems)))
    p50 = ctx.figures("burst_p50", "%d-client burst beside a prompt: p50" % n, "ms", how)
    p99 = ctx.figures("burst_p99", "%d-client burst beside a prompt: p99" % n, "ms", how)
    failed = ctx.figures("burst_failed", "%d-client burst: clients that failed" % n, "count",
                         "clients of the burst that got an error or no answer")
    prompt = ctx.figures("burst_prompt", "prompt shown during the burst (after pam_authenticate)", "ms",
                         "one pamtester started right after the burst is released; pam_authenticate() to the prompt")
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            proc = subprocess.Popen([sys.executable, "-B", BURST_SCRIPT] + s.burst_args(USER, n),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                if proc.stdout.readline().strip() != "ready":
                    raise RuntimeError("the burst's clients did not start")
                proc.stdin.write("go\n")
                proc.stdin.flush()
                c = ctx.authenticate(s, timeout=60)
                out, _ = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            data = json.loads(out.strip().splitlines()[-1])
            lat = sorted(data["latencies_ms"])
            if lat:
                p50.add(s.name, quantile(lat, 0.5))
                p99.add(s.name, quantile(lat, 0.99))
            failed.add(s.name, len(data["failures"]) + data["unfinished"])
            t = c.timing()
            prompt.add(s.name, ms(t.message(s.prompt) - t.start))
