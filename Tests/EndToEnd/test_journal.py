"""The daemon's records when its stderr is the journal (JOURNAL_STREAM names it): each sent once,
in the journal's native protocol, with the fields touchgated(8) lists, and nothing on stderr or in
syslog; and a Linux audit system that refuses the daemon blocks no authentication."""

import os
import select
import signal
import socket
import struct
import subprocess
import threading

import pytest

import harness
import wire
from harness import DEFAULT_WAIT, PROMPT, LineLog, WaitTimeout, now

OUTCOME_ID = "4c180263b0b74e438ba1fb758ceb605b"
LOCKOUT_ID = "46d53d2c9c55440fbba212ffaf516201"
AT_ONCE = 3.0  # s: a scan answered, whatever the audit system does (a blocked send would take its own seconds)


def parse_record(data):
    """A native journal datagram as [(name, value)], in order (a name given twice shows twice)."""
    fields, i = [], 0
    while i < len(data):
        end = data.index(b"\n", i)
        line = data[i:end]
        if b"=" in line:
            name, value = line.split(b"=", 1)
            i = end + 1
        else:  # NAME\n, 64-bit little-endian length, value, \n
            name = line
            (size,) = struct.unpack_from("<Q", data, end + 1)
            value = data[end + 9:end + 9 + size]
            assert data[end + 9 + size:end + 10 + size] == b"\n"
            i = end + 10 + size
        fields.append((name.decode(), value.decode()))
    return fields


class JournalDaemon:
    """touchgated with stderr on a file that JOURNAL_STREAM names (as systemd's StandardError=journal
    would), its journal socket a datagram socket this test reads, and /dev/log, in the daemon's own
    mount namespace, another one that must stay silent."""

    def __init__(self, world):
        self.world = world
        self.records = []
        self.log = LineLog("touchgated journal")
        self.journal = self._datagram_socket(world.dir / "journal.sock")
        self.syslog = self._datagram_socket(world.dir / "syslog.sock")
        notify = self._datagram_socket(world.dir / "notify-journal.sock")
        self.stderr_path = world.dir / "stderr"
        (world.dir / "dev-host").mkdir()
        # A fresh /dev holding only what the daemon opens, and /dev/log bound to the test's socket.
        private_dev = ('mount --bind /dev "$0/dev-host" && mount -t tmpfs -o mode=0755 tmpfs /dev'
                       ' && for n in null zero random urandom; do touch /dev/$n && mount --bind "$0/dev-host/$n" /dev/$n; done'
                       ' && touch /dev/log && mount --bind "$0/syslog.sock" /dev/log && exec "$@"')
        argv, env = harness.daemon_command(world, "/nonexistent")
        with open(self.stderr_path, "wb") as stderr:
            st = os.fstat(stderr.fileno())
            env.update(JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino),
                       TOUCHGATE_JOURNAL_SOCKET=str(world.dir / "journal.sock"),
                       NOTIFY_SOCKET=str(world.dir / "notify-journal.sock"))
            self.started = now()
            self.proc = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", private_dev, str(world.dir)] + argv,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, env=env, start_new_session=True)
        harness._live_daemons.add(self.proc)
        self._running = True
        self._thread = threading.Thread(target=self._read_journal, daemon=True)
        self._thread.start()
        self._wait_ready(notify)

    @staticmethod
    def _datagram_socket(path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(str(path))
        return s

    def _read_journal(self):
        # Until told to stop and nothing more is queued: what the daemon sent before it exited is read.
        while True:
            readable, _, _ = select.select([self.journal], [], [], 0.1)
            if not readable:
                if self._running:
                    continue
                return
            record = parse_record(self.journal.recv(1 << 20))
            self.records.append(record)
            self.log.add(dict(record).get("MESSAGE", ""))

    def _wait_ready(self, notify, timeout=10.0):
        deadline = now() + timeout
        with notify:
            while True:
                left = deadline - now()
                if left <= 0 or self.proc.poll() is not None:
                    raise WaitTimeout("no READY=1 (status %s); journal:\n%s\nstderr:\n%s"
                                      % (self.proc.poll(), self.log.dump(), self.stderr()))
                readable, _, _ = select.select([notify], [], [], min(left, 0.2))
                if readable and b"READY=1" in notify.recv(4096):
                    break
        self.log.wait_for(harness.READER_SETTLED, max(deadline - now(), 0.1))

    def records_with(self, name, value):
        return [r for r in self.records if (name, value) in r]

    def wait_record(self, text, timeout=DEFAULT_WAIT):
        """The first record whose MESSAGE holds `text`."""
        self.log.wait_for(text, timeout)
        return next(r for r in self.records if text in dict(r).get("MESSAGE", ""))

    def stderr(self):
        return self.stderr_path.read_bytes().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(DEFAULT_WAIT)
        harness._live_daemons.discard(self.proc)
        harness._remove_pam_wrapper_dir(self.proc.pid)
        self._running = False
        self._thread.join(DEFAULT_WAIT)
        return self.proc.returncode


@pytest.fixture
def under_journal(world, alice):
    world.daemon.stop()
    d = JournalDaemon(world)
    yield d
    d.stop()


def test_under_the_journal_each_record_is_sent_once_natively_with_its_fields(world, alice, under_journal):
    journal = under_journal
    pam = world.pam("alice")
    pam.wait_for(PROMPT)
    world.reader.scan(alice)
    assert pam.wait().result == "PAM_SUCCESS", pam.transcript()

    record = journal.wait_record("event=outcome user=alice")
    fields = dict(record)
    assert len(fields) == len(record), record  # no field twice
    message = fields.pop("MESSAGE")
    assert message.startswith("event=outcome user=alice service=%s " % harness.SERVICE), message
    assert "method=fingerprint outcome=success" in message
    assert {k: v for k, v in fields.items() if k in (
        "PRIORITY", "SYSLOG_IDENTIFIER", "SYSLOG_FACILITY", "MESSAGE_ID", "TOUCHGATE_EVENT", "TOUCHGATE_USER",
        "TOUCHGATE_OUTCOME", "TOUCHGATE_METHOD", "TOUCHGATE_SERVICE")} == {
        "PRIORITY": "5", "SYSLOG_IDENTIFIER": "touchgated", "SYSLOG_FACILITY": "10", "MESSAGE_ID": OUTCOME_ID,
        "TOUCHGATE_EVENT": "outcome", "TOUCHGATE_USER": "alice", "TOUCHGATE_OUTCOME": "success",
        "TOUCHGATE_METHOD": "fingerprint", "TOUCHGATE_SERVICE": harness.SERVICE}
    assert "TOUCHGATE_RHOST" not in fields and "TOUCHGATE_REASON" not in fields  # pamtester sets no rhost

    # An ordinary line: the message, its priority and the identifier, nothing else.
    listening = next(r for r in journal.records if dict(r).get("MESSAGE", "").startswith("listening on "))
    assert [name for name, _ in listening] == ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"]
    assert dict(listening)["PRIORITY"] == "6"

    assert journal.stop() == 0
    assert len(journal.records_with("MESSAGE_ID", OUTCOME_ID)) == 1, journal.log.dump()
    assert any(dict(r).get("MESSAGE", "").startswith("stopping on signal") for r in journal.records)
    assert journal.stderr() == ""
    journal.syslog.setblocking(False)
    with pytest.raises(BlockingIOError):
        journal.syslog.recv(4096)


def test_a_lockout_is_one_record_with_its_own_message_id_and_the_count(world, alice, under_journal):
    journal = under_journal
    harness.fail_five_matches(world)  # five failed matches over two prompts

    record = dict(journal.wait_record("event=lockout user=alice"))
    assert (record["MESSAGE_ID"], record["TOUCHGATE_EVENT"], record["TOUCHGATE_REASON"], record["TOUCHGATE_OUTCOME"],
            record["TOUCHGATE_FAILED_MATCHES"], record["PRIORITY"], record["SYSLOG_FACILITY"]) == (
        LOCKOUT_ID, "lockout", "lockout", "biometryLockout", "5", "5", "10")
    assert journal.stop() == 0
    assert len(journal.records_with("MESSAGE_ID", LOCKOUT_ID)) == 1, journal.log.dump()
    assert journal.stderr() == ""


def test_a_linux_audit_that_refuses_the_daemon_blocks_nothing_and_is_said_once(world, alice):
    """Without CAP_AUDIT_WRITE (dropped from the bounding set before the daemon starts) the kernel
    refuses every audit record, and a kernel without audit has no audit socket at all; either way
    each scan is still answered at once, and the log says so one time, not per record."""
    world.daemon.stop()
    daemon = world.start_daemon(prefix=["setpriv", "--bounding-set", "-audit_write"])
    for _ in range(2):
        pam = world.pam("alice")
        pam.wait_for(PROMPT)
        scanned = now()
        world.reader.scan(alice)
        assert pam.wait().result == "PAM_SUCCESS", pam.transcript()
        assert pam.ended - scanned < AT_ONCE, "%.3f s" % (pam.ended - scanned)
    daemon.log.wait_for("Linux audit unavailable")
    assert daemon.stop() == 0
    said = [t for t in daemon.log.texts() if "Linux audit unavailable" in t]
    assert len(said) == 1, daemon.log.dump()


LIMIT = 5  # lines per uid (refusal records: per caller and account) in each window
WINDOW = 10.0  # s


def test_a_user_leaving_prompts_at_will_writes_no_more_lines_than_the_limit(world, alice):
    """A prompt a client leaves writes its record, and a client can leave as many as it likes: one
    user must not spend journald's rate limit for the daemon, which would then drop every user's
    audit records. What the flood writes stays within the limit (its records, and the one ordinary
    line saying more are left out) while `touchgate monitor` still gets every event."""
    uid = harness.USERS["alice"][0]
    mon = harness.CliProcess(world, "monitor", "--json")
    deadline = now() + DEFAULT_WAIT
    while True:  # a remote evaluate is refused at once and published: repeated until the stream has it
        wire.request(world.socket, "evaluate", user="bob", policy=1, service="probe", rhost="probe-host")
        try:
            mon.out.wait_for('"service":"probe"', timeout=0.2)
            break
        except WaitTimeout:
            assert now() < deadline, mon.out.dump()

    rounds = 40
    started = now()
    assert wire.run_as(uid, "leave_prompts(%r, 'alice', %d)" % (str(world.socket), rounds)) == rounds
    i = -1
    for _ in range(rounds + 1):  # and the prompt that held the reader
        i = mon.out.wait_for('"reason":"clientGone"', start=i + 1)
    # A record written after them all: every line they wrote has been read once it has.
    wire.request(world.socket, "evaluate", user="root", policy=1, service="marker", rhost="marker-host")
    world.daemon.log.wait_for("service=marker")
    windows = 1 + int((now() - started) // WINDOW)
    mon.proc.terminate()
    mon.wait()

    texts = world.daemon.log.texts()
    flood = [t for t in texts if "client left mid-prompt" in t or "reason=clientGone" in t]
    said = [t for t in texts if "outcome records of refusals (more like it from uid %d for alice" % uid in t]
    assert len(flood) <= LIMIT * windows and len(said) <= windows, world.daemon.log.dump()
    assert flood and said, world.daemon.log.dump()  # limited, not silenced
