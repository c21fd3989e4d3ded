"""Writes data/touchgated.order, the link order of the daemon's hot functions.

The kernel maps a file page together with its cached neighbours (fault-around, 64 KB), so a daemon
whose start and authentication run code spread over its whole binary keeps most of the binary
resident (bench/attribution.py shows it). Linked first and side by side, the functions that run
fill few windows. Which ones run is taken, not guessed: touchgated (a release build) runs under
valgrind's callgrind on libfprint's virtual reader through a start, an enrollment and an
authentication with a matching finger (through pam_touchgate.so), and the functions of its own binary that executed are listed, mangled, in
the order of their cost (those of the prebuilt libraries' monolithic `.text` sections last). lld's --symbol-ordering-file reads the list (Package.swift); a name that
a later build no longer has is skipped. Re-run after larger changes:

    python3 bench/order.py --touchgate-bin .build/release   (as root, with Debian's python3 and valgrind)
"""

import argparse
import collections
import os
import re
import shutil
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


def archive_functions(archive, only_big=False):
    """Names of the functions in an archive's `.text` sections; with only_big, those in the plain
    `.text` of objects where it exceeds 16 KB."""
    big, names, member = set(), set(), None
    if only_big:
        for line in subprocess.run(["objdump", "-h", archive], capture_output=True, text=True).stdout.splitlines():
            if ":     file format" in line:
                member = line.split(":")[0]
            fields = line.split()
            if len(fields) >= 3 and fields[1] == ".text" and int(fields[2], 16) > 16 * 1024:
                big.add(member)
    for line in subprocess.run(["objdump", "-t", archive], capture_output=True, text=True).stdout.splitlines():
        if ":     file format" in line:
            member = line.split(":")[0]
        elif (" F .text\t" in line if only_big else " F .text" in line) and (not only_big or member in big):
            names.add(line.split()[-1])
    return names


def monolithic_symbols():
    """Functions of the Swift toolchain's static libraries that sit in a large plain `.text` of
    their object (the standard library's Swift.o holds 1.5 MB of it): lld moves whole sections,
    so ordering one of them moves all of it to the front, and the list's later functions behind."""
    swiftc = shutil.which("swiftc") or "/opt/swift/usr/bin/swiftc"
    static = Path(swiftc).resolve().parents[1] / "lib" / "swift_static" / "linux"
    names = set()
    for archive in sorted(static.glob("*.a")):
        names |= archive_functions(archive, only_big=True)
    return names


def cxx_library_functions():
    """GCC's libstdc++.a (linked into the daemon, data/link): left out of the order, where its
    functions cost more resident pages than they save (measured: 1.2 MB more with them)."""
    archive = subprocess.run(["gcc", "-print-file-name=libstdc++.a"], capture_output=True, text=True).stdout.strip()
    return archive_functions(archive) if archive.startswith("/") else set()


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
    # Only names a linker can look up: callgrind also lists code it found no symbol for by address
    # ("0x…") and its own "(below main)".
    ranked = [name for name, _ in cost.most_common() if not name.startswith(("0x", "(")) and " " not in name]
    cxx = cxx_library_functions()
    ranked = [n for n in ranked if n not in cxx]
    dragging = monolithic_symbols()
    # Functions in sections of their own first, by cost; those in a large monolithic `.text` last.
    names = [n for n in ranked if n not in dragging] + [n for n in ranked if n in dragging]
    args.out.write_text(HEADER + "".join(n + "\n" for n in names))
    print("order.py: %d functions of touchgated written to %s" % (len(names), args.out))


if __name__ == "__main__":
    main()
