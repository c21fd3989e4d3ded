"""The packages as a user gets them, on a throwaway Debian 12: build, lintian, apt install,
pam-auth-update --enable, the daemon started by its first connection on libfprint's virtual reader,
enrollment with the installed CLI, real authentications through the installed common-auth (login's
PAM service, pamtester in a pty), doctor, --disable; then test_install_removal.py.

The steps run in order on one machine; each asserts what a person or an administrator would see."""

import json
import re
import socket
import subprocess
import threading

import checks
import harness
import machine as m
from harness import PROMPT, LineLog, VirtualReader, no_match, not_recognised

HINT_ENTER = "(or press Enter to use your password)"
LOCKED = "Fingerprint locked after 5 failed attempts: enter your password"
PASSWORD_PROMPT = "Password: "
USER, PASSWORD, PRINT = "tgtest", "tgtest-Secret-4711", "tgtest-right-index"
ENABLED_COMMON_AUTH = [  # what pam-auth-update --enable touchgate writes (fields of each line)
    ["auth", "[success=2", "default=ignore]", "pam_touchgate.so", "timeout=10"],
    ["auth", "[success=1", "default=ignore]", "pam_unix.so", "nullok", "try_first_pass"],
    ["auth", "requisite", "pam_deny.so"],
    ["auth", "required", "pam_permit.so"],
    ["auth", "optional", "pam_touchgate.so", "report"],
]


def stack(text):
    return [line.split() for line in text.decode().splitlines() if line.strip() and not line.startswith("#")]


def status(mach):
    return json.loads(mach.run("touchgate", "status", "--user", USER, "--json").stdout)


def doctor(mach, *args):
    p = mach.run("touchgate", "doctor", "--user", USER, "--json", *args, check=False)
    return p.returncode, json.loads(p.stdout)


def problems(report):
    return [(c["check"], c["summary"]) for c in report["checks"] if c["status"] == "problem"]


def login(mach):
    """pamtester on login's PAM service (which includes common-auth), as a person at a terminal."""
    return m.Terminal(mach, "pamtester", "-v", "login", USER, "authenticate")


def start_activated(mach):
    """The daemon as touchgated.socket and touchgated.service run it: systemd-socket-activate holds
    the socket and starts the daemon on the first connection, without arguments, with the unit's
    limits (no capability but CAP_AUDIT_WRITE, no new privileges) and its StateDirectory and
    ConfigurationDirectory; READY=1 to our NOTIFY_SOCKET."""
    mach.path("/run/touchgate").mkdir(mode=0o755, exist_ok=True)
    mach.path("/var/lib/touchgate").mkdir(mode=0o700, exist_ok=True)
    notify = m.Notifications(mach)
    proc = mach.spawn("systemd-socket-activate", "-l", m.SOCKET,
                      "-E", "FP_VIRTUAL_DEVICE=" + m.VDEV, "-E", "FP_DRIVERS_WHITELIST=virtual_device",
                      "-E", "NOTIFY_SOCKET=" + m.NOTIFY, "-E", "STATE_DIRECTORY=/var/lib/touchgate",
                      "-E", "CONFIGURATION_DIRECTORY=/etc/touchgate",
                      "setpriv", "--no-new-privs", "--bounding-set", "-all,+audit_write", "--inh-caps", "-all",
                      m.DAEMON)
    proc.log.wait_for("Listening on", 10)
    return proc, notify


def drive_enroll(mach, reader):
    """`touchgate enroll --user USER` as root, a SCAN for the prompt and after each stage line."""
    proc = subprocess.Popen(mach.argv(["touchgate", "enroll", "--user", USER]), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = LineLog("touchgate enroll")
    threading.Thread(target=harness._pump_lines, args=(lambda: proc.stdout.read1(4096), out), daemon=True).start()
    i = out.wait_for(re.compile(r"\S"))
    reader.scan(PRINT)
    while True:
        i = out.wait_for(harness.STAGE, start=i + 1)
        stage, stages = map(int, harness.STAGE.search(out.lines[i][1]).groups())
        if stage >= stages:
            break
        reader.scan(PRINT)
    rc = proc.wait(10)
    out.wait_closed()
    return rc, out.texts(), proc.stderr.read().decode()


# ---------------------------------------------------------------------------------------------


def test_01_the_packages_build_and_lintian_reports_no_error_or_warning(packages):
    debs, changes = packages
    assert {"touchgate", "libpam-touchgate"} <= set(debs)
    tags, out = checks.lintian(changes, "packages", 600)
    assert not [t for t in tags if t[0] in "EW"], out


def test_02_apt_installs_both_and_leaves_the_fingerprint_off(machine, state):
    state["original_common_auth"] = machine.read("/etc/pam.d/common-auth")
    p = machine.run("apt-get", "install", "-y", "-q", *machine.debs, limit=300)
    m.log(p.stdout.strip().splitlines()[-1])
    common = stack(machine.read("/etc/pam.d/common-auth"))
    assert ["auth", "optional", "pam_touchgate.so", "report"] in common
    assert not [l for l in common if "pam_touchgate.so" in l and "report" not in l], common
    assert machine.path("/etc/systemd/system/sockets.target.wants/touchgated.socket").is_symlink()
    conffiles = machine.run("dpkg-query", "-W", "-f", "${Conffiles}", "touchgate").stdout
    assert "/etc/touchgate/touchgate.conf" in conffiles and "/etc/pam.d/touchgate" in conffiles
    files = []
    for package in ["touchgate", "libpam-touchgate"]:
        files += machine.run("dpkg", "-L", package).stdout.split()
    state["files"] = files
    # fprintd's D-Bus name, its activation and polkit actions, the catalogs, every manual page.
    for shipped in ["/usr/share/dbus-1/system.d/net.reactivated.Fprint.conf",
                    "/usr/share/dbus-1/system-services/net.reactivated.Fprint.service",
                    "/usr/share/polkit-1/actions/net.reactivated.fprint.device.policy",
                    "/usr/share/locale/zh_CN/LC_MESSAGES/touchgate.mo",
                    "/usr/share/man/man8/pam_touchgate.8.gz", "/usr/share/man/man8/touchgated.8.gz",
                    "/usr/share/man/man1/touchgate.1.gz", "/usr/share/man/man5/touchgate.conf.5.gz"]:
        assert shipped in files, shipped
    relations = machine.run("dpkg-query", "-W", "-f", "${Provides}|${Conflicts}|${Replaces}", "touchgate").stdout
    assert relations == "fprintd|fprintd|fprintd", relations


def test_03_the_binaries_need_only_debian_libraries(machine):
    libs = machine.run("ldd", m.DAEMON, "/usr/bin/touchgate").stdout
    m.log(libs.strip())
    assert "not found" not in libs and "swift" not in libs.lower()
    paths = re.findall(r"=> (\S+)", libs)
    assert paths and all(p.startswith(("/lib/", "/usr/lib/")) for p in paths), paths
    # Every library belongs to a Debian package (by name: /lib is /usr/lib, dpkg knows either).
    names = sorted(set(p.rsplit("/", 1)[1] for p in paths))
    owners = machine.run("dpkg", "-S", *["*/" + n for n in names]).stdout
    assert all(any(l.endswith("/" + n) for l in owners.splitlines()) for n in names), owners
    assert machine.run("touchgate", "--help").stdout.startswith("OVERVIEW:")
    assert "--state-dir" in machine.run(m.DAEMON, "--help").stdout
    # libfprint is loaded by the reader thread (dlopen), so ldd does not list it: the package
    # names it (the enrollment and the matches below prove it loads).
    depends = machine.run("dpkg-query", "-W", "-f=${Depends}", "touchgate").stdout
    assert "libfprint-2-2 (>= 1:1.94.1)" in depends, depends


def test_03_the_binaries_are_hardened(machine, state):
    """Position-independent, full RELRO, no writable and executable memory, read-only constants,
    the stack protector and fortified libc calls."""
    binaries = [m.DAEMON, "/usr/bin/touchgate"] + [f for f in state["files"] if f.endswith("/pam_touchgate.so")]
    assert len(binaries) == 3, binaries
    found = {b: checks.elf_hardening(machine.path(b)) for b in binaries}
    assert found == {b: [] for b in binaries}, found


def test_04_the_units_verify_and_are_hardened(machine):
    units = ["/lib/systemd/system/touchgated.socket", "/lib/systemd/system/touchgated.service"]
    p = machine.run("systemd-analyze", "verify", "--man=no", *units, check=False)
    assert p.returncode == 0 and not (p.stdout + p.stderr).strip(), p.stdout + p.stderr
    p = machine.run("systemd-analyze", "security", "--offline=true", units[1], check=False)
    score = float(re.search(r"Overall exposure level for touchgated.service: ([0-9.]+)", p.stdout).group(1))
    m.log("systemd-analyze security touchgated.service: %.1f" % score)
    assert score <= 2.0, p.stdout
    pages = ["/usr/share/man/man1/touchgate.1.gz", "/usr/share/man/man8/touchgated.8.gz",
             "/usr/share/man/man5/touchgate.conf.5.gz", "/usr/share/man/man8/pam_touchgate.8.gz"]
    for page in pages:
        text = subprocess.run(["zcat", machine.path(page)], capture_output=True, check=True,
                              timeout=m.COMMAND_LIMIT).stdout
        lint = subprocess.run(["mandoc", "-T", "lint", "-W", "warning"], input=text, capture_output=True,
                              timeout=m.COMMAND_LIMIT)
        assert lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(), (page, lint.stdout + lint.stderr)


def test_05_enable_puts_the_fingerprint_before_pam_unix(machine, state):
    state["before_enable"] = machine.read("/etc/pam.d/common-auth")
    machine.run("pam-auth-update", "--enable", "touchgate")
    assert stack(machine.read("/etc/pam.d/common-auth")) == ENABLED_COMMON_AUTH


def test_05_the_profiles_dialog_shows_each_profile_once_and_ticking_them_by_name_keeps_the_stack(machine):
    """pam-auth-update's dialog (as `dpkg-reconfigure libpam-runtime` shows it) lists the profiles by
    their Name, and debconf splits that list at commas: a comma in a Name would shift every label
    after it onto another profile, so ticking "Unix authentication" would set another one, and an
    administrator could drop pam_unix unawares. Each profile is one item here, and ticking the
    enabled ones by their names writes the same stack."""
    configs = machine.path("/usr/share/pam-configs")
    names = {p.name: re.search(r"^Name: (.*)$", p.read_text(), re.M).group(1) for p in configs.iterdir()}
    shown = machine.run("debconf-show", "libpam-runtime").stdout
    enabled = re.search(r"libpam-runtime/profiles: (.*)", shown).group(1).split(", ")
    assert {"unix", "touchgate", "touchgate-report"} <= set(enabled), shown
    before = machine.read("/etc/pam.d/common-auth")
    dialog = m.Terminal(machine, "env", "DEBIAN_FRONTEND=teletype", "DEBIAN_PRIORITY=low", "pam-auth-update")
    asked = dialog.wait_for("PAM profiles to enable:")
    items = {}
    for text in dialog.out.texts()[:asked]:
        item = re.match(r"\s+(\d+)\. (.*?)\s*$", text)
        if item:
            items[item.group(2)] = item.group(1)
    assert sorted(items) == sorted(names.values()), dialog.transcript()
    dialog.type(" ".join(items[names[p]] for p in enabled) + "\n")
    assert dialog.wait(30) == 0, dialog.transcript()
    assert machine.read("/etc/pam.d/common-auth") == before


def test_06_the_first_connection_starts_the_daemon(machine, state):
    proc, notify = start_activated(machine)
    state["activator"] = proc
    assert machine.pids_of(m.DAEMON) == [], "started before anyone connected"
    # The first connection starts it. Readiness is awaited before the CLI asks: on a loaded
    # machine a start can outlast the CLI's 1.5 s of silence, which is the CLI's rule, not this one.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as first:
        first.connect(str(machine.path(m.SOCKET)))
        notify.wait("READY=1")
    notify.close()
    devices = machine.run("touchgate", "devices").stdout
    assert devices.strip() == "Virtual device for debugging (virtual_device)"
    [pid] = machine.pids_of(m.DAEMON)
    caps = dict(line.split(":\t") for line in open("/proc/%d/status" % pid).read().splitlines() if ":\t" in line)
    assert int(caps["CapEff"], 16) == 1 << 29 and int(caps["CapBnd"], 16) == 1 << 29  # CAP_AUDIT_WRITE
    assert caps["NoNewPrivs"].strip() == "1"


def test_07_root_enrolls_a_user_with_the_installed_cli(machine, state):
    machine.run("useradd", "--create-home", "--shell", "/bin/bash", USER)
    machine.run("chpasswd", input="%s:%s\n" % (USER, PASSWORD))
    reader = VirtualReader(machine.path(m.VDEV))
    state["reader"] = reader
    rc, out, err = drive_enroll(machine, reader)
    assert rc == 0, err + "\n".join(out)
    assert out[-1] == "Enrolled right-index-finger for %s." % USER
    assert machine.run("touchgate", "list", "--user", USER).stdout.split() == ["right-index-finger"]
    state_dir = machine.path("/var/lib/touchgate")
    assert state_dir.stat().st_mode & 0o777 == 0o700


def test_08_doctor_says_all_is_well(machine):
    text = machine.run("touchgate", "doctor", "--user", USER, check=False)
    m.log(text.stdout.rstrip())
    assert text.returncode == 0, text.stdout + text.stderr
    rc, report = doctor(machine)
    assert rc == 0 and report["ok"] and report["problems"] == 0
    pam = [c for c in report["checks"] if c["check"] == "pam"][0]
    assert "login" in pam["summary"], pam


def test_09_after_boot_the_password_comes_first_and_clears_the_rule(machine):
    before = status(machine)
    assert before["canEvaluate"]["name"] == "passwordRequired", before
    term = login(machine)
    term.wait_for(PASSWORD_PROMPT)
    term.type(PASSWORD + "\r")
    term.wait()
    assert term.pam_result == "PAM_SUCCESS", term.transcript()
    assert PROMPT not in term.out.texts()
    after = status(machine)
    assert after["passwordRequired"] == [] and after["canEvaluate"]["code"] == 0, after


def test_10_the_enrolled_finger_logs_in(machine, state):
    term = login(machine)
    term.wait_for(PROMPT)
    state["reader"].scan(PRINT)
    term.wait()
    assert term.pam_result == "PAM_SUCCESS", term.transcript()
    assert not any(PASSWORD_PROMPT.strip() in t for t in term.out.texts()), term.transcript()


def test_11_enter_goes_straight_to_the_password(machine):
    term = login(machine)
    term.wait_for(PROMPT)
    term.wait_for(HINT_ENTER)
    term.type("\r")
    term.wait_for(PASSWORD_PROMPT)
    term.type(PASSWORD + "\r")
    term.wait()
    assert term.pam_result == "PAM_SUCCESS", term.transcript()


def test_12_a_lockout_is_cleared_by_the_password_through_the_report_line(machine, state):
    reader = state["reader"]
    first = login(machine)
    first.wait_for(PROMPT)
    for i, stranger in enumerate(["x1", "x2"]):
        reader.scan(stranger)
        first.wait_for(no_match(2 - i))
    reader.scan("x3")
    first.wait_for(not_recognised(3))
    first.wait_for(PASSWORD_PROMPT)
    first.type("wrong-password\r")
    first.wait(timeout=10)  # login's pam_faildelay: 3 s after a failure
    assert first.pam_result == "PAM_AUTH_ERR", first.transcript()

    second = login(machine)
    second.wait_for(PROMPT)
    reader.scan("x4")
    second.wait_for(no_match(2))
    reader.scan("x5")
    second.wait_for(LOCKED)
    second.wait_for(PASSWORD_PROMPT)
    locked = status(machine)
    assert locked["lockedOut"] is True and locked["canEvaluate"]["name"] == "biometryLockout", locked
    second.type(PASSWORD + "\r")
    second.wait()
    assert second.pam_result == "PAM_SUCCESS", second.transcript()
    cleared = status(machine)
    assert cleared["lockedOut"] is False and cleared["failedMatches"] == 0, cleared

    third = login(machine)
    third.wait_for(PROMPT)
    reader.scan(PRINT)
    third.wait()
    assert third.pam_result == "PAM_SUCCESS", third.transcript()


def test_13_disable_gives_back_common_auth_byte_for_byte(machine, state):
    machine.run("pam-auth-update", "--disable", "touchgate")
    assert machine.read("/etc/pam.d/common-auth") == state["before_enable"]
    rc, report = doctor(machine)
    assert rc == 1 and ("pam", "no PAM service offers the fingerprint") in problems(report), report
