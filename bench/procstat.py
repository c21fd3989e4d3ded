"""What a process costs, from /proc: CPU time (all its threads, dead ones included) and resident memory."""

import os

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
