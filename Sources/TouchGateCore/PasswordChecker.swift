// Verifies a password through the daemon's own PAM service (config `password_service`).
import CPAM
import Glibc

public enum PasswordCheck: Sendable, Equatable {
    case correct
    case wrong
    /// PAM knows no password for the account (unknown to it, or no credentials to check):
    /// no fallback exists.
    case notSet
    case unavailable(String)
}

/// Checks one password; blocking (PAM may sleep on a failure delay), so the core runs it on a pool.
public protocol PasswordVerifying: Sendable {
    func check(user: String, password: String) -> PasswordCheck
}

public struct PAMPasswordChecker: PasswordVerifying {
    public let service: String
    public init(service: String) { self.service = service }

    public func check(user: String, password: String) -> PasswordCheck {
        // An empty password is never correct, whatever the PAM stack would say.
        guard !password.isEmpty else { return .wrong }
        // The PAM service alone judges: a shadow entry locked ('*', '!') only says there is no
        // local hash, and the service may check elsewhere (pam_ldap, whose users nslcd serves
        // with '*'; pam_krb5). A wrong password is wrong for such an account too, and counts.
        // The conversation answers every prompt with the password; the copy is wiped afterwards.
        guard let secret = strdup(password) else { return .unavailable("out of memory") }
        defer { memset(secret, 0, strlen(secret)); free(secret) }
        var conv = pam_conv(
            conv: { count, messages, responses, data in
                guard count > 0, let messages, let responses, let data else { return PAM_CONV_ERR }
                guard
                    let replies = calloc(Int(count), MemoryLayout<pam_response>.size)?
                        .assumingMemoryBound(to: pam_response.self)
                else { return PAM_BUF_ERR }
                for i in 0..<Int(count) {
                    let style = messages[i]!.pointee.msg_style
                    if style == PAM_PROMPT_ECHO_OFF || style == PAM_PROMPT_ECHO_ON {
                        replies[i].resp = strdup(data.assumingMemoryBound(to: CChar.self))
                    }
                }
                responses.pointee = replies
                return PAM_SUCCESS
            }, appdata_ptr: UnsafeMutableRawPointer(secret))
        var handle: OpaquePointer?
        let started = pam_start(service, user, &conv, &handle)
        guard started == PAM_SUCCESS, let handle else {
            return .unavailable("pam_start(\(service)): \(started)")
        }
        // PAM_DISALLOW_NULL_AUTHTOK: an empty password is never "correct".
        let rc = pam_authenticate(handle, Int32(bitPattern: UInt32(PAM_SILENT) | UInt32(PAM_DISALLOW_NULL_AUTHTOK)))
        let message = rc == PAM_SUCCESS ? "" : String(cString: pam_strerror(handle, rc))
        pam_end(handle, rc)
        switch rc {
        case PAM_SUCCESS: return .correct
        case PAM_AUTH_ERR, PAM_MAXTRIES: return .wrong
        case PAM_USER_UNKNOWN, PAM_CRED_INSUFFICIENT: return .notSet
        default: return .unavailable(message)
        }
    }
}
