// Password back-off: five wrong → 1 min, then 5 min, 15 min, 1 h repeating; a locked password is not checked.

import Testing
import TouchGatePolicy

@Suite struct BackoffTests {
    let policy = Policy()

    /// Wrong passwords, each typed the moment the previous back-off (if any) expired.
    func wrongPasswords(_ count: Int, _ s: UserState = UserState(), from start: Instant = t0) -> (UserState, [Int64?]) {
        var state = s
        var now = start
        var results: [Int64?] = []
        for _ in 0..<count {
            let (next, backoff) = policy.recordWrongPassword(state, at: now)
            results.append(backoff)
            state = next
            now = state.backoffUntil ?? now + 1
        }
        return (state, results)
    }

    @Test func locksThePasswordForAMinuteAfterFiveWrongOnes() {
        let (four, firstFour) = wrongPasswords(4)
        #expect(firstFour == [nil, nil, nil, nil])
        #expect(policy.canAttemptPassword(four, at: t0 + 4) == .available)
        let (fifth, backoff) = policy.recordWrongPassword(four, at: t0 + 10)
        #expect(backoff == 60)
        #expect(fifth.backoffUntil == t0 + 70)
    }

    @Test(arguments: [
        (t0 + 10, PasswordAvailability.refused(.backoff(secondsLeft: 60))),
        (t0 + 69, .refused(.backoff(secondsLeft: 1))),
        (t0 + 70, .available),
    ])
    func refusesThePasswordWithTheSecondsLeftUntilTheLockEnds(now: Instant, expected: PasswordAvailability) {
        var s = UserState()
        for i in 0..<5 { s = policy.recordWrongPassword(s, at: t0 + 6 + Int64(i)).state }
        #expect(s.backoffUntil == t0 + 70)
        #expect(policy.canAttemptPassword(s, at: now) == expected)
    }

    @Test func climbsTheStepsAndRepeatsTheLast() {
        let (_, results) = wrongPasswords(10)
        #expect(results == [nil, nil, nil, nil, 60, 300, 900, 3600, 3600, 3600])
    }

    @Test func doesNotCountAWrongPasswordTypedDuringTheLock() {
        let (locked, _) = wrongPasswords(5)
        let until = try! #require(locked.backoffUntil)
        let (after, left) = policy.recordWrongPassword(locked, at: until - 20)
        #expect(left == 20)
        #expect(after == locked)
        // The next real attempt still gets step two, not three.
        #expect(policy.recordWrongPassword(after, at: until).backoff == 300)
    }

    @Test func passwordSuccessClearsTheBackoff() {
        let (locked, _) = wrongPasswords(7)
        let s = policy.recordPasswordSuccess(locked, in: environment(at: t0 + 10 * hour))
        #expect(s.consecutiveWrongPasswords == 0 && s.backoffStep == 0 && s.backoffUntil == nil)
        let (_, results) = wrongPasswords(5, s, from: t0 + 10 * hour)
        #expect(results == [nil, nil, nil, nil, 60])
    }

    @Test func rootResetClearsTheBackoff() {
        let (locked, _) = wrongPasswords(6)
        let s = policy.reset(locked)
        #expect(policy.canAttemptPassword(s, at: t0) == .available)
        #expect(s.consecutiveWrongPasswords == 0 && s.backoffUntil == nil)
    }

    @Test(arguments: [
        // (wrong passwords so far, how far the clock went back, seconds reported)
        (5, 1 * hour, Int64(60)),
        (6, 10 * hour, 300),
        (8, 1000 * hour, 3600),
    ])
    func aClockSetBackNeverLengthensABackoffBeyondItsStep(wrong: Int, setBack: Int64, expected: Int64) {
        var s = UserState()
        for _ in 0..<wrong { s = policy.recordWrongPassword(s, at: s.backoffUntil ?? t0).state }
        let until = try! #require(s.backoffUntil)
        let now = until - expected - setBack
        #expect(policy.canAttemptPassword(s, at: now) == .refused(.backoff(secondsLeft: expected)))
        // Storing the capped state makes the lock really end one step from now.
        let capped = policy.backoffCappedToItsStep(s, at: now)
        #expect(capped.backoffUntil == now + expected)
        #expect(policy.canAttemptPassword(capped, at: now + expected) == .available)
        #expect(policy.recordWrongPassword(s, at: now).state.backoffUntil == now + expected)
    }

    @Test func cappingLeavesAnOrdinaryBackoffAlone() {
        let (locked, _) = wrongPasswords(5)
        #expect(policy.backoffCappedToItsStep(locked, at: t0 + 10) == locked)
        #expect(policy.backoffCappedToItsStep(UserState(), at: t0) == UserState())
    }

    @Test func honoursAConfiguredThresholdAndSteps() {
        let custom = Policy(config: PolicyConfig(passwordBackoffAfter: 2, passwordBackoff: [10, 20]))
        var s = UserState()
        var results: [Int64?] = []
        for _ in 0..<5 {
            let r = custom.recordWrongPassword(s, at: s.backoffUntil ?? t0)
            s = r.state
            results.append(r.backoff)
        }
        #expect(results == [nil, 10, 20, 20, 20])
    }
}
