// The numbers of docs/spec.md §3 as one immutable value, with their defaults and a validator.

/// Every rule's number. Durations are seconds. Defaults are those of docs/spec.md §3 (Apple's where Apple has one).
public struct PolicyConfig: Sendable, Equatable {
    /// Failed matches that end one prompt (counted by the daemon, per prompt).
    public var maxTries: Int
    /// Seconds to wait for a finger in one attempt (used by the daemon).
    public var timeout: Int64
    /// Consecutive failed matches, across prompts, that lock biometrics until a password success.
    public var lockoutThreshold: Int
    public var requirePasswordAfterBoot: Bool
    /// No success of any kind for this long → `passwordRequired(.idle)`.
    public var unlockIdleTimeout: Int64
    /// No password success for this long (and no fingerprint success for the grace) → `passwordRequired(.interval)`.
    public var passwordInterval: Int64
    public var passwordIntervalGrace: Int64
    public var requirePasswordAfterEnrollmentChange: Bool
    /// Consecutive wrong passwords before the first back-off step.
    public var passwordBackoffAfter: Int
    /// Back-off lengths in seconds; the last one repeats.
    public var passwordBackoff: [Int64]

    public init(
        maxTries: Int = 3,
        timeout: Int64 = 30,
        lockoutThreshold: Int = 5,
        requirePasswordAfterBoot: Bool = true,
        unlockIdleTimeout: Int64 = 48 * 3600,
        passwordInterval: Int64 = 156 * 3600,
        passwordIntervalGrace: Int64 = 4 * 3600,
        requirePasswordAfterEnrollmentChange: Bool = true,
        passwordBackoffAfter: Int = 5,
        passwordBackoff: [Int64] = [60, 300, 900, 3600]
    ) {
        self.maxTries = maxTries
        self.timeout = timeout
        self.lockoutThreshold = lockoutThreshold
        self.requirePasswordAfterBoot = requirePasswordAfterBoot
        self.unlockIdleTimeout = unlockIdleTimeout
        self.passwordInterval = passwordInterval
        self.passwordIntervalGrace = passwordIntervalGrace
        self.requirePasswordAfterEnrollmentChange = requirePasswordAfterEnrollmentChange
        self.passwordBackoffAfter = passwordBackoffAfter
        self.passwordBackoff = passwordBackoff
    }

    public static let defaults = PolicyConfig()
}

/// Why a config value cannot be used; `key` is the config file key of docs/spec.md §6.
public struct PolicyConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public let key: String
    public let reason: String
    public var description: String { "\(key): \(reason)" }
}

extension PolicyConfig {
    /// Empty when every value is usable. The policy still behaves (fail closed) with bad values,
    /// but the daemon should refuse to start with any of these, naming the key.
    public var problems: [PolicyConfigProblem] {
        var found: [PolicyConfigProblem] = []
        func require(_ ok: Bool, _ key: String, _ reason: String) {
            if !ok { found.append(PolicyConfigProblem(key: key, reason: reason)) }
        }
        require(maxTries >= 1, "max_tries", "must be at least 1")
        require(timeout >= 1, "timeout", "must be at least 1 second")
        require(lockoutThreshold >= 1, "lockout_threshold", "must be at least 1")
        require(unlockIdleTimeout >= 1, "unlock_idle_timeout", "must be at least 1 second")
        require(passwordInterval >= 1, "password_interval", "must be at least 1 second")
        // Zero grace is meaningful: a fingerprint success never postpones the interval rule.
        require(passwordIntervalGrace >= 0, "password_interval_grace", "must not be negative")
        require(passwordBackoffAfter >= 1, "password_backoff_after", "must be at least 1")
        require(!passwordBackoff.isEmpty, "password_backoff", "needs at least one step")
        require(passwordBackoff.allSatisfy { $0 >= 1 }, "password_backoff", "every step must be at least 1 second")
        return found
    }
}
