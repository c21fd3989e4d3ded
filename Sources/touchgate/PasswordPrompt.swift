// Reads the caller's password: on the terminal with echo off (always restored), or one line of stdin.
import TouchGateL10n
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

enum PasswordPrompt {
    /// The PASSWORD field for enroll, delete and enable: the daemon checks it when the caller is not
    /// root and acts on their own account. For another user's it refuses (notPermitted) before any
    /// password, so none is asked for, nor sent.
    static func fieldIfNeeded(for user: String) throws(Failure) -> [Field] {
        guard !Caller.isRoot, Caller.isSelf(user) else { return [] }
        return [Field(.password, try read())]
    }

    /// The password, from the terminal when stdin is one (prompt `prompt`, by default
    /// `Password: `), else one line of stdin.
    static func read(prompt: String = L("Password: ", cli)) throws(Failure) -> String {
        var bytes: [UInt8]
        if isatty(STDIN_FILENO) == 1 {
            let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
            let fd = tty >= 0 ? tty : STDIN_FILENO
            defer { if tty >= 0 { close(tty) } }
            bytes = try readWithoutEcho(fd: fd, promptFD: tty >= 0 ? tty : STDERR_FILENO, prompt: prompt)
        } else {
            bytes = try readLine(fd: STDIN_FILENO)
        }
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        // Enter alone is no password: sent, the daemon would count it as a wrong one.
        guard !bytes.isEmpty else { throw Failure(L("no password given", cli)) }
        guard bytes.count <= WireLimits.maxString else {
            throw Failure(L("the password is too long", cli))
        }
        guard !bytes.contains(0), let password = String(validating: bytes, as: UTF8.self) else {
            throw Failure(L("the password is not valid text", cli))
        }
        return password
    }

    private static func readWithoutEcho(fd: Int32, promptFD: Int32, prompt: String) throws(Failure) -> [UInt8] {
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else { return try readLine(fd: fd) }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHONL)

        // A signal while echo is off must not leave the terminal silent: restore, then die as usual.
        TerminalGuard.arm(fd: fd, saved: saved)
        defer { TerminalGuard.disarm() }
        _ = writeAll(promptFD, prompt)
        guard tcsetattr(fd, TCSAFLUSH, &quiet) == 0 else {
            throw Failure(L("cannot turn off echo on the terminal", cli))
        }
        defer {
            _ = tcsetattr(fd, TCSAFLUSH, &saved)
            _ = writeAll(promptFD, "\n")  // the Enter the user typed was not echoed
        }
        return try readLine(fd: fd)
    }

    /// Bytes up to the newline, read one at a time so nothing after it is consumed.
    private static func readLine(fd: Int32) throws(Failure) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(WireLimits.maxString + 1)  // never moved: no copy left behind unwiped
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(fd, &byte, 1)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw Failure(L("cannot read the password: %s", cli, systemError(e, cli)))
            }
            if n == 0 {
                if line.isEmpty { throw Failure(L("no password given", cli)) }
                break
            }
            if byte == 0x0A { break }
            // Keep a bounded amount; one byte over the limit is enough to refuse it later.
            if line.count <= WireLimits.maxString { line.append(byte) }
        }
        if line.last == 0x0D { line.removeLast() }
        return line
    }
}

/// Restores the terminal from a signal handler; global because a C signal handler captures nothing.
private enum TerminalGuard {
    nonisolated(unsafe) static var fd: Int32 = -1
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var previous: [Int32: __sighandler_t?] = [:]
    static let fatal: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func arm(fd: Int32, saved: termios) {
        Self.saved = saved
        Self.fd = fd
        for s in fatal { previous[s] = signal(s, restoreAndRaise) }
        // Ctrl-Z would stop us with echo off and resume us with it on: not while a password is typed.
        previous[SIGTSTP] = signal(SIGTSTP, SIG_IGN)
    }

    static func disarm() {
        for s in fatal + [SIGTSTP] { _ = signal(s, previous[s] ?? SIG_DFL) }
        fd = -1
    }
}

/// Async-signal-safe: tcsetattr, write, signal and raise only.
private func restoreAndRaise(_ sig: Int32) {
    if TerminalGuard.fd >= 0 {
        _ = tcsetattr(TerminalGuard.fd, TCSAFLUSH, &TerminalGuard.saved)
        _ = write(TerminalGuard.fd, "\n", 1)
    }
    _ = signal(sig, SIG_DFL)
    _ = raise(sig)
}
