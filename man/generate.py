#!/usr/bin/env python3
"""Writes the manual pages: touchgate(1) and touchgated(8) from the commands' own --help (through
swift-argument-parser's generate-manual, so they cannot drift from it) plus the sections in
man/*.sections, and touchgate.conf(5) as written; then lints every page with mandoc.

usage: generate.py --tool GENERATE_MANUAL --bin DIR --out DIR [--date YYYY-MM-DD] [--lint PAGE...]
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGES = {"touchgate": 1, "touchgated": 8}
# mdoc's conventional order: sections added before EXIT STATUS (which the generator writes) or after.
BEFORE_EXIT = {"ENVIRONMENT", "FILES"}
SENTENCE_END = re.compile(r"(?<=[a-z0-9)'\]][.!?]) +(?=\S)")


# generate-manual runs the command with --experimental-dump-help and waits for it; now and then
# (under load) it never notices the command's exit and waits for ever. Each run has a deadline,
# and one that passes it is run again.
GENERATE_DEADLINE = 120  # s
GENERATE_TRIES = 3


def generate(tool, binary, section, date, workdir):
    argv = [tool, str(binary), "--section", str(section), "--date", date, "-o", str(workdir)]
    for attempt in range(1, GENERATE_TRIES + 1):
        try:
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=GENERATE_DEADLINE)
            break
        except subprocess.TimeoutExpired:
            print("generate.py: generate-manual for %s did not end within %d s (try %d of %d)"
                  % (binary.name, GENERATE_DEADLINE, attempt, GENERATE_TRIES), file=sys.stderr)
    else:
        sys.exit("generate.py: generate-manual for %s never ended" % binary.name)
    return (workdir / ("%s.%d" % (binary.name, section))).read_text()


def defaults(binary):
    """{(subcommand path, item): default} from the command's own --experimental-dump-help, as its
    --help shows them (generate-manual leaves them out); item is `Fl -name` for an option, `Ar
    value` for a positional argument."""
    dump = subprocess.run([str(binary), "--experimental-dump-help"], capture_output=True, text=True,
                          check=True, timeout=GENERATE_DEADLINE).stdout
    found = {}

    def walk(command, path):
        for argument in command.get("arguments", []):
            if "defaultValue" not in argument or argument.get("kind") == "flag":
                continue
            longs = [n["name"] for n in argument.get("names", []) if n.get("kind") == "long"]
            item = "Fl -" + longs[0] if longs else "Ar " + argument.get("valueName", "")
            found[(tuple(path), item)] = argument["defaultValue"]
        for sub in command.get("subcommands", []):
            walk(sub, path + [sub["commandName"]])

    walk(json.loads(dump)["command"], [])
    return found


def add_defaults(page, found):
    """After each option's description, its default. The page's lists nest as its commands do: an
    `.It Em NAME` item is a subcommand, whose options are the list inside it."""
    out, depth, commands, pending = [], 0, [], None
    for line in page.splitlines():
        if pending is not None and (line.startswith(".It ") or line == ".El"):
            out += ["The default is", ".Ql %s ." % pending]
            pending = None
        if line.startswith(".Bl"):
            depth += 1
        elif line == ".El":
            depth -= 1
        elif line.startswith(".It Em "):
            commands = commands[:depth - 1] + [line[len(".It Em "):]]
        elif line.startswith(".It "):
            path = tuple(commands[:depth - 1])
            item = " ".join(line[len(".It "):].split()[:2])
            pending = found.get((path, item))
        out.append(line)
    return "\n".join(out) + "\n"


def tidy(page):
    """mdoc style the generator does not follow: one sentence per line, no period after .Nd, and
    no `help` subcommand for a command that has no subcommands; and the usage error's exit status."""
    lines = page.splitlines()
    only_help = [l for l in lines if l.startswith(".It Em ")] == [".It Em help"]
    out = []
    skipping = False
    for line in lines:
        if only_help:
            if line == ".Ar subcommand":
                continue
            if line == ".It Em help":
                skipping = True
            if skipping:
                if line == ".El":
                    skipping = False
                continue
        if line == ".Ex -std":
            # The argument parser's own: said here, as its --help does not say it. A command with
            # subcommands (touchgate's main() makes a group without one a usage error) says that too.
            cases = "an unknown option, a missing or conflicting argument"
            if not only_help and any(l.startswith(".It Em ") for l in lines):
                cases += ", a missing subcommand"
            out += [line, "A usage error (%s) exits 64," % cases, "after a line beginning", ".Ql Error:",
                    "and the usage."]
            continue
        if line.startswith(".Nd "):
            line = re.sub(r'\.(")?$', r"\1", line)
        elif not line.startswith("."):
            line = SENTENCE_END.sub("\n", line)
        out.append(line)
    return "\n".join(out) + "\n"


def add_sections(page, extra):
    """Inserts the .Sh sections of `extra` before or after EXIT STATUS, as mdoc orders them."""
    sections, current = [], None
    for line in extra.splitlines():
        if line.startswith('.\\"'):
            continue
        if line.startswith(".Sh "):
            current = [line]
            sections.append(current)
        elif current is not None:
            current.append(line)
    before = [s for s in sections if s[0][4:].strip('"') in BEFORE_EXIT]
    after = [s for s in sections if s not in before]
    lines = page.rstrip("\n").splitlines()
    exit_at = next(i for i, l in enumerate(lines) if l.startswith(".Sh") and "EXIT STATUS" in l)
    merged = lines[:exit_at] + [l for s in before for l in s] + lines[exit_at:] + [l for s in after for l in s]
    return "\n".join(merged) + "\n"


def lint(pages):
    """mandoc's warnings and errors (not its style remarks); an empty list means clean."""
    problems = []
    for page in pages:
        r = subprocess.run(["mandoc", "-T", "lint", "-W", "warning", str(page)], capture_output=True, text=True)
        problems += [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
        if r.returncode != 0 and not problems:
            problems.append("%s: mandoc exited %d" % (page, r.returncode))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True, help="swift-argument-parser's generate-manual")
    ap.add_argument("--bin", required=True, type=Path, help="directory with touchgate and touchgated")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--date", default=None, help="the pages' date (default: today)")
    ap.add_argument("--lint", nargs="*", default=[], type=Path, help="more pages to lint")
    args = ap.parse_args()
    date = args.date or subprocess.run(["date", "+%Y-%m-%d"], capture_output=True, text=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, section in PAGES.items():
            page = tidy(generate(args.tool, args.bin / name, section, date, Path(tmp)))
            page = add_defaults(page, defaults(args.bin / name))
            page = add_sections(page, (HERE / ("%s.%d.sections" % (name, section))).read_text())
            target = args.out / ("%s.%d" % (name, section))
            target.write_text(page)
            written.append(target)
    conf = args.out / "touchgate.conf.5"
    shutil.copyfile(HERE / "touchgate.conf.5", conf)
    written.append(conf)
    problems = lint(written + args.lint)
    for p in problems:
        print("man: " + p, file=sys.stderr)
    print("man: %d pages written to %s, %d linted, %d mandoc warnings"
          % (len(written), args.out, len(written) + len(args.lint), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
