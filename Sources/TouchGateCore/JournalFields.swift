// What one log record says to the journal (its native fields) and how an audit event's details
// travel to it: pure, so the contract in docs/logging.md is tested without a journal.
import Logging
import TouchGateWire

public enum JournalFields {
    public static let identifier = "touchgated"
    /// syslog's authpriv facility: audit records are filed with pam_unix's.
    static let authprivFacility = 10

    /// One MESSAGE_ID per kind of event. Queries and alerts match on them: never change a value.
    public static let messageIDs: [String: String] = [
        "outcome": "4c180263b0b74e438ba1fb758ceb605b",
        "lockout": "46d53d2c9c55440fbba212ffaf516201",
        "unlock": "47336640d0cd4df094d6b681fe654f71",
        "enrollmentChanged": "220ec1066cf94048898e793aad447720",
        "admin": "e2d4602f8fb44870b2f1a5c70c8e1fe4",
    ]

    /// The event's details, in the order they are written; each becomes TOUCHGATE_<KEY upper-cased>.
    static let eventKeys = [
        "event", "user", "outcome", "reason", "method", "service", "tty", "rhost", "code",
        "failed_matches", "wrong_passwords", "by_uid",
    ]

    /// syslog's priorities (PRIORITY=).
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// The fields of one record. An ordinary line is MESSAGE, PRIORITY and SYSLOG_IDENTIFIER only;
    /// an audit record (`audit`, its details in `metadata` as `AuthEvent.logMetadata` puts them) adds
    /// the facility, the MESSAGE_ID of its kind and one TOUCHGATE_ field per detail it has. Values
    /// are escaped as in the audit line (\xHH), so a client's service, tty or rhost stays one word
    /// and cannot forge a field.
    public static func fields(
        message: String, level: Logger.Level, audit: Bool,
        metadata: Logger.Metadata?
    ) -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = [
            ("MESSAGE", message), ("PRIORITY", "\(priority(level))"), ("SYSLOG_IDENTIFIER", identifier),
        ]
        guard audit else { return out }
        out.append(("SYSLOG_FACILITY", "\(authprivFacility)"))
        let details = metadata ?? [:]
        if case .string(let kind)? = details["event"], let id = messageIDs[kind] { out.append(("MESSAGE_ID", id)) }
        for key in eventKeys {
            // A detail a client sent empty (SERVICE, TTY, RHOST) is as absent as one it left out.
            guard let value = details[key]?.description, !value.isEmpty else { continue }
            out.append(("TOUCHGATE_" + key.uppercased(), oneWord(value)))
        }
        return out
    }

    /// The native protocol's datagram: `NAME=value\n`, or, for a value holding a newline,
    /// `NAME\n` + its length (64-bit little-endian) + the value + `\n`.
    public static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (name, value) in fields {
            out += Array(name.utf8)
            let bytes = Array(value.utf8)
            if bytes.contains(0x0A) {
                out.append(0x0A)
                withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { out += $0 }
                out += bytes
            } else {
                out.append(0x3D)
                out += bytes
            }
            out.append(0x0A)
        }
        return out
    }
}

extension AuthEvent {
    /// The details the journal files as TOUCHGATE_ fields, carried to the log handler on the audit
    /// logger's call. Raw values: the handler escapes them once. Absent details are absent keys.
    public var logMetadata: Logger.Metadata {
        var m: Logger.Metadata = ["event": .string(event), "user": .string(user)]
        if let outcome { m["outcome"] = .string(outcome) }
        if let reason { m["reason"] = .string(reason) }
        if let method { m["method"] = .string(method) }
        if let service { m["service"] = .string(service) }
        if let tty { m["tty"] = .string(tty) }
        if let rhost { m["rhost"] = .string(rhost) }
        if let code { m["code"] = .stringConvertible(code) }
        if let failedMatches { m["failed_matches"] = .stringConvertible(failedMatches) }
        if let wrongPasswords { m["wrong_passwords"] = .stringConvertible(wrongPasswords) }
        if let byUID { m["by_uid"] = .stringConvertible(byUID) }
        return m
    }
}
