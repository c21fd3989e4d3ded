"""What a process costs, from /proc (CPU time of all its threads, dead ones included; resident memory),
and how busy the machine was meanwhile."""

import os
import time

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of the whole process, in seconds (resolution: one clock tick, usually 10 ms)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK  # fields 14 and 15 of proc(5)


def memory_mb(pid):
    """{"VmRSS": MB, "RssAnon": MB, "RssFile": MB} of a process."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024.0
    return out


def cpu_pressure_us():
    """The kernel's total of time some runnable task waited for a CPU (PSI), in µs; None without PSI."""
    try:
        with open("/proc/pressure/cpu") as f:
            return int(f.readline().rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


def cpu_pressure_now():
    """PSI's share of the last 10 s in which some task waited for a CPU, in %; None without PSI."""
    try:
        with open("/proc/pressure/cpu") as f:
            return float(f.readline().split("avg10=", 1)[1].split()[0])
    except (OSError, IndexError, ValueError):
        return None


class Contention:
    """Load average and CPU pressure over a stretch of the run: the machine may be shared."""

    def __init__(self):
        self.t, self.load, self.pressure = time.monotonic(), os.getloadavg()[0], cpu_pressure_us()

    def end(self):
        seconds = time.monotonic() - self.t
        pressure = cpu_pressure_us()
        waited = None if self.pressure is None or pressure is None else (pressure - self.pressure) / 1e6
        return {"seconds": round(seconds, 1), "load_start": self.load, "load_end": os.getloadavg()[0],
                "cpu_pressure_pct": None if waited is None else round(100.0 * waited / max(seconds, 1e-9), 1)}


def describe(contention):
    text = "%.1f s, load %.2f → %.2f" % (contention["seconds"], contention["load_start"], contention["load_end"])
    if contention["cpu_pressure_pct"] is not None:
        text += ", something waited for a CPU %.0f%% of the time" % contention["cpu_pressure_pct"]
    return text

