// Lines to standard output (flushed at once, so progress shows through a pipe) and standard error.
#if canImport(Glibc)
import Glibc
#endif

/// One line on standard output, visible immediately.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// One line on standard error, after whatever standard output still holds.
func complain(_ line: String) {
    fflush(nil)
    var bytes = Array((line + "\n").utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        bytes = bytes.dropFirst(n)
    }
}
