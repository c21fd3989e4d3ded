// When several refusals apply, canEvaluate reports the first in the documented order.

import Testing
import TouchGatePolicy

@Suite struct PrecedenceTests {
    let policy = Policy()

    /// Every refusal holds: reader gone, opted out, locked out, admin-locked, other boot,
    /// other prints, and the last success long ago.
    var everythingWrong: (UserState, Environment) {
        var s = failMatches(5, healthyUser(passwordAt: t0))
        s = policy.disable(policy.adminLock(s))
        return (s, environment(at: t0 + 500 * hour, boot: "boot-B", prints: "prints-2", reader: false))
    }

    @Test func listsEveryRefusalInPrecedenceOrder() {
        let (s, env) = everythingWrong
        #expect(
            policy.biometricRefusals(s, in: env) == [
                .notAvailable, .notEnrolled, .lockout,
                .passwordRequired(.adminLock), .passwordRequired(.boot), .passwordRequired(.enrollmentChanged),
                .passwordRequired(.interval), .passwordRequired(.idle),
            ])
    }

    /// Cure one cause at a time, in order; each time the next refusal becomes the answer.
    @Test func reportsTheNextRefusalAsEachCauseIsCured() {
        var (s, env) = everythingWrong
        var answers: [BiometricAvailability] = [policy.canEvaluateBiometrics(s, in: env)]
        let cures: [(inout UserState, inout Environment) -> Void] = [
            { _, e in e.readerAvailable = true },
            { s, _ in s.enabled = true },
            { s, _ in
                s.biometryLockedOut = false; s.consecutiveFailedMatches = 0
            },
            { s, _ in s.adminLocked = false },
            { s, e in s.bootIDAtPasswordSuccess = e.bootID },
            { s, e in s.enrollmentAtPasswordSuccess = e.enrollmentSnapshot },
            { s, e in s.lastFingerprintSuccess = e.now - 1 },  // within the 4 h grace, but idle stays cured too
            { s, e in s.lastPasswordSuccess = e.now - 100 * hour },  // interval cured on its own, idle back
        ]
        for cure in cures {
            cure(&s, &env)
            answers.append(policy.canEvaluateBiometrics(s, in: env))
        }
        #expect(
            answers == [
                .refused(.notAvailable), .refused(.notEnrolled), .refused(.lockout),
                .refused(.passwordRequired(.adminLock)), .refused(.passwordRequired(.boot)),
                .refused(.passwordRequired(.enrollmentChanged)), .refused(.passwordRequired(.interval)),
                .available, .available,
            ])
    }

    @Test func reportsIdleAfterIntervalWhenOnlyIdleRemains() {
        // Password 100 h ago (interval fine), no fingerprint since: idle (48 h) alone applies.
        let s = healthyUser(passwordAt: t0)
        #expect(policy.biometricRefusals(s, in: environment(at: t0 + 100 * hour)) == [.passwordRequired(.idle)])
    }

    @Test func reportsNotEnrolledWhenTheUserHasNoPrints() {
        let s = healthyUser()
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 1, prints: nil)) == .refused(.notEnrolled))
    }
}
