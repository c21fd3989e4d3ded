// The persisted form of UserState: versioned, round-trips, and refuses what it cannot trust.

import Foundation
import Testing
import TouchGatePolicy

@Suite struct UserStateCodingTests {
    let full = UserState(
        enabled: true, consecutiveFailedMatches: 2, biometryLockedOut: true,
        lastPasswordSuccess: t0, lastFingerprintSuccess: t0 + 5,
        bootIDAtPasswordSuccess: bootA, enrollmentAtPasswordSuccess: printsOne,
        adminLocked: true, consecutiveWrongPasswords: 6, backoffStep: 1, backoffUntil: t0 + 300)

    @Test(arguments: [UserState(), UserState(enabled: true)])
    func roundTripsThroughJSON(state: UserState) throws {
        for s in [state, full] {
            let data = try JSONEncoder().encode(s)
            #expect(try JSONDecoder().decode(UserState.self, from: data) == s)
        }
    }

    @Test func writesItsVersion() throws {
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(UserState())) as? [String: Any]
        #expect(object?["version"] as? Int == UserState.currentVersion)
    }

    @Test(arguments: [
        #"{"version":2,"enabled":true,"consecutiveFailedMatches":0,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#,
        #"{"enabled":true,"consecutiveFailedMatches":0,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#,
        #"{"version":1,"enabled":true,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#,
    ])
    func refusesAnotherVersionOrAMissingCounter(json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UserState.self, from: Data(json.utf8)) }
    }

    @Test func derivesTheLastSuccessOfAnyKind() {
        #expect(UserState().lastAnySuccess == nil)
        #expect(UserState(lastPasswordSuccess: t0).lastAnySuccess == t0)
        #expect(UserState(lastFingerprintSuccess: t0).lastAnySuccess == t0)
        #expect(full.lastAnySuccess == t0 + 5)
    }
}
