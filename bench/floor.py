"""The floor under each daemon's memory: libfprint's reader opened and left idle in GLib's loop
(bench/floor/reader.c), once under a C main, the language fprintd is written in, and once under a
static Swift main linked with touchgated's link flags. Neither program does any of a daemon's own
work (no bus, no prints, no authentication), so a daemon written in that language on these
libraries cannot be smaller than its program: the touchgate column is the Swift one, the fprintd
column the C one."""

import os
import select
import subprocess
import time
from pathlib import Path

import attribution
import procstat

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
READY_WAIT = 10.0  # seconds for a program to open its reader and say "ready"


def pkg_config(*args):
    return subprocess.run(["pkg-config", *args, "libfprint-2"], capture_output=True, text=True,
                          check=True).stdout.split()


def build(workdir):
    """{"touchgate": Swift program, "fprintd": C program}, built in workdir."""
    src = HERE / "floor"
    c_program, swift_program, reader = workdir / "floor-c", workdir / "floor-swift", workdir / "floor-reader.o"
    subprocess.run(["cc", "-O2", "-c", str(src / "reader.c"), "-o", str(reader), *pkg_config("--cflags")], check=True)
    subprocess.run(["cc", "-O2", str(src / "main.c"), str(reader), "-o", str(c_program), *pkg_config("--libs")],
                   check=True)
    # The link flags of touchgated's target in Package.swift, less its order file (made for the daemon).
    subprocess.run(["swiftc", "-O", "-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker",
                    "pack-relative-relocs", "-Xlinker", "--no-export-dynamic", "-L%s" % (REPO / "data" / "link"),
                    str(src / "main.swift"), str(reader), "-o", str(swift_program),
                    *pkg_config("--libs")],
                   check=True, cwd=workdir)
    return {"touchgate": swift_program, "fprintd": c_program}


def measure(program, socket_path):
    """(memory_mb, attribution report) of `program` once it has opened the virtual reader."""
    env = dict(os.environ, FP_VIRTUAL_DEVICE=str(socket_path), FP_DRIVERS_WHITELIST="virtual_device")
    p = subprocess.Popen([str(program)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + READY_WAIT
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
                raise RuntimeError("%s: not ready within %.0f s" % (program.name, READY_WAIT))
            chunk = os.read(p.stdout.fileno(), 64)
            if not chunk:
                raise RuntimeError("%s exited: %s" % (program.name, p.stderr.read().decode(errors="replace")))
            line += chunk
        return procstat.memory_mb(p.pid), attribution.report(p.pid, top=8)
    finally:
        p.kill()
        p.wait()


def floor(ctx):
    """Per repetition, each program started afresh; figures beside the daemons' cold-start ones."""
    f = ctx.figures
    how = ("bench/floor/reader.c (libfprint's reader opened, GLib's loop idle) under a static Swift main linked "
           "as touchgated (touchgate) and under a C main (fprintd); no daemon's work at all")
    rss = f("floor_rss", "floor: the reader open, idle, in the daemon's language: RSS", "MB", "VmRSS; " + how)
    anon = f("floor_rss_anon", "floor: the same: RssAnon", "MB", "RssAnon of the same")
    workdir = Path(ctx.world.dir) / "floor"
    workdir.mkdir(exist_ok=True)
    programs = build(workdir)
    for rep in range(ctx.plan.reps):
        for s in ctx.order(rep):
            mem, report = measure(programs[s.name], workdir / ("reader-%s-%d" % (s.name, rep)))
            rss.add(s.name, mem["VmRSS"])
            anon.add(s.name, mem["RssAnon"])
            if rep == ctx.plan.reps - 1:
                ctx.say("  %s's floor (%s): %s" % (s.name, programs[s.name].name, report.replace("\n", "\n    ")))
