// The state transitions for fingerprint and password outcomes and for root's commands.

extension Policy {
    /// One failed match (a no-match, not a retry hint and not a cancel). `becameLockedOut` is true
    /// only on the transition into lockout, so the daemon emits one lockout event, not one per failure.
    /// `now` is unused today; it is taken so every outcome transition is recorded at a time.
    public func recordFailedMatch(_ s: UserState, at now: Instant) -> (state: UserState, becameLockedOut: Bool) {
        let wasLockedOut = isLockedOut(s)
        var next = s
        next.consecutiveFailedMatches = max(s.consecutiveFailedMatches, 0).incrementedSaturating()
        // The flag makes lockout survive a later fingerprint-success reset of the count,
        // and turns an untrusted state into an explicit, persisted lockout.
        next.biometryLockedOut = wasLockedOut || next.consecutiveFailedMatches >= config.lockoutThreshold
        return (next, !wasLockedOut && next.biometryLockedOut)
    }

    /// A fingerprint match: the failed-match count restarts. Lockout, admin lock, boot and the
    /// password interval are left alone — only a password clears those.
    public func recordFingerprintSuccess(_ s: UserState, at now: Instant) -> UserState {
        var next = s
        next.consecutiveFailedMatches = 0
        next.lastFingerprintSuccess = now
        return next
    }

    /// A verified password (by the daemon, or reported by root from the PAM stack): clears every
    /// biometric and password counter and every passwordRequired reason, and records the boot,
    /// the enrollment snapshot and the time that later rules compare against.
    public func recordPasswordSuccess(_ s: UserState, in env: Environment) -> UserState {
        // Everything reset clears, plus the record of this success.
        var next = reset(s)
        next.lastPasswordSuccess = env.now
        next.bootIDAtPasswordSuccess = env.bootID
        next.enrollmentAtPasswordSuccess = env.enrollmentSnapshot
        return next
    }

    /// The user changed their own prints with the password they proved for that change (which
    /// was recorded as a success then): the set the change leaves is the one they have seen.
    /// Nothing else changes, so a lock, a lockout or a back-off that came while the change ran
    /// (an enrollment can wait for the reader and the fingers) stands.
    public func recordOwnPrintChange(_ s: UserState, in env: Environment) -> UserState {
        var next = s
        next.enrollmentAtPasswordSuccess = env.enrollmentSnapshot
        return next
    }

    /// root's `touchgate lock --user U` (Apple's remote lock): biometrics need a password.
    public func adminLock(_ s: UserState) -> UserState {
        var next = s
        next.adminLocked = true
        return next
    }

    /// root's `touchgate reset --user U`: undoes what root and the counters imposed (admin lock,
    /// lockout, back-off). It does not forge a password success, so boot, enrollment and the
    /// clock rules still apply.
    public func reset(_ s: UserState) -> UserState {
        var next = s
        next.consecutiveFailedMatches = 0
        next.biometryLockedOut = false
        next.adminLocked = false
        next.consecutiveWrongPasswords = 0
        next.backoffStep = 0
        next.backoffUntil = nil
        return next
    }

    /// Opt in; counters and history are kept, so enabling never clears a lockout.
    public func enable(_ s: UserState) -> UserState {
        var next = s
        next.enabled = true
        return next
    }

    /// Opt out without deleting prints; counters are kept so disable+enable clears nothing.
    public func disable(_ s: UserState) -> UserState {
        var next = s
        next.enabled = false
        return next
    }
}
