"""A daemon's own time from a scan to its reply, read from strace's timestamps.

The daemon is started under `strace -f --seccomp-bpf` tracing only the calls that carry data or
reach the disk, so untraced calls do not stop it. In the trace, a scan is the read that takes the
virtual reader's "SCAN …" line; the reply is the first later write that the system says is its
answer (touchgate: the RESULT frame; fprintd: the VerifyStatus signal to the bus).
"""

import re

TRACED = ("read", "recvfrom", "recvmsg", "write", "writev", "sendto", "sendmsg",
          "fsync", "fdatasync", "rename", "renameat", "renameat2")
READS = {"read", "recvfrom", "recvmsg"}
WRITES = {"write", "writev", "sendto", "sendmsg"}
SYNCS = {"fsync", "fdatasync"}

LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$")
CALL = re.compile(r"^(\w+)\(")
DURATION = re.compile(r"<(\d+\.\d+)>\s*$")
STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')


def command(out_path):
    """The prefix that starts a daemon under strace, writing the trace to `out_path`."""
    return ["strace", "-f", "--seccomp-bpf", "-qq", "-ttt", "-T", "-xx", "-s", "4096",
            "-e", "trace=" + ",".join(TRACED), "-o", str(out_path)]


def parse(path):
    """[(entry time, call, data bytes, duration)] in time order; split (unfinished/resumed) calls joined."""
    calls, pending = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                continue
            pid, t, rest = m.group(1), float(m.group(2)), m.group(3)
            if rest.endswith("<unfinished ...>"):
                pending[pid] = (t, rest[:-len("<unfinished ...>")])
                continue
            r = RESUMED.match(rest)
            if r:
                t, head = pending.pop(pid, (t, r.group(1) + "("))
                rest = head + r.group(2)
            c = CALL.match(rest)
            if not c:
                continue  # signals, exits
            d = DURATION.search(rest)
            data = b"".join(bytes.fromhex(s.replace("\\x", "")) for s in STRING.findall(rest))
            calls.append((t, c.group(1), data, float(d.group(1)) if d else 0.0))
    calls.sort(key=lambda call: call[0])
    return calls


def scan_to_reply(calls, is_reply):
    """For each scan: {"ms": scan read's end → reply's start, "sync_ms": time in fsync/fdatasync
    between them, "syncs": how many, "renames": how many, "calls": traced calls between}."""
    out = []
    i = 0
    while i < len(calls):
        t, name, data, dur = calls[i]
        i += 1
        if name not in READS or not data.startswith(b"SCAN "):
            continue
        scanned = t + dur
        syncs = sync_time = renames = between = 0
        for t2, name2, data2, dur2 in calls[i:]:
            if name2 in WRITES and is_reply(data2):
                out.append({"ms": (t2 - scanned) * 1000.0, "sync_ms": sync_time * 1000.0, "syncs": syncs,
                            "renames": renames, "calls": between})
                break
            between += 1
            if name2 in SYNCS:
                syncs += 1
                sync_time += dur2
            elif name2.startswith("rename"):
                renames += 1
    return out
