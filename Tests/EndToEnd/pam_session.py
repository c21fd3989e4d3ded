"""pamtester inside a pty, through pam_wrapper: the transcript with timestamps and the PAM result."""

import fcntl
import glob
import os
import pty
import re
import shutil
import signal
import subprocess
import termios
import threading
from pathlib import Path

from harness import DEFAULT_WAIT, PAM_RESULT_BY_TEXT, SERVICE, _env
from lines import LineLog, WaitTimeout, _pump_lines, _pty_reader, ms, now


# ---------------------------------------------------------------------------------------------
# PAM: pamtester in a pty, through pam_wrapper


TRACE = re.compile(r"^pamtester: (invoking |performing operation)")


class PamSession:
    """`pamtester -v SERVICE USER authenticate` with pam_wrapper and nss_wrapper, in a pty
    (`operations`: other pamtester operations in order, e.g. authenticate open_session).

    stdout (PAM_TEXT_INFO) and stderr (PAM_ERROR_MSG, result) share the pty, so the transcript is
    in the order the person would see it, each line timed on arrival (a tty is line-buffered).

    By default the pty is not pamtester's controlling terminal, so there is no /dev/tty for the
    module to read keys from (like a client without a terminal); `ctty=True` makes it one, as for
    a person at a terminal. `type(text)` sends keys either way."""

    def __init__(self, world, user, service=SERVICE, ctty=False, extra_env=None, operations=("authenticate",)):
        self.user = user
        self.service = service
        self.out = LineLog("pamtester %s %s" % (service, user))
        env = _env(dict(world.nss_env(), LD_PRELOAD="libpam_wrapper.so libnss_wrapper.so",
                        PAM_WRAPPER="1", PAM_WRAPPER_SERVICE_DIR=str(world.pam_dir), **(extra_env or {})))
        master, slave = pty.openpty()
        self.started = now()
        try:
            self.proc = subprocess.Popen(["pamtester", "-v", service, user] + list(operations),
                                         stdin=slave, stdout=slave, stderr=slave, env=env,
                                         start_new_session=True, preexec_fn=_take_ctty if ctty else None)
        finally:
            os.close(slave)
        self._master = master
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()
        self.ended = None

    def _pump(self):
        try:
            _pump_lines(_pty_reader(self._master), self.out)
        finally:
            os.close(self._master)

    def wait_for(self, pattern, timeout=DEFAULT_WAIT, start=0):
        return self.out.wait_for(pattern, timeout, start)

    def type(self, text):
        """Keys typed at pamtester's terminal (the pty's master side)."""
        os.write(self._master, text.encode())

    def wait(self, timeout=DEFAULT_WAIT):
        """Waits for pamtester to exit and its output to end; returns self."""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise WaitTimeout("pamtester %s %s still running after %.1f s:\n%s"
                              % (self.service, self.user, timeout, self.out.dump()))
        self.ended = now()
        self.out.wait_closed(timeout)
        return self

    def kill(self):
        """SIGKILL (what a closed terminal or a crashed client amounts to); returns once reaped."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(DEFAULT_WAIT)
            self.ended = now()
        self.out.wait_closed(DEFAULT_WAIT)
        _remove_pam_wrapper_dir(self.proc.pid)

    # The transcript

    def messages(self):
        """What the person saw: every line that pamtester did not write itself."""
        return [text for text in self.out.texts() if not text.startswith("pamtester: ")]

    @property
    def result(self):
        """PAM result name, from pamtester's last line ('successfully authenticated' or pam_strerror)."""
        for text in reversed(self.out.texts()):
            if text.startswith("pamtester: ") and not TRACE.match(text):
                rest = text[len("pamtester: "):]
                if rest.startswith("successfully "):
                    return "PAM_SUCCESS"
                return PAM_RESULT_BY_TEXT.get(rest.rstrip("."), "unknown (%s)" % rest)
        return None

    @property
    def returncode(self):
        return self.proc.returncode

    def time_of(self, index):
        """Arrival time of line `index`, in ms after pamtester started."""
        return ms(self.out.lines[index][0] - self.started)

    def auth_started(self):
        """Arrival time (monotonic) of the 'performing operation - authenticate' trace line."""
        i = self.out.wait_for("performing operation", 0)
        return self.out.lines[i][0]

    def transcript(self):
        return self.out.dump()


def _take_ctty():
    """In the child, after setsid: its stdin (the pty) becomes its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _remove_pam_wrapper_dir(pid):
    """pam_wrapper copies the services to /tmp/pam.X and removes it at exit; a killed client
    cannot, so remove the one whose pid file names it (pam_wrapper keeps only 62 such names)."""
    for pid_file in glob.glob("/tmp/pam.?/pid"):
        try:
            if Path(pid_file).read_text().strip() == str(pid):
                shutil.rmtree(os.path.dirname(pid_file), ignore_errors=True)
        except OSError:
            pass
