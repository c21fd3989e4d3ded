// canEvaluate for fingerprints: which refusal applies, in a fixed precedence, without changing anything.

/// The LocalAuthentication rules of docs/spec.md §3 as pure functions of (config, state, environment).
/// Nothing here reads a clock, a file or a device, and nothing throws: refusals are values.
public struct Policy: Sendable, Equatable {
    public let config: PolicyConfig

    public init(config: PolicyConfig = .defaults) {
        self.config = config
    }

    /// Whether a fingerprint evaluation could succeed now; `.refused` carries the first refusal
    /// in precedence order (see `biometricRefusals`). Never mutates: this is the PAM module's preflight.
    public func canEvaluateBiometrics(_ s: UserState, in env: Environment) -> BiometricAvailability {
        guard let first = biometricRefusals(s, in: env).first else { return .available }
        return .refused(first)
    }

    /// Every refusal that applies, most important first (for `touchgate status`). Precedence:
    ///
    ///   notAvailable > notEnrolled > lockout > adminLock > boot > enrollmentChanged > interval > idle
    ///
    /// Why: without a reader, or without prints the user opted into, nothing else can matter and
    /// a password would not make a fingerprint work. Lockout comes before every passwordRequired
    /// reason because it reports an attack-like event (failed matches) the user must hear about.
    /// Among the passwordRequired reasons the deliberate act of root comes first, then the
    /// boot (the usual reason after power-on), then a changed set of prints, then the two clocks —
    /// the 156 h interval before the 48 h idle rule, as the more specific of the two.
    public func biometricRefusals(_ s: UserState, in env: Environment) -> [BiometricRefusal] {
        var refusals: [BiometricRefusal] = []
        if !env.readerAvailable { refusals.append(.notAvailable) }
        if !s.enabled || !env.enrolledHere { refusals.append(.notEnrolled) }
        if isLockedOut(s) { refusals.append(.lockout) }
        refusals += passwordRequiredReasons(s, in: env).map { .passwordRequired($0) }
        return refusals
    }

    /// The passwordRequired reasons that hold, in precedence order.
    public func passwordRequiredReasons(_ s: UserState, in env: Environment) -> [PasswordRequiredReason] {
        let now = env.now
        var reasons: [PasswordRequiredReason] = []
        if s.adminLocked { reasons.append(.adminLock) }
        // A user with no password success ever has no boot id on record: that is `boot` too.
        if config.requirePasswordAfterBoot && s.bootIDAtPasswordSuccess != env.bootID {
            reasons.append(.boot)
        }
        if config.requirePasswordAfterEnrollmentChange && s.enrollmentAtPasswordSuccess != env.enrollmentSnapshot {
            reasons.append(.enrollmentChanged)
        }
        let passwordRecent = isWithinWindow(startedAt: s.lastPasswordSuccess, length: config.passwordInterval, now: now)
        let fingerprintInGrace = isWithinWindow(
            startedAt: s.lastFingerprintSuccess, length: config.passwordIntervalGrace, now: now)
        if !passwordRecent && !fingerprintInGrace { reasons.append(.interval) }
        // Each success is checked on its own (not their max), so one instant from the future —
        // a clock set back — fails closed for itself without hiding a genuine recent success.
        // No success ever is idle as well: fail closed even when the boot rule is off.
        let anyRecent =
            isWithinWindow(startedAt: s.lastPasswordSuccess, length: config.unlockIdleTimeout, now: now)
            || isWithinWindow(startedAt: s.lastFingerprintSuccess, length: config.unlockIdleTimeout, now: now)
        if !anyRecent { reasons.append(.idle) }
        return reasons
    }

    /// Biometrics are locked until a password success: by the flag, by a count already at the
    /// threshold (e.g. the threshold was lowered), or by a state that cannot be trusted.
    /// A back-off step beyond the configured steps is not one of those: `password_backoff` may have
    /// been shortened since, and the step reads as the last one (`appliedStepIndex`).
    public func isLockedOut(_ s: UserState) -> Bool {
        s.biometryLockedOut || s.consecutiveFailedMatches >= config.lockoutThreshold || !s.isConsistent
    }
}
