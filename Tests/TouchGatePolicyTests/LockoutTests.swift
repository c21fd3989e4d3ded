// Biometric lockout: five consecutive failed matches across prompts, cleared only by a password.

import Testing
import TouchGatePolicy

@Suite struct LockoutTests {
    let policy = Policy()

    @Test(arguments: [
        (0, BiometricAvailability.available), (1, .available), (4, .available),
        (5, .refused(.lockout)), (6, .refused(.lockout)),
    ])
    func locksAfterFiveConsecutiveFailuresAndNotBefore(failures: Int, expected: BiometricAvailability) {
        let s = failMatches(failures, healthyUser())
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 10)) == expected)
    }

    @Test func reportsBecomingLockedOutOnlyOnTheFifthFailure() {
        var s = healthyUser()
        var transitions: [Bool] = []
        for i in 0..<7 {
            let result = policy.recordFailedMatch(s, at: t0 + Int64(i))
            transitions.append(result.becameLockedOut)
            s = result.state
        }
        #expect(transitions == [false, false, false, false, true, false, false])
        #expect(s.biometryLockedOut)
    }

    @Test func countsFailuresAcrossPromptsAndServices() {
        // Prompt one (sudo) uses up its three tries; an hour later prompt two (login) fails twice.
        let afterFirstPrompt = failMatches(3, healthyUser(), from: t0)
        #expect(policy.canEvaluateBiometrics(afterFirstPrompt, in: environment(at: t0 + hour)) == .available)
        let afterSecondPrompt = failMatches(2, afterFirstPrompt, from: t0 + hour)
        #expect(
            policy.canEvaluateBiometrics(afterSecondPrompt, in: environment(at: t0 + hour + 5)) == .refused(.lockout))
    }

    @Test func fingerprintSuccessResetsTheFailureCount() {
        var s = failMatches(4, healthyUser())
        s = policy.recordFingerprintSuccess(s, at: t0 + 10)
        #expect(s.consecutiveFailedMatches == 0)
        s = failMatches(4, s, from: t0 + 20)
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 30)) == .available)
        s = failMatches(1, s, from: t0 + 30)
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 31)) == .refused(.lockout))
    }

    @Test func fingerprintSuccessDoesNotClearALockout() {
        let locked = failMatches(5, healthyUser())
        let s = policy.recordFingerprintSuccess(locked, at: t0 + 10)
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 11)) == .refused(.lockout))
    }

    @Test func passwordSuccessClearsALockout() {
        let locked = failMatches(5, healthyUser())
        let s = policy.recordPasswordSuccess(locked, in: environment(at: t0 + 10))
        #expect(!s.biometryLockedOut && s.consecutiveFailedMatches == 0)
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 11)) == .available)
    }

    @Test func honoursAConfiguredThreshold() {
        let strict = Policy(config: PolicyConfig(lockoutThreshold: 2))
        let once = failMatches(1, healthyUser(strict), strict)
        #expect(strict.canEvaluateBiometrics(once, in: environment(at: t0 + 5)) == .available)
        let twice = failMatches(1, once, strict, from: t0 + 1)
        #expect(strict.canEvaluateBiometrics(twice, in: environment(at: t0 + 5)) == .refused(.lockout))
    }

    @Test func aLoweredThresholdLocksACountAlreadyAtIt() {
        // Three failures stored under the default; the admin then lowers the threshold to three.
        let s = failMatches(3, healthyUser())
        let lowered = Policy(config: PolicyConfig(lockoutThreshold: 3))
        #expect(!s.biometryLockedOut)
        #expect(lowered.canEvaluateBiometrics(s, in: environment(at: t0 + 5)) == .refused(.lockout))
    }
}
