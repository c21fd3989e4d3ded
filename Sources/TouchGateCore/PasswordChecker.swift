// Verifies a password through the daemon's own PAM service (config `password_service`).
import CPAM
import Glibc

public enum PasswordCheck: Sendable, Equatable {
    case correct
    case wrong
    /// The account has no usable password (locked, empty or unknown to PAM): no fallback exists.
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
        if Self.shadowSaysNoPassword(user) { return .notSet }
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

    /// A locked ('!', '*') or empty shadow password means no password can ever succeed.
    /// getspnam_r: checks run on several pool threads at once, and getspnam is not reentrant.
    static func shadowSaysNoPassword(_ user: String) -> Bool {
        var buffer = [CChar](repeating: 0, count: 4096)
        return buffer.withUnsafeMutableBufferPointer { buf in
            var entry = spwd()
            var result: UnsafeMutablePointer<spwd>?
            guard getspnam_r(user, &entry, buf.baseAddress, buf.count, &result) == 0, result != nil,
                let hash = entry.sp_pwdp
            else { return false }
            let first = hash.pointee
            return first == 0 || first == CChar(UInt8(ascii: "!")) || first == CChar(UInt8(ascii: "*"))
        }
    }
}
