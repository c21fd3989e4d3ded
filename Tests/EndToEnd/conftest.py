"""Fixtures for the end-to-end tests (a fresh temp dir and daemon per test) and the e2e summary line."""

import pytest

import harness

ALICE_PRINT = "alice-right-index"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)


@pytest.fixture(params=harness.READER_KINDS)
def reader_kind(request):
    """Each of libfprint's three kinds of virtual reader in turn (readers.py). A test, or a module
    through `pytestmark = pytest.mark.usefixtures("reader_kind")`, asks for it to run on each."""
    return request.param


@pytest.fixture
def world(request):
    """A private temp dir with users alice and bob and a PAM service `touchgate`; no daemon yet."""
    w = harness.World(harness.reader_kind_of(request))
    yield w
    w.close()
    if harness.failed(request) and w.daemon is not None:
        # Shown by pytest under "Captured stdout teardown" for failed tests (or their fixtures) only.
        print("touchgated stderr:\n" + w.daemon.log.dump())


@pytest.fixture
def daemon(world):
    """touchgated running on a virtual reader, default config."""
    return world.start_daemon()


@pytest.fixture
def alice(world, daemon):
    """alice enrolled her right-index-finger herself with `touchgate enroll`, typing her password
    (which the daemon checks, so fingerprints are usable at once); returns the print's id."""
    rc, cli = harness.enroll(world, "alice", ALICE_PRINT, as_user="alice")
    assert rc == 0, "enroll failed: %s\n%s" % (cli.stderr, cli.out.dump())
    return ALICE_PRINT


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    stats = terminalreporter.stats
    failed = {r.nodeid for r in stats.get("failed", []) + stats.get("error", [])}
    passed = {r.nodeid for r in stats.get("passed", [])} - failed
    skipped = {r.nodeid for r in stats.get("skipped", [])}
    line = "e2e: %d passed, %d failed" % (len(passed), len(failed))
    if skipped:
        line += ", %d skipped" % len(skipped)
    terminalreporter.write_line(line)
