// The Linux audit sender over a scripted channel: a passing error loses one record, a lasting one
// stops the records and says why, and nothing waits on the channel.
import Glibc
import Logging
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateThreads

/// What the sender did, in order (channel calls and log lines), awaited by count with a deadline.
@CoreActor private final class Trail {
    private(set) var all: [String] = []
    private var waiters: [(count: Int, done: OneShot<Void>)] = []

    func add(_ entry: String) {
        all.append(entry)
        for w in waiters where all.count >= w.count { w.done.set(()) }
        waiters.removeAll { all.count >= $0.count }
    }

    /// True once `count` entries are in, false when the deadline passes first.
    func reaches(_ count: Int) async -> Bool {
        if all.count >= count { return true }
        let done = OneShot<Void>()
        waiters.append((count, done))
        return await value(of: done) != nil
    }

    nonisolated func post(_ entry: String) { CoreLoop.shared.post { self.add(entry) } }
}

/// Sends answer the scripted codes in turn, then 1 (sent).
private final class ScriptedChannel: AuditChannel {
    let trail: Trail
    let openFailure: String?
    private let codes: Mutex<[Int32]>

    init(trail: Trail, codes: [Int32] = [], openFailure: String? = nil) {
        self.trail = trail
        self.codes = Mutex(codes)
        self.openFailure = openFailure
    }

    func open() -> String? {
        trail.post("open")
        return openFailure
    }

    func send(_ record: LinuxAuditRecord) -> Int32 {
        let rc = codes.withLock { $0.isEmpty ? 1 : $0.removeFirst() }
        trail.post("send \(record.account) \(rc)")
        return rc
    }

    func close() { trail.post("close") }
}

/// Sends wait until the test lets each one through.
private final class GatedChannel: AuditChannel {
    let trail: Trail
    let gate = TouchGateThreads.Semaphore()
    init(trail: Trail) { self.trail = trail }
    func open() -> String? { nil }
    func send(_ record: LinuxAuditRecord) -> Int32 {
        trail.post("waiting \(record.account)")
        gate.wait()
        trail.post("send \(record.account)")
        return 1
    }
    func close() {}
}

/// Log lines into the trail, after whatever the sender did before them.
private struct TrailLogHandler: LogHandler {
    let trail: Trail
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { trail.post("log \(event.level): \(event.message)") }
}

private func outcome(_ user: String) -> AuthEvent {
    var e = AuthEvent(event: "outcome", user: user, at: 0)
    e.method = "fingerprint"
    e.outcome = "success"
    return e
}

@Suite("Linux audit: the sender keeps going through passing errors and stops on lasting ones")
@CoreActor struct AuditSenderTests {
    private func sender(_ channel: ScriptedChannel) -> AuditSender {
        AuditSender(channel: channel, log: Logger(label: "test") { _ in TrailLogHandler(trail: channel.trail) })
    }

    @Test func aPassingErrorLosesThatRecordOnlyAndIsSaidOnceUntilOneGoesThrough() async {
        let trail = Trail()
        let audit = sender(ScriptedChannel(trail: trail, codes: [-ENOBUFS, -EAGAIN, 1, -ENOMEM]))
        for user in ["u1", "u2", "u3", "u4", "u5"] { audit.record(outcome(user)) }
        #expect(await trail.reaches(8))
        #expect(
            trail.all.filter { !$0.hasPrefix("log") } == [
                "open", "send u1 \(-ENOBUFS)", "send u2 \(-EAGAIN)", "send u3 1", "send u4 \(-ENOMEM)", "send u5 1",
            ])
        let warnings = trail.all.filter { $0.hasPrefix("log warning") }
        #expect(warnings.count == 2)
        #expect(warnings.allSatisfy { $0.contains("a record was not sent") })
        #expect(!trail.all.contains("close"))
    }

    @Test(arguments: [-EPERM, 0, -EINVAL])
    func aLastingErrorStopsTheRecordsAndSaysWhy(_ code: Int32) async {
        let trail = Trail()
        let audit = sender(ScriptedChannel(trail: trail, codes: [code]))
        audit.record(outcome("u1"))
        #expect(await trail.reaches(4))
        #expect(trail.all.first == "open" && trail.all.last == "close")
        #expect(trail.all.contains("send u1 \(code)"))
        #expect(trail.all.contains { $0.hasPrefix("log notice: Linux audit unavailable") })
        // Stopped before the channel closed: a later event is not even queued.
        audit.record(outcome("u2"))
        let drained = OneShot<Void>()
        CoreLoop.shared.post { drained.set(()) }
        #expect(await value(of: drained) != nil)
        #expect(trail.all.count == 4)
    }

    @Test func aChannelThatDoesNotOpenStopsTheRecords() async {
        let trail = Trail()
        let audit = sender(ScriptedChannel(trail: trail, openFailure: "Protocol not supported"))
        audit.record(outcome("u1"))
        #expect(await trail.reaches(2))
        #expect(
            trail.all == [
                "open",
                "log notice: Linux audit unavailable (Protocol not supported): authentication records go to the log only",
            ])
        audit.record(outcome("u2"))
        let drained = OneShot<Void>()
        CoreLoop.shared.post { drained.set(()) }
        #expect(await value(of: drained) != nil)
        #expect(trail.all.count == 2)
    }

    @Test func shutdownWaitsForTheQueuedRecordsWithinItsDeadline() async {
        let trail = Trail()
        let channel = GatedChannel(trail: trail)
        let audit = AuditSender(channel: channel, log: Logger(label: "test") { _ in TrailLogHandler(trail: trail) })
        #expect(await audit.drain(withinMilliseconds: 0))  // nothing queued: nothing to wait for
        for user in ["u1", "u2", "u3"] { audit.record(outcome(user)) }
        #expect(await trail.reaches(1))  // u1 is in the channel, u2 and u3 queued

        // The kernel does not take them: the deadline ends the wait.
        #expect(await audit.drain(withinMilliseconds: 50) == false)

        let draining = Running { await audit.drain(withinMilliseconds: defaultDeadlineMilliseconds) }
        for _ in 0..<3 { channel.gate.signal() }
        #expect(await draining.value() == true)
        #expect(trail.all.filter { $0.hasPrefix("send") } == ["send u1", "send u2", "send u3"])
    }
}
