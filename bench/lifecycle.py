"""Scenarios over a daemon's life: many authentications, not running, cold start, activation, traced."""

import shutil
import time

import attribution
import procstat
import straced
from pamclient import ClientTimeout
from scenarios import PRINT, ms


def back_to_back(ctx):
    """N authentications per system, interleaved one by one; CPU and memory sampled in 4 to 20 slices."""
    n = ctx.plan.auths
    # The kernel counts CPU time in 10 ms ticks: a slice needs enough authentications to resolve
    # fractions of a millisecond each (100 per slice resolves 0.1 ms).
    every = max(1, n // min(20, max(4, n // 100)))
    names = {s.name: s for s in ctx.systems}
    f = ctx.figures
    duration = f("b2b_auth", "back-to-back: one authentication, pamtester start → exit", "ms",
                 "each of the %d authentications: pamtester's start to its exit, scan sent at the prompt" % n)
    slices = ("utime+stime from /proc/PID/stat over every %d authentications, divided by %d (one value per "
              "slice; the kernel counts in ticks of 10 ms)" % (every, every))
    cpu = {"daemon": f("b2b_cpu_daemon", "CPU per authentication: the daemon", "ms", "the daemon's " + slices)}
    for companion in sorted({c for s in ctx.systems for c in s.companions()}):
        how = "the same for %s, which every fprintd authentication involves" % companion
        if "stand-in" in companion:
            how += " (python3-dbusmock: Python, so costlier than the daemon it stands in for)"
        cpu[companion] = f("b2b_cpu_" + companion.split()[0], "CPU per authentication: " + companion, "ms", how)
    cpu["client"] = f("b2b_cpu_client", "CPU per authentication: the PAM client", "ms",
                      "pamtester's own user+system time from wait4() (pam_wrapper, the module, its connection)")
    total = f("b2b_cpu_total", "CPU per authentication: all processes", "ms",
              "the daemon, the other server processes and the PAM client summed per slice")
    rss_first = f("b2b_rss_first", "back-to-back: daemon RSS after authentication 1 of %d" % n, "MB",
                  "VmRSS from /proc/PID/status (the daemon has served the earlier scenarios)")
    rss_last = f("b2b_rss_last", "back-to-back: daemon RSS after authentication %d of %d" % (n, n), "MB",
                 "VmRSS after the last; the JSON has it every %d authentications" % every)
    growth = f("b2b_rss_growth", "back-to-back: daemon RSS growth over %d authentications" % n, "MB",
               "VmRSS after the last minus after the first")
    anon_last = f("b2b_anon_last", "back-to-back: daemon RssAnon after authentication %d of %d" % (n, n), "MB",
                  "RssAnon from /proc/PID/status after the last (the daemon has served the earlier scenarios)")
    series = {s: [] for s in names}

    def snapshot(name, done, client_cpu):
        s = names[name]
        mem = procstat.memory_mb(s.daemon_pid())
        cpu_s = {"daemon": procstat.cpu_seconds(s.daemon_pid()), "client": client_cpu}
        cpu_s.update((c, procstat.cpu_seconds(pid)) for c, pid in s.companions().items())
        series[name].append({"auths": done, "t": time.monotonic(), "cpu_s": cpu_s, "VmRSS_MB": mem["VmRSS"],
                             "RssAnon_MB": mem["RssAnon"], "RssFile_MB": mem["RssFile"]})

    client_cpu = {s: 0.0 for s in names}
    for name in names:
        snapshot(name, 0, 0.0)
    for k in range(1, n + 1):
        for s in ctx.order(k):
            c = ctx.authenticate(s)
            client_cpu[s.name] += c.cpu
            duration.add(s.name, ms(c.exited - c.started))
            if k == 1:
                rss_first.add(s.name, procstat.memory_mb(s.daemon_pid())["VmRSS"])
            if k % every == 0 or k == n:
                snapshot(s.name, k, client_cpu[s.name])
        if k % max(1, n // 10) == 0:
            ctx.say("  %d of %d" % (k, n))
    for name, points in series.items():
        for a, b in zip(points, points[1:]):
            per_auth = {key: ms(b["cpu_s"][key] - a["cpu_s"][key]) / (b["auths"] - a["auths"]) for key in b["cpu_s"]}
            for key, value in per_auth.items():
                cpu[key].add(name, value)
            total.add(name, sum(per_auth.values()))
        rss_last.add(name, points[-1]["VmRSS_MB"])
        anon_last.add(name, points[-1]["RssAnon_MB"])
        growth.add(name, points[-1]["VmRSS_MB"] - rss_first.samples[name][0])
        for key, figure in cpu.items():
            if not figure.samples[name]:
                figure.notes[name] = "none"
    ctx.series["back_to_back"] = series
    for s in ctx.systems:  # what the long-running daemon holds after every earlier scenario and these
        ctx.say("  %s, after the back-to-back authentications: %s"
                % (s.name, attribution.report(s.daemon_pid()).replace("\n", "\n    ")))


def cold_start(ctx):
    """Per repetition and system: stopped → PAM (not running), then spawn → ready → prompt → match."""
    f = ctx.figures
    not_running = f("not_running", "daemon not running: inside pam_authenticate", "ms",
                    "the daemon stopped (touchgate: socket gone; fprintd: name not on the bus, not activatable); "
                    "pam_authenticate() entry to return, inside pamtester")
    ready = f("spawn_ready", "cold start: spawn → ready", "ms",
              "from just before the daemon is spawned to its ready event (%s)"
              % "; ".join("%s: %s" % (s.name, s.ready_event) for s in ctx.systems))
    prompt = f("spawn_prompt", "cold start: spawn → prompt", "ms",
               "pamtester started at the ready event; from the spawn to the conversation call with the prompt")
    rss = f("cold_rss", "cold start: daemon RSS after the first authentication", "MB",
            "VmRSS of the fresh daemon after its first authentication")
    anon = f("cold_rss_anon", "cold start: daemon RssAnon after the first authentication", "MB",
             "RssAnon (heap, stacks) of the same; the rest of VmRSS is mapped files (libraries)")
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            s.stop()
            t = ctx.pam(s).finish().timing()
            not_running.outcome(s.name, t.result)
            not_running.add(s.name, ms(t.end - t.start))
            spawned, t_ready = s.start()
            ready.add(s.name, ms(t_ready - spawned))
            try:
                t = ctx.authenticate(s).timing()
            except ClientTimeout as e:
                # Counted and shown with the figure, not hidden: the first call after ready failed.
                prompt.outcome(s.name, "no prompt: " + str(e).splitlines()[-2].strip(" |"))
                ctx.say("  %s: the first authentication after ready showed no prompt; the daemon's log:\n%s"
                        % (s.name, s.log.dump() if getattr(s, "log", None) else "(none)"))
                continue
            s.wait_served()
            mem = procstat.memory_mb(s.daemon_pid())
            prompt.add(s.name, ms(t.message(s.prompt) - spawned))
            rss.add(s.name, mem["VmRSS"])
            anon.add(s.name, mem["RssAnon"])
            if rep == ctx.plan.reps - 1:  # where the daemon's own binary is resident, once
                ctx.say("  %s, cold start, after the first authentication: %s"
                        % (s.name, attribution.report(s.daemon_pid()).replace("\n", "\n    ")))


def activation(ctx):
    """The daemon started by the first client: systemd-socket-activate for touchgate, the bus for fprintd."""
    f = ctx.figures
    how = "touchgate: systemd-socket-activate -l SOCKET touchgated; fprintd: D-Bus activation by the private bus"
    ready = f("act_ready", "activated by the first PAM call: pam_authenticate → daemon ready", "ms",
              how + "; from pam_authenticate() entry (inside pamtester) to the daemon's ready event")
    prompt = f("act_prompt", "activated by the first PAM call: pam_authenticate → prompt", "ms",
               "the same run, to the conversation call with the prompt")
    rss = f("act_rss", "activated: daemon RSS after the first authentication", "MB", "VmRSS after that first match")
    missing = [s for s in ctx.systems if s.name == "touchgate" and not shutil.which("systemd-socket-activate")]
    for s in missing:
        for fig in (ready, prompt, rss):
            fig.notes[s.name] = "n/a (no systemd-socket-activate)"
    systems = [s for s in ctx.systems if s not in missing]
    try:
        for rep in range(ctx.plan.reps):
            for s in (systems if rep % 2 == 0 else systems[::-1]):
                s.stop()
                s.start_activatable()
                c = ctx.pam(s)
                try:
                    t_ready = s.wait_activated()
                    c.wait_for(s.prompt)
                    s.reader.scan(PRINT)
                    c.finish()
                except ClientTimeout as e:
                    # Counted and shown with the figure, not hidden; the daemon's log says why.
                    prompt.outcome(s.name, "no prompt: " + str(e).splitlines()[-2].strip(" |"))
                    ctx.say("  %s: the first PAM call showed no prompt; the daemon's log:\n%s"
                            % (s.name, s.log.dump() if getattr(s, "log", None) else "(none)"))
                    s.stop()
                    continue
                finally:
                    c.kill()
                t = c.timing()
                prompt.outcome(s.name, t.result)
                ready.add(s.name, ms(t_ready - t.start))
                prompt.add(s.name, ms(t.message(s.prompt) - t.start))
                s.wait_served()
                rss.add(s.name, procstat.memory_mb(s.daemon_pid())["VmRSS"])
                s.stop()
    finally:
        for s in ctx.systems:
            s.stop()
            s.end_activation()
            s.start()


def traced(ctx):
    """The daemon's own scan → reply time, from strace timestamps (an upper bound: tracing stops it)."""
    if not shutil.which("strace"):
        return
    f = ctx.figures
    own = f("trace_scan_reply", "scan → reply inside the daemon (under strace)", "ms",
            "daemon started under strace -f --seccomp-bpf tracing reads, writes, fsync and rename only; from the "
            "end of the read that takes 'SCAN' to the start of the reply's write (touchgate: RESULT frame; "
            "fprintd: VerifyStatus signal); tracing adds to it")
    sync = f("trace_sync", "of which in fsync/fdatasync", "ms", "the fsync and fdatasync calls in that interval")
    count = f("trace_syncs", "fsync/fdatasync calls between scan and reply", "count",
              "the number of those calls; the JSON also counts renames and all traced calls in between")
    for s in ctx.systems:
        out = ctx.world.dir / ("%s.strace" % s.name)
        s.stop()
        s.start(wrap=straced.command(out))
        try:
            ctx.authenticate(s)  # warm
            for _ in range(ctx.plan.trace_reps):
                ctx.authenticate(s)
        finally:
            s.stop()
        spans = straced.scan_to_reply(straced.parse(out), s.is_reply)[1:]  # the warm-up's first
        for span in spans:
            own.add(s.name, span["ms"])
            sync.add(s.name, span["sync_ms"])
            count.add(s.name, span["syncs"])
        ctx.series.setdefault("trace", {})[s.name] = spans
        out.unlink()
        s.start()

