// The journal and audit contract (docs/logging.md): an event's journal fields, their escaping, the
// MESSAGE_IDs, the native encoding, JOURNAL_STREAM, and which events reach the Linux audit system.
import Logging
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("Journal fields and Linux audit records")
struct JournalFieldsTests {
    let t = TestClock.start

    func fields(_ e: AuthEvent) -> [String] {
        JournalFields.fields(message: e.auditLine, level: .notice, audit: true, metadata: e.logMetadata)
            .map { "\($0.name)=\($0.value)" }
    }

    @Test func anOutcomeCarriesEveryFieldItHasInTheContractsOrder() {
        var e = AuthEvent(event: "outcome", user: "alice", at: t)
        e.service = "sudo"; e.tty = "pts/3"; e.rhost = "10.0.0.7"; e.policy = "biometrics"
        e.method = "fingerprint"; e.code = -1; e.outcome = "authenticationFailed"; e.reason = "noMatch"
        e.failedMatches = 2; e.wrongPasswords = 0; e.byUID = 0

        #expect(
            fields(e) == [
                "MESSAGE=" + e.auditLine, "PRIORITY=5", "SYSLOG_IDENTIFIER=touchgated", "SYSLOG_FACILITY=10",
                "MESSAGE_ID=4c180263b0b74e438ba1fb758ceb605b", "TOUCHGATE_EVENT=outcome", "TOUCHGATE_USER=alice",
                "TOUCHGATE_OUTCOME=authenticationFailed", "TOUCHGATE_REASON=noMatch", "TOUCHGATE_METHOD=fingerprint",
                "TOUCHGATE_SERVICE=sudo", "TOUCHGATE_TTY=pts/3", "TOUCHGATE_RHOST=10.0.0.7", "TOUCHGATE_CODE=-1",
                "TOUCHGATE_FAILED_MATCHES=2", "TOUCHGATE_WRONG_PASSWORDS=0", "TOUCHGATE_BY_UID=0",
            ])
    }

    @Test func fieldsTheEventLacksAreAbsent() {
        var e = AuthEvent(event: "admin", user: "bob", at: t)
        e.reason = "reset"
        #expect(
            fields(e) == [
                "MESSAGE=event=admin user=bob reason=reset", "PRIORITY=5", "SYSLOG_IDENTIFIER=touchgated",
                "SYSLOG_FACILITY=10", "MESSAGE_ID=e2d4602f8fb44870b2f1a5c70c8e1fe4", "TOUCHGATE_EVENT=admin",
                "TOUCHGATE_USER=bob", "TOUCHGATE_REASON=reset",
            ])
    }

    @Test func detailsAClientSentEmptyAreAbsentToo() {
        var e = AuthEvent(event: "outcome", user: "alice", at: t)
        e.service = ""; e.tty = ""; e.rhost = ""
        #expect(fields(e).filter { $0.hasPrefix("TOUCHGATE_") } == ["TOUCHGATE_EVENT=outcome", "TOUCHGATE_USER=alice"])
    }

    @Test func clientValuesAreEscapedSoTheyCannotForgeAFieldOrALine() {
        var e = AuthEvent(event: "outcome", user: "mallory", at: t)
        e.service = "sudo\nTOUCHGATE_USER=root"
        e.tty = "pts/1 outcome=success"
        e.rhost = "h\u{0}st=é"
        let f = JournalFields.fields(message: e.auditLine, level: .notice, audit: true, metadata: e.logMetadata)
        let value = { (name: String) in f.first { $0.name == name }?.value }
        #expect(value("TOUCHGATE_SERVICE") == "sudo\\x0aTOUCHGATE_USER\\x3droot")
        #expect(value("TOUCHGATE_TTY") == "pts/1\\x20outcome\\x3dsuccess")
        #expect(value("TOUCHGATE_RHOST") == "h\\x00st\\x3d\\xc3\\xa9")
        #expect(f.filter { $0.name == "TOUCHGATE_USER" }.map(\.value) == ["mallory"])
        #expect(!f.contains { $0.value.contains("\n") })
    }

    @Test func eachKindOfEventHasItsOwnFixedMessageID() {
        #expect(
            JournalFields.messageIDs == [
                "outcome": "4c180263b0b74e438ba1fb758ceb605b",
                "lockout": "46d53d2c9c55440fbba212ffaf516201",
                "unlock": "47336640d0cd4df094d6b681fe654f71",
                "enrollmentChanged": "220ec1066cf94048898e793aad447720",
                "admin": "e2d4602f8fb44870b2f1a5c70c8e1fe4",
            ])
        for kind in JournalFields.messageIDs.keys {
            let f = fields(AuthEvent(event: kind, user: "alice", at: t))
            #expect(f.contains("MESSAGE_ID=\(JournalFields.messageIDs[kind]!)"))
            #expect(f.contains("TOUCHGATE_EVENT=\(kind)"))
        }
    }

    @Test func anOrdinaryLineHasOnlyTheMessageItsPriorityAndTheIdentifier() {
        let f = JournalFields.fields(
            message: "listening on /run/touchgate/touchgated.sock", level: .info, audit: false,
            metadata: ["event": "outcome", "user": "alice"])
        #expect(f.map(\.name) == ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"])
        #expect(f[1].value == "6")
        #expect(
            [Logger.Level.trace, .debug, .info, .notice, .warning, .error, .critical].map(JournalFields.priority)
                == [7, 7, 6, 5, 4, 3, 2])
    }

    @Test func theNativeEncodingFramesAValueWithANewlineByItsLength() {
        let bytes = JournalFields.encode([("MESSAGE", "a\nb"), ("PRIORITY", "5")])
        #expect(bytes == Array("MESSAGE\n".utf8) + [3, 0, 0, 0, 0, 0, 0, 0] + Array("a\nb\nPRIORITY=5\n".utf8))
    }

    @Test func journalStreamMustNameStderrsDeviceAndInode() {
        #expect(JournalStream.names("8:12345", device: 8, inode: 12345))
        #expect(!JournalStream.names("8:12346", device: 8, inode: 12345))
        #expect(!JournalStream.names("9:12345", device: 8, inode: 12345))
        #expect(!JournalStream.names("8:12345:1", device: 8, inode: 12345))
        #expect(!JournalStream.names("", device: 0, inode: 0))
        #expect(!JournalStream.names("x:y", device: 0, inode: 0))
    }

    // MARK: Linux audit

    @Test func fingerprintAndPasswordOutcomesAreUserAuthRecords() {
        var ok = AuthEvent(event: "outcome", user: "alice", at: t)
        ok.method = "fingerprint"; ok.outcome = "success"; ok.tty = "pts/3"
        #expect(
            LinuxAuditRecord.records(for: ok) == [
                LinuxAuditRecord(
                    kind: .userAuth, operation: "touchgate:fingerprint", account: "alice", host: nil, address: "?",
                    terminal: "pts/3", success: true)
            ])

        var wrong = AuthEvent(event: "outcome", user: "bob", at: t)
        wrong.method = "password"; wrong.outcome = "authenticationFailed"; wrong.rhost = "192.0.2.1"
        #expect(
            LinuxAuditRecord.records(for: wrong) == [
                LinuxAuditRecord(
                    kind: .userAuth, operation: "touchgate:password", account: "bob", host: "192.0.2.1",
                    address: "192.0.2.1", terminal: nil, success: false)
            ])
    }

    @Test func aLockoutIsALoginFailuresRecord() {
        var e = AuthEvent(event: "lockout", user: "alice", at: t)
        e.method = "fingerprint"; e.outcome = "biometryLockout"
        #expect(
            LinuxAuditRecord.records(for: e).map { [$0.kind == .loginFailures, $0.operation == "touchgate:lockout"] }
                == [[true, true]])
    }

    @Test func refusalsBeforeAnyCheckAndOtherEventsAreNotAuthentications() {
        var refused = AuthEvent(event: "outcome", user: "alice", at: t)
        refused.outcome = "biometryNotEnrolled"  // no method: nothing was checked
        #expect(LinuxAuditRecord.records(for: refused).isEmpty)
        for reason in ["backoff", "pamStack"] {  // never checked; checked and audited by pam_unix
            var e = AuthEvent(event: "outcome", user: "alice", at: t)
            e.method = "password"; e.outcome = reason == "backoff" ? "passwordBackoff" : "success"; e.reason = reason
            #expect(LinuxAuditRecord.records(for: e).isEmpty, "\(reason)")
        }
        // A prompt that judged no finger (no reader, none in time, a cancel) and a password the
        // password service could not check: nothing was checked.
        let unjudged = [
            ("fingerprint", "biometryNotAvailable"), ("fingerprint", "timeout"), ("fingerprint", "systemCancel"),
            ("fingerprint", "userFallback"), ("password", "internal"),
        ]
        for (method, outcome) in unjudged {
            var e = AuthEvent(event: "outcome", user: "alice", at: t)
            e.method = method; e.outcome = outcome
            #expect(LinuxAuditRecord.records(for: e).isEmpty, "\(method) \(outcome)")
        }
        var last = AuthEvent(event: "outcome", user: "alice", at: t)
        last.method = "fingerprint"; last.outcome = "biometryLockout"  // the failed match that locked
        #expect(LinuxAuditRecord.records(for: last).map(\.success) == [false])
        for kind in ["unlock", "enrollmentChanged", "admin"] {
            var e = AuthEvent(event: kind, user: "alice", at: t)
            e.method = kind == "unlock" ? "password" : nil
            #expect(LinuxAuditRecord.records(for: e).isEmpty, "\(kind)")
        }
    }

    @Test func aHostNameIsNeverLeftForLibauditToResolve() {
        var e = AuthEvent(event: "outcome", user: "alice", at: t)
        e.method = "fingerprint"; e.outcome = "success"; e.rhost = "evil host res=success"
        let r = LinuxAuditRecord.records(for: e)
        #expect(r.map(\.address) == ["?"])
        #expect(r.map(\.host) == ["evil\\x20host\\x20res\\x3dsuccess"])
        e.rhost = "2001:db8::1"
        #expect(LinuxAuditRecord.records(for: e).map(\.address) == ["2001:db8::1"])
    }

    // MARK: the bus hands both on

    @CoreActor @Test func theBusGivesTheAuditLoggerTheEventsDetailsAndTheLinuxAuditTheEvent() {
        let details = Collector<Logger.Metadata>(), handed = Collector<AuthEvent>()
        let audit = Logger(label: "touchgate.tests.audit", factory: { _ in MetadataCollector(seen: details) })
        let bus = EventBus(audit: audit, linuxAudit: { handed.append($0) })
        var e = AuthEvent(event: "outcome", user: "alice", at: t)
        e.method = "fingerprint"; e.outcome = "success"; e.service = "sudo"
        bus.publish(e)
        #expect(handed.all == [e])
        #expect(details.all.count == 1)
        #expect(details.all.first.map { Set($0.keys) } == ["event", "user", "method", "outcome", "service"])
    }
}

private struct MetadataCollector: LogHandler {
    let seen: Collector<Logger.Metadata>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { seen.append(event.metadata ?? [:]) }
}
