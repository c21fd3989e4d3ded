// UserStateStore when the disk fails: a read that fails now is no verdict on the file, a write
// that fails is reported to every reply waiting for it, and no reply waits for the disk without
// end (docs/spec.md §9).
import FoundationEssentials
import Glibc
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateTestSupport
import TouchGateThreads
import TouchGateWire

extension UserStateStoreTests {
    /// A store whose first read of a state fails with `failure`; the reads after it read the file.
    func storeFailingFirstRead(_ dir: String, _ failure: Int32) throws -> UserStateStore {
        let reads = Atomic(0)
        return try store(
            dir,
            readFile: { user, users, policy, now throws(StorageError) in
                guard reads.add(1, ordering: .relaxed).oldValue > 0 else { throw .io("read \(user)", failure) }
                return try UserStateStore.readState(user, users: users, policy: policy, now: now)
            })
    }

    @Test func aFailedWriteIsReportedBeforeTheReplyAndTheChangeIsKeptInMemory() async throws {
        try await withTemporaryDirectory { dir in
            let states = try store(dir)
            #expect(await states.load("alice") == .state(UserState(enabled: true)))
            // The user's directory cannot be made: a file stands where it should be.
            try plantFile("\(dir)/users/alice", "in the way")
            await #expect(throws: StorageError.unsafe("\(dir)/users/alice is not a directory")) {
                try await states.update("alice", .beforeReply) { _ in UserState(consecutiveFailedMatches: 1) }
            }
            #expect(await states.load("alice") == .state(UserState(consecutiveFailedMatches: 1)))
        }
    }

    @Test func aWriteThatKeepsFailingIsTriedAgainLaterAndThenSucceeds() async throws {
        try await withTemporaryDirectory { dir in
            let lines = Collector<String>()
            let retried = OneShot<Void>(), written = OneShot<Void>()
            let states = try store(dir, retry: 40) { line in
                lines.append(line)
                if lines.all.filter({ $0.hasPrefix("cannot write") }).count == 2 { retried.set(()) }
                if line == "the state of alice is written again" { written.set(()) }
            }
            #expect(await states.load("alice") == .state(UserState(enabled: true)))
            try plantFile("\(dir)/users/alice", "in the way")
            let failed = monotonicMilliseconds()
            _ = try? await states.update("alice", .beforeReply) { _ in UserState(consecutiveFailedMatches: 1) }
            #expect(lines.all.first?.hasSuffix("trying again in 40 ms") == true, "\(lines.all)")

            // Not at once: the next try waits its turn, and the one after it twice as long.
            #expect(await value(of: retried) != nil)
            #expect(monotonicMilliseconds() - failed >= 40)
            // The second failure's line, whatever further tries a slow machine has made since.
            let failures = lines.all.filter { $0.hasPrefix("cannot write") }
            #expect(failures.count >= 2 && failures[1].hasSuffix("trying again in 80 ms"), "\(failures)")

            // The disk takes it again: the change kept in memory is written.
            _ = unlink("\(dir)/users/alice")
            #expect(await value(of: written) != nil)
            #expect(
                contents("\(dir)/users/alice/state.json").map { String(decoding: $0, as: UTF8.self) }?
                    .contains("\"consecutiveFailedMatches\":1") == true)
        }
    }

    /// The disk fails while the state is first read (an I/O error): the read fails, as with a
    /// full storage queue, instead of taking the file for corrupt, which would drop its back-off
    /// and move a good file aside; nothing is kept of it, so the file is read when it can be.
    @Test func aStateThatCannotBeReadNowIsRefusedAndReadAgainLater() async throws {
        try await withTemporaryDirectory { dir in
            let backedOff = UserState(
                enabled: true, consecutiveWrongPasswords: 7, backoffStep: 3, backoffUntil: clock.now() + 600)
            try await store(dir).update("alice", .beforeReply) { _ in backedOff }
            let restarted = try storeFailingFirstRead(dir, EIO)
            await #expect(throws: StorageError.io("read alice", EIO)) { try await restarted.read("alice") }
            #expect(try await restarted.read("alice") == .state(backedOff))
            #expect(directoryEntries("\(dir)/users/alice") == ["state.json"])
        }
    }

    /// A file the disk keeps failing to read: every request is refused, but an administrator's
    /// change gets past it, keeping the file aside as an unreadable one is kept.
    @Test func anAdminChangeReplacesAStateTheDiskCannotReadAndKeepsItAside() async throws {
        try await withTemporaryDirectory { dir in
            try await store(dir).update("alice", .beforeReply) { _ in UserState(enabled: true) }
            let failing = try store(
                dir, readFile: { user, _, _, _ throws(StorageError) in throw .io("read \(user)", EIO) })
            await #expect(throws: StorageError.io("read alice", EIO)) {
                try await failing.update("alice", .beforeReply) { _ in UserState(adminLocked: true) }
            }
            try await failing.update("alice", .beforeReply, overUnreadable: true) { stored in
                #expect(stored == .corrupt("read alice: Input/output error"))
                return UserState(adminLocked: true)
            }
            #expect(directoryEntries("\(dir)/users/alice") == ["state.json", "state.json.corrupt-\(clock.now())"])
            #expect(await (try store(dir)).load("alice") == .state(UserState(adminLocked: true)))
        }
    }

    /// A read that fails for a passing reason (no descriptor or memory left, interrupted, try
    /// again) says nothing about the file, even for an administrator's change: it fails, nothing
    /// is moved aside or replaced, and the state, opt-out and back-off included, is read later.
    @Test(arguments: [EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, ENOBUFS])
    func anAdminChangeNeverReplacesAStateWhoseReadFailedForAPassingReason(errno failure: Int32) async throws {
        try await withTemporaryDirectory { dir in
            let kept = UserState(
                enabled: false, consecutiveWrongPasswords: 7, backoffStep: 3, backoffUntil: clock.now())
            try await store(dir).update("alice", .beforeReply) { _ in kept }
            let states = try storeFailingFirstRead(dir, failure)
            var changed = false
            await #expect(throws: StorageError.io("read alice", failure)) {
                try await states.update("alice", .beforeReply, overUnreadable: true) { _ in
                    changed = true
                    return UserState(adminLocked: true)
                }
            }
            #expect(!changed)
            #expect(directoryEntries("\(dir)/users/alice") == ["state.json"])
            #expect(try await states.read("alice") == .state(kept))
        }
    }

    /// A write refused by the disk answers every reply waiting for it, the later changes' too
    /// (they would be written with it): none waits for the next try, a minute away.
    @Test func aChangeWaitingBehindAFailedWriteIsAnsweredWithTheFailure() async throws {
        try await withTemporaryDirectory { dir in
            let pool = WorkerPool(name: "test", threads: 1, queueLimit: 16)
            let states = try store(dir, retry: 60_000, pool: pool)
            #expect(await states.load("alice") == .state(UserState(enabled: true)))
            try plantFile("\(dir)/users/alice", "in the way")
            let hold = try #require(await PoolHold(pool, threads: 1))
            let first = Running {
                await Self.failure { () async throws(StorageError) -> UserState in
                    try await states.update("alice", .beforeReply) { _ in UserState(consecutiveFailedMatches: 1) }
                }
            }
            let second = Running {
                await Self.failure { () async throws(StorageError) -> UserState in
                    try await states.update("alice", .beforeReply) { _ in UserState(consecutiveFailedMatches: 2) }
                }
            }
            await hold.release()
            let refused = StorageError.unsafe("\(dir)/users/alice is not a directory")
            #expect(await first.value() == refused)
            #expect(await second.value(within: 2000) == refused)
            #expect(await states.load("alice") == .state(UserState(consecutiveFailedMatches: 2)))
        }
    }

    /// A disk that does not answer: the reply is a storage failure after the deadline, and the
    /// change, kept in memory, is written once the disk answers.
    @Test func aReplyWaitsForTheDiskOnlyUntilItsDeadline() async throws {
        try await withTemporaryDirectory { dir in
            let pool = WorkerPool(name: "test", threads: 1, queueLimit: 16)
            let states = try store(dir, writeDeadline: 50, pool: pool)
            #expect(await states.load("alice") == .state(UserState(enabled: true)))
            let hold = try #require(await PoolHold(pool, threads: 1))
            let update = Running {
                await Self.failure { () async throws(StorageError) -> UserState in
                    try await states.update("alice", .beforeReply) { _ in UserState(consecutiveFailedMatches: 1) }
                }
            }
            let answer = await update.value()
            await hold.release()
            #expect(answer == .io("write the state of alice", ETIMEDOUT))
            await states.waitUntilDurable("alice")
            #expect(await (try store(dir)).load("alice") == .state(UserState(consecutiveFailedMatches: 1)))
        }
    }

    /// The error `body` threw (nil when it returned).
    static func failure(_ body: () async throws(StorageError) -> UserState) async -> StorageError? {
        do throws(StorageError) { _ = try await body() } catch { return error }
        return nil
    }
}
