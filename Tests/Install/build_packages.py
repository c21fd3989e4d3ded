"""Builds the packages as the install test's first step does (machine.build_packages), into OUT, so
that the test command can build them in the background while the tests before the install test
run; the install test then takes them (TOUCHGATE_PACKAGES_BUILD=OUT) instead of building them.

    python3 -B Tests/Install/build_packages.py OUT

OUT must not exist. Writes OUT/result last: "ok", or why the build failed (the exit status is then
non-zero too)."""

import sys
import traceback
from pathlib import Path

import machine as m


def main(out):
    out = Path(out)
    out.mkdir(parents=False)
    try:
        m.build_packages(out)
    except BaseException as e:  # noqa: B902  (a time limit's KeyboardInterrupt is a failure too)
        (out / "result").write_text("".join(traceback.format_exception_only(type(e), e)))
        return 1
    (out / "result").write_text("ok")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_packages.py OUT")
    sys.exit(main(sys.argv[1]))
