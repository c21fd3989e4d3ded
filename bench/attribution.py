"""Where a daemon's own binary is resident: its mapped pages that are present (/proc/PID/pagemap,
root only), credited to the ELF sections and, through the symbol table, to the Swift modules and C
libraries linked into it. Run beside a live daemon: `python3 bench/attribution.py PID`.

RSS counts a file page once it is mapped in the process; the binary's part of it is what the
runtime touched (conformance and metadata scans, relocations, the code that ran)."""

import os
import re
import struct
import subprocess
import sys
from collections import defaultdict

PAGE = 4096


def binary_of(pid):
    with open("/proc/%d/exe" % pid, "rb"):
        pass
    return subprocess.run(["readlink", "-f", "/proc/%d/exe" % pid], capture_output=True, text=True,
                          check=True).stdout.strip()


def mappings(pid, path):
    """[(start, end, file offset)] of the process's mappings of path."""
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == path:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                out.append((start, end, int(fields[2], 16)))
    return out


def present_pages(pid, maps):
    """Virtual addresses of the pages of maps that are in the process's page tables."""
    pages = []
    with open("/proc/%d/pagemap" % pid, "rb") as f:
        for start, end, _ in maps:
            f.seek(start // PAGE * 8)
            data = f.read((end - start) // PAGE * 8)
            for i, (entry,) in enumerate(struct.iter_unpack("<Q", data)):
                if entry >> 63:
                    pages.append(start + i * PAGE)
    return pages


def sections(path):
    """[(address, size, name)] of the sections loaded in memory (flag A), by address."""
    out = []
    text = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(\S*A\S*)", text):
        name, addr, size = m.group(1), int(m.group(2), 16), int(m.group(3), 16)
        if addr and size:
            out.append((addr, size, name))
    return sorted(out)


def module_of(symbol):
    """The Swift module or C library a symbol belongs to, from its (mangled) name."""
    m = re.match(r"^\$s(\d+)", symbol)
    if m:
        n = int(m.group(1))
        return symbol[2 + len(m.group(1)):2 + len(m.group(1)) + n]
    if symbol.startswith("$s"):
        return "Swift"  # the standard library's substitutions ($sSS, $sSa…)
    for prefix, name in (("CCryptoBoringSSL", "BoringSSL (swift-crypto)"), ("swift_", "Swift runtime"),
                         ("_swift_", "Swift runtime"), ("_ZN5swift", "Swift runtime"), ("u_", "ICU"),
                         ("icu_", "ICU"), ("_ZN6icu_", "ICU"), ("_ZNSt", "C++ library")):
        if symbol.startswith(prefix):
            return name
    if "icu" in symbol.lower():
        return "ICU"
    return "C (other)"


def symbols(path):
    """[(address, size, module)] of the defined symbols with a size, by address."""
    text = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    out = []
    for line in text.splitlines():
        # ADDRESS SIZE TYPE NAME; a name may hold blanks, or a line break (strings the optimiser
        # named after their text), whose second line is not a symbol.
        fields = line.split(maxsplit=3)
        if len(fields) == 4 and re.fullmatch(r"[0-9a-f]+", fields[0]) and re.fullmatch(r"[0-9a-f]+", fields[1]):
            out.append((int(fields[0], 16), int(fields[1], 16), module_of(fields[3])))
    return sorted(out)


def attribute(pid, path=None):
    """({section: KB}, {module: KB}, total KB) of the binary's resident pages."""
    path = path or binary_of(pid)
    maps = mappings(pid, path)
    base = min(start - off for start, _, off in maps)  # PIE: the address of link address 0
    pages = [p - base for p in present_pages(pid, maps)]
    by_section, by_module = defaultdict(float), defaultdict(float)
    secs = sections(path)
    for page in pages:
        covered = 0
        for addr, size, name in secs:  # a few dozen sections: no index needed
            overlap = min(addr + size, page + PAGE) - max(addr, page)
            if overlap > 0:
                by_section[name] += overlap / 1024
                covered += overlap
        if covered < PAGE:
            by_section["(headers, padding)"] += (PAGE - covered) / 1024
    resident = set(pages)
    for addr, size, module in symbols(path):
        first, last = addr // PAGE * PAGE, (addr + size - 1) // PAGE * PAGE
        for page in range(first, last + PAGE, PAGE):
            if page in resident:
                by_module[module] += (min(addr + size, page + PAGE) - max(addr, page)) / 1024
    return dict(by_section), dict(by_module), len(pages) * PAGE / 1024, windows(pages)


def windows(pages, size=16):
    """(windows with a resident page, pages resident in them) for aligned windows of `size` pages:
    where the kernel maps the neighbours of a faulting page that are cached (fault-around, 64 KB),
    touched windows are resident whole, and the count of windows is what the code's spread costs."""
    touched = {p // (size * PAGE) for p in pages}
    return len(touched), len(pages)


def by_mapping(pid):
    """{file, or [heap] / [stack] / (anonymous): (Rss KB, Anonymous KB)} from /proc/PID/smaps."""
    out = defaultdict(lambda: [0, 0])
    name = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                name = fields[5] if len(fields) > 5 else "(anonymous)"
            elif fields[0] in ("Rss:", "Anonymous:"):
                out[name][0 if fields[0] == "Rss:" else 1] += int(fields[1])
    return {k: tuple(v) for k, v in out.items()}


def threads(pid):
    """The process's threads by name, with how many share each name."""
    names = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
        except OSError:  # the thread ended meanwhile
            continue
        names[name] = names.get(name, 0) + 1
    return ", ".join("%s ×%d" % kv if kv[1] > 1 else kv[0] for kv in sorted(names.items()))


def report(pid, top=14):
    maps = sorted(by_mapping(pid).items(), key=lambda kv: -kv[1][0])
    lines = ["threads: " + threads(pid), "resident by mapping (KB, Rss / of which anonymous):"]
    for name, (rss, anon) in maps[:top]:
        lines.append("    %-60s %6d / %6d" % (name[-60:], rss, anon))
    by_section, by_module, total, (touched, pages) = attribute(pid)
    lines += ["the binary's resident pages: %.0f KB, in %d of its 64 KB windows (%.1f of 16 pages each)"
             % (total, touched, pages / max(touched, 1)), "  by section (KB):"]
    for name, kb in sorted(by_section.items(), key=lambda kv: -kv[1])[:top]:
        lines.append("    %-34s %8.0f" % (name, kb))
    lines.append("  by module, symbols with a size only (KB):")
    for name, kb in sorted(by_module.items(), key=lambda kv: -kv[1])[:top]:
        if kb >= 1:  # not the names a mangled local symbol's length prefix yields, at 0 KB
            lines.append("    %-34s %8.0f" % (name, kb))
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(int(sys.argv[1])))
