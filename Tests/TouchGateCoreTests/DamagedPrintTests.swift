// A damaged print: found before any prompt, the person told which finger to enroll again, the others still work.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: damaged prints")
@CoreActor struct DamagedPrintTests {
    /// Alice with a good right index finger and a left thumb whose file libfprint cannot read;
    /// both were there when she last typed her password.
    func aliceWithOneDamagedPrint(_ bed: TestBed) async throws -> Core {
        try bed.plantPrint("alice", .rightIndex, bed.reader.print(user: "alice", finger: 7))
        try bed.plantPrint("alice", .leftThumb, [0x00, 0x13, 0x37])
        let core = try bed.makeCore()
        try await core.adminChange(context(), action: "enable") { core.policyEngine.enable($0) }
        try await core.recordPasswordSuccess(context())
        return core
    }

    @Test func withOneOfTwoDamagedThePromptGoesOnWithTheOtherAndNamesTheDamagedFinger() async throws {
        try await withTestBed { bed in
            let core = try await aliceWithOneDamagedPrint(bed)
            #expect(
                await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice) == .success())
            bed.reader.script(.match)
            let (running, client, _) = core.startEvaluate()

            #expect(await running.value() == .success(.recognised))
            #expect(client.shown.first == ProgressEvent(.retry, .templateDamaged(.leftThumb), style: .error))
            #expect(client.kinds() == [.retry, .prompt])
            // Only the print libfprint can use is given to the reader.
            #expect(bed.reader.verifications == [[bed.reader.print(user: "alice", finger: 7)]])
        }
    }

    @Test func aPrintReplacedOnDiskWhileTheDaemonRunsAsksThePasswordInsteadOfBeingMatched() async throws {
        try await withTestBed { bed in
            let core = try await aliceWithOneDamagedPrint(bed)
            bed.reader.script(.match)
            let (first, _, _) = core.startEvaluate()
            #expect(await first.value() == .success(.recognised))  // her prints are judged and cached

            // Another print written over hers by hand, behind the daemon's back.
            try bed.plantPrint("alice", .rightIndex, bed.reader.print(user: "alice", finger: 7, payload: "mallory"))
            bed.reader.script(.match)
            let (running, client, _) = core.startEvaluate()
            let reply = try #require(await running.value())
            #expect(reply.outcome == .passwordRequired && reply.reason == .enrollmentChanged)
            #expect(!client.kinds().contains(.prompt))
            #expect(bed.reader.verifications.count == 1)  // the replaced print never reached the reader
        }
    }

    @Test func withEveryPrintDamagedTheRefusalComesBeforeAnyPromptAndNamesTheFingers() async throws {
        try await withTestBed { bed in
            try bed.plantPrint("alice", .rightIndex, Array("not a print".utf8))
            try bed.plantPrint(
                "alice", .leftThumb,
                StubPrint(
                    driver: "stub", deviceID: "stub-0", finger: 1,
                    user: "bob", payload: "someone else's"
                ).bytes)
            let core = try bed.makeCore()
            try await core.adminChange(context(), action: "enable") { core.policyEngine.enable($0) }
            try await core.recordPasswordSuccess(context())

            var expected = Refusal(
                .templateDamaged, reason: .templateDamaged, text: .templatesDamaged([.leftThumb, .rightIndex]))
            expected.fingers = [.leftThumb, .rightIndex]
            #expect(await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice) == expected)
            let (running, client, _) = core.startEvaluate()
            #expect(await running.value() == expected)
            #expect(client.shown.isEmpty)
            #expect(bed.reader.verifications.isEmpty)

            let status = try #require(try await statusDocument(core, "alice"))
            #expect(status.fingers == ["left-thumb", "right-index-finger"])
            #expect(status.damagedFingers == ["left-thumb", "right-index-finger"])
            #expect(
                status.canEvaluate
                    == .init(code: Outcome.templateDamaged.rawValue, name: "templateDamaged", reason: "templateDamaged")
            )
        }
    }

    @Test func statusListsTheDamagedPrintBesideTheGoodOne() async throws {
        try await withTestBed { bed in
            let core = try await aliceWithOneDamagedPrint(bed)
            let status = try #require(try await statusDocument(core, "alice", caller: .alice))
            #expect(status.fingers == ["left-thumb", "right-index-finger"])
            #expect(status.damagedFingers == ["left-thumb"])
            #expect(status.canEvaluate.code == 0)
        }
    }

    @Test func enrollingTheDamagedFingerAgainRepairsIt() async throws {
        try await withTestBed { bed in
            let core = try await aliceWithOneDamagedPrint(bed)
            let reply = await within {
                await core.enroll(
                    user: "alice", finger: .leftThumb, password: bed.passwords.correctPassword, origin: Origin(),
                    caller: .alice, client: CollectingClient(), input: PromptInput())
            }
            #expect(reply == .success(.enrolled(.leftThumb)))
            #expect(try await statusDocument(core, "alice")?.damagedFingers == [])
            bed.reader.script(.match)
            let (running, client, _) = core.startEvaluate()
            #expect(await running.value() == .success(.recognised))
            #expect(client.kinds() == [.prompt])
            #expect(bed.reader.verifications.last?.count == 2)
        }
    }
}
