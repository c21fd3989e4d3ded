"""Fixtures of the install test (the packages, the throwaway machine, state between steps) and
its summary line."""

import os
import shutil
import signal
from pathlib import Path

import pytest

import machine as m


def _interrupted(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


# A time limit's SIGTERM ends the run like Ctrl-C: fixtures' teardown still stops the daemon.
signal.signal(signal.SIGTERM, _interrupted)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)


@pytest.fixture(scope="session")
def packages():
    """The .debs built from this checkout: {package name: path}, and the .changes file; built now,
    or taken from the build the test command made in the background (TOUCHGATE_PACKAGES_BUILD). A
    copy is kept in .build/debs for the system test."""
    out = m.WORK / "build"
    if out.exists():
        shutil.rmtree(out)
    built = os.environ.get("TOUCHGATE_PACKAGES_BUILD")
    debs, changes = m.built_packages(Path(built), out) if built else m.build_packages(out)
    m.keep_debs(debs)
    return debs, changes


@pytest.fixture(scope="session")
def machine(packages):
    """A fresh Debian 12 minbase root with the packages' libraries, systemd's tools and pamtester;
    the packages themselves are not installed yet."""
    debs, _ = packages
    needed = {"systemd", "pamtester"}
    for name, deb in debs.items():
        if not name.endswith("-dbgsym"):
            needed.update(d for d in m.depends(deb) if d not in debs)
    root = m.WORK / "root"
    mach = m.Machine(root, sorted(needed))
    for name, deb in debs.items():
        if not name.endswith("-dbgsym"):
            shutil.copy2(deb, mach.path("/tmp/" + deb.name))
    mach.debs = ["/tmp/" + deb.name for name, deb in debs.items() if not name.endswith("-dbgsym")]
    yield mach
    mach.close()


@pytest.fixture(scope="session")
def state():
    """What one step leaves for the next (file contents before a change, the print's id, …)."""
    return {}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    failed = {r.nodeid for r in stats.get("failed", []) + stats.get("error", [])}
    passed = {r.nodeid for r in stats.get("passed", [])} - failed
    terminalreporter.write_line("install: %d passed, %d failed" % (len(passed), len(failed)))
