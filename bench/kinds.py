"""The two other kinds of reader: an image sensor (libfprint's virtual_image: the host matches with
NBIS) and a match-on-chip sensor that keeps the prints (virtual_device_storage). Each daemon is
started afresh on a reader of that kind alone, alice enrolls there, and the authentications alternate
between the systems as in the other scenarios. The run's own reader comes back afterwards."""

import time

import procstat
from lines import WaitTimeout
from pamclient import ClientTimeout
from scenarios import PRINT, USER, ms

KINDS = ("virtual_image", "virtual_device_storage")
LABEL = {"virtual_image": "image reader", "virtual_device_storage": "match-on-chip reader"}
WARM = 1  # the first authentication of a fresh daemon is its cold start: not in these figures
# fprintd's warning when a Claim comes while it is still closing the reader after the last client.
STILL_CLOSING = "Device was already claimed"


def figures_for(ctx, kind):
    """The rows of one kind of reader, in the order the table shows them."""
    label, n = LABEL[kind], ctx.plan.reps + WARM
    f = {
        "scan": ctx.figures("kind_scan_" + kind, "%s: scan → PAM_SUCCESS" % label, "ms",
                            "libfprint's %s; from just before the scan is sent to the reader to "
                            "pam_authenticate()'s return with PAM_SUCCESS" % kind),
        "total": ctx.figures("kind_total_" + kind, "%s: pam_authenticate → PAM_SUCCESS" % label, "ms",
                             "pam_authenticate() entry to return, the scan sent when the prompt shows"),
        "cpu": ctx.figures("kind_cpu_" + kind, "%s: CPU per authentication, the daemon" % label, "ms",
                           "the daemon's utime+stime from /proc/PID/stat over the authentications, divided by "
                           "their number (the kernel counts in ticks of 10 ms); fprintd's includes answering "
                           "the Claims it refused"),
        "rss": ctx.figures("kind_rss_" + kind, "%s: daemon RSS after %d authentications" % (label, n), "MB",
                           "VmRSS of the daemon started on this reader, right after its last authentication"),
        "anon": ctx.figures("kind_anon_" + kind, "%s: daemon RssAnon after %d authentications" % (label, n), "MB",
                            "RssAnon of the same"),
        "refused": ctx.figures("kind_refused_" + kind, "%s: authentications refused, the reader still closing" % label,
                               "count", "authentications answered PAM_AUTHINFO_UNAVAIL because the daemon was "
                               "still closing the reader after the previous client (fprintd's warning: \"%s\"), "
                               "each made again at once, in every row of this reader; the figures are of the "
                               "ones that succeeded" % STILL_CLOSING),
    }
    if kind == "virtual_image":
        f["held"] = ctx.figures("kind_held_" + kind, "%s, the finger left on it: scan → PAM_SUCCESS" % label, "ms",
                                "from just before the scan is sent to pam_authenticate()'s return with PAM_SUCCESS, "
                                "the finger put on the reader with the scan (its own finger reports off) and left until "
                                "pam_authenticate() has returned (libfprint ends an image reader's verify only once "
                                "the finger is lifted); then lifted, where the daemon still holds the reader open")
    if kind == "virtual_device_storage":
        f["anon"].how += ("; touchgated keeps pam_wrapper preloaded here (about 0.05 MB): the reader keeps "
                          "the prints only while the daemon that enrolled them runs")
    return f


def other_readers(ctx):
    for kind in KINDS:
        f = figures_for(ctx, kind)
        refused = {}
        previous = [s.use_reader(kind) for s in ctx.systems]
        try:
            for s in ctx.systems:
                s.start()
                s.enroll(USER, PRINT)
                if kind != "virtual_device_storage" and hasattr(s, "without_pam_wrapper"):
                    s.without_pam_wrapper()
                for _ in range(WARM):
                    authenticate(ctx, s, refused)
            last = {}
            cpu_before = {s.name: procstat.cpu_seconds(s.daemon_pid()) for s in ctx.systems}
            for rep in range(ctx.plan.reps):
                for s in ctx.order(rep):
                    c = authenticate(ctx, s, refused)
                    last[s.name] = procstat.memory_mb(s.daemon_pid())  # right after each
                    t = c.timing()
                    f["scan"].add(s.name, ms(t.end - c.scanned))
                    f["total"].add(s.name, ms(t.end - t.start))
            for s in ctx.systems:
                f["cpu"].add(s.name, ms(procstat.cpu_seconds(s.daemon_pid()) - cpu_before[s.name]) / ctx.plan.reps)
            for name, mem in last.items():
                f["rss"].add(name, mem["VmRSS"])
                f["anon"].add(name, mem["RssAnon"])
            if "held" in f:
                held(ctx, f["held"], refused)
            for s in ctx.systems:  # the finger-left-on ones counted too
                f["refused"].add(s.name, refused.get(s.name, 0))
        finally:
            for s, reader in zip(ctx.systems, previous):
                s.stop()
                s.restore_reader(reader)
    for s in ctx.systems:  # back on the run's reader, where alice's prints are, as every scenario starts
        s.start()


def held(ctx, figures, refused):
    """The finger put on the image reader with the scan and left there until pam_authenticate() has
    returned, then lifted where the daemon still holds the reader open (fprintd has closed it)."""
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            c = authenticate(ctx, s, refused, scan=s.reader.hold)
            if s.holds_reader_open:
                s.reader.finger(False)
            figures.add(s.name, ms(c.timing().end - c.scanned))


def authenticate(ctx, system, refused, scan=None):
    """ctx.authenticate(). fprintd closes the reader after each client, and on the image reader
    that ends some 100 ms after pam_fprintd has returned; a Claim before then is refused and
    pam_fprintd answers PAM_AUTHINFO_UNAVAIL at once. Such a refusal (fprintd's warning says so)
    is counted in `refused` and the authentication made again at once, within a deadline."""
    deadline = time.monotonic() + 5.0
    while True:
        mark = len(system.log.lines)
        try:
            return ctx.authenticate(system, scan=scan)
        except (ClientTimeout, AssertionError) as failure:
            if time.monotonic() > deadline:
                raise
            try:
                system.log.wait_for(STILL_CLOSING, 1.0, start=mark)
            except WaitTimeout:
                raise failure from None
            refused[system.name] = refused.get(system.name, 0) + 1
