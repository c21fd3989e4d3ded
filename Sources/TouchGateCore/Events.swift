// Events for `touchgate monitor` subscribers and audit records to the journal or syslog (authpriv),
// docs/spec.md §7.
import FoundationEssentials
import Glibc
import Logging
import TouchGatePolicy
import TouchGateWire

/// One thing that happened. Never a template byte or a password.
public struct AuthEvent: Codable, Sendable, Equatable {
    public var time: String
    public var event: String  // outcome | lockout | unlock | enrollmentChanged | admin
    public var user: String
    public var service: String?
    public var tty: String?
    public var rhost: String?
    public var policy: String?
    public var method: String?  // fingerprint | password | admin
    public var code: Int32?
    public var outcome: String?
    public var reason: String?
    public var failedMatches: Int?
    public var wrongPasswords: Int?
    public var byUID: UInt32?

    public init(event: String, user: String, at time: Instant) {
        self.time = Self.iso8601(time)
        self.event = event
        self.user = user
    }

    /// The document a monitor receives; one wire string field at most (1024 bytes). The fields a
    /// client chose (service, tty, rhost) are shortened, or left out, when they would not fit, so
    /// no client can keep its own outcome from the monitors by sending long ones.
    var json: String {
        let full = Self.encoded(self)
        guard full.utf8.count > Self.documentLimit else { return full }
        var short = self
        short.service = service.map(Self.clipped)
        short.tty = tty.map(Self.clipped)
        short.rhost = rhost.map(Self.clipped)
        let clipped = Self.encoded(short)
        guard clipped.utf8.count > Self.documentLimit else { return clipped }
        (short.service, short.tty, short.rhost) = (nil, nil, nil)
        return Self.encoded(short)
    }

    static let documentLimit = WireLimits.maxString

    private static func encoded(_ event: AuthEvent) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: e.encode(event), as: UTF8.self)) ?? "{}"
    }

    private static func clipped(_ value: String) -> String {
        value.count > 64 ? String(value.prefix(64)) + "…" : value
    }

    /// `key=value` words for the syslog line. Values come partly from the client (service, tty,
    /// rhost), so anything outside a plain set is escaped as \xHH: one field stays one word.
    var auditLine: String {
        var words = ["event=\(oneWord(event))", "user=\(oneWord(user))"]
        // One a client sent empty is as absent as one it left out, as in the journal's fields.
        if let service, !service.isEmpty { words.append("service=\(oneWord(service))") }
        if let tty, !tty.isEmpty { words.append("tty=\(oneWord(tty))") }
        if let rhost, !rhost.isEmpty { words.append("rhost=\(oneWord(rhost))") }
        if let method { words.append("method=\(method)") }
        if let outcome { words.append("outcome=\(outcome)") }
        if let reason { words.append("reason=\(oneWord(reason))") }
        if let failedMatches { words.append("failed_matches=\(failedMatches)") }
        if let wrongPasswords { words.append("wrong_passwords=\(wrongPasswords)") }
        if let byUID { words.append("by_uid=\(byUID)") }
        return words.joined(separator: " ")
    }

    /// `2026-11-23T09:22:42Z`
    static func iso8601(_ t: Instant) -> String {
        var seconds = time_t(t)
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return "\(t)" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

/// Fans events out to monitor subscribers (root sees all users, a user only their own) and the
/// audit log. A subscriber that cannot keep up (its `deliver` returns false) is dropped, so a
/// stalled client never makes the daemon hold events for it.
@CoreActor final class EventBus {
    private struct Subscriber { let user: String?; let deliver: (String) -> Bool }
    private var subscribers: [UInt64: Subscriber] = [:]
    private var nextID: UInt64 = 1
    let audit: Logger
    let linuxAudit: (@Sendable (AuthEvent) -> Void)?

    init(audit: Logger, linuxAudit: (@Sendable (AuthEvent) -> Void)? = nil) {
        self.audit = audit
        self.linuxAudit = linuxAudit
    }

    /// `user` nil = every user's events (root only; the core decides).
    func subscribe(user: String?, deliver: @escaping (String) -> Bool) -> UInt64 {
        let id = nextID
        nextID += 1
        subscribers[id] = Subscriber(user: user, deliver: deliver)
        return id
    }

    func unsubscribe(_ id: UInt64) { subscribers[id] = nil }

    var subscriberCount: Int { subscribers.count }

    /// `inJournal: false`: to Linux audit and the monitors only (a line past its limit).
    func publish(_ event: AuthEvent, inJournal: Bool = true) {
        if inJournal { audit.notice("\(event.auditLine)", metadata: event.logMetadata) }
        linuxAudit?(event)
        guard !subscribers.isEmpty else { return }
        let json = event.json
        for (id, s) in subscribers where s.user == nil || s.user == event.user {
            if !s.deliver(json) { subscribers[id] = nil }
        }
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
        text.withCString { line in withVaList([line]) { vsyslog(LOG_AUTHPRIV | priority, "%s", $0) } }
    }
}
