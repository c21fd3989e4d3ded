// passwordRequired for boot, enrollment change and admin lock, and what clears each.

import Testing
import TouchGatePolicy

@Suite struct PasswordRequiredTests {
    let policy = Policy()

    @Test func requiresAPasswordAfterTheBootIDChanges() {
        let s = healthyUser()
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 1)) == .available)
        #expect(
            policy.canEvaluateBiometrics(s, in: environment(at: t0 + 1, boot: "boot-B"))
                == .refused(.passwordRequired(.boot)))
    }

    @Test func requiresAPasswordOnBootWhenNoPasswordWasEverTyped() {
        let s = policy.recordFingerprintSuccess(policy.enable(UserState()), at: t0)
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 1)) == .refused(.passwordRequired(.boot)))
    }

    @Test func ignoresTheBootWhenTheRuleIsOff() {
        let relaxed = Policy(config: PolicyConfig(requirePasswordAfterBoot: false))
        let s = healthyUser(relaxed)
        #expect(relaxed.canEvaluateBiometrics(s, in: environment(at: t0 + 1, boot: "boot-B")) == .available)
    }

    @Test func passwordSuccessOnTheNewBootClearsTheBootReason() {
        let s = policy.recordPasswordSuccess(healthyUser(), in: environment(at: t0 + 5, boot: "boot-B"))
        #expect(s.bootIDAtPasswordSuccess == "boot-B")
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 6, boot: "boot-B")) == .available)
    }

    @Test(arguments: [
        ("prints-1", BiometricAvailability.available),
        ("prints-2", .refused(.passwordRequired(.enrollmentChanged))),
    ])
    func requiresAPasswordWhenThePrintsChanged(current: String, expected: BiometricAvailability) {
        #expect(policy.canEvaluateBiometrics(healthyUser(), in: environment(at: t0 + 1, prints: current)) == expected)
    }

    @Test func ignoresEnrollmentChangesWhenTheRuleIsOff() {
        let relaxed = Policy(config: PolicyConfig(requirePasswordAfterEnrollmentChange: false))
        #expect(
            relaxed.canEvaluateBiometrics(healthyUser(relaxed), in: environment(at: t0 + 1, prints: "prints-2"))
                == .available)
    }

    @Test func passwordSuccessRecordsTheNewEnrollment() {
        let s = policy.recordPasswordSuccess(healthyUser(), in: environment(at: t0 + 5, prints: "prints-2"))
        #expect(s.enrollmentAtPasswordSuccess == "prints-2")
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 6, prints: "prints-2")) == .available)
    }

    @Test func adminLockRequiresAPasswordUntilOneIsTyped() {
        let locked = policy.adminLock(healthyUser())
        #expect(
            policy.canEvaluateBiometrics(locked, in: environment(at: t0 + 1)) == .refused(.passwordRequired(.adminLock))
        )
        let fingerprint = policy.recordFingerprintSuccess(locked, at: t0 + 2)
        #expect(
            policy.canEvaluateBiometrics(fingerprint, in: environment(at: t0 + 3))
                == .refused(.passwordRequired(.adminLock)))
        let password = policy.recordPasswordSuccess(locked, in: environment(at: t0 + 4))
        #expect(policy.canEvaluateBiometrics(password, in: environment(at: t0 + 5)) == .available)
    }

    @Test func fingerprintSuccessClearsNoPasswordRequiredReason() {
        let s = policy.recordFingerprintSuccess(healthyUser(), at: t0 + 1)
        let env = environment(at: t0 + 2, boot: "boot-B", prints: "prints-2")
        #expect(policy.passwordRequiredReasons(s, in: env) == [.boot, .enrollmentChanged])
    }

    @Test func passwordSuccessClearsEverything() {
        var messy = failMatches(5, healthyUser())
        messy = policy.adminLock(messy)
        for i in 0..<6 { messy = policy.recordWrongPassword(messy, at: t0 + Int64(i) * 1000).state }
        let env = environment(at: t0 + 400 * hour, boot: "boot-B", prints: "prints-2")
        #expect(policy.biometricRefusals(messy, in: env).count == 6)

        let s = policy.recordPasswordSuccess(messy, in: env)
        #expect(
            s
                == UserState(
                    enabled: true, lastPasswordSuccess: env.now, lastFingerprintSuccess: nil,
                    bootIDAtPasswordSuccess: "boot-B", enrollmentAtPasswordSuccess: "prints-2"))
        #expect(policy.canEvaluateBiometrics(s, in: env) == .available)
        #expect(policy.canAttemptPassword(s, at: env.now) == .available)
    }
}
