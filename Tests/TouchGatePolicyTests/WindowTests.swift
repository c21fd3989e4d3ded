// The two clock rules (idle 48 h; interval 156 h with 4 h grace) one second on each side, and a clock set back.

import Testing
import TouchGatePolicy

/// Windows are half-open: a window of W seconds started at t is open at t+W-1 and closed at t+W.
@Suite struct WindowTests {
    /// Interval pushed far away so only the idle rule can refuse.
    let idleOnly = Policy(config: PolicyConfig(passwordInterval: 10_000 * hour))
    /// Idle pushed far away so only the interval rule can refuse.
    let intervalOnly = Policy(config: PolicyConfig(unlockIdleTimeout: 10_000 * hour))

    @Test(
        arguments: [
            // (last fingerprint success, now, expected)
            (nil, t0 + 48 * hour - 1, BiometricAvailability.available),
            (nil, t0 + 48 * hour, .refused(.passwordRequired(.idle))),
            (t0 + 30 * hour, t0 + 78 * hour - 1, .available),
            (t0 + 30 * hour, t0 + 78 * hour, .refused(.passwordRequired(.idle))),
        ] as [(Instant?, Instant, BiometricAvailability)])
    func refusesAfterFortyEightHoursWithoutAnySuccess(
        fingerprintAt: Instant?, now: Instant, expected: BiometricAvailability
    ) {
        var s = healthyUser(idleOnly)
        if let fingerprintAt { s = idleOnly.recordFingerprintSuccess(s, at: fingerprintAt) }
        #expect(idleOnly.canEvaluateBiometrics(s, in: environment(at: now)) == expected)
    }

    @Test(
        arguments: [
            // No fingerprint: the 156 h password window alone.
            (nil, t0 + 156 * hour - 1, BiometricAvailability.available),
            (nil, t0 + 156 * hour, .refused(.passwordRequired(.interval))),
            // A fingerprint at 155 h keeps the password valid for 4 h after it: both conditions must fail.
            (t0 + 155 * hour, t0 + 156 * hour, .available),
            (t0 + 155 * hour, t0 + 159 * hour - 1, .available),
            (t0 + 155 * hour, t0 + 159 * hour, .refused(.passwordRequired(.interval))),
            // A fingerprint long before the password window closed gives no grace after it.
            (t0 + 100 * hour, t0 + 156 * hour, .refused(.passwordRequired(.interval))),
        ] as [(Instant?, Instant, BiometricAvailability)])
    func refusesAfterTheIntervalUnlessAFingerprintMatchedWithinTheGrace(
        fingerprintAt: Instant?, now: Instant, expected: BiometricAvailability
    ) {
        var s = healthyUser(intervalOnly)
        if let fingerprintAt { s = intervalOnly.recordFingerprintSuccess(s, at: fingerprintAt) }
        #expect(intervalOnly.canEvaluateBiometrics(s, in: environment(at: now)) == expected)
    }

    @Test func defaultRulesLetADailyFingerprintUserGoSixAndAHalfDays() {
        let policy = Policy()
        var s = healthyUser()
        for day in Int64(1)...6 { s = policy.recordFingerprintSuccess(s, at: t0 + day * 24 * hour) }
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 156 * hour - 1)) == .available)
        #expect(
            policy.canEvaluateBiometrics(s, in: environment(at: t0 + 156 * hour))
                == .refused(.passwordRequired(.interval)))
    }

    @Test func treatsNoSuccessEverAsIdleWhenTheBootRuleIsOff() {
        let policy = Policy(
            config: PolicyConfig(requirePasswordAfterBoot: false, requirePasswordAfterEnrollmentChange: false))
        let s = policy.enable(UserState())
        #expect(policy.passwordRequiredReasons(s, in: environment(at: t0)) == [.interval, .idle])
    }

    @Test func aPasswordSuccessFromTheFutureCountsAsExpired() {
        let s = healthyUser(passwordAt: t0)
        let env = environment(at: t0 - 1)
        #expect(Policy().passwordRequiredReasons(s, in: env) == [.interval, .idle])
        #expect(Policy().canEvaluateBiometrics(s, in: env) == .refused(.passwordRequired(.interval)))
    }

    @Test func aFingerprintSuccessFromTheFutureGivesNoGraceButHidesNoRecentPassword() {
        let policy = Policy()
        // Password recent, fingerprint "in the future": the password alone keeps both rules satisfied.
        let recent = policy.recordFingerprintSuccess(healthyUser(), at: t0 + 10 * hour)
        #expect(policy.canEvaluateBiometrics(recent, in: environment(at: t0 + hour)) == .available)
        // Password beyond the interval: the future fingerprint must not stand in for the grace.
        let old = policy.recordFingerprintSuccess(healthyUser(passwordAt: t0 - 200 * hour), at: t0 + 10)
        #expect(policy.passwordRequiredReasons(old, in: environment(at: t0)) == [.interval, .idle])
    }

    @Test func instantsAtTheEndsOfTimeNeitherTrapNorOpenAWindow() {
        let policy = Policy(
            config: PolicyConfig(requirePasswordAfterBoot: false, requirePasswordAfterEnrollmentChange: false))
        let s = UserState(enabled: true, lastPasswordSuccess: .min, lastFingerprintSuccess: .min)
        #expect(policy.passwordRequiredReasons(s, in: environment(at: .max)) == [.interval, .idle])
        let future = UserState(enabled: true, lastPasswordSuccess: .max, lastFingerprintSuccess: .max)
        #expect(policy.passwordRequiredReasons(future, in: environment(at: .min)) == [.interval, .idle])
    }
}
