// Log records to systemd's journal over its native protocol, when stderr is the journal; and the
// test that tells (JOURNAL_STREAM).
import Glibc
import Logging

/// Whether stderr is the journal: systemd names the stream it connected (StandardError=journal)
/// as `device:inode` in JOURNAL_STREAM; a child that inherited the variable but not the stream
/// (stderr redirected) must not take it for the journal.
public enum JournalStream {
    /// True when `value` is `device:inode` (decimal) and names exactly this device and inode.
    public static func names(_ value: String, device: UInt64, inode: UInt64) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let d = UInt64(parts[0]), let i = UInt64(parts[1]) else { return false }
        return d == device && i == inode
    }

    public static func isStandardError() -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        var st = stat()
        guard fstat(STDERR_FILENO, &st) == 0 else { return false }
        return names(value, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }
}

/// The journal's datagram socket, shared by every handler. A record that cannot be sent (the
/// journal gone or stalled past the deadline, a record too large for one datagram) is written to
/// stderr instead, which is the journal's stream: nothing is dropped silently.
public final class JournalSocket: Sendable {
    public static let defaultPath = "/run/systemd/journal/socket"
    /// How long a record may wait for a stalled journal before it goes to stderr.
    static let sendDeadlineMilliseconds = 500

    private let fd: Int32
    private let address: sockaddr_un
    private let length: socklen_t

    /// nil when the path does not fit a socket address or no socket can be made.
    public init?(path: String) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var deadline = timeval(tv_sec: 0, tv_usec: suseconds_t(Self.sendDeadlineMilliseconds * 1000))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &deadline, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        self.address = addr
        self.length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    }

    func send(_ record: [UInt8]) -> Bool {
        var addr = address
        let sent = withUnsafePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                record.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
        return sent == record.count
    }
}

/// swift-log handler writing native journal records (JournalFields). The audit logger's handler
/// (`audit`) adds the event's fields; every other logger's records carry the line only.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    private let socket: JournalSocket
    private let audit: Bool

    public init(socket: JournalSocket, audit: Bool) {
        self.socket = socket
        self.audit = audit
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var text = event.message.description
        if !audit, let details = event.metadata, !details.isEmpty {
            // An ordinary record's details stay in its line, as on stderr.
            text += " " + details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        let fields = JournalFields.fields(message: text, level: event.level, audit: audit, metadata: event.metadata)
        if socket.send(JournalFields.encode(fields)) { return }
        // stderr is the journal's stream here: its `<N>` prefix keeps the line's priority.
        let line = Array(("<\(JournalFields.priority(event.level))>" + text + "\n").utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// Passes records on without the call's metadata: the audit events' details are for the journal's
/// fields; on stderr and in syslog the `key=value` line already says them.
public struct LineOnlyLogHandler: LogHandler {
    private var inner: any LogHandler

    public init(_ inner: any LogHandler) { self.inner = inner }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var plain = event
        plain.metadata = nil
        inner.log(event: plain)
    }
}
