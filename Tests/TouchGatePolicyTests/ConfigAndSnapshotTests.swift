// Config defaults and validation, opt-in and root's commands, and the order-free enrollment snapshot.

import Testing
import TouchGatePolicy

@Suite struct ConfigTests {
    @Test func defaultsAreThoseOfTheSpec() {
        let c = PolicyConfig.defaults
        #expect(c.maxTries == 3 && c.timeout == 30 && c.lockoutThreshold == 5)
        #expect(c.requirePasswordAfterBoot && c.requirePasswordAfterEnrollmentChange)
        #expect(
            c.unlockIdleTimeout == 48 * hour && c.passwordInterval == 156 * hour && c.passwordIntervalGrace == 4 * hour)
        #expect(c.passwordBackoffAfter == 5 && c.passwordBackoff == [60, 300, 900, 3600])
        #expect(c.problems.isEmpty)
    }

    @Test func namesEveryUnusableValueByItsConfigKey() {
        let bad = PolicyConfig(
            maxTries: 0, timeout: 0, lockoutThreshold: -1, unlockIdleTimeout: 0, passwordInterval: 0,
            passwordIntervalGrace: -1, passwordBackoffAfter: 0, passwordBackoff: [60, 0])
        #expect(
            bad.problems.map(\.key) == [
                "max_tries", "timeout", "lockout_threshold", "unlock_idle_timeout", "password_interval",
                "password_interval_grace", "password_backoff_after", "password_backoff",
            ])
        #expect(
            PolicyConfig(passwordBackoff: []).problems.map(\.description) == [
                "password_backoff: needs at least one step"
            ])
        #expect(PolicyConfig(passwordIntervalGrace: 0).problems.isEmpty)
    }
}

@Suite struct OptInAndAdminTests {
    let policy = Policy()

    @Test func aNewUserIsNotEnrolledUntilTheyEnable() {
        let s = policy.recordPasswordSuccess(UserState(), in: environment(at: t0))
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 1)) == .refused(.notEnrolled))
        #expect(policy.canEvaluateBiometrics(policy.enable(s), in: environment(at: t0 + 1)) == .available)
    }

    @Test func printsOnlyOnAnotherReaderAreNotEnrolledHereButNoEnrollmentChange() {
        var elsewhere = environment(at: t0 + 1)
        elsewhere.enrolledHere = false  // the same set of prints, none on the reader served
        #expect(policy.canEvaluateBiometrics(healthyUser(), in: elsewhere) == .refused(.notEnrolled))
        #expect(policy.passwordRequiredReasons(healthyUser(), in: elsewhere).isEmpty)
    }

    @Test func disablingAndEnablingClearsNothing() {
        let locked = failMatches(5, healthyUser())
        let again = policy.enable(policy.disable(locked))
        #expect(again == locked)
        #expect(policy.canEvaluateBiometrics(again, in: environment(at: t0 + 10)) == .refused(.lockout))
    }

    @Test func rootResetUndoesLocksButForgesNoPasswordSuccess() {
        let s = policy.reset(policy.adminLock(failMatches(5, healthyUser())))
        #expect(policy.canEvaluateBiometrics(s, in: environment(at: t0 + 10)) == .available)
        #expect(
            policy.canEvaluateBiometrics(s, in: environment(at: t0 + 10, boot: "boot-B"))
                == .refused(.passwordRequired(.boot)))
        #expect(s.lastPasswordSuccess == t0)
    }
}

@Suite struct EnrollmentSnapshotTests {
    @Test func isTheSameWhateverTheOrderOrRepeats() {
        let a = enrollmentSnapshot(fingers: ["right-index-finger:7", "left-thumb:3"])
        #expect(a == enrollmentSnapshot(fingers: ["left-thumb:3", "right-index-finger:7", "left-thumb:3"]))
        #expect(a == enrollmentSnapshot(fingers: Set(["left-thumb:3", "right-index-finger:7"])))
    }

    @Test func returnsToTheSameValueAfterAddingAndDeletingAPrint() {
        var prints = ["left-thumb:3"]
        let before = enrollmentSnapshot(fingers: prints)
        prints.append("right-index-finger:7")
        #expect(enrollmentSnapshot(fingers: prints) != before)
        prints.removeLast()
        #expect(enrollmentSnapshot(fingers: prints) == before)
    }

    @Test(arguments: [
        (["left-thumb:3"], ["left-thumb:4"]),  // replaced print
        (["a", "b"], ["ab"]),  // concatenation cannot merge two prints into one
        (["a:b"], ["a", "b"]),
        (["1:a"], ["a"]),  // an identifier that looks like the length prefix
    ])
    func differsForDifferentSets(one: [String], other: [String]) {
        #expect(enrollmentSnapshot(fingers: one) != enrollmentSnapshot(fingers: other))
    }

    @Test func isAbsentWithoutPrints() {
        #expect(enrollmentSnapshot(fingers: [String]()) == nil)
    }
}
