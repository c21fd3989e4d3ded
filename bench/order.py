"""Writes data/touchgated.order, the link order of the daemon's hot functions.

The kernel maps a file page together with its cached neighbours (fault-around, 64 KB), so a daemon
whose start and authentication run code spread over its whole binary keeps most of the binary
resident (bench/attribution.py shows it). Linked first and side by side, the functions that run
fill few windows. Which ones run is taken, not guessed: touchgated (a release build) runs under
valgrind's callgrind on libfprint's virtual reader through a start, an enrollment and an
authentication with a matching finger (through pam_touchgate.so), and the functions of its own binary that executed are listed, mangled, in
the order of their cost. lld's --symbol-ordering-file reads the list (Package.swift); a name that
a later build no longer has is skipped. Re-run after larger changes:

    python3 bench/order.py --touchgate-bin .build/release   (as root, with Debian's python3 and valgrind)
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "Tests" / "EndToEnd"))
sys.path.insert(0, str(REPO / "bench"))

import harness  # noqa: E402
import scenarios  # noqa: E402
from pamclient import build_timing_shim  # noqa: E402
from sys_touchgate import Touchgate  # noqa: E402

OUT = REPO / "data" / "touchgated.order"
HEADER = ("# touchgated's hot functions, linked first (lld --symbol-ordering-file; made by bench/order.py,\n"
          "# which says why). One mangled name per line.\n")


def executed(profile, binary):
    """{mangled name: instructions} of the functions of `binary` that ran, from a callgrind file."""
    names, objects, cost = {}, {}, collections.Counter()
    current_ob = current_fn = None
    compressed = re.compile(r"^(c?fn|c?ob|fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$")
    for line in Path(profile).read_text(errors="replace").splitlines():
        m = compressed.match(line)
        if m:
            kind, ident, name = m.groups()
            table = objects if kind.endswith("ob") else names if kind.endswith("fn") else None
            if table is not None and name is not None:
                table[ident] = name.split("'")[0]  # callgrind's 'N marks a recursion level
            if kind == "ob":
                current_ob = objects.get(ident)
            elif kind == "fn":
                current_fn = names.get(ident)
            continue
        if line[:1].isdigit() and current_fn and current_ob == binary:
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                cost[current_fn] += int(fields[1])
    return cost


def profile(touchgated, out_dir):
    world = harness.World()
    system = None
    try:
        system = Touchgate(world, touchgated)
        cg = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no",
              "--callgrind-out-file=%s/callgrind.%%p.out" % out_dir]
        system._spawn(cg + system.argv(), system.env())
        system._wait_ready(300)
        system.pid = system.proc.pid
        system.enroll(scenarios.USER, scenarios.PRINT)
        ctx = scenarios.Context(world, [system], None, None, build_timing_shim(world.dir), print)
        ctx.authenticate(system, timeout=120)
    finally:
        if system is not None:
            system.stop()
        world.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--touchgate-bin", type=Path, default=REPO / ".build" / "release",
                   help="directory with the release build's touchgated and touchgate")
    p.add_argument("--pam-module", type=Path, default=REPO / "pam" / "pam_touchgate.so")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    harness.TOUCHGATE, harness.PAM_MODULE = args.touchgate_bin / "touchgate", args.pam_module
    with tempfile.TemporaryDirectory() as tmp:
        # Without its DWARF (valgrind 3.19 cannot read Swift's DWARF 5); the symbol table stays.
        binary = os.path.join(tmp, "touchgated")
        subprocess.run(["objcopy", "--strip-debug", args.touchgate_bin / "touchgated", binary], check=True)
        harness.TOUCHGATED = Path(binary)
        profile(binary, tmp)
        cost = collections.Counter()
        for f in Path(tmp).glob("callgrind.*.out"):
            cost.update(executed(f, binary))
    if not cost:
        sys.exit("order.py: no function of %s ran under callgrind" % binary)
    names = [name for name, _ in cost.most_common()]
    args.out.write_text(HEADER + "".join(n + "\n" for n in names))
    print("order.py: %d functions of touchgated written to %s" % (len(names), args.out))


if __name__ == "__main__":
    main()
