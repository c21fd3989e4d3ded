// What the daemon persists per user: counters, last successes, and the facts of the last password success.

/// Per-user policy state. Every transition is a `Policy` method returning a new value;
/// the daemon stores the result on disk before it replies (docs/spec.md §9).
public struct UserState: Sendable, Equatable {
    /// Opt-in: fingerprint authentication is offered only after the user enabled it.
    public var enabled: Bool
    /// Failed matches since the last fingerprint or password success, across prompts.
    public var consecutiveFailedMatches: Int
    /// Set when the count reached the threshold; only a password success (or root's reset) clears it.
    public var biometryLockedOut: Bool
    public var lastPasswordSuccess: Instant?
    public var lastFingerprintSuccess: Instant?
    public var bootIDAtPasswordSuccess: String?
    public var enrollmentAtPasswordSuccess: String?
    /// Root ran `touchgate lock --user U`.
    public var adminLocked: Bool
    public var consecutiveWrongPasswords: Int
    /// Index in `passwordBackoff` of the back-off step applied last; 0 while none was applied
    /// (`backoffUntil == nil`). The next wrong password past the threshold uses the step after it.
    public var backoffStep: Int
    /// End of the back-off applied last (it stays after expiry, marking that a step was used).
    public var backoffUntil: Instant?

    public init(
        enabled: Bool = false,
        consecutiveFailedMatches: Int = 0,
        biometryLockedOut: Bool = false,
        lastPasswordSuccess: Instant? = nil,
        lastFingerprintSuccess: Instant? = nil,
        bootIDAtPasswordSuccess: String? = nil,
        enrollmentAtPasswordSuccess: String? = nil,
        adminLocked: Bool = false,
        consecutiveWrongPasswords: Int = 0,
        backoffStep: Int = 0,
        backoffUntil: Instant? = nil
    ) {
        self.enabled = enabled
        self.consecutiveFailedMatches = consecutiveFailedMatches
        self.biometryLockedOut = biometryLockedOut
        self.lastPasswordSuccess = lastPasswordSuccess
        self.lastFingerprintSuccess = lastFingerprintSuccess
        self.bootIDAtPasswordSuccess = bootIDAtPasswordSuccess
        self.enrollmentAtPasswordSuccess = enrollmentAtPasswordSuccess
        self.adminLocked = adminLocked
        self.consecutiveWrongPasswords = consecutiveWrongPasswords
        self.backoffStep = backoffStep
        self.backoffUntil = backoffUntil
    }

    /// The later of the two successes; derived so it can never disagree with them.
    public var lastAnySuccess: Instant? {
        switch (lastPasswordSuccess, lastFingerprintSuccess) {
        case (let password?, let fingerprint?): max(password, fingerprint)
        case (let password, let fingerprint): password ?? fingerprint
        }
    }

    /// False for values no sequence of transitions can produce (a corrupt or tampered file).
    /// The policy then refuses biometrics with `.lockout` until a password success rewrites the
    /// state; the daemon tells that refusal as a state that cannot be trusted (`stateUnreadable`).
    /// A `backoffStep` beyond the configured steps is consistent: it reads as the last step.
    public var isConsistent: Bool {
        consecutiveFailedMatches >= 0
            && consecutiveWrongPasswords >= 0
            && backoffStep >= 0
            && (backoffUntil != nil || backoffStep == 0)
    }
}
