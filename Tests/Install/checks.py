"""Checks on what the package build made, run on the host: lintian over the source or binary
packages, readelf over the installed binaries."""

import os
import re
import subprocess
import tempfile

import machine as m


def lintian(target, label, limit):
    """lintian -I -E --pedantic on a .dsc or .changes: its tags, logged as counts and then each
    (an overridden tag once by name: debian/*.lintian-overrides give the reasons). lintian leaves its
    ELF caches (mldbm-elf-*) in TMPDIR, so it gets a directory of its own, removed after."""
    t0 = m.now()
    with tempfile.TemporaryDirectory(prefix="tg-lintian-") as tmp:
        p = m.run(["lintian", "-I", "-E", "--pedantic", "--show-overrides", target], limit=limit, check=False,
                  env=dict(os.environ, TMPDIR=tmp))
    # 1 is lintian reporting tags (the callers judge them); anything else is lintian not having run.
    assert p.returncode in (0, 1), "lintian exited %d:\n%s%s" % (p.returncode, p.stdout, p.stderr)
    tags = [line for line in p.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
    m.log("lintian (%s, %.0f s): " % (label, m.now() - t0) + ", ".join(
        "%d %s" % (sum(1 for t in tags if t.startswith(k + ":")), name)
        for k, name in [("E", "errors"), ("W", "warnings"), ("I", "info"), ("P", "pedantic"), ("O", "overridden")]))
    for tag in sorted({re.match(r"O: \S+ \S+", t).group(0) if t.startswith("O:") else t for t in tags}):
        m.log("  " + tag)
    return tags, p.stdout


def elf_hardening(path):
    """What readelf shows of a binary's hardening: problems found (an empty list when none)."""
    def readelf(*args):
        return subprocess.run(["readelf", "-W", *args, path], capture_output=True, text=True, check=True,
                              timeout=m.COMMAND_LIMIT).stdout
    problems = []
    segments = re.findall(r"^\s+(LOAD|GNU_STACK|GNU_RELRO)\s.*\s([R ][W ][E ])\s+(?:0x[0-9a-f]+|0)$", readelf("-l"), re.M)
    if not any(kind == "GNU_RELRO" for kind, _ in segments):
        problems.append("no RELRO segment")
    problems += ["%s segment %r is writable and executable" % (kind, flags)
                 for kind, flags in segments if "W" in flags and "E" in flags]
    dynamic = readelf("-d")
    if "BIND_NOW" not in dynamic and not re.search(r"FLAGS_1\).*\bNOW\b", dynamic):
        problems.append("not linked with -z now")
    # The stack protector, and libc calls fortified (_FORTIFY_SOURCE), in the C of the binary.
    imports = {name.split("@")[0] for name in re.findall(r"\sUND\s+(\S+)", readelf("--dyn-syms"))}
    if "__stack_chk_fail" not in imports:
        problems.append("no stack protector")
    if not {name for name in imports if name.endswith("_chk") and name != "__stack_chk_fail"}:
        problems.append("no fortified libc call")
    header = readelf("-h")
    if "Shared object file" not in header and "DYN (Position-Independent Executable" not in header:
        problems.append("not position-independent")
    # Section flags: W writable, X executable; constant data stays read-only (data/link/rodata.ld).
    for name, flags in re.findall(r"^\s+\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+(\S*)",
                                  readelf("-S"), re.M):
        if "W" in flags and ("X" in flags or name.startswith((".rodata", ".text", ".eh_frame"))):
            problems.append("section %s is writable (%s)" % (name, flags))
    return problems
