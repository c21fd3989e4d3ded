// Impossible states lock biometrics, and counters and instants at their limits neither trap nor open anything.

import Testing
import TouchGatePolicy

@Suite struct FailClosedTests {
    let policy = Policy()

    /// A healthy user with one impossible field each.
    static let impossible: [(String, UserState)] = {
        let ok = healthyUser()
        var failed = ok; failed.consecutiveFailedMatches = -1
        var wrong = ok; wrong.consecutiveWrongPasswords = .min
        var negativeStep = ok; negativeStep.backoffStep = -1; negativeStep.backoffUntil = t0
        var stepWithoutBackoff = ok; stepWithoutBackoff.backoffStep = 2
        return [
            ("negative failed matches", failed), ("negative wrong passwords", wrong),
            ("negative back-off step", negativeStep), ("back-off step without a back-off", stepWithoutBackoff),
        ]
    }()

    @Test(arguments: impossible)
    func anImpossibleStateIsRefusedAsLockout(label: String, s: UserState) {
        #expect(!s.isConsistent, "\(label)")
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 1)) == .refused(.lockout), "\(label)")
        // A password success rewrites the state into a trusted one.
        let healed = policy.recordPasswordSuccess(s, in: environment(at: t0 + 2))
        #expect(healed.isConsistent)
        #expect(policy.canEvaluateBiometrics(healed, in: environment(at: t0 + 3)) == .available)
    }

    /// `password_backoff` shortened after a user's back-off went past its new length: their
    /// fingerprint stays usable (no lockout, which would say "locked after 5 failed attempts" with
    /// none), and the step reads as the last one.
    @Test func aStepBeyondAShortenedListIsItsLastStepNotALockout() {
        var s = healthyUser()
        s.consecutiveWrongPasswords = 8
        s.backoffStep = 3
        s.backoffUntil = t0
        let shortened = Policy(config: PolicyConfig(passwordBackoff: [60, 300]))
        #expect(shortened.canEvaluateBiometrics(s, in: environment(at: t0 + 1)) == .available)
        #expect(shortened.recordWrongPassword(s, at: t0 + 1).backoff == 300)
    }

    @Test func aFailedMatchTurnsAnImpossibleStateIntoAPersistedLockout() {
        var s = healthyUser()
        s.consecutiveFailedMatches = -7
        let (next, became) = policy.recordFailedMatch(s, at: t0)
        #expect(next.biometryLockedOut && next.consecutiveFailedMatches == 1)
        #expect(!became)  // it was already refused
    }

    @Test func aNegativeWrongPasswordCountIsReadAsAtTheThreshold() {
        let s = UserState(consecutiveWrongPasswords: -3)
        #expect(policy.recordWrongPassword(s, at: t0).backoff == 60)
    }

    @Test func anOutOfRangeStepIsReadAsTheLastStep() {
        let s = UserState(backoffStep: 99, backoffUntil: .max)
        #expect(policy.canAttemptPassword(s, at: t0) == .refused(.backoff(secondsLeft: 3600)))
        #expect(
            policy.recordWrongPassword(
                UserState(consecutiveWrongPasswords: 9, backoffStep: 99, backoffUntil: t0), at: t0
            ).backoff == 3600)
    }

    @Test func failedMatchCountSaturatesInsteadOfOverflowing() {
        let s = UserState(enabled: true, consecutiveFailedMatches: .max, biometryLockedOut: true)
        let (next, became) = policy.recordFailedMatch(s, at: t0)
        #expect(next.consecutiveFailedMatches == .max && !became)
    }

    @Test func wrongPasswordCountSaturatesInsteadOfOverflowing() {
        let s = UserState(consecutiveWrongPasswords: .max - 1)
        var (next, backoff) = policy.recordWrongPassword(s, at: t0)
        #expect(next.consecutiveWrongPasswords == .max && backoff == 60)
        (next, backoff) = policy.recordWrongPassword(next, at: t0 + 60)
        #expect(next.consecutiveWrongPasswords == .max && backoff == 300)
    }

    @Test func aBackoffNearTheEndOfTimeSaturates() {
        let s = UserState(consecutiveWrongPasswords: 4)
        let (next, backoff) = policy.recordWrongPassword(s, at: .max - 10)
        #expect(backoff == 60 && next.backoffUntil == .max)
        #expect(policy.canAttemptPassword(next, at: .max - 10) == .refused(.backoff(secondsLeft: 10)))
        #expect(policy.canAttemptPassword(next, at: .min) == .refused(.backoff(secondsLeft: 60)))
    }

    @Test func badConfigValuesFailClosed() {
        let s = healthyUser()
        // Non-positive windows never open; a non-positive threshold is always locked.
        let zeroWindows = Policy(config: PolicyConfig(unlockIdleTimeout: 0, passwordInterval: -1))
        #expect(zeroWindows.passwordRequiredReasons(s, in: environment(at: t0)) == [.interval, .idle])
        let zeroThreshold = Policy(config: PolicyConfig(lockoutThreshold: 0))
        #expect(zeroThreshold.canEvaluateBiometrics(s, in: environment(at: t0)) == .refused(.lockout))
        // An empty step list cannot lock the password (the validator rejects it before this).
        let noSteps = Policy(config: PolicyConfig(passwordBackoff: []))
        let (next, backoff) = noSteps.recordWrongPassword(UserState(consecutiveWrongPasswords: 4), at: t0)
        #expect(backoff == nil && noSteps.canAttemptPassword(next, at: t0) == .available)
    }
}
