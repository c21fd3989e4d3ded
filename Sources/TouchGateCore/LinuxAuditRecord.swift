// Which events the Linux audit system hears, and as what: pure; the daemon's LinuxAudit sends them.
import Glibc
import TouchGateWire

/// One record for libaudit's audit_log_acct_message, as pam_unix and pam_faillock write theirs.
public struct LinuxAuditRecord: Equatable, Sendable {
    public enum Kind: Sendable { case userAuth, loginFailures }  // AUDIT_USER_AUTH, AUDIT_ANOM_LOGIN_FAILURES

    public var kind: Kind
    public var operation: String
    public var account: String
    /// The client's remote host, escaped as in the audit line (libaudit writes it as given).
    public var host: String?
    /// The host when it is a numeric address, else "?": never empty, because libaudit resolves an
    /// empty address from the host name through DNS, and a record must not wait on the network.
    public var address: String
    public var terminal: String?
    public var success: Bool

    /// Passwords the daemon did not check itself but that carry a judged outcome: one the PAM
    /// stack accepted (the report line) was checked, and audited, by pam_unix through libpam. (One
    /// refused during the back-off is not judged: `judgedOutcomes` leaves it out.)
    static let uncheckedPasswordReasons: Set<Reason> = [.pamStack]
    /// The outcomes of a finger or a password that was judged: every other (no reader, no finger
    /// in time, a cancel, the password service unavailable) checked nothing.
    static let judgedOutcomes: Set<String> = [
        Outcome.success.name, Outcome.authenticationFailed.name, Outcome.biometryLockout.name,
    ]

    /// An authentication outcome of the reader or of a password the daemon checked is a
    /// USER_AUTH record (res=success or failed); a lockout is also an ANOM_LOGIN_FAILURES record,
    /// res=success as pam_faillock writes it (the anomaly is what is reported). Refusals before any
    /// check (no method), outcomes that judged nothing, enrollment and admin events are not
    /// authentications.
    public static func records(for event: AuthEvent) -> [LinuxAuditRecord] {
        let operation: String, kind: Kind, success: Bool
        switch (event.event, event.method) {
        case ("outcome", "password"?)
        where event.reason.flatMap(Reason.init(rawValue:)).map(uncheckedPasswordReasons.contains) ?? false:
            return []
        case ("outcome", "fingerprint"?), ("outcome", "password"?):
            guard let outcome = event.outcome, judgedOutcomes.contains(outcome) else { return [] }
            operation = "touchgate:\(event.method!)"
            kind = .userAuth
            success = event.outcome == "success"
        case ("lockout", _):
            operation = "touchgate:lockout"
            kind = .loginFailures
            success = true
        default:
            return []
        }
        let host = event.rhost.map(oneWord)
        return [
            LinuxAuditRecord(
                kind: kind, operation: operation, account: event.user, host: host,
                address: event.rhost.flatMap(numericAddress) ?? "?",
                terminal: event.tty.map(oneWord), success: success)
        ]
    }

    static func numericAddress(_ text: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1 { return text }
        return nil
    }
}
