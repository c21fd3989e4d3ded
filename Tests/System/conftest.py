"""Fixtures of the system test (the .debs, the cached image, the booted guest, state between
steps) and its summary line."""

import os
import signal
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "Install"))   # the install test's build of the .debs, shared
sys.path.insert(0, str(HERE.parent / "EndToEnd"))  # lines.py: lines with deadlines

import image  # noqa: E402
import machine  # noqa: E402
import vm  # noqa: E402

WORK = Path(os.environ.get("TOUCHGATE_SYSTEM_WORK") or "/tmp/tg-system")


def _interrupted(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


# A time limit's SIGTERM ends the run like Ctrl-C: the fixtures' teardown still stops QEMU.
signal.signal(signal.SIGTERM, _interrupted)


@pytest.fixture(scope="session")
def debs():
    """{package name: path}: the .debs the install test kept, built now if there are none or they
    are of other sources than the checkout's."""
    return machine.debs_for_tests(WORK)


@pytest.fixture(scope="session")
def guest(debs):
    """The guest, booted to its login prompt on ttyS0, its control bridge answering."""
    img = image.image(debs, machine.depends, WORK)
    g = vm.Guest(img, WORK / "run")
    try:
        g.boot_seconds = g.wait_login_prompt()
        vm.log("boot to the login prompt: %.1f s" % g.boot_seconds)
        g.control.wait_ready(60)
        yield g
    finally:
        g.close()


@pytest.fixture(scope="session")
def state():
    """What one step leaves for the next (journal cursors, counts, the shell being logged in)."""
    return {}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    failed = {r.nodeid for r in stats.get("failed", []) + stats.get("error", [])}
    passed = {r.nodeid for r in stats.get("passed", [])} - failed
    terminalreporter.write_line("system: %d passed, %d failed" % (len(passed), len(failed)))
