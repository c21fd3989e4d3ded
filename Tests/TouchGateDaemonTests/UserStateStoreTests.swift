// UserStateStore: per-user state.json, durable before the reply, fail closed on corruption (SPEC §9).
import Foundation
import Glibc
import Testing
@testable import TouchGateDaemon
import TouchGatePolicy

@Suite("UserStateStore")
struct UserStateStoreTests {
    /// A state directory as the daemon leaves it after start: the private users/ directory exists.
    func stateDirectory(_ dir: String) throws -> String {
        try Files.ensurePrivateDirectory("\(dir)/users")
        return dir
    }

    func store(_ dir: String) -> UserStateStore { UserStateStore(stateDirectory: dir, policy: Policy()) }

    let remembered = UserState(
        enabled: true, consecutiveFailedMatches: 3, biometryLockedOut: false,
        lastPasswordSuccess: 1_700_000_000, lastFingerprintSuccess: 1_700_000_100,
        bootIDAtPasswordSuccess: "boot-1", enrollmentAtPasswordSuccess: "5:print",
        adminLocked: true, consecutiveWrongPasswords: 2, backoffStep: 0, backoffUntil: nil)

    @Test func aUserWithoutAFileHasTheDefaultState() throws {
        try withTemporaryDirectory { dir in
            let states = store(try stateDirectory(dir))
            #expect(states.load("alice") == .state(UserState()))
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/users/alice/state.json"))
        }
    }

    @Test func updateWritesAnOwnerOnlyStateFileAndReturnsTheNewState() throws {
        try withTemporaryDirectory { dir in
            let states = store(try stateDirectory(dir))
            let written = try states.update("alice") { stored in
                #expect(stored == .state(UserState()))
                return remembered
            }
            #expect(written == remembered)
            #expect(permissions("\(dir)/users/alice") == 0o700)
            #expect(permissions("\(dir)/users/alice/state.json") == 0o600)
            #expect(states.load("alice") == .state(remembered))
            #expect(directoryEntries("\(dir)/users/alice") == ["state.json"])
        }
    }

    @Test func aNewStoreOnTheSameDirectoryReadsBackWhatWasWritten() throws {
        try withTemporaryDirectory { dir in
            try store(try stateDirectory(dir)).update("alice") { _ in remembered }
            // As after kill -9 and a restart: nothing in memory, only what is on disk.
            #expect(store(dir).load("alice") == .state(remembered))
        }
    }

    @Test func updatesSeeThePreviousUpdate() throws {
        try withTemporaryDirectory { dir in
            let states = store(try stateDirectory(dir))
            for _ in 0..<4 {
                try states.update("alice") { stored in
                    guard case .state(var s) = stored else { return UserState() }
                    s.consecutiveFailedMatches += 1
                    return s
                }
            }
            #expect(store(dir).load("alice") == .state(UserState(consecutiveFailedMatches: 4)))
        }
    }

    @Test(arguments: [
        ("garbage bytes", Array("\u{1}\u{2}not json at all".utf8)),
        ("an empty file", []),
        ("another version", Array(#"{"version":2,"enabled":true,"consecutiveFailedMatches":0,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#.utf8)),
        ("a missing counter", Array(#"{"version":1,"enabled":true,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#.utf8)),
        ("a JSON array", Array("[]".utf8)),
    ])
    func aFileThatIsNotAStateIsCorrupt(_ what: String, _ bytes: [UInt8]) throws {
        try withTemporaryDirectory { dir in
            try plantDirectory("\(try stateDirectory(dir))/users/alice", mode: 0o700)
            try plantFile("\(dir)/users/alice/state.json", bytes)
            #expect(store(dir).load("alice") == .corrupt, "\(what)")
        }
    }

    @Test func aStateFileThatIsASymlinkIsCorruptNotFollowed() throws {
        try withTemporaryDirectory { dir in
            try plantDirectory("\(try stateDirectory(dir))/users/alice", mode: 0o700)
            let elsewhere = "\(dir)/elsewhere.json"
            try plantFile(elsewhere, String(decoding: try JSONEncoder().encode(UserState(enabled: true)), as: UTF8.self))
            try plantSymlink(at: "\(dir)/users/alice/state.json", to: elsewhere)
            #expect(store(dir).load("alice") == .corrupt)
        }
    }

    @Test func updatingACorruptUserKeepsTheCorruptFileAside() throws {
        try withTemporaryDirectory { dir in
            try plantDirectory("\(try stateDirectory(dir))/users/alice", mode: 0o700)
            let garbage = Array("}{ definitely not a state".utf8)
            try plantFile("\(dir)/users/alice/state.json", garbage)
            let states = store(dir)

            try states.update("alice") { stored in
                #expect(stored == .corrupt)
                return UserState(biometryLockedOut: true)
            }

            let entries = directoryEntries("\(dir)/users/alice")
            #expect(entries.count == 2)
            let aside = try #require(entries.first { $0.hasPrefix("state.json.corrupt-") })
            #expect(Int64(aside.dropFirst("state.json.corrupt-".count)) != nil)
            #expect(contents("\(dir)/users/alice/\(aside)") == garbage)
            #expect(store(dir).load("alice") == .state(UserState(biometryLockedOut: true)))
        }
    }

    @Test func oneUsersCorruptFileLeavesEveryoneElseAlone() throws {
        try withTemporaryDirectory { dir in
            let states = store(try stateDirectory(dir))
            try states.update("bob") { _ in remembered }
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            try plantFile("\(dir)/users/alice/state.json", "garbage")

            let restarted = store(dir)
            #expect(restarted.load("alice") == .corrupt)
            #expect(restarted.load("bob") == .state(remembered))
            try restarted.update("bob") { stored in
                guard case .state(var s) = stored else { return UserState() }
                s.consecutiveFailedMatches = 4
                return s
            }
            #expect(restarted.load("alice") == .corrupt)
            #expect(contents("\(dir)/users/alice/state.json") == Array("garbage".utf8))
        }
    }

    @Test func aBackoffPushedFarAheadIsPulledBackToOneStepOnLoad() throws {
        try withTemporaryDirectory { dir in
            let now = Clock.now()
            try store(try stateDirectory(dir)).update("alice") { _ in
                UserState(consecutiveWrongPasswords: 5, backoffStep: 0, backoffUntil: now + 1_000_000)
            }
            guard case .state(let loaded) = store(dir).load("alice") else {
                Issue.record("state was not readable")
                return
            }
            // The first step is 60 s; the load happened at or a moment after `now`.
            let until = try #require(loaded.backoffUntil)
            #expect((now + 60)...(now + 62) ~= until)
            #expect(loaded.consecutiveWrongPasswords == 5)
        }
    }
}
