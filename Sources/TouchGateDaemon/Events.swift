// Events for `touchgate monitor` subscribers and audit records to syslog (authpriv), SPEC §7.
import Crypto
import Foundation
import Glibc
import Logging
import Synchronization

/// One thing that happened. Never a template byte or a password.
public struct AuthEvent: Codable, Sendable, Equatable {
    public var time: String
    public var event: String          // outcome | lockout | unlock | enrollmentChanged | admin
    public var user: String
    public var service: String?
    public var tty: String?
    public var rhost: String?
    public var policy: String?
    public var method: String?        // fingerprint | password | admin
    public var code: Int32?
    public var outcome: String?
    public var reason: String?
    public var failedMatches: Int?
    public var wrongPasswords: Int?
    public var byUID: UInt32?

    public init(event: String, user: String) {
        self.time = ISO8601DateFormatter().string(from: Date())
        self.event = event
        self.user = user
    }

    var json: String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: e.encode(self), as: UTF8.self)) ?? "{}"
    }

    /// `key=value` words for the syslog line. Values come partly from the client (service, tty,
    /// rhost), so anything outside a plain set is escaped as \xHH: one field stays one word.
    var auditLine: String {
        var words = ["event=\(Self.escaped(event))", "user=\(Self.escaped(user))"]
        if let service { words.append("service=\(Self.escaped(service))") }
        if let tty { words.append("tty=\(Self.escaped(tty))") }
        if let rhost { words.append("rhost=\(Self.escaped(rhost))") }
        if let method { words.append("method=\(method)") }
        if let outcome { words.append("outcome=\(outcome)") }
        if let reason { words.append("reason=\(Self.escaped(reason))") }
        if let failedMatches { words.append("failed_matches=\(failedMatches)") }
        if let wrongPasswords { words.append("wrong_passwords=\(wrongPasswords)") }
        if let byUID { words.append("by_uid=\(byUID)") }
        return words.joined(separator: " ")
    }

    static func escaped(_ value: String) -> String {
        var out = ""
        for b in value.utf8 {
            let plain = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == 0x2E || b == 0x5F || b == 0x2D || b == 0x3A || b == 0x2F || b == 0x40 || b == 0x2C || b == 0x2B
            out += plain ? String(UnicodeScalar(b)) : String(format: "\\x%02x", b)
        }
        return out
    }
}

/// Fans events out to monitor sessions (root sees all users, a user only their own) and the audit log.
final class EventBus: Sendable {
    private struct Subscriber { let user: String?; let deliver: @Sendable (String) -> Void }
    private let subscribers = Mutex<[UInt64: Subscriber]>([:])
    private let nextID = Atomic<UInt64>(1)
    let audit: Logger

    init(audit: Logger) { self.audit = audit }

    /// `user` nil = every user's events (root only; the session decides).
    func subscribe(user: String?, deliver: @escaping @Sendable (String) -> Void) -> UInt64 {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        subscribers.withLock { $0[id] = Subscriber(user: user, deliver: deliver) }
        return id
    }

    func unsubscribe(_ id: UInt64) { _ = subscribers.withLock { $0.removeValue(forKey: id) } }

    func publish(_ event: AuthEvent) {
        audit.notice("\(event.auditLine)")
        let json = event.json
        let targets = subscribers.withLock { Array($0.values) }
        for s in targets where s.user == nil || s.user == event.user { s.deliver(json) }
    }
}

/// swift-log handler that writes to syslog with facility authpriv (the audit trail).
public struct SyslogLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public init(identifier: String) {
        // openlog keeps the pointer: give it storage that lives for the process.
        let ident = strdup(identifier)
        openlog(ident, LOG_PID | LOG_NDELAY, LOG_AUTHPRIV)
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let priority: Int32
        switch event.level {
        case .trace, .debug: priority = LOG_DEBUG
        case .info: priority = LOG_INFO
        case .notice: priority = LOG_NOTICE
        case .warning: priority = LOG_WARNING
        case .error: priority = LOG_ERR
        case .critical: priority = LOG_CRIT
        }
        let text = event.message.description
        withVaList([text]) { vsyslog(LOG_AUTHPRIV | priority, "%s", $0) }
    }
}

/// Domain state (SPEC §4): HMAC-SHA256 keyed by a per-installation secret over the service and the
/// sorted set of print digests, so order and history do not matter and services do not correlate.
struct DomainStateKey: Sendable {
    let key: [UInt8]

    /// Reads `<state>/secret`, creating 32 random bytes (0600, atomic) the first time.
    init(stateDirectory: String) throws(StorageError) {
        let path = "\(stateDirectory)/secret"
        if let existing = try Files.read(path, limit: 4096) {
            guard existing.count >= 32 else { throw .unsafe("\(path) is shorter than 32 bytes") }
            key = existing
            return
        }
        let fresh = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        try Files.writeAtomically(fresh, to: path)
        key = fresh
    }
}
