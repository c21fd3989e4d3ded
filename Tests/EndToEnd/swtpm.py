"""A software TPM 2.0 for the tests: Debian's swtpm on a loopback port pair (commands on P, control
on P+1, as tpm2-tss's swtpm TCTI expects), its state in a directory of its own."""

import select
import socket
import subprocess
import tempfile
from pathlib import Path

from harness import DEFAULT_WAIT, WaitTimeout, now


def _free_port_pair():
    """A port P with P+1 free too, as far as binding both now tells."""
    for _ in range(100):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                b.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair on 127.0.0.1")


class SwTPM:
    """`with SwTPM(parent) as tpm:`; `tpm.tcti` is tpm2-tss's configuration for it. A second
    instance has its own state: its owner seed, and so everything it seals, differ."""

    def __init__(self, parent):
        self.state = Path(tempfile.mkdtemp(prefix="swtpm-", dir=parent))
        self.proc = None
        self.port = None

    def start(self, timeout=DEFAULT_WAIT):
        """Starts swtpm; returns once its command port accepts a connection. swtpm signals
        nothing when it listens, so connect again until it does; between tries wait on its
        stderr, which ends (and wakes the wait) at once if swtpm dies."""
        self.port = _free_port_pair()
        self.proc = subprocess.Popen(
            ["swtpm", "socket", "--tpm2", "--tpmstate", "dir=%s" % self.state,
             "--server", "type=tcp,port=%d,bindaddr=127.0.0.1" % self.port,
             "--ctrl", "type=tcp,port=%d,bindaddr=127.0.0.1" % (self.port + 1),
             "--flags", "not-need-init,startup-clear"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = now() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("swtpm exited with %s: %s" % (self.proc.returncode, self.proc.stderr.read()))
            if now() > deadline:
                raise WaitTimeout("swtpm did not listen on port %d within %.1f s" % (self.port, timeout))
            select.select([self.proc.stderr], [], [], 0.02)

    @property
    def tcti(self):
        return "swtpm:host=127.0.0.1,port=%d" % self.port

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(DEFAULT_WAIT)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class SilentTPM:
    """`with SilentTPM() as tpm:` a TPM that takes tpm2-tss's connection and never answers (one
    that hangs); `tpm.wait_for_connection()` returns once a client is in its conversation."""

    def __init__(self):
        self.port = _free_port_pair()
        self.listeners = []
        for port in (self.port, self.port + 1):
            s = socket.socket()
            s.bind(("127.0.0.1", port))
            s.listen(4)
            self.listeners.append(s)
        self.accepted = []

    @property
    def tcti(self):
        return "swtpm:host=127.0.0.1,port=%d" % self.port

    def wait_for_connection(self, timeout=DEFAULT_WAIT):
        ready, _, _ = select.select([self.listeners[0]], [], [], timeout)
        if not ready:
            raise WaitTimeout("nothing connected to the silent TPM within %.1f s" % timeout)
        self.accepted.append(self.listeners[0].accept()[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for s in self.accepted + self.listeners:
            s.close()
