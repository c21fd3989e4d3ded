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

    private func run() {
        if let why = channel.open() {
            stop(because: why)
            return
        }
        var passingSaid = false
        while true {
            ready.wait()
            guard let r = state.withLock({ s in s.queue.isEmpty ? nil : s.queue.removeFirst() }) else { continue }
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
        }
    }

    private func stop(because reason: String) {
        state.withLock { s in
            s.disabled = true
            s.queue.removeAll()
        }
        log.notice("Linux audit unavailable (\(reason)): authentication records go to the log only")
    }
}
