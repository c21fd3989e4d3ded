// Fixtures shared by the policy tests: explicit instants, a standard environment and a healthy user.

import TouchGatePolicy

let hour: Int64 = 3600
/// An arbitrary fixed instant (2023-11-14); every test time is t0 plus or minus a named amount.
let t0: Instant = 1_700_000_000
let bootA = "boot-A"
let printsOne = "prints-1"

func environment(
    at now: Instant, boot: String = bootA, prints: String? = printsOne, reader: Bool = true
) -> Environment {
    Environment(now: now, bootID: boot, enrollmentSnapshot: prints, readerAvailable: reader)
}

/// Enabled, password typed at `at` on boot A with prints-1: nothing refuses biometrics right then.
func healthyUser(_ policy: Policy = Policy(), passwordAt at: Instant = t0) -> UserState {
    policy.recordPasswordSuccess(policy.enable(UserState()), in: environment(at: at))
}

/// Applies `count` failed matches, one second apart, starting at `start`.
func failMatches(_ count: Int, _ s: UserState, _ policy: Policy = Policy(), from start: Instant = t0) -> UserState {
    var state = s
    for i in 0..<count { state = policy.recordFailedMatch(state, at: start + Int64(i)).state }
    return state
}
