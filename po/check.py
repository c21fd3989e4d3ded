#!/usr/bin/env python3
"""The message catalog check: every msgid in the sources (POTFILES) has a non-empty zh_CN (and
every LINGUAS) translation, `msgfmt -c` passes, and the placeholders of each translation agree
with its msgid. Prints one line per failure, then "tally: P F" (counted by `make -C pam check`)."""

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
KEYWORDS = ["--keyword=tg_text:2", "--keyword=N_", "--keyword=L", "--keyword=NL:1,2"]  # as in po/Makefile

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what)


def listed(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return [line.split("#", 1)[0].strip() for line in f if line.split("#", 1)[0].strip()]


def unescape(s):
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def parse_po(text):
    """Entries as dicts: msgid, msgstr (list, plural forms in order), flags; obsolete ones skipped."""
    entries, cur, key = [], None, None

    def close():
        if cur is not None and "msgid" in cur:
            entries.append(cur)
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#~") or not line:
            if not line:
                close()
                cur, key = None, None
            continue
        if cur is None:
            cur = {"flags": set(), "msgstr": []}
        if line.startswith("#,"):
            cur["flags"].update(f.strip() for f in line[2:].split(","))
            continue
        if line.startswith("#"):
            continue
        m = re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+"(.*)"$', line)
        if m:
            key = m.group(1)
            value = unescape(m.group(3))
            if key.startswith("msgstr"):
                cur["msgstr"].append(value)
                key = "msgstr"
            else:
                cur[key] = value
            continue
        m = re.match(r'^"(.*)"$', line)
        if m and key:
            if key == "msgstr":
                cur["msgstr"][-1] += unescape(m.group(1))
            else:
                cur[key] += unescape(m.group(1))
    close()
    return entries


PLACEHOLDER = re.compile(r"%(?:(\d+)\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?([diouxXeEfFgGaAcspn@%])")


def placeholders(s):
    """(position, conversion) of each printf-style placeholder ('%%' is text, not a placeholder)."""
    found, n = [], 0
    for m in PLACEHOLDER.finditer(s):
        if m.group(2) == "%":
            continue
        n += 1
        found.append((int(m.group(1)) if m.group(1) else n, m.group(2)))
    return sorted(found)


def swift_literal_problems(path):
    """xgettext's C reader takes a Swift literal as it would a C string: an interpolation \\( )
    silently becomes part of the msgid and a multi-line literal is lost, so neither may appear."""
    with open(os.path.join(TOP, path), encoding="utf-8") as f:
        text = f.read()
    problems = []
    for m in re.finditer(r'\bL\(\s*("""|"(?:[^"\\\n]|\\.)*")', text):
        line = text.count("\n", 0, m.start()) + 1
        if m.group(1) == '"""':
            problems.append("%s:%d: multi-line literal in L(...)" % (path, line))
        elif "\\(" in m.group(1):
            problems.append("%s:%d: interpolation in L(...): use a placeholder" % (path, line))
    return problems


# A call that marks a message for translation: tg_text(lang, "…"), N_("…"), L("…"), NL("…", …).
MARKED = re.compile(r'\btg_text\(\s*\w+\s*,\s*"|\bN_\(\s*"|\bN?L\(\s*"')


def marking_sources():
    """The module's and the programs' sources that mark a message for translation."""
    found = []
    for top in ("pam", "Sources"):
        for d, _, files in os.walk(os.path.join(TOP, top)):
            for name in files:
                if name.endswith((".c", ".swift")):
                    path = os.path.join(d, name)
                    with open(path, encoding="utf-8") as f:
                        if MARKED.search(f.read()):
                            found.append(os.path.relpath(path, TOP))
    return sorted(found)


def main():
    sources = listed("POTFILES")
    linguas = listed("LINGUAS")
    for path in sources:
        check(os.path.isfile(os.path.join(TOP, path)), "POTFILES names %s, which does not exist" % path)
    # A file that marks messages but is not listed would ship them untranslated, unseen.
    for path in marking_sources():
        check(path in sources, "%s marks messages for translation but POTFILES does not name it" % path)
    sources = [p for p in sources if os.path.isfile(os.path.join(TOP, p))]
    for path in sources:
        if path.endswith(".swift"):
            problems = swift_literal_problems(path)
            check(not problems, "; ".join(problems))

    with tempfile.TemporaryDirectory() as tmp:
        pot = os.path.join(tmp, "touchgate.pot")
        run = subprocess.run(["xgettext", "--language=C", "--from-code=UTF-8", *KEYWORDS,
                              "--msgid-bugs-address=touchgate maintainers", "-o", pot, *sources],
                             cwd=TOP, capture_output=True, text=True)
        check(run.returncode == 0 and os.path.exists(pot), "xgettext failed: %s" % run.stderr.strip())
        if run.returncode != 0:
            return
        with open(pot, encoding="utf-8") as f:
            ids = {e["msgid"] for e in parse_po(f.read()) if e["msgid"]}
        check(len(ids) > 0, "xgettext found no message in %s" % " ".join(sources))

        for lang in linguas:
            po = os.path.join(HERE, lang + ".po")
            run = subprocess.run(["msgfmt", "--check", "--check-format", "-o", os.devnull, po],
                                 capture_output=True, text=True)
            check(run.returncode == 0, "msgfmt -c %s.po: %s" % (lang, run.stderr.strip()))
            with open(po, encoding="utf-8") as f:
                entries = {e["msgid"]: e for e in parse_po(f.read()) if e["msgid"]}
            for msgid in sorted(ids):
                e = entries.get(msgid)
                ok = e is not None and "fuzzy" not in e["flags"] and all(s.strip() for s in e["msgstr"]) \
                    and e["msgstr"]
                check(ok, "%s.po: no translation for %r" % (lang, msgid))
            for msgid, e in sorted(entries.items()):
                check(msgid in ids, "%s.po: %r is no longer in the sources (make -C po update-po)" % (lang, msgid))
                for form in e["msgstr"]:
                    want = placeholders(msgid if "msgid_plural" not in e else e["msgid_plural"])
                    check(placeholders(form) == want or not form,
                          "%s.po: placeholders of %r differ: %r" % (lang, msgid, form))


if __name__ == "__main__":
    main()
    print("po check: %d passed, %d failed" % (passed, failed))
    print("tally: %d %d" % (passed, failed))
    sys.exit(1 if failed else 0)
