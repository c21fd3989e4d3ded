// Outcome codes (LAError numbers plus touchgate's own), policies and finger names as on the wire.
import CTouchGateWire

/// The final code of a request: 0 or an `LAError` number (docs/spec.md §2), or touchgate's own (< -2000).
public enum Outcome: Int32, Sendable, CaseIterable, Codable {
    case success = 0
    case authenticationFailed = -1
    case userCancel = -2
    case userFallback = -3
    case systemCancel = -4
    case passwordNotSet = -5
    case biometryNotAvailable = -6
    case biometryNotEnrolled = -7
    case biometryLockout = -8
    case appCancel = -9
    case invalidContext = -10
    case passwordRequired = -11
    case passwordBackoff = -12
    case notInteractive = -1004
    case userUnknown = -2001
    case notPermitted = -2002
    case badRequest = -2003
    case internalError = -2004
    case notFound = -2005
    case timeout = -2006
    case templateDamaged = -2007
    case busy = -2008
    case duplicate = -2009

    /// The stable name used in `--json` output and events.
    public var name: String {
        switch self {
        case .internalError: return "internal"
        default: return String(describing: self)
        }
    }
}

// The header is the source of truth; these checks fail the build's tests if the two drift.
public let headerOutcomeCodes: [Outcome: Int32] = [
    .success: TG_OK, .authenticationFailed: TG_ERR_AUTHENTICATION_FAILED,
    .userCancel: TG_ERR_USER_CANCEL, .userFallback: TG_ERR_USER_FALLBACK,
    .systemCancel: TG_ERR_SYSTEM_CANCEL, .passwordNotSet: TG_ERR_PASSWORD_NOT_SET,
    .biometryNotAvailable: TG_ERR_BIOMETRY_NOT_AVAILABLE,
    .biometryNotEnrolled: TG_ERR_BIOMETRY_NOT_ENROLLED, .biometryLockout: TG_ERR_BIOMETRY_LOCKOUT,
    .appCancel: TG_ERR_APP_CANCEL, .invalidContext: TG_ERR_INVALID_CONTEXT,
    .passwordRequired: TG_ERR_PASSWORD_REQUIRED, .passwordBackoff: TG_ERR_PASSWORD_BACKOFF,
    .notInteractive: TG_ERR_NOT_INTERACTIVE, .userUnknown: TG_ERR_USER_UNKNOWN,
    .notPermitted: TG_ERR_NOT_PERMITTED, .badRequest: TG_ERR_BAD_REQUEST,
    .internalError: TG_ERR_INTERNAL, .notFound: TG_ERR_NOT_FOUND, .timeout: TG_ERR_TIMEOUT,
    .templateDamaged: TG_ERR_TEMPLATE_DAMAGED, .busy: TG_ERR_BUSY,
    .duplicate: TG_ERR_DUPLICATE,
]

public enum EvaluationPolicy: Int32, Sendable, CaseIterable {
    case biometrics = 1
    case biometricsOrPassword = 2

    public var name: String { self == .biometrics ? "biometrics" : "biometrics-or-password" }
    public init?(name: String) {
        guard let p = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = p
    }
}

public enum ProgressKind: Int32, Sendable {
    case prompt = 1, retry = 2, noMatch = 3, queued = 4, enrollStage = 5, keepalive = 6, note = 7
}

public enum MessageStyle: Int32, Sendable {
    case info = 1, error = 2
}

/// Fingers, named as fprintd names them; the order is libfprint's `FpFinger` order (1…10).
public enum Finger: String, Sendable, CaseIterable, Codable, Comparable {
    case leftThumb = "left-thumb"
    case leftIndex = "left-index-finger"
    case leftMiddle = "left-middle-finger"
    case leftRing = "left-ring-finger"
    case leftLittle = "left-little-finger"
    case rightThumb = "right-thumb"
    case rightIndex = "right-index-finger"
    case rightMiddle = "right-middle-finger"
    case rightRing = "right-ring-finger"
    case rightLittle = "right-little-finger"

    /// libfprint's FpFinger value.
    public var fpFinger: Int { Self.allCases.firstIndex(of: self)! + 1 }
    public init?(fpFinger: Int) {
        guard (1...10).contains(fpFinger) else { return nil }
        self = Self.allCases[fpFinger - 1]
    }
    public static func < (a: Finger, b: Finger) -> Bool { a.fpFinger < b.fpFinger }
}
