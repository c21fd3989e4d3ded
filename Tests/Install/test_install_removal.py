"""The same machine, after test_install.py: the packages removed (the state kept, a broken config
no obstacle), purged (the daemon stopped, no file left but the prints and, while prints are still
sealed, the key), and installed again in fprintd's place, keeping the prints."""

import json
import re
import shutil

import machine as m
from test_install import USER, doctor

STATE_FILE = "/var/lib/touchgate/users/%s/state.json" % USER


def files_under(machine, *directories):
    """{path inside the root: bytes} of every file under the directories."""
    return {"/" + str(p.relative_to(machine.root)): p.read_bytes()
            for d in directories for p in sorted(machine.path(d).rglob("*")) if p.is_file()}


def kept_but_a_deferred_success(before, after):
    """Whether a user's state.json is the one it was, but for the time of the last fingerprint
    success: the daemon defers writing a success that changes nothing else (UserStateStore), and
    writes it when the removal stops it. That time may only move later."""
    if before == after:
        return True
    was, now = json.loads(before), json.loads(after)
    moved_later = now.get("lastFingerprintSuccess", 0) >= was.get("lastFingerprintSuccess", 0)
    now.pop("lastFingerprintSuccess", None)
    was.pop("lastFingerprintSuccess", None)
    return moved_later and was == now


def test_14_remove_keeps_the_state_and_a_broken_config_does_not_fail_the_install(machine, state):
    # What the removal must keep: the touchgate state (the user's counters and windows, the domain
    # state's secret, a sealed key where there is one) and the prints, which lie in fprintd's store.
    touchgate_before = files_under(machine, "/var/lib/touchgate")
    prints_before = files_under(machine, "/var/lib/fprint")
    assert STATE_FILE in touchgate_before, sorted(touchgate_before)
    assert prints_before, "no print in /var/lib/fprint before the removal"
    outside = m.OutsideDaemon()  # the host's touchgated, as a chroot sees it: not the root's to stop
    try:
        machine.run("apt-get", "remove", "-y", "-q", "touchgate", "libpam-touchgate", limit=300)
        assert machine.pids_of(m.DAEMON) == [], "the removal left the daemon running"
        assert outside.alive(), "the removal in the root stopped a touchgated outside it"
    finally:
        outside.close()
    state["activator"].kill()
    state["activator"].wait(10)
    assert machine.read("/etc/pam.d/common-auth") == state["original_common_auth"]
    touchgate_after = files_under(machine, "/var/lib/touchgate")
    changed = sorted(f for f in touchgate_before if f != STATE_FILE and touchgate_after.get(f) != touchgate_before[f])
    assert changed == [], "the removal deleted or changed %s" % changed
    assert STATE_FILE in touchgate_after, "the removal deleted %s" % STATE_FILE
    assert kept_but_a_deferred_success(touchgate_before[STATE_FILE], touchgate_after[STATE_FILE]), \
        (touchgate_before[STATE_FILE], touchgate_after[STATE_FILE])
    assert files_under(machine, "/var/lib/fprint") == prints_before, "the removal changed the prints"
    # The export's mark: a touchgated started during the removal would not have sealed them again.
    exported = machine.path("/var/lib/touchgate/prints-exported")
    assert exported.is_file() and (exported.stat().st_mode & 0o777) == 0o600
    conf = machine.path("/etc/touchgate/touchgate.conf")
    shipped = conf.read_bytes()
    broken = shipped + b"max_tries = lots\n"
    conf.write_bytes(broken)
    line = broken.decode().count("\n")
    machine.run("apt-get", "install", "-y", "-q", *machine.debs, limit=300)
    assert conf.read_bytes() == broken  # the administrator's file is kept, broken or not
    assert not exported.exists(), "installed again, touchgated would still refuse to start"
    machine.path("/run/touchgate").mkdir(mode=0o755, exist_ok=True)
    started = machine.run(m.DAEMON, check=False, limit=30)
    assert started.returncode == 1
    assert "/etc/touchgate/touchgate.conf:%d:" % line in started.stderr or \
        "line %d: max_tries" % line in started.stderr, started.stderr
    rc, report = doctor(machine)
    config = [c for c in report["checks"] if c["check"] == "config"][0]
    assert rc == 1 and config["status"] == "problem" and ":%d:" % line in config["summary"], config
    m.log("a broken config: touchgated says %r; doctor says %r" % (started.stderr.strip(), config["summary"]))
    conf.write_bytes(shipped)


def test_15_purge_stops_the_running_daemon_and_leaves_no_file(machine, state):
    machine.path("/run/touchgate").mkdir(mode=0o755, exist_ok=True)
    daemon = machine.spawn(m.DAEMON, env={"FP_VIRTUAL_DEVICE": m.VDEV, "FP_DRIVERS_WHITELIST": "virtual_device"})
    daemon.log.wait_for("listening on", 10)
    assert machine.pids_of(m.DAEMON)
    # Prints still sealed, which the removal's export cannot open here (no TPM): the key that
    # opens them is the one file purge keeps. One lies in the print store touchgate.conf names,
    # which purge knows only from the export (the file is gone by then), one in fprintd's store.
    key = machine.path("/var/lib/touchgate/sealed-key")
    key.write_bytes(b"a sealed key")
    key.chmod(0o600)
    conf = machine.path("/etc/touchgate/touchgate.conf")
    conf.write_bytes(conf.read_bytes() + b"print_store = /var/lib/tgprints\n")
    for store in ("/var/lib/fprint", "/var/lib/tgprints"):
        sealed = machine.path(store + "/tgsealed/virtual_device/0/7")
        sealed.parent.mkdir(parents=True, mode=0o700)
        sealed.write_bytes(b"TGSP\x01" + bytes(64))
    p = machine.run("apt-get", "purge", "-y", "-q", "touchgate", "libpam-touchgate", limit=300)
    assert machine.pids_of(m.DAEMON) == [], "purge left the daemon running"
    assert daemon.wait(10) == 0, daemon.log.dump()  # it stopped on SIGTERM, cleanly
    kept = sorted(f.name for f in machine.path("/var/lib/touchgate").iterdir())
    assert kept == ["prints-left-sealed", "sealed-key"], kept  # the record: for a purge after a reinstall
    said = p.stdout + p.stderr
    assert "prints still sealed in /var/lib/fprint: 1; in /var/lib/tgprints: 1;" in said, said
    # The prints a purge keeps in the clear are counted where they are (docs/SECURITY.md §6): the
    # enrolled finger, written back; the sealed ones are not among them.
    assert re.search(r"\b[1-9]\d* enrolled print\(s\) kept in the clear in /var/lib/fprint:", said), said
    assert "in the clear in /var/lib/tgprints" not in said, said
    m.log("purge with prints still sealed in two stores: the key kept")
    shutil.rmtree(machine.path("/var/lib/touchgate"))
    shutil.rmtree(machine.path("/var/lib/fprint/tgsealed"))
    shutil.rmtree(machine.path("/var/lib/tgprints"))
    left = [f for f in state["files"] if machine.path(f).exists() and not machine.path(f).is_dir()]
    assert left == [], left
    for gone in ["/var/lib/touchgate", "/etc/touchgate", "/usr/libexec/touchgate", "/run/touchgate",
                 "/etc/pam.d/touchgate", "/etc/systemd/system/sockets.target.wants/touchgated.socket",
                 "/usr/share/pam-configs/touchgate"]:
        assert not machine.path(gone).exists() and not machine.path(gone).is_symlink(), gone
    assert machine.read("/etc/pam.d/common-auth") == state["original_common_auth"]
    listed = machine.run("dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "touchgate", check=False).stdout
    assert listed.strip() in ("", "un"), listed


def test_16_one_apt_install_replaces_fprintd_and_keeps_the_prints(machine, state):
    # The finger enrolled above lies in fprintd's store, which belongs to whichever service is
    # installed: purging touchgate kept it, fprintd would use it, and so does touchgate again.
    store = machine.path("/var/lib/fprint")
    prints = sorted(p for p in store.rglob("*") if p.is_file())
    assert prints, "purge removed the prints in fprintd's store"
    before = {p: p.read_bytes() for p in prints}
    # mmdebstrap leaves no package lists behind: fetch them, as on any machine before an install.
    machine.run("apt-get", "update", "-q", limit=600)
    machine.run("apt-get", "install", "-y", "-q", "--no-install-recommends", "fprintd", limit=600)
    p = machine.run("apt-get", "install", "-y", "-q", *machine.debs, limit=300)
    m.log(p.stdout.strip().splitlines()[-1])
    status = machine.run("dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "fprintd", check=False).stdout.strip()
    assert status in ("", "un", "rc"), "fprintd is still installed: %r" % status
    assert {p: p.read_bytes() for p in prints} == before
    machine.path("/run/touchgate").mkdir(mode=0o755, exist_ok=True)
    daemon = machine.spawn(m.DAEMON, env={"FP_VIRTUAL_DEVICE": m.VDEV, "FP_DRIVERS_WHITELIST": "virtual_device"})
    try:
        daemon.log.wait_for("listening on", 10)
        assert machine.run("touchgate", "list", "--user", USER).stdout.split() == ["right-index-finger"]
    finally:
        machine.run("apt-get", "purge", "-y", "-q", "touchgate", "libpam-touchgate", limit=300)
        daemon.wait(10)
