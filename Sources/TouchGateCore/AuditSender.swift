// The Linux audit records' queue and sending thread, over a channel the daemon binds to libaudit.
import Glibc
import Logging
import Synchronization
import TouchGateThreads

/// Where the records go: the daemon's libaudit netlink socket, or a test's script.
public protocol AuditChannel: Sendable {
    /// Opens the channel on the sending thread: nil when open, else why it cannot be.
    func open() -> String?
    /// Sends one record: > 0 sent; 0 the kernel's audit is off or refused it (libaudit hides
    /// ECONNREFUSED and some refusals as 0); < 0 a negated errno.
    func send(_ record: LinuxAuditRecord) -> Int32
    func close()
}

/// Sends from a thread of its own: libaudit waits for the kernel's acknowledgement (half-second
/// polls, many of them on a stalled audit), and no prompt may wait on that.
/// - A channel that cannot open, audit off (0), or an error that will not pass (EPERM without
///   CAP_AUDIT_WRITE, a kernel that does not know the message…) is said once and the records
///   stop; the journal still has every event.
/// - A passing error (ENOBUFS, EAGAIN, ENOMEM, EINTR, ETIMEDOUT) loses that record only: it is said
///   once until a record goes through again, and the next records are sent.
public final class AuditSender: Sendable {
    /// Records waiting past this are dropped (and that is said once): memory stays bounded.
    public static let queueLimit = 256
    /// Errors after which the next record may well go through.
    static let passingErrors: Set<Int32> = [ENOBUFS, EAGAIN, ENOMEM, EINTR, ETIMEDOUT]

    private struct State {
        var queue: [LinuxAuditRecord] = []
        var started = false
        var disabled = false
        var droppedSaid = false
        /// A record taken off the queue is in the channel now.
        var sending = false
        /// Told once the queue is empty and nothing is in the channel (`drain`).
        var drained: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())
    private let ready = Semaphore()
    private let channel: any AuditChannel
    private let log: Logger

    public init(channel: any AuditChannel, log: Logger) {
        self.channel = channel
        self.log = log
    }

    /// For CoreSetup.linuxAudit: never blocks.
    public func record(_ event: AuthEvent) {
        let records = LinuxAuditRecord.records(for: event)
        guard !records.isEmpty else { return }
        var start = false, sayDropped = false
        let queued = state.withLock { s -> Int in
            guard !s.disabled else { return 0 }
            var n = 0
            for r in records where s.queue.count < Self.queueLimit {
                s.queue.append(r)
                n += 1
            }
            if n < records.count && !s.droppedSaid { s.droppedSaid = true; sayDropped = true }
            if !s.started { s.started = true; start = true }
            return n
        }
        if sayDropped { log.warning("Linux audit: records are waiting on the kernel, later ones are dropped") }
        if start && !startThread(name: "tg-audit", { [self] in run() }) {
            stop(because: "no thread for it")
            return
        }
        for _ in 0..<queued { ready.signal() }
    }

    /// Waits until every record queued so far has been handed to the kernel (or the records
    /// stopped), at most `milliseconds`: at shutdown, so the last prompts' records are not lost
    /// with the process. False when the deadline came first.
    @CoreActor public func drain(withinMilliseconds milliseconds: Int) async -> Bool {
        let done = OneShot<Bool>()
        let waiting = state.withLock { s -> Bool in
            guard s.started, !s.disabled, s.sending || !s.queue.isEmpty else { return false }
            s.drained.append { CoreLoop.shared.post { done.set(true) } }
            return true
        }
        guard waiting else { return true }
        let timer = LoopTimer(after: milliseconds) { done.set(false) }
        defer { timer.cancel() }
        return await done.wait()
    }

    /// After a record went to the channel: whoever waits for an empty queue is told.
    private func sent() {
        let waiters = state.withLock { s -> [@Sendable () -> Void] in
            s.sending = false
            guard s.queue.isEmpty else { return [] }
            defer { s.drained.removeAll() }
            return s.drained
        }
        for w in waiters { w() }
    }

    private func run() {
        if let why = channel.open() {
            stop(because: why)
            return
        }
        var passingSaid = false
        while true {
            ready.wait()
            let next = state.withLock { s -> LinuxAuditRecord? in
                guard !s.queue.isEmpty else { return nil }
                s.sending = true
                return s.queue.removeFirst()
            }
            guard let r = next else { continue }
            let rc = channel.send(r)
            if rc > 0 {
                passingSaid = false
            } else if rc < 0 && Self.passingErrors.contains(-rc) {
                if !passingSaid {
                    passingSaid = true
                    log.warning(
                        "Linux audit: a record was not sent (\(String(cString: strerror(-rc)))); sending the next ones")
                }
            } else {
                stop(
                    because: rc == 0
                        ? "the kernel's audit is off or refused the record" : String(cString: strerror(-rc)))
                channel.close()
                return
            }
            sent()
        }
    }

    private func stop(because reason: String) {
        let waiters = state.withLock { s -> [@Sendable () -> Void] in
            s.disabled = true
            s.sending = false
            s.queue.removeAll()
            defer { s.drained.removeAll() }
            return s.drained
        }
        for w in waiters { w() }
        log.notice("Linux audit unavailable (\(reason)): authentication records go to the log only")
    }
}
