// What is recorded when the state cannot be written: a finger or a password judged still leaves
// its record, and so does a print enrolled (docs/logging.md).
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: records when the state cannot be written")
@CoreActor struct StateWriteFailureRecordTests {
    /// Alice ready (her state read and kept in memory), then her state directory replaced by a
    /// file: every later write of her state fails.
    func readyAliceOnAFailingDisk(_ bed: TestBed) async throws -> Core {
        let core = try bed.makeCore()
        try await bed.readyUser(core)
        await core.states.flush()  // no write of before is still to come
        removeTree("\(bed.statePath)/users/alice")
        try plantFile("\(bed.statePath)/users/alice", "in the way")
        return core
    }

    @Test func aFailedMatchWhoseCountCannotBeWrittenIsRecordedAsAFailure() async throws {
        try await withTestBed { bed in
            let core = try await readyAliceOnAFailingDisk(bed)
            bed.reader.script(.noMatch, .hold)
            let (prompt, _, _) = core.startEvaluate()
            #expect(await prompt.value() == Core.storageFailure)
            let failures = bed.audit.all.filter {
                $0.hasPrefix("event=outcome user=alice ")
                    && $0.contains("method=fingerprint outcome=authenticationFailed failed_matches=1 ")
            }
            #expect(failures.count == 1, "\(bed.audit.all)")
        }
    }

    @Test func aWrongPasswordWhoseCountCannotBeWrittenIsRecordedAsOne() async throws {
        try await withTestBed { bed in
            let core = try await readyAliceOnAFailingDisk(bed)
            let reply = await core.verifyPasswordRequest(
                user: "alice", password: "hunter2", origin: Origin(service: "swaylock"), caller: .alice)
            #expect(reply == Core.storageFailure)
            let wrong = bed.audit.all.filter {
                $0.hasPrefix("event=outcome user=alice service=swaylock ")
                    && $0.contains(
                        "method=password outcome=authenticationFailed reason=wrongPassword wrong_passwords=1 ")
            }
            #expect(wrong.count == 1, "\(bed.audit.all)")
        }
    }

    /// The print is stored before the state is written: the set of prints changed, and says so,
    /// though the reply is the disk's failure.
    @Test func anEnrollmentWhoseStateCannotBeWrittenIsStillAnEnrollmentChange() async throws {
        try await withTestBed { bed in
            let core = try await readyAliceOnAFailingDisk(bed)
            let events = await core.collectEvents()
            let reply = await within {
                await core.enroll(
                    user: "alice", finger: .leftThumb, password: nil, origin: Origin(service: "touchgate"),
                    caller: .root, client: CollectingClient(), input: PromptInput())
            }
            #expect(reply == Core.storageFailure)
            #expect(exists(bed.printPath("alice", .leftThumb)))
            #expect(bed.audit.all.contains { $0.hasPrefix("event=enrollmentChanged user=alice ") }, "\(bed.audit.all)")
            #expect(TouchGateCoreTests.events(events.all, "enrollmentChanged").count == 1)
        }
    }
}
