"""touchgate beside fprintd, measured in one run on libfprint's virtual reader; prints a table, writes JSON.

Run through bench/run, which installs what is needed, builds touchgate's release build and unpacks
Debian's fprintd and pam_fprintd privately. Asserts nothing about speed: it prints numbers.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from gi.repository import GLib

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "Tests" / "EndToEnd"))

import harness  # noqa: E402  (after the path above)
import figures  # noqa: E402
import floor  # noqa: E402
import kinds  # noqa: E402
import lifecycle  # noqa: E402
import procstat  # noqa: E402
import scenarios  # noqa: E402
from pamclient import build_timing_shim  # noqa: E402
from privatebus import LOGIND, POLKIT, BusClient, PrivateBus  # noqa: E402
from sys_fprintd import Fprintd  # noqa: E402
from sys_touchgate import Touchgate  # noqa: E402


class Plan:
    def __init__(self, mode, reps, auths, frozen_reps, burst, trace_reps):
        self.mode, self.reps, self.auths = mode, reps, auths
        self.frozen_reps, self.burst, self.trace_reps = frozen_reps, burst, trace_reps


PLANS = {
    "quick": Plan("quick", reps=5, auths=200, frozen_reps=1, burst=200, trace_reps=5),
    "full": Plan("full", reps=40, auths=2000, frozen_reps=3, burst=200, trace_reps=40),
}

SCENARIOS = [
    ("no-prints", scenarios.no_prints), ("success", scenarios.success), ("direct", scenarios.direct),
    ("wrong-finger", scenarios.wrong_then_match), ("concurrent", scenarios.concurrent),
    ("burst", scenarios.burst), ("back-to-back", lifecycle.back_to_back), ("frozen", scenarios.frozen),
    ("cold-start", lifecycle.cold_start), ("activation", lifecycle.activation), ("trace", lifecycle.traced),
    ("floor", floor.floor), ("other-readers", kinds.other_readers),
]


def arguments():
    p = argparse.ArgumentParser(description="touchgate beside fprintd, on libfprint's virtual reader.")
    p.add_argument("--quick", action="store_true", help="few repetitions and small counts (a couple of minutes)")
    p.add_argument("--reps", type=int, help="repetitions per scenario (quick 5, full 40)")
    p.add_argument("--auths", type=int, help="back-to-back authentications per system (quick 200, full 2000)")
    p.add_argument("--only", help="comma-separated scenarios: " + ",".join(n for n, _ in SCENARIOS))
    p.add_argument("--touchgate-bin", type=Path, default=REPO / ".build" / "release",
                   help="directory with touchgated and touchgate (default: this checkout's release build)")
    p.add_argument("--pam-module", type=Path, help="pam_touchgate.so (default: next to --touchgate-bin, "
                                                   "else that checkout's pam/, else this checkout's)")
    p.add_argument("--fprintd-root", type=Path, required=True, help="Debian's fprintd and libpam-fprintd, unpacked")
    p.add_argument("--json", type=Path, help="where to write the results (default: bench/results/…)")
    p.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    return p.parse_args()


def pam_module_for(args):
    if args.pam_module:
        return args.pam_module
    # Beside the binaries, else in the checkout they were built in (…/.build/release), else this one.
    candidates = [args.touchgate_bin / "pam_touchgate.so"]
    candidates += [d / "pam" / "pam_touchgate.so" for d in args.touchgate_bin.absolute().parents]
    return next((c for c in candidates if c.exists()), REPO / "pam" / "pam_touchgate.so")


def command_output(argv, cwd=None):
    try:
        return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    mem = next((line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")), "0")
    debian = Path("/etc/debian_version").read_text().strip() if Path("/etc/debian_version").exists() else "?"
    return {"cpu": cpu, "cpus": os.cpu_count(), "memory_GB": round(int(mem) / 1048576, 1),
            "kernel": platform.release(), "debian": debian}


def versions(args, touchgated, module):
    # The checkout the binaries sit in, as it is now, and the binaries themselves (a rebuilt tree
    # shows as a different sha256 even when the checkout's HEAD did not move).
    checkout = command_output(["git", "describe", "--always", "--dirty"], cwd=touchgated.resolve().parent)
    return {"touchgate": {"touchgated": str(touchgated), "pam_module": str(module), "checkout": checkout or "?",
                          "touchgated_sha256": hashlib.sha256(touchgated.read_bytes()).hexdigest()[:16],
                          "pam_module_sha256": hashlib.sha256(module.read_bytes()).hexdigest()[:16],
                          "built": datetime.datetime.fromtimestamp(touchgated.stat().st_mtime).isoformat(timespec="seconds")},
            "fprintd": command_output(["dpkg-deb", "-f", str(next(args.fprintd_root.parent.glob("debs/fprintd_*.deb"), "")),
                                       "Version"]) or args.fprintd_root.parent.name,
            "libfprint": command_output(["dpkg-query", "-W", "-f=${Version}", "libfprint-2-2"]),
            "pamtester": command_output(["dpkg-query", "-W", "-f=${Version}", "pamtester"]),
            "pam_wrapper": command_output(["dpkg-query", "-W", "-f=${Version}", "libpam-wrapper"])}


def start_bus(directory, buses):
    """A private system bus in `directory` with polkit (told to allow every action) and logind
    stand-ins, appended to `buses` as (bus, client) as soon as each exists, so it is stopped even if
    a later step fails."""
    directory.mkdir()
    bus = PrivateBus(directory)
    buses.append((bus, None))
    client = BusClient(bus.address)
    buses[-1] = (bus, client)
    client.watch_names(POLKIT, LOGIND)
    bus.start_stand_in(client, "polkitd", POLKIT)
    client.call(POLKIT, "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.DBus.Mock", "AllowUnknown",
                GLib.Variant("(b)", (True,)))
    bus.start_stand_in(client, "logind", LOGIND)


def say(text):
    print(text, flush=True)


def main():
    args = arguments()
    plan = PLANS["quick" if args.quick else "full"]
    plan.reps = args.reps or plan.reps
    plan.auths = args.auths or plan.auths
    chosen = [s for s in args.only.split(",")] if args.only else [n for n, _ in SCENARIOS]
    unknown = set(chosen) - {n for n, _ in SCENARIOS}
    if unknown:
        sys.exit("unknown scenario(s): %s" % ", ".join(sorted(unknown)))

    touchgated = args.touchgate_bin / "touchgated"
    module = pam_module_for(args)
    for path in (touchgated, args.touchgate_bin / "touchgate", module):
        if not path.exists():
            sys.exit("bench: %s not found (build it, or give --touchgate-bin / --pam-module)" % path)
    harness.TOUCHGATED, harness.TOUCHGATE, harness.PAM_MODULE = touchgated, args.touchgate_bin / "touchgate", module
    info = {"mode": plan.mode, "reps": plan.reps, "auths": plan.auths, "machine": machine(),
            "versions": versions(args, touchgated, module), "started": datetime.datetime.now().isoformat(timespec="seconds")}
    say("touchgate beside fprintd, %s run (%d repetitions, %d back-to-back authentications)" % (plan.mode, plan.reps, plan.auths))
    say("  touchgate: %(touchgated)s (sha256 %(touchgated_sha256)s, built %(built)s in checkout %(checkout)s)"
        % info["versions"]["touchgate"])
    say("  pam_touchgate.so: %(pam_module)s (sha256 %(pam_module_sha256)s)" % info["versions"]["touchgate"])
    say("  fprintd %s and pam_fprintd from %s" % (info["versions"]["fprintd"], args.fprintd_root))
    say("  machine: %(cpu)s, %(cpus)d CPUs, %(memory_GB)s GB, Linux %(kernel)s, Debian %(debian)s" % info["machine"])
    busy = procstat.cpu_pressure_now()
    if busy is not None and busy > 20:
        say("  note: the machine is busy (something waited for a CPU %.0f%% of the last 10 s): expect noisy figures" % busy)

    world = harness.World()
    buses = []  # (bus, client): fprintd's, then touchgate's
    systems = []
    whole = procstat.Contention()
    try:
        # Each daemon on a system bus of its own (both own fprintd's name), with the same stand-ins.
        for name in ("fprintd-bus", "touchgate-bus"):
            start_bus(world.dir / name, buses)
        (bus, client), (tg_bus, tg_client) = buses
        systems = [Touchgate(world, touchgated, tg_bus, tg_client), Fprintd(world, args.fprintd_root, bus, client)]
        for s in systems:
            s.start()
            s.enroll(scenarios.USER, scenarios.PRINT)
            if hasattr(s, "without_pam_wrapper"):  # no password is typed from here on
                s.without_pam_wrapper()
        ctx = scenarios.Context(world, systems, plan, figures.Figures(), build_timing_shim(world.dir), say)
        for s in systems:
            ctx.authenticate(s)  # warm: the first authentication of each is not measured
        info["scenarios"] = {}
        for name, run in SCENARIOS:
            if name in chosen:
                say("== %s" % name)
                contention = procstat.Contention()
                run(ctx)
                info["scenarios"][name] = contention.end()
                say("   %s" % procstat.describe(info["scenarios"][name]))
    finally:
        for s in systems:
            s.stop()
        for bus, client in buses:
            if client:
                client.close()
            bus.stop()
        world.close()
    info["run"] = whole.end()

    say("")
    say("touchgate beside fprintd (%s run: %s)" % (plan.mode, procstat.describe(info["run"])))
    for line in figures.table(ctx.figures):
        say(line)
    say("")
    say("median (p10–p90 when n ≥ 10, else min–max); the last column is fprintd's median over touchgate's.")
    say("How each figure is taken:")
    for line in figures.legend(ctx.figures):
        say(line)
    if args.markdown:
        say("")
        for line in figures.markdown(ctx.figures):
            say(line)
    path = args.json or REPO / "bench" / "results" / ("%s-%s.json" % (datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), plan.mode))
    path.parent.mkdir(parents=True, exist_ok=True)
    info["figures"] = [f.to_json() for f in ctx.figures.rows]
    info["series"] = ctx.series
    path.write_text(json.dumps(info, indent=1) + "\n")
    say("")
    say("JSON: %s" % path)


if __name__ == "__main__":
    main()
