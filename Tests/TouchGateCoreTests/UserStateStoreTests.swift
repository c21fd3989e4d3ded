// UserStateStore: per-user state.json, on disk before a failure's reply, fail closed on anything
// untrusted (docs/spec.md §9).
import FoundationEssentials
import Glibc
import Testing
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateTestSupport
import TouchGateWire

@Suite("UserStateStore")
@CoreActor struct UserStateStoreTests {
    let clock = TestClock()

    /// A store as the daemon makes it at start, on `<dir>/users` (a new one: a restart after kill -9).
    func store(
        _ dir: String, deferral: Int = UserStateStore.deferralMilliseconds,
        retry: Int = UserStateStore.retryMilliseconds,
        writeDeadline: Int = UserStateStore.writeDeadlineMilliseconds,
        pool: WorkerPool = WorkerPool(name: "test", threads: 1, queueLimit: 16),
        log: @escaping (String) -> Void = { _ in },
        readFile: @escaping UserStateStore.FileReader = UserStateStore.readState
    ) throws -> UserStateStore {
        let users = try #require(try Directory.openRoot(dir).subdirectory("users", create: true))
        return UserStateStore(
            users: users, policy: Policy(), clock: clock, pool: pool, deferral: deferral, retry: retry,
            writeDeadline: writeDeadline, readFile: readFile, log: log)
    }

    let remembered = UserState(
        enabled: true, consecutiveFailedMatches: 3, biometryLockedOut: false,
        lastPasswordSuccess: 1_700_000_000, lastFingerprintSuccess: 1_700_000_100,
        bootIDAtPasswordSuccess: "boot-1", enrollmentAtPasswordSuccess: "5:print",
        adminLocked: true, consecutiveWrongPasswords: 2, backoffStep: 0, backoffUntil: nil)

    /// Prints found without a state were enrolled elsewhere (fprintd's store): not disabled.
    @Test func aUserWithoutAFileIsNotDisabled() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            #expect(await states.load("alice") == .state(UserState(enabled: true)))
            #expect(!exists("\(dir)/users/alice/state.json"))
        }
    }

    @Test func updateWritesAnOwnerOnlyStateFileAndReturnsTheNewState() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            let written = try await states.update("alice", .beforeReply) { stored in
                #expect(stored == .state(UserState(enabled: true)))
                return remembered
            }
            #expect(written == remembered)
            #expect(permissions("\(dir)/users/alice") == 0o700)
            #expect(permissions("\(dir)/users/alice/state.json") == 0o600)
            #expect(await states.load("alice") == .state(remembered))
            #expect(directoryEntries("\(dir)/users/alice") == ["state.json"])
        }
    }

    @Test func aNewStoreOnTheSameDirectoryReadsBackWhatWasWritten() async throws {
        try await withTemporaryDirectory { dir in
            try await store(dir).update("alice", .beforeReply) { _ in remembered }
            // As after kill -9 and a restart: nothing in memory, only what is on disk.
            #expect(await (try store(dir)).load("alice") == .state(remembered))
        }
    }

    @Test func updatesSeeThePreviousUpdate() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            for _ in 0..<4 {
                try await states.update("alice", .beforeReply) { stored in
                    var s = stored.stateOrFailClosed(Policy())
                    s.consecutiveFailedMatches += 1
                    return s
                }
            }
            #expect(
                await (try store(dir)).load("alice") == .state(UserState(enabled: true, consecutiveFailedMatches: 4)))
        }
    }

    /// A match that changes nothing but the time of the last fingerprint success.
    func matched(at time: Instant) -> (StoredState) -> UserState {
        { stored in Policy().recordFingerprintSuccess(stored.stateOrFailClosed(Policy()), at: time) }
    }

    func onDisk(_ dir: String) async throws -> StoredState { await (try store(dir)).load("alice") }

    @Test func aMatchThatOnlyMovesTheSuccessTimeIsDeferredUntilTheFlush() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            try await states.update("alice", .beforeReply) { _ in UserState(enabled: true, lastFingerprintSuccess: 100)
            }
            try await states.update("alice", .afterReply, matched(at: 200))
            #expect(states.hasDeferredChange("alice"))
            #expect(await states.load("alice") == .state(UserState(enabled: true, lastFingerprintSuccess: 200)))
            #expect(try await onDisk(dir) == .state(UserState(enabled: true, lastFingerprintSuccess: 100)))
            await states.flush()  // as at shutdown
            #expect(!states.hasDeferredChange("alice"))
            #expect(try await onDisk(dir) == .state(UserState(enabled: true, lastFingerprintSuccess: 200)))
        }
    }

    @Test func aDeferredChangeGoesToDiskWithTheNextOtherChange() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            try await states.update("alice", .afterReply, matched(at: 200))
            #expect(states.hasDeferredChange("alice"))
            try await states.update("alice", .beforeReply) { stored in
                Policy().recordFailedMatch(stored.stateOrFailClosed(Policy()), at: 300).state
            }
            #expect(!states.hasDeferredChange("alice"))
            #expect(
                try await onDisk(dir)
                    == .state(UserState(enabled: true, consecutiveFailedMatches: 1, lastFingerprintSuccess: 200)))
        }
    }

    @Test(.timeLimit(.minutes(1))) func aDeferredChangeGoesToDiskWhenItsTimeComes() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir, deferral: 1)
            try await states.update("alice", .afterReply, matched(at: 200))
            #expect(states.hasDeferredChange("alice"))
            await states.waitUntilDurable("alice")  // returns only once the timer has written it
            #expect(try await onDisk(dir) == .state(UserState(enabled: true, lastFingerprintSuccess: 200)))
        }
    }

    /// A match that clears failed matches, or a success time that moves back, is written at once.
    @Test(arguments: [
        (UserState(enabled: true, consecutiveFailedMatches: 2, lastFingerprintSuccess: 100), Instant(200)),
        (UserState(enabled: true, lastFingerprintSuccess: 300), Instant(200)),
    ])
    func aMatchThatChangesMoreIsNotDeferred(_ before: UserState, _ time: Instant) async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            try await states.update("alice", .beforeReply) { _ in before }
            let after = try await states.update("alice", .afterReply, matched(at: time))
            #expect(!states.hasDeferredChange("alice"))
            await states.waitUntilDurable("alice")
            #expect(try await onDisk(dir) == .state(after))
        }
    }

    @Test func aSuccessIsWrittenAfterTheReplyAndIsOnDiskOnceFlushed() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            for n in 1...20 {
                // Successes do not wait for the disk; each later change is written after the earlier.
                try await states.update("alice", .afterReply) { _ in UserState(consecutiveFailedMatches: n) }
            }
            await states.flush()
            #expect(await (try store(dir)).load("alice") == .state(UserState(consecutiveFailedMatches: 20)))
            #expect(directoryEntries("\(dir)/users/alice") == ["state.json"])
        }
    }

    @Test(arguments: [
        ("garbage bytes", Array("\u{1}\u{2}not json at all".utf8)),
        ("an empty file", []),
        (
            "another version",
            Array(
                #"{"version":2,"enabled":true,"consecutiveFailedMatches":0,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#
                    .utf8)
        ),
        (
            "a missing counter",
            Array(
                #"{"version":1,"enabled":true,"biometryLockedOut":false,"adminLocked":false,"consecutiveWrongPasswords":0,"backoffStep":0}"#
                    .utf8)
        ),
        ("a JSON array", Array("[]".utf8)),
    ])
    func aFileThatIsNotAStateIsCorrupt(_ what: String, _ bytes: [UInt8]) async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            try plantFile("\(dir)/users/alice/state.json", bytes)
            #expect(
                await (try store(dir)).load("alice") == .corrupt("\(dir)/users/alice/state.json is not a valid state"),
                "\(what)")
        }
    }

    @Test func aStateFileThatIsASymlinkIsCorruptNotFollowed() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            let elsewhere = "\(dir)/elsewhere.json"
            try plantFile(elsewhere, Array(try JSONEncoder().encode(UserState(enabled: true))))
            try plantSymlink(at: "\(dir)/users/alice/state.json", to: elsewhere)
            #expect(
                await (try store(dir)).load("alice") == .corrupt("\(dir)/users/alice/state.json is a symbolic link"))
        }
    }

    /// A socket cannot even be opened (ENXIO): that is a verdict on the file, not a failing disk.
    @Test func aStateFileThatIsASocketIsCorrupt() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            try plantSocket("\(dir)/users/alice/state.json")
            #expect(
                await (try store(dir)).load("alice") == .corrupt("\(dir)/users/alice/state.json is not a regular file"))
        }
    }

    @Test func updatingACorruptUserKeepsTheCorruptFileAside() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            let garbage = Array("}{ definitely not a state".utf8)
            try plantFile("\(dir)/users/alice/state.json", garbage)
            let logged = Collector<String>()
            let states = try store(dir) { logged.append($0) }

            try await states.update("alice", .beforeReply) { stored in
                #expect(stored.isCorrupt)
                return UserState(biometryLockedOut: true)
            }

            #expect(directoryEntries("\(dir)/users/alice") == ["state.json", "state.json.corrupt-\(clock.now())"])
            #expect(contents("\(dir)/users/alice/state.json.corrupt-\(clock.now())") == garbage)
            #expect(await (try store(dir)).load("alice") == .state(UserState(biometryLockedOut: true)))
            #expect(logged.all == ["state of alice refused: \(dir)/users/alice/state.json is not a valid state"])
        }
    }

    @Test func oneUsersCorruptFileLeavesEveryoneElseAlone() async throws {
        try await withTemporaryDirectory { dir in
            try await store(dir).update("bob", .beforeReply) { _ in remembered }
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            try plantFile("\(dir)/users/alice/state.json", "garbage")

            let restarted = try store(dir)
            #expect(await restarted.load("alice").isCorrupt)
            #expect(await restarted.load("bob") == .state(remembered))
            try await restarted.update("bob", .beforeReply) { stored in
                var s = stored.stateOrFailClosed(Policy())
                s.consecutiveFailedMatches = 4
                return s
            }
            #expect(await restarted.load("alice").isCorrupt)
            #expect(contents("\(dir)/users/alice/state.json") == Array("garbage".utf8))
        }
    }

    @Test func aBackoffPushedFarAheadIsPulledBackToOneStepOnLoad() async throws {
        try await withTemporaryDirectory { dir in
            let now = clock.now()
            try await store(dir).update("alice", .beforeReply) { _ in
                UserState(consecutiveWrongPasswords: 5, backoffStep: 0, backoffUntil: now + 1_000_000)
            }
            let loaded = try #require(await (try store(dir)).load("alice").stateOrNil)
            // The first step is 60 s, counted from the (injected) time of the load.
            #expect(loaded.backoffUntil == now + 60)
            #expect(loaded.consecutiveWrongPasswords == 5)
        }
    }
}

extension StoredState {
    var stateOrNil: UserState? { if case .state(let s) = self { return s } else { return nil } }
}
