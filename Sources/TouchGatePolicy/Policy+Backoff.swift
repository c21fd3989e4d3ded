// Password back-off: how long a password may not even be checked, and how wrong passwords extend it.

extension Policy {
    /// Whether the daemon may check a password now. While a back-off runs the password is not
    /// checked at all, so a locked account is no oracle for guessing.
    public func canAttemptPassword(_ s: UserState, at now: Instant) -> PasswordAvailability {
        guard let left = backoffSecondsLeft(s, at: now) else { return .available }
        return .refused(.backoff(secondsLeft: left))
    }

    /// One wrong password. Returns the seconds the password is now locked for, if any.
    /// Called during a running back-off (the daemon should not have checked it) it counts nothing
    /// and returns the time still left, so a flood of attempts cannot advance the steps.
    public func recordWrongPassword(_ s: UserState, at now: Instant) -> (state: UserState, backoff: Int64?) {
        if let left = backoffSecondsLeft(s, at: now) {
            return (backoffCappedToItsStep(s, at: now), left)
        }
        var next = s
        // A negative count cannot come from a transition; read it as "at the threshold" (fail closed).
        let previous =
            s.consecutiveWrongPasswords < 0 ? max(config.passwordBackoffAfter - 1, 0) : s.consecutiveWrongPasswords
        next.consecutiveWrongPasswords = previous.incrementedSaturating()
        let steps = config.passwordBackoff
        guard next.consecutiveWrongPasswords >= config.passwordBackoffAfter, !steps.isEmpty else {
            return (next, nil)
        }
        // First lock uses step 0; each later one the step after the last applied; the last repeats.
        let step = s.backoffUntil == nil ? 0 : min(appliedStepIndex(s) + 1, steps.count - 1)
        let length = max(steps[step], 0)
        next.backoffStep = step
        next.backoffUntil = now.addingSaturating(length)
        return (next, length > 0 ? length : nil)
    }

    /// The same state with a back-off end pulled in to at most one step from `now`. When the clock
    /// went backwards the stored end lies further ahead than its step; `canAttemptPassword` already
    /// reports at most the step, and storing this result makes the lock really end by then.
    /// The daemon may call it whenever it loads state; it changes nothing else.
    public func backoffCappedToItsStep(_ s: UserState, at now: Instant) -> UserState {
        guard let until = s.backoffUntil, !config.passwordBackoff.isEmpty else { return s }
        let cap = max(config.passwordBackoff[appliedStepIndex(s)], 0)
        guard until.subtractingSaturating(now) > cap else { return s }
        var next = s
        next.backoffUntil = now.addingSaturating(cap)
        return next
    }

    /// Seconds of back-off left at `now` (at least 1), or nil when a password may be checked.
    /// Never more than the length of the step applied, whatever the clock did.
    func backoffSecondsLeft(_ s: UserState, at now: Instant) -> Int64? {
        guard let until = s.backoffUntil, now < until, !config.passwordBackoff.isEmpty else { return nil }
        let cap = config.passwordBackoff[appliedStepIndex(s)]
        let left = min(until.subtractingSaturating(now), cap)
        return left > 0 ? left : nil
    }

    /// `backoffStep` as an index into the configured steps; one out of range (a corrupt file or a
    /// shortened list) reads as the last, longest-repeating step — fail closed.
    func appliedStepIndex(_ s: UserState) -> Int {
        let count = config.passwordBackoff.count
        return (0..<count).contains(s.backoffStep) ? s.backoffStep : count - 1
    }
}
