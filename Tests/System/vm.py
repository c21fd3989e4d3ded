"""The booted guest: QEMU (TCG: a KVM guest hangs on these machines) with direct kernel boot of the
image's kernel, its serial console on ttyS0 as a terminal the test types on, two virtio ports
served in the guest by the test's bridges: `tgreader` (the virtual reader's socket) and `tgcontrol`
(root commands), and a TPM 2.0 (QEMU's tpm-tis on Debian's swtpm, kept across reboots), which the
guest's kernel offers as /dev/tpmrm0. Every wait has a deadline. Three ask again after a short
pause, as nothing tells them when to: connecting to QEMU's sockets, the reader's socket as the
daemon starts, and the guest's console settings (session.py).
"""

import base64
import itertools
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

from lines import LineLog, WaitTimeout, now  # noqa: F401

BOOT_LIMIT = 240.0   # s: kernel, initramfs and systemd to a login prompt under TCG on a loaded machine
MEMORY_MB = 1024
ACCEL = os.environ.get("TOUCHGATE_SYSTEM_ACCEL", "tcg")
CMDLINE = ("console=ttyS0,115200 root=/dev/vda rw quiet loglevel=3 systemd.show_status=0 "
           "systemd.firstboot=off audit=1 panic=-1")
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")  # and CRs: a line as seen


def log(text):
    print(text, flush=True)


class WholeLines(LineLog):
    """Lines taken only once their newline came: a long answer arrives in pieces, and its first
    piece must not pass for the whole (LineLog takes an unfinished line that matches, for prompts)."""

    def _match_pending(self, match):
        return None


class Port:
    """A line-oriented connection to one of QEMU's chardev server sockets."""

    lines_class = WholeLines

    def __init__(self, path, name, timeout=30.0):
        deadline = now() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(str(path))
                break
            except OSError:
                self.sock.close()
                if now() > deadline:
                    raise WaitTimeout("QEMU's %s socket %s did not appear within %.0f s" % (name, path, timeout))
                threading.Event().wait(0.05)  # the socket appears once QEMU has parsed its options
        self.lines = self.lines_class(name)
        threading.Thread(target=self._pump, daemon=True).start()
        self.read_from = 0

    def _pump(self):
        try:
            while True:
                try:
                    chunk = self.sock.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.on_chunk(chunk)
                self.lines.feed(chunk, now())
        finally:
            self.lines.close()

    def on_chunk(self, chunk):
        pass

    def send(self, text):
        self.sock.sendall(text.encode())

    def next_line(self, pattern, timeout):
        """The next line (after those already taken) matching `pattern`."""
        i = self.lines.wait_for(pattern, timeout, self.read_from)
        self.read_from = i + 1
        return self.lines.lines[i][1]

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Plain:
    """A substring or regex matched against a line with its escape sequences removed."""

    def __init__(self, pattern):
        self.pattern = getattr(pattern, "pattern", pattern)
        self._match = pattern.search if hasattr(pattern, "search") else (lambda text: pattern in text)

    def search(self, text):
        return self._match(CSI.sub("", text))


class Console(Port):
    """ttyS0 as a person sees it: what the guest prints (escape sequences removed), and keys typed."""

    lines_class = LineLog  # prompts end without a newline

    def __init__(self, path):
        self.raw = bytearray()
        super().__init__(path, "ttyS0")

    def on_chunk(self, chunk):
        self.raw += chunk

    def mark(self):
        """A position in the screen's lines: waits and transcripts from here on."""
        return len(self.lines.lines)

    def expect(self, pattern, timeout=30.0, start=None, advance=True):
        """Index of the first line at or after `start` (default: just after the last expect's
        match) that matches, escape sequences ignored; the next expect starts after it unless
        `advance` is false."""
        i = self.lines.wait_for(_Plain(pattern), timeout, self.read_from if start is None else start)
        if advance:
            self.read_from = i + 1
        return i

    def type(self, text):
        """Keys as typed: a line ends with a carriage return, as a terminal's Enter sends."""
        self.send(text.replace("\n", "\r"))

    def screen(self, start=0):
        return [CSI.sub("", t) for t in self.lines.texts()[start:]]


class Reader(Port):
    """libfprint's virtual reader in the guest, through the reader bridge."""

    def command(self, line, timeout=30.0):
        """Sends one command; retries while the reader is not open (its socket absent)."""
        deadline = now() + timeout
        while True:
            self.send(line + "\n")
            answer = self.next_line(re.compile(r"^(ok|fail)$"), max(0.1, deadline - now()))
            if answer == "ok":
                return
            if now() > deadline:
                raise WaitTimeout("the virtual reader took no %r within %.0f s" % (line, timeout))
            threading.Event().wait(0.1)  # the reader opens as the daemon starts: asked again shortly

    def scan(self, print_id, timeout=30.0):
        self.command("SCAN " + print_id, timeout)


class Control(Port):
    """Root commands in the guest, each with a time limit, through the control bridge."""

    _ids = itertools.count(1)

    def run(self, script, limit=60, check=True):
        """(exit status, output) of a bash script run as root in the guest."""
        ident = "c%d" % next(self._ids)
        encoded = base64.b64encode(script.encode()).decode()
        self.send("%s %d %s\n" % (ident, limit, encoded))
        line = self.next_line(re.compile("^%s " % ident), limit + 15)
        _, out, rc = line.split(" ")
        text = base64.b64decode(out).decode("utf-8", "replace") if out else ""
        rc = int(rc)
        if check and rc != 0:
            raise AssertionError("in the guest: %s: exit %d\n%s" % (script, rc, text))
        return rc, text

    def send_only(self, script, limit=60):
        """Starts a script whose answer never comes (a reboot takes the bridge down with it)."""
        ident = "c%d" % next(self._ids)
        self.send("%s %d %s\n" % (ident, limit, base64.b64encode(script.encode()).decode()))

    def out(self, script, limit=60):
        return self.run(script, limit)[1]

    def wait_ready(self, timeout):
        """Until the bridge answers (it starts late in the boot; a line sent before is lost). Any
        ping's answer will do: on a loaded machine one may come after the next ping was sent."""
        deadline = now() + timeout
        while True:
            ident = "ping%d" % next(self._ids)
            self.send("%s 5 %s\n" % (ident, base64.b64encode(b"true").decode()))
            try:
                self.next_line(re.compile("^ping[0-9]+ "), 2.0)
                return
            except WaitTimeout:
                if now() > deadline:
                    raise WaitTimeout("the guest's control bridge did not answer within %.0f s" % timeout)


class Qmp(Port):
    """QEMU's machine protocol: commands, and the events it sends (SUSPEND, WAKEUP…) to wait on."""

    def __init__(self, path):
        super().__init__(path, "qmp")
        self.answered = self.lines.wait_for(re.compile(r'"QMP"'), 30, 0) + 1
        self.execute("qmp_capabilities")

    def execute(self, command):
        """Runs a command; its answer line ({"return"…} or {"error"…})."""
        self.send('{"execute": "%s"}\n' % command)
        i = self.lines.wait_for(re.compile(r'^\{"(return|error)"'), 30, self.answered)
        self.answered = i + 1
        return self.lines.lines[i][1]

    def mark(self):
        return len(self.lines.lines)

    def event(self, name, timeout, start=0):
        """The first event `name` since line `start` (one JSON line), waited for with a deadline."""
        return self.lines.lines[self.lines.wait_for(re.compile(r'"event": "%s"' % name), timeout, start)][1]


class SoftwareTPM:
    """swtpm for QEMU's TPM emulator backend: its control channel on a Unix socket, a fresh state
    directory (a new machine's TPM), kept for the guest's life, so reboots keep its seeds."""

    def __init__(self, work, timeout=30.0):
        self.state = work / "tpm"
        shutil.rmtree(self.state, ignore_errors=True)
        self.state.mkdir()
        self.socket = work / "swtpm.sock"
        self.socket.unlink(missing_ok=True)
        self.proc = subprocess.Popen(["swtpm", "socket", "--tpm2", "--tpmstate", "dir=%s" % self.state,
                                      "--ctrl", "type=unixio,path=%s" % self.socket],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        # swtpm says nothing when it listens: connect until it accepts; between tries wait on its
        # stderr, which ends (and wakes the wait) at once if it dies.
        deadline = now() + timeout
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(self.socket))
                return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("swtpm exited: %s" % self.proc.stderr.read().decode(errors="replace"))
            if now() > deadline:
                self.close()
                raise WaitTimeout("swtpm did not listen on %s within %.0f s" % (self.socket, timeout))
            select.select([self.proc.stderr], [], [], 0.05)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class Guest:
    """One QEMU process on a qcow2 overlay of the cached image."""

    def __init__(self, image, work):
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        overlay = image.overlay(self.work / "disk.qcow2")
        sock = lambda name: self.work / (name + ".sock")  # noqa: E731
        self.tpm = SoftwareTPM(self.work)
        argv = ["qemu-system-x86_64", "-accel", ACCEL, "-m", str(MEMORY_MB), "-smp", "2",
                "-nodefaults", "-no-user-config", "-display", "none",
                "-kernel", image.kernel, "-initrd", image.initrd, "-append", CMDLINE,
                "-drive", "file=%s,if=virtio,format=qcow2" % overlay,
                "-chardev", "socket,id=con,path=%s,server=on,wait=off,logfile=%s" % (sock("console"), self.work / "console.log"),
                "-serial", "chardev:con",
                "-device", "virtio-serial-pci",
                "-chardev", "socket,id=reader,path=%s,server=on,wait=off" % sock("reader"),
                "-device", "virtserialport,chardev=reader,name=tgreader",
                "-chardev", "socket,id=control,path=%s,server=on,wait=off" % sock("control"),
                "-device", "virtserialport,chardev=control,name=tgcontrol",
                "-chardev", "socket,id=tpm,path=%s" % self.tpm.socket,
                "-tpmdev", "emulator,id=tpm0,chardev=tpm", "-device", "tpm-tis,tpmdev=tpm0",
                "-monitor", "unix:%s,server=on,wait=off" % sock("monitor"),
                "-qmp", "unix:%s,server=on,wait=off" % sock("qmp")]
        self.qemu_log = open(self.work / "qemu.log", "wb")
        self.started = now()
        self.proc = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=self.qemu_log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self.console = Console(sock("console"))
            self.reader = Reader(sock("reader"), "reader")
            self.control = Control(sock("control"), "control")
            self.monitor = Port(sock("monitor"), "monitor")
            self.qmp = Qmp(sock("qmp"))
        except Exception:
            self.close()
            raise

    def wait_login_prompt(self, timeout=BOOT_LIMIT):
        """Seconds from the start (or the reboot) to the getty's login prompt."""
        t0 = self.started
        self.console.expect(re.compile(r"login: $"), timeout, advance=False)  # the person answers it
        return now() - t0

    def monitor_command(self, command):
        self.monitor.send(command + "\n")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.monitor_command("quit")
                self.proc.wait(10)
            except Exception:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        for port in ("console", "reader", "control", "monitor", "qmp"):
            if hasattr(self, port):
                getattr(self, port).close()
        self.qemu_log.close()
        self.tpm.close()
