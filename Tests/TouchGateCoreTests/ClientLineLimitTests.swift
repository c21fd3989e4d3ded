// Lines a client can cause at will stay within the limit for its uid (LogThrottle), so that one
// user cannot spend journald's rate limit, which would drop every user's audit records.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: lines a client causes at will")
@CoreActor struct ClientLineLimitTests {
    static let limit = 5
    static let rounds = 20

    /// How many of the limit's 10 s windows have begun since `started` (a slow machine's test may
    /// cross into the next one).
    func windows(since started: Int64) -> Int { 1 + Int((monotonicMilliseconds() - started) / 10_000) }

    /// A user's own disable needs nothing: past the one that changed something, the records of
    /// those that changed nothing are written within her limit; the monitors get every one, and
    /// root's are all written.
    @Test func disablesThatChangeNothingAreWrittenWithinTheLimit() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            let started = monotonicMilliseconds()
            for _ in 0..<Self.rounds {
                #expect(await core.disable(user: "alice", origin: Origin(), caller: .alice) == .success())
            }
            let written = bed.audit.all.filter {
                $0.hasPrefix("event=admin user=alice ") && $0.contains("reason=disable")
            }
            #expect(written.count > Self.limit && written.count <= 1 + Self.limit * windows(since: started))
            #expect(
                bed.logged.all.contains(
                    "admin records that changed nothing (more like it from uid 1000 are left out for 10 s)"))
            #expect(TouchGateCoreTests.events(events.all, "admin").count == Self.rounds)
            #expect(!bed.written.all.contains("disable"))  // the record says it

            for _ in 0..<Self.rounds {
                #expect(await core.lock(user: "alice", origin: Origin(), caller: .root) == .success())
            }
            #expect(
                bed.audit.all.filter { $0.hasPrefix("event=admin user=alice ") && $0.contains("reason=lock") }.count
                    == Self.rounds)
        }
    }

    @Test func forgettingAKeyringPasswordIsSaidWithinTheLimit() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            let started = monotonicMilliseconds()
            for _ in 0..<Self.rounds {
                #expect(await core.keyringDisable(user: "alice", origin: Origin(), caller: .alice).isSuccess)
            }
            let said = bed.logged.all.filter { $0.hasPrefix("keyring password forgotten") }
            #expect(said.count >= 1 && said.count <= Self.limit * windows(since: started))
        }
    }

    /// A print sealed shut is read again at each request, and its line with it.
    @Test func aPrintSealedShutIsSaidWithinTheLimit() async throws {
        try await withTestBed { bed in
            try await bed.readyUser(try bed.makeCore())
            try bed.plantPrint("alice", .leftThumb, SealedPrint.magic + [UInt8](repeating: 7, count: 64))
            let core = try bed.makeCore()  // a daemon started on it: nothing cached
            let started = monotonicMilliseconds()
            for _ in 0..<Self.rounds {
                _ = await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice)
            }
            let said = bed.logged.all.filter { $0.hasPrefix("alice's left-thumb print is not used: it is sealed") }
            #expect(said.count >= 1 && said.count <= Self.limit * windows(since: started), "\(said)")
        }
    }

    /// What a client can repeat without changing anything is written only with --debug: a
    /// deletion of nothing, and a prompt it leaves (whose record says so, within its own limit).
    @Test func aDeletionOfNothingAndAPromptLeftAreNotWritten() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 0..<3 {
                let reply = await core.delete(
                    user: "alice", fingers: [.leftThumb], all: false, password: nil, origin: Origin(), caller: .root)
                #expect(reply.outcome == .notFound)
            }
            bed.reader.script(.hold)
            let (left, client, _) = core.startEvaluate()
            #expect(await client.waitFor(.prompt))
            left.cancel()
            #expect(await left.value()?.reason == .clientGone)
            #expect(bed.audit.all.contains { $0.contains("reason=clientGone") })
            #expect(
                !bed.written.all.contains { $0.hasPrefix("deleted") || $0.hasPrefix("client left") },
                "\(bed.written.all)")

            let removed = await core.delete(
                user: "alice", fingers: [.rightIndex], all: false, password: nil, origin: Origin(), caller: .root)
            #expect(removed.isSuccess)
            #expect(bed.written.all.contains("deleted [\"right-index-finger\"]"), "\(bed.written.all)")
        }
    }
}
