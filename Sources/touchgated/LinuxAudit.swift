// Authentication records to the Linux audit system (libaudit), as pam_unix and pam_faillock send
// theirs. Linked, not loaded on first use: libpam, which the daemon links, already brings libaudit
// in at exec, so a dlopen would save nothing. The queue and its thread are the core's AuditSender.
import CAudit
import Glibc
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
            r.terminal, r.success ? 1 : 0)
    }

    func close() {
        fd.withLock { fd in
            if fd >= 0 { audit_close(fd) }
            fd = -1
        }
    }
}
