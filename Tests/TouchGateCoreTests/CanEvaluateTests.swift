// canEvaluate: what an evaluation would start with, from the state, the prints and the reader (docs/spec.md §1, §3).
import Testing
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: canEvaluate")
@CoreActor struct CanEvaluateTests {
    let remoteRefusal = Refusal(.biometryNotAvailable, reason: .remote, text: .remoteSession)

    @Test func aRemoteSessionIsRefusedUnlessRemoteIsAllowed() async throws {
        try await withTestBed { bed in
            let local = try bed.makeCore(allowRemote: false)
            try await bed.readyUser(local)
            #expect(await local.preflight(rhost: "10.0.0.7") == remoteRefusal)
            #expect(await local.preflight(rhost: "") == nil)
            #expect(await local.preflight(rhost: nil) == nil)
            await local.states.flush()

            let remoteAllowed = try bed.makeCore(allowRemote: true)
            #expect(await remoteAllowed.preflight(rhost: "10.0.0.7") == nil)
        }
    }

    @Test func aRemoteSessionIsRefusedBeforeAnythingElseIsLookedAt() async throws {
        try await withTestBed(reader: StubReader(info: nil)) { bed in
            let core = try bed.makeCore()
            #expect(await core.preflight(rhost: "attacker.example") == remoteRefusal)
        }
    }

    @Test func withoutAReaderBiometryIsNotAvailable() async throws {
        try await withTestBed { bed in
            let first = try bed.makeCore()
            try await bed.readyUser(first)
            await first.states.flush()
            let readerless = try bed.makeCore(reader: StubReader(info: nil))
            #expect(await readerless.preflight() == Refusal(.biometryNotAvailable, reason: .noReader, text: .noReader))
        }
    }

    @Test func withoutPrintsBiometryIsNotEnrolled() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            #expect(await core.preflight() == Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled))
        }
    }

    @Test func printsOfAUserWhoTurnedItOffAreNotEnabled() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try bed.plantPrint("alice", .rightIndex, bed.reader.print(user: "alice", finger: 7))
            try await core.states.update("alice", .beforeReply) { _ in UserState(enabled: false) }
            #expect(await core.preflight() == Refusal(.biometryNotEnrolled, reason: .notEnabled, text: .notEnabled))
        }
    }

    @Test func afterEnrollingAPasswordIsRequiredOnceThisBoot() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.enroll(core)
            #expect(await core.preflight() == bootRefusal)
        }
    }

    @Test func afterAPasswordSuccessTheFingerprintIsAvailable() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.enroll(core)
            try await core.recordPasswordSuccess(context())
            #expect(await core.preflight() == nil)
            #expect(
                await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice) == .success())
            // canEvaluate never touches the reader.
            #expect(bed.reader.verifications.isEmpty)
            #expect(bed.reader.enrollments.isEmpty)
        }
    }

    @Test func aNewBootRequiresThePasswordAgain() async throws {
        try await withTestBed { bed in
            let first = try bed.makeCore(bootID: "boot-1")
            try await bed.readyUser(first)
            await first.states.flush()
            #expect(await (try bed.makeCore(bootID: "boot-1")).preflight() == nil)
            #expect(await (try bed.makeCore(bootID: "boot-2")).preflight() == bootRefusal)
        }
    }

    @Test func changingThePrintsRequiresThePassword() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            try await core.prints.save(
                bed.reader.print(user: "alice", finger: 1, payload: "thumb"), user: "alice",
                device: DeviceKey(driver: "stub", deviceID: "stub-0"), finger: .leftThumb)
            #expect(
                await core.preflight()
                    == Refusal(
                        .passwordRequired, reason: .enrollmentChanged,
                        text: .passwordRequired(.enrollmentChanged)))
            _ = try await core.prints.delete("alice", device: nil, fingers: [.leftThumb]).removed
            #expect(await core.preflight() == nil)
        }
    }

    @Test func oneUsersStateDoesNotAnswerForAnother() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core, "alice")
            try await bed.enroll(core, "bob")
            #expect(await core.preflight("alice") == nil)
            #expect(await core.preflight("bob") == bootRefusal)
        }
    }
}
