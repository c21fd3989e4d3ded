// The answers the policy gives: values, never thrown errors (LAError names, docs/spec.md §2).

/// Why biometrics need a password first (`LAError.passwordRequired`, docs/spec.md §3).
public enum PasswordRequiredReason: String, Sendable, Codable, CaseIterable {
    case boot, idle, interval, enrollmentChanged, adminLock
}

/// Why a fingerprint evaluation would fail before touching the reader.
public enum BiometricRefusal: Equatable, Sendable {
    /// biometryNotAvailable: no usable reader.
    case notAvailable
    /// biometryNotEnrolled: no prints, or the user has not enabled fingerprint authentication.
    case notEnrolled
    /// biometryLockout: too many consecutive failed matches (or an unreadable state, fail closed).
    case lockout
    /// passwordRequired with its reason.
    case passwordRequired(PasswordRequiredReason)
}

/// The answer of `canEvaluateBiometrics` (LAContext.canEvaluatePolicy).
public enum BiometricAvailability: Equatable, Sendable {
    case available
    case refused(BiometricRefusal)
}

/// Why a password may not even be checked right now.
public enum PasswordRefusal: Equatable, Sendable {
    /// passwordBackoff: try again in this many seconds (always at least 1).
    case backoff(secondsLeft: Int64)
}

/// The answer of `canAttemptPassword`.
public enum PasswordAvailability: Equatable, Sendable {
    case available
    case refused(PasswordRefusal)
}
