// Where the daemon's records go: the journal's native protocol when stderr is the journal, else
// stderr (and the audit records to syslog's authpriv as well).
import Glibc
import Logging
import TouchGateCore

enum LogSetup {
    static let auditLabel = "touchgate.audit"
    /// Only for tests: the journal socket to use instead of journald's (a datagram socket the test reads).
    static let journalSocketVariable = "TOUCHGATE_JOURNAL_SOCKET"

    /// Bootstraps swift-log once; true when records go to the journal.
    @discardableResult
    static func bootstrap(level: Logger.Level) -> Bool {
        if JournalStream.isStandardError(), let socket = JournalSocket(path: journalSocketPath) {
            // Once, natively: journald forwards to syslog itself, and stderr would be a second copy.
            LoggingSystem.bootstrap { label in
                var handler = JournalLogHandler(socket: socket, audit: label == auditLabel)
                handler.logLevel = level
                return handler
            }
            return true
        }
        LoggingSystem.bootstrap { label in
            var stream = StreamLogHandler.standardError(label: label)
            stream.logLevel = level
            guard label == auditLabel else { return stream }
            // Audit records to syslog (authpriv) and, for the operator, to stderr as well; their
            // journal fields (metadata) are left out: the line already says them.
            return LineOnlyLogHandler(MultiplexLogHandler([stream, SyslogLogHandler(identifier: "touchgated")]))
        }
        return false
    }

    private static var journalSocketPath: String {
        guard let p = getenv(journalSocketVariable), p.pointee != 0 else { return JournalSocket.defaultPath }
        return String(cString: p)
    }
}
