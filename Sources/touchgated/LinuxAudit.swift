// Authentication records to the Linux audit system (libaudit), as pam_unix and pam_faillock send
// theirs. Linked, not loaded on first use: libpam, which the daemon links, already brings libaudit
// in at exec, so a dlopen would save nothing. The queue and its thread are the core's AuditSender.
import CAudit
import Glibc
import Logging
import Synchronization
import TouchGateCore

/// libaudit's netlink socket, opened on the sender's thread.
final class LibauditChannel: AuditChannel {
    private let fd = Mutex<Int32>(-1)

    func open() -> String? {
        let opened = audit_open()
        if opened < 0 { return String(cString: strerror(errno)) }
        fd.withLock { $0 = opened }
        return nil
    }

    func send(_ r: LinuxAuditRecord) -> Int32 {
        let type = r.kind == .userAuth ? AUDIT_USER_AUTH : AUDIT_ANOM_LOGIN_FAILURES
        return audit_log_acct_message(
            fd.withLock { $0 }, type, nil, r.operation, r.account, UInt32.max, r.host, r.address,
            r.terminal ?? "", r.success ? 1 : 0)  // "", not nil: libaudit would put the daemon's own terminal
    }

    func close() {
        fd.withLock { fd in
            if fd >= 0 { audit_close(fd) }
            fd = -1
        }
    }
}

/// The records' sender as the first service: stopped last, so the records of the prompts that
/// shutdown ended are handed to the kernel before the daemon exits (at most 1 s).
@CoreActor final class LinuxAuditService: DaemonService {
    let sender: AuditSender
    let log: Logger
    nonisolated var serviceName: String { "linux audit" }
    init(_ sender: AuditSender, log: Logger) { self.sender = sender; self.log = log }

    func start() async -> ServiceStart { .running }  // its thread starts with the first record

    func shutdown() async {
        if !(await sender.drain(withinMilliseconds: 1000)) {
            log.warning("Linux audit: records still waiting on the kernel after 1 s are lost at exit")
        }
    }
}
