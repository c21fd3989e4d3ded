"""The codes the reader layer knows, read from what it is built from: libfprint's FpDeviceError
(its header, libfprint-2-dev's, which Sources/TouchGateReader compiles against: the mapping in
LibfprintReader+Operations.swift answers every one, those it does not name as deviceError) and the
cases of RetryHint (Sources/TouchGateReader/FingerprintReader.swift). The tests of the errors and
retries run over these codes, and docs/readers.md must have a row for each (test_readers.py), so a
row dropped from its tables fails a test instead of silently dropping that code's case."""

import os
import re
import subprocess

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
READER = os.path.join(REPO, "Sources", "TouchGateReader")


def _include_dir():
    try:
        found = subprocess.run(["pkg-config", "--variable=includedir", "libfprint-2"], capture_output=True,
                               text=True, timeout=30)
    except FileNotFoundError:
        return "/usr/include"
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else "/usr/include"


def _c_enum(text, type_name, prefix):
    """{NAME: value} of the C `typedef enum { … } TYPE_NAME;` in TEXT, PREFIX taken off each name."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    body = re.search(r"typedef\s+enum\s*\{([^}]*)\}\s*%s\s*;" % re.escape(type_name), text)
    assert body, "no enum %s" % type_name
    values, value = {}, -1
    for entry in (e.strip() for e in body.group(1).split(",")):
        if not entry:
            continue
        name, _, given = (part.strip() for part in entry.partition("="))
        value = int(given, 0) if given else value + 1
        assert name.startswith(prefix), (type_name, name)
        values[name[len(prefix):]] = value
    return values


def _swift_int_enum(text, type_name):
    """{NAME: raw value} of the Swift `enum TYPE_NAME: Int` in TEXT, each case's name in the form of
    libfprint's (centerFinger: CENTER_FINGER)."""
    body = re.search(r"\benum\s+%s\s*:\s*Int\b[^{]*\{(.*?)\n\}" % re.escape(type_name), text, re.S)
    assert body, "no enum %s: Int" % type_name
    values, value = {}, -1
    for declaration in re.findall(r"^\s*case\s+([^\n/]+)", body.group(1), re.M):
        for entry in (e.strip() for e in declaration.split(",")):
            if not entry:
                continue
            name, _, given = (part.strip() for part in entry.partition("="))
            value = int(given, 0) if given else value + 1
            values[re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()] = value
    return values


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# libfprint's FpDeviceError: {"GENERAL": 0, …, "REMOVED": 256, "TOO_HOT": 257}.
DEVICE_ERRORS = _c_enum(_read(os.path.join(_include_dir(), "libfprint-2", "fp-device.h")),
                        "FpDeviceError", "FP_DEVICE_ERROR_")
# RetryHint's cases, which libfprint's FpDeviceRetry codes become: {"GENERAL": 0, …}.
RETRY_HINTS = _swift_int_enum(_read(os.path.join(READER, "FingerprintReader.swift")), "RetryHint")
# The FpDeviceError names the mapping answers one by one (the others: deviceError).
MAPPED_ERRORS = set(re.findall(r"\bcase FP_DEVICE_ERROR_(\w+)\s*:",
                               _read(os.path.join(READER, "LibfprintReader+Operations.swift"))))
