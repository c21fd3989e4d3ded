"""Benchmark: the paths the peer (fprintd 1.94.2 + pam_fprintd) was measured on, same machine kind,
same virtual reader, pamtester in a pty. Prints numbers; asserts nothing about speed.

    python3 Tests/EndToEnd/bench.py [runs]      (scripts/bench.sh builds first)
"""

import signal
import statistics
import sys
import time

import harness
from harness import PROMPT

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
PEER = {  # ../shared/NOTES.md, "The peer, measured here"
    "no prints: pam_authenticate": "2.9–3.4 ms",
    "prompt shown after pam_authenticate starts": "10.6–11.2 ms",
    "scan → PAM_SUCCESS": "0.5 ms",
    "frozen daemon: PAM gives up after": "25 s",
    "8 concurrent prompts": "7 refused silently",
    "daemon RSS idle": "9.4 MB",
}


def stats(values):
    values = sorted(values)
    return "median %.2f ms, min %.2f, max %.2f (n=%d)" % (statistics.median(values), values[0], values[-1], len(values))


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def main():
    results = {}
    with harness.World() as world:
        world.start_daemon()
        assert harness.enroll(world, "alice", "alice-print", as_user="alice")[0] == 0

        no_prints, prompt, scan = [], [], []
        for _ in range(RUNS):
            pam = world.pam("bob").wait()
            assert pam.result == "PAM_AUTHINFO_UNAVAIL", pam.transcript()
            no_prints.append(harness.ms(pam.ended - pam.auth_started()))
        for _ in range(RUNS):
            pam = world.pam("alice")
            i = pam.wait_for(PROMPT)
            prompt.append(harness.ms(pam.out.lines[i][0] - pam.auth_started()))
            t = time.monotonic()
            world.reader.scan("alice-print")
            pam.wait()
            assert pam.result == "PAM_SUCCESS", pam.transcript()
            scan.append(harness.ms(pam.ended - t))
        results["no prints: pam_authenticate"] = stats(no_prints)
        results["prompt shown after pam_authenticate starts"] = stats(prompt)
        results["scan → PAM_SUCCESS"] = stats(scan) + " (includes pamtester exit)"

        sessions = [world.pam("alice") for _ in range(8)]
        deadline = time.monotonic() + 30
        waiting_told = 0
        served = set()
        while len(served) < 8:  # the reader serves them in the order they connected: serve whoever has it
            assert time.monotonic() < deadline, "\n\n".join(s.transcript() for s in sessions)
            for n, s in enumerate(sessions):
                if n not in served and PROMPT in s.messages():
                    world.reader.scan("alice-print")
                    s.wait()
                    served.add(n)
            time.sleep(0.001)
        ok = sum(s.result == "PAM_SUCCESS" for s in sessions)
        waiting_told = sum(any("Waiting for the fingerprint reader" in m for m in s.messages()) for s in sessions)
        results["8 concurrent prompts"] = "%d of 8 succeeded in turn, %d told they were waiting, 0 refused" % (ok, waiting_told)

        results["daemon RSS idle"] = "%.1f MB (debug build)" % rss_mb(world.daemon.proc.pid)

        world.daemon.signal(signal.SIGSTOP)
        pam = world.pam("alice").wait(timeout=30)
        results["frozen daemon: PAM gives up after"] = "%.0f ms (%s)" % (harness.ms(pam.ended - pam.auth_started()), pam.result)
        world.daemon.signal(signal.SIGCONT)

    width = max(map(len, results))
    print("%-*s  %-60s  %s" % (width, "path", "touchgate", "fprintd (NOTES)"))
    for key, value in results.items():
        print("%-*s  %-60s  %s" % (width, key, value, PEER[key]))


if __name__ == "__main__":
    main()
