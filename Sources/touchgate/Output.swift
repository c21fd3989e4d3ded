// Lines to standard output (written at once, so progress shows through a pipe) and standard error.
import TouchGateL10n
#if canImport(Glibc)
import Glibc
#endif

/// One line on standard output, visible immediately.
func say(_ line: String) {
    if let e = writeAll(STDOUT_FILENO, line + "\n"), outputError == 0 { outputError = e }
}

/// One line on standard error.
func complain(_ line: String) {
    _ = writeAll(STDERR_FILENO, line + "\n")
}

/// The first error met writing standard output (an errno), 0 while there was none.
nonisolated(unsafe) private var outputError: Int32 = 0

/// Why what was said could not all be written (a full disk, a closed output), or nil: a command
/// whose output was lost did not succeed.
func outputFailure() -> String? {
    guard outputError != 0 else { return nil }
    return L("cannot write the output: %s", cli, systemError(outputError, cli))
}

/// Writes all of `text`; the errno that stopped it, or nil.
func writeAll(_ fd: Int32, _ text: String) -> Int32? {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n < 0 { return errno }
        if n == 0 { return EIO }
        bytes = bytes.dropFirst(n)
    }
    return nil
}
