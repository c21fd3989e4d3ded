// Authentication records to the Linux audit system (libaudit), as pam_unix and pam_faillock send
// theirs. Linked, not loaded on first use: libpam, which the daemon links, already brings libaudit
// in at exec, so a dlopen would save nothing.
import CAudit
import Glibc
import Logging
import Synchronization
import TouchGateCore
import TouchGateThreads

/// Sends from a thread of its own: libaudit waits for the kernel's acknowledgement (half-second
/// polls, many of them on a stalled audit), and no prompt may wait on that. A missing or refused
/// audit system (no netlink audit, EPERM without CAP_AUDIT_WRITE, ECONNREFUSED) is said once and
/// the records stop; the journal still has every event.
final class LinuxAudit: Sendable {
    /// Records waiting past this are dropped (and that is said once): memory stays bounded.
    static let queueLimit = 256

    private struct State {
        var queue: [LinuxAuditRecord] = []
        var started = false
        var disabled = false
        var droppedSaid = false
    }

    private let state = Mutex(State())
    private let ready = Semaphore()
    private let log: Logger

    init(log: Logger) { self.log = log }

    /// For CoreSetup.linuxAudit: never blocks.
    func record(_ event: AuthEvent) {
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
        let fd = audit_open()
        if fd < 0 {
            stop(because: String(cString: strerror(errno)))
            return
        }
        while true {
            ready.wait()
            guard let r = state.withLock({ s in s.queue.isEmpty ? nil : s.queue.removeFirst() }) else { continue }
            let type = r.kind == .userAuth ? AUDIT_USER_AUTH : AUDIT_ANOM_LOGIN_FAILURES
            let rc = audit_log_acct_message(
                fd, type, nil, r.operation, r.account, UInt32.max, r.host, r.address,
                r.terminal, r.success ? 1 : 0)
            // 0: libaudit hid ECONNREFUSED (audit off in the kernel) or a refusal; < 0: -errno.
            if rc <= 0 {
                audit_close(fd)
                stop(
                    because: rc == 0
                        ? "the kernel's audit is off or refused the record" : String(cString: strerror(-rc)))
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
